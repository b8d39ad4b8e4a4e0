"""History: every setup's runs over time, and the runs where a series stepped. Pure: a runs table in, series out.

A *series* is one metric of one setup (chip, engine, model, configuration apart from the engine version and the
image) at one scenario shape (input and output length, concurrency, request rate), over the runs that measured it,
ordered by run time. Each point is one run: its value is the median of the run's repeats of that shape, its
samples the repeats' values, and it carries the run's engine version, image and other recorded versions.

The change-point rule (docs/HISTORY.md), per series, on the logarithm of the values:

* *noise*: the series' run-to-run variation, a robust standard deviation of consecutive differences
  (1.4826 x median |y[i] - y[i-1]| / sqrt 2: a step or a single outlier barely moves it), and of the
  repeats within runs where runs have them; the larger is kept;
* *threshold*: a shift counts only beyond max(``min_change``, ``noise_factor`` x noise);
* a boundary ``b`` (run ``b`` is the first after the change) is a *candidate* when the median of up to ``window``
  runs before it (since the previous change, at least ``min_before``) and the first ``persist`` runs from ``b``
  on each differ by more than the threshold, in the same direction (persistence: one outlier run never passes),
  and the median of up to ``window`` runs from ``b`` on also does;
* it is a *change* when the test sskj uses for samples of latencies (two-sided Mann-Whitney U over the runs'
  samples before and after, analysis/stats.py) gives p < ``alpha`` and the ratio of medians differs from 1 by more
  than the threshold (stats.classify); the size is that ratio with its bootstrap 95 % interval. A candidate whose
  samples cannot reach ``alpha`` is reported as not confirmed ("insufficient samples"), never as a change;
* the direction of the metric (METRIC_DIRECTIONS) makes a change a regression or an improvement.

Runs whose time lacks a year, a time of day or a date are ordered as far as known (ORDER_NOTES) and each point
says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence

import numpy as np

from ..contract.errors import UsageError
from .stats import FASTER, SLOWER, classify, compare_latency

if TYPE_CHECKING:
    import pandas as pd

Direction = Literal["lower", "higher"]
# Which way is better, per metric of the runs table. Minimal on purpose: the metric registry
# (contract/metrics.py, being built) is to take its place. Latency statistics: lower; rates: higher.
HIGHER_IS_BETTER = ("request_throughput", "input_token_throughput", "output_token_throughput",
                    "total_token_throughput", "request_goodput", "accept_length")
LATENCY_RE = re.compile(r"^(ttft|tpot|itl|e2e)_ms_(mean|p50|p90|p95|p99|p99_9)$")
DEFAULT_METRICS = ("ttft_ms_p95", "tpot_ms_mean", "output_token_throughput")

# A setup: what a series holds fixed besides its shape (chip and engine: `chip` else `accelerator`, `engine` else
# `backend`). The engine version and the image are what a series follows, never part of a setup.
SETUP_COLUMNS = ("chip", "engine", "model", "tp", "kv_cache_dtype", "spec_method", "spec_tokens", "block_size",
                 "max_num_seqs", "extra_args", "nodes", "gpus_per_node")
SHAPE_COLUMNS = ("input_len", "output_len", "concurrency", "request_rate")
# What a point records of its run, and what a change compares between the runs either side of it.
CONTEXT_COLUMNS = ("engine_version", "image", "env", "client", "client_version", "driver_version",
                   "runtime_version", "server_args")
ORDER_NOTES = {
    "day": "no time of day: placed at the start of its day",
    "month-day": "no year: placed before every dated run, by month and day",
    "none": "no date: placed after every dated run, by run id",
}


def metric_direction(metric: str) -> Direction:
    """Lower or higher is better for a column of the runs table; UsageError for a column history does not follow."""
    if metric in HIGHER_IS_BETTER:
        return "higher"
    if LATENCY_RE.match(metric):
        return "lower"
    raise UsageError(f"--metric {metric}: not a metric history follows; give a latency statistic "
                     f"(ttft|tpot|itl|e2e)_ms_(mean|p50|p90|p95|p99|p99_9) or one of {', '.join(HIGHER_IS_BETTER)}")


@dataclass(frozen=True)
class Rule:
    """The change-point rule's parameters (docs/HISTORY.md)."""

    alpha: float = 0.05
    min_change: float = 0.05
    noise_factor: float = 3.0
    persist: int = 2
    window: int = 8
    min_before: int = 2

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1 or self.min_change < 0 or self.noise_factor < 0:
            raise UsageError("history rule: alpha must be in (0, 1), min_change and noise_factor >= 0")
        if self.persist < 1 or self.min_before < 1 or self.window < max(self.persist, self.min_before):
            raise UsageError("history rule: persist and min_before >= 1, window >= both")


@dataclass(frozen=True)
class Point:
    """One run of a series."""

    run_dir: str
    run_id: str
    timestamp: Optional[str]
    precision: str  # second, day, month-day, none
    value: float
    samples: tuple[float, ...]
    context: tuple[Optional[str], ...]  # CONTEXT_COLUMNS' values
    rank: int = 0  # the run's place among all runs of the table, in run order

    def get(self, name: str) -> Optional[str]:
        return self.context[CONTEXT_COLUMNS.index(name)]

    @property
    def order_note(self) -> Optional[str]:
        return ORDER_NOTES.get(self.precision)


@dataclass(frozen=True)
class Change:
    """A step between points[index - 1] and points[index]."""

    index: int
    kind: Literal["regression", "improvement", "not confirmed"]
    ratio: float
    ci_low: Optional[float]
    ci_high: Optional[float]
    p: Optional[float]
    n_before: int
    n_after: int
    differences: tuple[tuple[str, Optional[str], Optional[str]], ...]
    reason: Optional[str] = None


@dataclass
class Series:
    setup: tuple[Any, ...]  # SETUP_COLUMNS' values
    shape: tuple[Any, ...]  # SHAPE_COLUMNS' values
    metric: str
    points: list[Point]
    noise: Optional[float] = None
    threshold: Optional[float] = None
    changes: list[Change] = field(default_factory=list)

    def setup_value(self, name: str) -> Any:
        return self.setup[SETUP_COLUMNS.index(name)]

    @property
    def confirmed(self) -> list[Change]:
        return [c for c in self.changes if c.kind != "not confirmed"]


@dataclass
class History:
    series: list[Series]
    metrics: tuple[str, ...]
    rule: Rule
    runs: int


# --------------------------------------------------------------------------- ordering


def order_key(timestamp: Optional[str], precision: Optional[str], run_id: str, run_dir: str) -> tuple[Any, ...]:
    """Sort key of a run and its precision (second, day, month-day, none): dated runs by time (a date alone at the
    start of its day, UTC), before them those without a year (by month and day), after them those without a date."""
    from datetime import datetime, timezone

    if not timestamp:
        return (2, 0.0, run_id, run_dir), "none"
    if precision == "month-day" or timestamp.startswith("--"):
        month, day = timestamp[2:4], timestamp[5:7]
        return (0, float(int(month) * 100 + int(day)), run_id, run_dir), "month-day"
    if precision == "day" or len(timestamp) == 10:
        when = datetime.fromisoformat(timestamp).replace(tzinfo=timezone.utc)
        return (1, when.timestamp(), run_id, run_dir), "day"
    when = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (1, when.timestamp(), run_id, run_dir), "second"


# --------------------------------------------------------------------------- the rule


def robust_noise(y: np.ndarray, within: Optional[float]) -> Optional[float]:
    """Run-to-run standard deviation of log values (of consecutive differences, robust), or the repeats' within-run
    one when larger; None with fewer than three runs."""
    if y.size < 3:
        return None
    between = 1.4826 * float(np.median(np.abs(np.diff(y)))) / math.sqrt(2.0)
    return max(between, within or 0.0)


def _within_noise(points: Sequence[Point]) -> Optional[float]:
    """Pooled standard deviation of the logs of the repeats within runs (runs with two or more), or None."""
    ss, dof = 0.0, 0
    for p in points:
        if len(p.samples) >= 2:
            logs = np.log(np.asarray(p.samples))
            ss += float(((logs - logs.mean()) ** 2).sum())
            dof += len(p.samples) - 1
    return math.sqrt(ss / dof) if dof else None


def _screen(y: np.ndarray, rule: Rule, thr: float) -> set[int]:
    """Boundaries worth the exact check: the first `persist` values beyond the threshold of the median of up to
    `window` values before (ignoring earlier changes; those are re-checked after each change)."""
    import pandas as pd

    n = y.size
    before = pd.Series(y).rolling(rule.window, min_periods=rule.min_before).median().shift(1).to_numpy()
    out: set[int] = set()
    last = n - rule.persist
    if last < rule.min_before:
        return out
    idx = np.arange(rule.min_before, last + 1)
    dev = np.stack([y[idx + k] - before[idx] for k in range(rule.persist)])
    up = np.all(dev > thr, axis=0)
    down = np.all(dev < -thr, axis=0)
    out.update(int(i) for i in idx[up | down])
    return out


def _differences(a: Point, b: Point) -> tuple[tuple[str, Optional[str], Optional[str]], ...]:
    return tuple((name, x, y) for name, x, y in zip(CONTEXT_COLUMNS, a.context, b.context) if x != y)


def _samples(points: Sequence[Point]) -> np.ndarray:
    return np.asarray([v for p in points for v in p.samples], dtype=float)


def detect(series: Series, rule: Rule) -> None:
    """Fill the series' noise, threshold and changes (the rule of this module's docstring)."""
    points = series.points
    y = np.log(np.asarray([p.value for p in points], dtype=float))
    noise = robust_noise(y, _within_noise(points))
    series.noise = noise
    if noise is None or y.size < rule.min_before + rule.persist:
        return
    threshold = max(rule.min_change, math.expm1(rule.noise_factor * noise))
    series.threshold = threshold
    thr = math.log1p(threshold)
    higher = metric_direction(series.metric) == "higher"
    pending = sorted(_screen(y, rule, thr))
    start = 0  # the first run after the last change
    block_end = -2  # the last boundary of the current block of consecutive failed candidates
    i = 0
    while i < len(pending):
        b = pending[i]
        i += 1
        lo = max(start, b - rule.window)
        if b - lo < rule.min_before or b + rule.persist > y.size:
            continue
        base = float(np.median(y[lo:b]))
        first = y[b:b + rule.persist] - base
        if not (np.all(first > thr) or np.all(first < -thr)):
            continue
        after = y[b:b + rule.window]
        if abs(float(np.median(after)) - base) <= thr:
            continue
        outcome = compare_latency(_samples(points[lo:b]), _samples(points[b:b + rule.window]), alpha=rule.alpha)
        diffs = _differences(points[b - 1], points[b])
        consecutive = b == block_end + 1
        block_end = b
        if outcome.verdict is None and outcome.p_raw is not None and outcome.ratio is not None:
            verdict = classify(outcome.p_raw, outcome.ratio, alpha=rule.alpha, min_change=threshold,
                               higher_is_better=higher)
            if verdict in (FASTER, SLOWER):
                if consecutive and series.changes and series.changes[-1].kind == "not confirmed" \
                        and series.changes[-1].index >= b - rule.window:
                    series.changes.pop()  # the same step, confirmed one run later
                series.changes.append(Change(
                    b, "improvement" if verdict == FASTER else "regression", outcome.ratio, outcome.ci_low,
                    outcome.ci_high, outcome.p_raw, outcome.n_baseline, outcome.n_candidate, diffs))
                start, block_end = b, -2
                # boundaries right after a change: their window before starts at it
                pending = sorted(set(pending[i:]) | set(range(b + rule.min_before,
                                                              min(b + rule.window, y.size - rule.persist) + 1)))
                i = 0
                continue
            reason = f"p = {outcome.p_raw:.3g} or the size within the threshold: not significant"
        else:
            reason = outcome.reason or str(outcome.verdict)
        if not consecutive:
            series.changes.append(Change(b, "not confirmed", float(math.exp(float(np.median(after)) - base)), None,
                                         None, outcome.p_raw, outcome.n_baseline, outcome.n_candidate, diffs, reason))


# --------------------------------------------------------------------------- series from the runs table


def _text(value: Any) -> Optional[str]:
    """A recorded value as text; None for unknown (None, pandas' NA, NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType":
        return None
    return str(value)


def build_series(frame: pd.DataFrame, metrics: Sequence[str]) -> tuple[list[Series], int]:
    """The series of a runs table (analysis/runtable.py's columns), one per setup, shape and metric, points in run
    order; and the number of runs."""
    import pandas as pd

    na = pd.NA
    for m in metrics:
        metric_direction(m)
        if m not in frame.columns:
            raise UsageError(f"--metric {m}: not a column of the runs table (docs/RUNS_TABLE.md)")
    run_cols = ["results_file", "run_dir", "run_id", "timestamp", "timestamp_precision", "accelerator", "backend",
                *SETUP_COLUMNS, *CONTEXT_COLUMNS]
    runs_frame = frame.drop_duplicates("results_file")[run_cols]
    runs: dict[str, tuple[tuple[Any, ...], tuple[Any, ...], tuple[Optional[str], ...], str, str]] = {}
    for row in runs_frame.astype(object).itertuples(index=False, name=None):
        rec = dict(zip(run_cols, row))
        rec["chip"] = rec["chip"] if _text(rec["chip"]) else rec["accelerator"]
        rec["engine"] = rec["engine"] if _text(rec["engine"]) else rec["backend"]
        setup = tuple(None if _text(rec[c]) is None else rec[c] for c in SETUP_COLUMNS)
        key, precision = order_key(_text(rec["timestamp"]), _text(rec["timestamp_precision"]), str(rec["run_id"]),
                                   str(rec["run_dir"]))
        context = tuple(_text(rec[c]) for c in CONTEXT_COLUMNS)
        runs[rec["results_file"]] = (setup, key, context, precision, _text(rec["timestamp"]) or "")
    cells: dict[tuple[Any, ...], dict[str, list[float]]] = {}
    shape_frame = frame[["results_file", *SHAPE_COLUMNS, *metrics]].astype(object)
    for row in shape_frame.itertuples(index=False, name=None):
        file, shape, values = row[0], tuple(None if v is na else v for v in row[1:5]), row[5:]
        setup = runs[file][0]
        for m, v in zip(metrics, values):
            if v is na or v is None or not (isinstance(v, float) and v > 0 and math.isfinite(v)):
                continue  # unknown is left out, never 0; a log needs a positive value
            cells.setdefault((setup, shape, m), {}).setdefault(file, []).append(float(v))
    rank = {f: i for i, f in enumerate(sorted(runs, key=lambda f: runs[f][1]))}
    series = []
    for (setup, shape, m), by_run in cells.items():
        ordered = sorted(by_run, key=rank.__getitem__)
        points = []
        for f in ordered:
            _, key, context, precision, stamp = runs[f]
            samples = tuple(by_run[f])
            points.append(Point(key[3], key[2], stamp or None, precision, float(np.median(samples)), samples,
                                context, rank[f]))
        series.append(Series(setup, shape, m, points))
    series.sort(key=lambda s: (tuple(_sortable(v) for v in s.setup), tuple(_sortable(v) for v in s.shape),
                               metrics.index(s.metric)))
    return series, len(runs)


def _sortable(value: Any) -> tuple[int, Any]:
    if value is None:
        return (2, "")
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value))


def history(frame: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS, rule: Rule = Rule()) -> History:
    """Every series of the runs table and its changes."""
    if not metrics:
        raise UsageError("no --metric given")
    series, runs = build_series(frame, list(dict.fromkeys(metrics)))
    for s in series:
        detect(s, rule)
    return History(series, tuple(dict.fromkeys(metrics)), rule, runs)


def regressions(hist: History) -> list[tuple[Series, Change]]:
    return [(s, c) for s in hist.series for c in s.changes if c.kind == "regression"]


def shape_label(shape: Sequence[Any]) -> str:
    """`c64 i1024 o256` (`rate 4/s` for an open-loop run)."""
    input_len, output_len, conc, rate = shape
    load = f"c{conc}" if conc is not None else (f"rate {rate:g}/s" if rate is not None else "c?")
    return f"{load} i{input_len if input_len is not None else '?'} o{output_len if output_len is not None else '?'}"


def setup_label(setup: Sequence[Any]) -> str:
    """`NVIDIA H200 · sglang · Model · tp=8 kv_cache_dtype=fp8`: chip, engine, model, then the configuration set."""
    named = dict(zip(SETUP_COLUMNS, setup))
    head = [str(named[k]) if named[k] is not None else f"{k} unknown" for k in ("chip", "engine", "model")]
    config = " ".join(f"{k}={named[k]}" for k in SETUP_COLUMNS[3:] if named[k] is not None)
    return " · ".join(head + ([config] if config else []))
