"""Power and false verdicts of `compare` across repeats, on synthetic pairs of runs made like real ones.

A pair is two runs of one grid: 12 scenarios (concurrency 1, 4, 16 x shapes 128x128, 512x256, 1024x128,
2048x512), ``--repeats`` repeats per scenario and side, 64 successful requests a repeat. Per request:
TTFT = level(shape, concurrency) x lognormal(0, 0.2), TPOT = level x lognormal(0, 0.2), E2E = TTFT + TPOT x
(output - 1), the prefill rate input / TTFT; a repeat's output throughput = concurrency x output / its mean
E2E (a closed loop). Run-to-run noise: every (scenario, repeat) measurement has its own factor
lognormal(0, 0.03) on every latency of its requests (a slow repeat is slow in every metric). The candidate's
TTFT is multiplied by 1 + shift in every scenario (its E2E, prefill rate and throughput follow); shift 0 is a
pair of identical setups. Each pair goes through `build_comparison` (every metric, Holm over the whole
family, --alpha 0.05, --min-change 0.05, the defaults): a repeat's value of a per-request metric is the trimmed
geometric mean of its requests, and the prefill rate's test, TTFT's numbers inverted, is TTFT's hypothesis.

Reported per repeat count and shift: power — the share of the TTFT tests (pairs x 12 scenarios) called
slower; false — the share of pairs with any verdict (faster or slower, any metric) at shift 0, and the share
of tests with one; the median minimum detectable change of the TTFT tests. Seeded: the same arguments
give the same table.

    python benchmarks/bench_power.py [--quick] [--pairs N] [--null-pairs N] [--repeats 2,3,5]
        [--shifts 0,5,10,15,20,30] [--seed N] [--grid grid|one] [--across-metrics] [--bound] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sskj_results.analysis.compare import CompareOptions, build_comparison  # noqa: E402
from sskj_results.analysis.rundata import RequestSamples, RunData  # noqa: E402
from sskj_results.analysis.slo import resolve_slo, slo_status  # noqa: E402
from sskj_results.contract.models import (  # noqa: E402
    Config, Latencies, Metadata, Percentiles, Results, Scenario,
)

CONCURRENCIES = (1, 4, 16)
SHAPES = ((128, 128), (512, 256), (1024, 128), (2048, 512))
GRIDS = {"grid": [(c, i, o) for c in CONCURRENCIES for i, o in SHAPES], "one": [(4, 512, 256)]}
REQUESTS = 64
SPREAD = 0.2  # per-request lognormal sigma
RUN_TO_RUN = 0.03  # per-measurement lognormal sigma
SLO = resolve_slo("S2")


def _scenario(c: int, i: int, o: int, repeat: int, throughput: float) -> Scenario:
    empty = Percentiles(mean=None, p50=None, p90=None, p95=None, p99=None)
    return Scenario(
        name=f"c{c}_i{i}_o{o}_r{repeat}", concurrency=c, input_len=i, output_len=o, duration_s=10.0,
        success=REQUESTS, failed=0, request_throughput=1.0, input_token_throughput=None,
        output_token_throughput=throughput, total_token_throughput=None, accept_length=None,
        latencies=Latencies(e2e_ms=empty, ttft_ms=empty, tpot_ms=empty, itl_ms=empty),
        slo_status=slo_status(None, None, SLO),
        raw_requests=[], repeat=repeat,
    )


def make_run(engine: str, repeats: int, shift: float, rng: np.random.Generator, grid: str = "grid") -> RunData:
    """One synthetic run (module docstring): every scenario of the grid, `repeats` times."""
    scenarios, samples = [], []
    for c, i, o in GRIDS[grid]:
        for r in range(1, repeats + 1):
            noise = rng.lognormal(0.0, RUN_TO_RUN)
            ttft = (20.0 + 0.05 * i) * (1 + 0.2 * c) * noise * (1 + shift) * rng.lognormal(0.0, SPREAD, REQUESTS)
            tpot = 10.0 * (1 + 0.05 * c) * noise * rng.lognormal(0.0, SPREAD, REQUESTS)
            e2e = ttft + tpot * (o - 1)
            throughput = c * o * 1000.0 / float(e2e.mean())
            scenarios.append(_scenario(c, i, o, r, throughput))
            samples.append(RequestSamples(values={"ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e,
                                                  "prefill_tok_s": i * 1000.0 / ttft}, recorded=REQUESTS))
    meta = Metadata(experiment="bench", run_id=engine, timestamp="2026-07-07T00:00:00+08:00", model="m",
                    engine="sglang", backend="sglang", chip="H200", hardware="8x H200", phase=engine)
    results = Results(metadata=meta, config=Config(server_args="sglang serve"), scenarios=scenarios, slo=None)
    return RunData(path=engine, results=results, samples=samples)


def measure(repeats: int, shift: float, pairs: int, seed: int, grid: str = "grid") -> dict[str, Any]:
    rng = np.random.default_rng([seed, repeats, int(round(shift * 1000))] + ([1] if grid == "one" else []))
    options = CompareOptions(plots=False)
    ttft_slower = ttft_tests = pairs_with_verdict = verdicts = tests = 0
    mdcs: list[float] = []
    for _ in range(pairs):
        doc = build_comparison([make_run("a", repeats, 0.0, rng, grid), make_run("b", repeats, shift, rng, grid)],
                               options)
        found = [t for s in doc.scenarios for t in s.tests]
        called = [t for t in found if t.verdict in ("faster", "slower")]
        pairs_with_verdict += bool(called)
        verdicts += len(called)
        tests += len(found)
        for t in found:
            if t.metric == "ttft_ms":
                ttft_tests += 1
                ttft_slower += t.verdict == "slower"
                if t.mdc is not None:
                    mdcs.append(t.mdc)
    return {
        "grid": grid, "repeats": repeats, "shift": shift, "pairs": pairs,
        "ttft_slower": ttft_slower / ttft_tests if ttft_tests else None,
        "pairs_with_verdict": pairs_with_verdict / pairs, "tests_with_verdict": verdicts / tests if tests else None,
        "mdc_median": statistics.median(mdcs) if mdcs else None,
    }


def _statistics(doc: Any) -> list[tuple[str, float, float]]:
    """(metric, log ratio, t) of every test across repeats: t = log ratio / se, se from the test's interval."""
    from scipy.stats import t as student_t

    out = []
    for t in (t for s in doc.scenarios for t in s.tests):
        if t.ratio and t.ci_low and t.ci_high and t.df:
            se = float(np.log(t.ci_high / t.ci_low)) / (2 * float(student_t.ppf(0.975, t.df)))
            out.append((t.metric, float(np.log(t.ratio)), float(np.log(t.ratio)) / se))
    return out


def bound(repeats: int, shift: float, pairs: int, null_pairs: int, seed: int, grid: str = "one",
          false_rate: float = 0.01) -> dict[str, Any]:
    """The most any threshold on these t statistics can find at `false_rate` false pairs: one threshold for every
    test, tuned on this very model so that exactly `false_rate` of the identical pairs get a verdict (any metric,
    beyond --min-change); with each test's own variance (compare's statistics) and with the variance known
    exactly (the sd of each metric's log ratio over the identical pairs). Neither is a usable test (both are
    tuned to the model); they bound what a better threshold or family correction could reach."""
    rng = np.random.default_rng([seed, repeats, 7])
    options = CompareOptions(plots=False)
    runs = [[make_run("a", repeats, 0.0, rng, grid), make_run("b", repeats, s, rng, grid)]
            for s in [0.0] * null_pairs + [shift] * pairs]
    found = [_statistics(build_comparison(r, options)) for r in runs]
    null, alt = found[:null_pairs], found[null_pairs:]
    sd = {m: float(np.std([x for p in null for mm, x, _ in p if mm == m])) for m in {m for p in null for m, _, _ in p}}
    gate = float(np.log1p(CompareOptions().min_change))
    out: dict[str, Any] = {"repeats": repeats, "shift": shift, "pairs": pairs, "null_pairs": null_pairs}
    for kind, stat in (("own", lambda m, x, t: t), ("known", lambda m, x, t: x / sd[m])):
        largest = sorted(max([abs(stat(m, x, t)) for m, x, t in p if abs(x) > gate] or [0.0]) for p in null)
        threshold = largest[min(int(np.floor((1 - false_rate) * len(largest))), len(largest) - 1)]
        power = np.mean([any(m == "ttft_ms" and x > gate and stat(m, x, t) > threshold for m, x, t in p) for p in alt])
        out[kind] = {"threshold": threshold, "power": float(power)}
    return out


def _bound_table(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    print("| Repeats | TTFT shift | Own variance: threshold, power | Variance known: threshold, power |")
    print("|---:|---:|---:|---:|")
    for repeats in map(int, args.repeats.split(",")):
        for shift in (float(x) / 100 for x in args.shifts.split(",") if float(x) > 0):
            row = bound(repeats, shift, args.pairs, args.null_pairs, args.seed, args.grid)
            rows.append(row)
            own, known = row["own"], row["known"]
            print(f"| {repeats} | +{shift * 100:g} % | {own['threshold']:.2f}, {own['power'] * 100:.1f} % "
                  f"| {known['threshold']:.2f}, {known['power'] * 100:.1f} % |", flush=True)
    return rows


def _table(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    print("| Repeats | TTFT shift | Pairs | TTFT called slower | Pairs with any verdict | Tests with a verdict "
          "| Median TTFT MDC |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for repeats in map(int, args.repeats.split(",")):
        for shift in (float(s) / 100 for s in args.shifts.split(",")):
            row = measure(repeats, shift, args.null_pairs if shift == 0 else args.pairs, args.seed, args.grid)
            rows.append(row)
            mdc = f"{row['mdc_median'] * 100:.1f} %" if row["mdc_median"] is not None else "-"
            print(f"| {repeats} | +{shift * 100:g} % | {row['pairs']} | {row['ttft_slower'] * 100:.1f} % "
                  f"| {row['pairs_with_verdict'] * 100:.1f} % | {row['tests_with_verdict'] * 100:.2f} % | {mdc} |",
                  flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 pairs a cell, 100 at shift 0 (a smoke run)")
    parser.add_argument("--pairs", type=int, default=200, help="pairs per cell with a shift")
    parser.add_argument("--null-pairs", type=int, default=500, help="pairs of identical setups per repeat count")
    parser.add_argument("--repeats", default="2,3,5")
    parser.add_argument("--shifts", default="0,5,10,15,20,30", help="TTFT shifts in %%")
    parser.add_argument("--seed", type=int, default=20260707)
    parser.add_argument("--grid", choices=sorted(GRIDS), default="grid",
                        help="grid: the 12 scenarios of a real run (default); one: the scenario c4_i512_o256 alone")
    parser.add_argument("--across-metrics", action="store_true",
                        help="pool a metric with too few scenarios with the run's other metrics (measured, not "
                             "compare's default: the metrics of one scenario are correlated)")
    parser.add_argument("--bound", action="store_true",
                        help="instead of the table: the power any one threshold on the t statistics reaches at 1 %% "
                             "false pairs, with each test's own variance and with the variance known (bound())")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.across_metrics:
        import functools

        from sskj_results.analysis import compare, pooled

        compare.pooled.pool = functools.partial(pooled.pool, across_metrics=True)  # type: ignore[assignment]
    if args.quick:
        args.pairs, args.null_pairs = 30, 100
    started = time.perf_counter()
    if args.bound:
        rows = _bound_table(args)
    else:
        rows = _table(args)
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seed": args.seed}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
