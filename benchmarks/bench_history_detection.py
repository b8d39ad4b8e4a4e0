"""How well history's change-point rule finds steps and how often it reports one in pure noise (docs/HISTORY.md).

Seeded synthetic series of single-value runs (one value per run, as a nightly job of one repeat writes), run
through analysis/history.py's `detect` with the default rule:

* **detection**: 12 runs at +-3 % uniform noise, a 10 % step (up: a TTFT regression) at run 6 (6 runs either
  side), and at a run drawn among 3..9; the share of series whose only confirmed change is at the planted run;
* **outlier**: the same with one +40 % run among the runs before the step: the step found at its run and the
  outlier reported as one;
* **false changes**: 12 and 40 runs of pure noise, uniform +-3 % and log-normal 3 % (sigma of the log 0.03):
  the share of series with any confirmed change (regression or improvement), of series with a shift listed as not
  confirmed, and of series with an outlier reported;
* for reference, the same rates of the field's simple rule (`median_of_3`: runs b and b+1 both beyond 5 % of the
  median of the 3 runs before).

    python benchmarks/bench_history_detection.py [--series 2000] [--seed 44] [--quick] [--json out.json]

--quick: 300 series per case (a smoke run: the rates are then +-1.5 %). Targets (issue 44): detection >= 95 %,
false changes <= 1 %. Nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sskj_results.analysis.history import Rule, Run, Series, detect  # noqa: E402


def _series(values: np.ndarray, metric: str = "ttft_ms_p95") -> Series:
    n = values.size
    runs = [Run(f"/r{i}", f"r{i:03d}", None, "second", (f"v{i}",) + (None,) * 7, i) for i in range(n)]
    return Series((), (), metric, runs, values.astype(float), values.astype(float), np.arange(n + 1),
                  np.arange(n))


def uniform(rng: np.random.Generator, n: int) -> np.ndarray:
    return 100.0 * (1 + rng.uniform(-0.03, 0.03, n))


def lognormal(rng: np.random.Generator, n: int) -> np.ndarray:
    return 100.0 * np.exp(rng.normal(0.0, 0.03, n))


def median_of_3(values: np.ndarray, threshold: float = 0.05) -> list[int]:
    """The field's simple rule, for reference (PyTorch's vLLM benchmark dashboard, as described in issue 44): a
    change at run b when runs b and b+1 both differ from the median of the 3 runs before b by more than the
    threshold, in the same direction; the next change is looked for from b + 3 on."""
    y = np.log(values)
    thr = np.log1p(threshold)
    out, b = [], 3
    while b + 1 < y.size:
        base = float(np.median(y[b - 3:b]))
        d = y[b:b + 2] - base
        if np.all(d > thr) or np.all(d < -thr):
            out.append(b)
            b += 3
        else:
            b += 1
    return out


def run_case(count: int, make: Callable[[np.random.Generator], tuple[np.ndarray, Optional[int], Optional[int]]],
             rng: np.random.Generator, rule: Rule) -> dict[str, Any]:
    found = any_change = unconfirmed = outliers = outlier_right = ref_found = ref_any = 0
    for _ in range(count):
        values, step, outlier = make(rng)
        reference = median_of_3(values, rule.min_change)
        ref_any += bool(reference)
        ref_found += step is not None and reference == [step]
        s = _series(values)
        detect(s, rule)
        confirmed = [c.index for c in s.changes if c.kind != "not confirmed"]
        any_change += bool(confirmed)
        unconfirmed += any(c.kind == "not confirmed" for c in s.changes)
        outliers += bool(s.outliers)
        if step is not None and confirmed == [step]:
            found += 1
        if outlier is not None and [o.index for o in s.outliers] == [outlier]:
            outlier_right += 1
    out = {"series": count, "any_change": any_change / count, "not_confirmed": unconfirmed / count,
           "outlier_reported": outliers / count}
    if step is not None:
        out["found_at_its_run"] = found / count
    if outlier is not None:
        out["outlier_found"] = outlier_right / count
    out["median_of_3_any_change"] = ref_any / count
    if step is not None:
        out["median_of_3_found_at_its_run"] = ref_found / count
    return out


def cases(n_series: int, seed: int, rule: Rule) -> dict[str, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    step = 1.10

    def middle(r: np.random.Generator) -> tuple[np.ndarray, Optional[int], Optional[int]]:
        v = uniform(r, 12)
        v[6:] *= step
        return v, 6, None

    def anywhere(r: np.random.Generator) -> tuple[np.ndarray, Optional[int], Optional[int]]:
        at = int(r.integers(3, 10))
        v = uniform(r, 12)
        v[at:] *= step
        return v, at, None

    def with_outlier(r: np.random.Generator) -> tuple[np.ndarray, Optional[int], Optional[int]]:
        v = uniform(r, 12)
        v[6:] *= step
        at = int(r.integers(1, 6))
        v[at] *= 1.40
        return v, 6, at

    def noise(kind: Callable[[np.random.Generator, int], np.ndarray], n: int):
        return lambda r: (kind(r, n), None, None)

    return {
        "step 10 % at run 6 of 12, uniform 3 %": run_case(n_series, middle, rng, rule),
        "step 10 % at a run among 3..9 of 12, uniform 3 %": run_case(n_series, anywhere, rng, rule),
        "step 10 % at run 6 of 12 after a +40 % outlier run, uniform 3 %": run_case(n_series, with_outlier, rng, rule),
        "noise, 12 runs, uniform 3 %": run_case(n_series, noise(uniform, 12), rng, rule),
        "noise, 12 runs, log-normal 3 %": run_case(n_series, noise(lognormal, 12), rng, rule),
        "noise, 40 runs, uniform 3 %": run_case(n_series, noise(uniform, 40), rng, rule),
        "noise, 40 runs, log-normal 3 %": run_case(n_series, noise(lognormal, 40), rng, rule),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=2000, help="series per case (default 2000)")
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--quick", action="store_true", help="300 series per case")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    n = 300 if args.quick else args.series
    result = {"seed": args.seed, "rule": Rule().__dict__, "cases": cases(n, args.seed, Rule())}
    for name, rates in result["cases"].items():
        shown = ", ".join(f"{k} {v:.1%}" if isinstance(v, float) else f"{k} {v}" for k, v in rates.items())
        print(f"{name}: {shown}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
