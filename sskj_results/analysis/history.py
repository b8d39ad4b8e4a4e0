"""History: every setup's runs over time, and the runs where a series stepped. Pure: a runs table in, series out.

A *series* is one metric of one setup (chip, engine, model, configuration apart from the engine version and the
image) at one scenario shape (input and output length, concurrency, request rate), over the runs that measured it,
ordered by run time. Each point is one run: its value is the median of the run's repeats of that shape, its
samples the repeats' values, and it carries the run's engine version, image and other recorded versions.

The change-point rule (docs/HISTORY.md), per series, on the logarithm of the values of the points that are not
disqualified (those are shown, never used):

* *noise*: the series' run-to-run variation, a robust standard deviation of consecutive differences
  (1.4826 x median |y[i] - y[i-1]| / sqrt 2), or of the repeats within runs when larger: what an outlier is;
* *outliers*: a run apart from the median of the ``reach`` runs before it and of those after it, in the same
  direction, by more than max(``min_change``, ``outlier_factor`` x noise): reported, and set aside;
* a boundary ``b`` (run ``b`` the first after it) is a *candidate* when the medians of up to ``window`` runs before
  it (since the previous change, at least ``min_before``) and from it on (at least ``persist``) differ by more than
  ``min_change``, and Student's t of the two windows' means, with their pooled standard deviation (the noise
  without the step), exceeds ``noise_factor`` the same way; of consecutive candidates the one where t peaks;
* it is a *change* when the test sskj uses for samples of latencies (two-sided Mann-Whitney U over the windows'
  samples, analysis/stats.py) gives p < ``alpha`` and the ratio of medians differs from 1 by more than
  ``min_change`` (stats.classify); the size is that ratio with its bootstrap 95 % interval. A candidate whose
  samples cannot reach ``alpha`` is reported as not confirmed ("insufficient samples"), never as a change; so is
  a last run apart from the runs before it (a step or an outlier: the next run tells);
* the direction of the metric (METRIC_DIRECTIONS) makes a change a regression or an improvement.

Runs whose time lacks a year, a time of day or a date are ordered as far as known (ORDER_NOTES) and each point
says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence

import numpy as np

from ..contract.errors import ResultsError, UsageError
from ..contract.metrics import LATENCY_NAMES, METRICS
from .changepoint import Scan, last_apart, outlier_mask, scan, sliding_medians
from .grades import believed, doubtful_of_names
from .stats import FASTER, SLOWER, classify, compare_latency
from .validity import DEFAULT_THRESHOLDS

if TYPE_CHECKING:
    import pandas as pd

Direction = Literal["lower", "higher"]
# A runs-table column history follows: a scalar metric of the registry (`output_token_throughput`) or a
# statistic of a distribution (`ttft_ms_p95`, `prefill_tok_s_mean`); its direction is the registry row's.
STATISTICS = ("mean", "p50", "p90", "p95", "p99", "p99_9")
DEFAULT_METRICS = ("ttft_ms_p95", "tpot_ms_mean", "output_token_throughput")

# A setup: what a series holds fixed besides its shape (chip and engine: `chip` else `accelerator`, `engine` else
# `backend`). The engine version and the image are what a series follows, never part of a setup.
SETUP_COLUMNS = ("chip", "engine", "model", "tp", "kv_cache_dtype", "spec_method", "spec_tokens", "block_size",
                 "max_num_seqs", "extra_args", "nodes", "gpus_per_node")
SHAPE_COLUMNS = ("input_len", "output_len", "concurrency", "request_rate")
# What a point records of its run, and what a change compares between the runs either side of it.
CONTEXT_COLUMNS = ("engine_version", "image", "env", "client", "client_version", "driver_version",
                   "runtime_version", "server_args")
# what says whether a point is disqualified (shown, never used by the rule)
VALIDITY_COLUMNS = ("validity_failed", "success", "failed")
RUN_COLUMNS = ("results_file", "run_dir", "run_id", "timestamp", "timestamp_precision", "accelerator", "backend")
ORDER_NOTES = {
    "day": "no time of day: placed at the start of its day",
    "month-day": "no year: placed before every dated run, by month and day",
    "none": "no date: placed after every dated run, by run id",
}


def _followed() -> dict[str, Direction]:
    """Every runs-table column history follows, with its direction (contract/metrics.py)."""
    out: dict[str, Direction] = {}
    for row in METRICS:
        if row.summary != "distribution":  # one value per scenario: a column of its own (a window's too)
            out[row.name] = row.direction
        else:
            out.update((f"{row.name}_{stat}", row.direction) for stat in STATISTICS)
    return out


FOLLOWED = _followed()


def metric_direction(metric: str) -> Direction:
    """Lower or higher is better for a column of the runs table; UsageError for a column history does not follow."""
    if metric in FOLLOWED:
        return FOLLOWED[metric]
    scalars = ", ".join(m.name for m in METRICS if m.summary != "distribution")
    raise UsageError(f"--metric {metric}: not a metric history follows; give a statistic "
                     f"NAME_({'|'.join(STATISTICS)}) of {', '.join(m.name for m in METRICS if m.summary == 'distribution')}, "
                     f"or one of {scalars} (docs/METRICS.md)")


@dataclass(frozen=True)
class Rule:
    """The change-point rule's parameters (docs/HISTORY.md)."""

    alpha: float = 0.05
    min_change: float = 0.05
    noise_factor: float = 5.0  # |t| of the windows' difference of means, at least
    persist: int = 2  # runs after a change, at least
    window: int = 8
    min_before: int = 2
    outlier_factor: float = 4.0  # an outlier stands this many noise standard deviations from both neighbourhoods
    reach: int = 3  # the runs either side an outlier is judged against

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1 or self.min_change < 0 or self.noise_factor < 0 or self.outlier_factor < 0:
            raise UsageError("history rule: alpha must be in (0, 1), min_change, noise_factor and outlier_factor >= 0")
        if self.persist < 1 or self.min_before < 1 or self.reach < 1 \
                or self.window < max(self.persist, self.min_before):
            raise UsageError("history rule: persist, min_before and reach >= 1, window >= persist and min_before")


@dataclass(frozen=True)
class Run:
    """A run as the series see it: where, when (as far as known), and what it recorded of its versions."""

    run_dir: str
    run_id: str
    timestamp: Optional[str]
    precision: str  # second, day, month-day, none
    context: tuple[Optional[str], ...]  # CONTEXT_COLUMNS' values
    rank: int  # its place among all runs of the table, in run order

    def get(self, name: str) -> Optional[str]:
        return self.context[CONTEXT_COLUMNS.index(name)]

    @property
    def order_note(self) -> Optional[str]:
        return ORDER_NOTES.get(self.precision)


@dataclass(frozen=True)
class Point:
    """One run of a series: its value (the median of its repeats) and samples (the repeats' values)."""

    run: Run
    value: float
    samples: tuple[float, ...]

    def __getattr__(self, name: str) -> Any:  # run_id, timestamp, order_note, get, ...: the run's
        return getattr(self.run, name)


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


@dataclass(frozen=True)
class Outlier:
    """A single run apart from the runs either side of it: ratio = its value / the median of the runs before it."""

    index: int
    ratio: float


@dataclass
class Series:
    """One metric of one setup at one shape: its runs in order, their values, their samples (flat, by run)."""

    setup: tuple[Any, ...]  # SETUP_COLUMNS' values
    shape: tuple[Any, ...]  # SHAPE_COLUMNS' values
    metric: str
    runs: list[Run]
    values: np.ndarray  # one per run
    sample_values: np.ndarray  # every sample, those of run i at offsets[i]:offsets[i + 1]
    offsets: np.ndarray
    ranks: np.ndarray  # each run's Run.rank
    noise: Optional[float] = None
    threshold: Optional[float] = None
    changes: list[Change] = field(default_factory=list)
    # per run: True when a failed validity check says not to believe this metric in every repeat of it (a ✖
    # point, or the metric unreliable there: grades.doubtful_of_names): shown, never used by the rule
    disqualified: Optional[np.ndarray] = None
    outliers: list[Outlier] = field(default_factory=list)
    # the same runs, for the pages' marks; None when the table records no validity
    doubtful: Optional[np.ndarray] = None

    @property
    def used(self) -> np.ndarray:
        """Per run: True when the rule uses it (neither disqualified nor an outlier)."""
        out = np.ones(len(self.runs), dtype=bool) if self.disqualified is None else ~self.disqualified
        for o in self.outliers:
            out[o.index] = False
        return out

    def __len__(self) -> int:
        return len(self.runs)

    def point(self, i: int) -> Point:
        i = i % len(self.runs)
        return Point(self.runs[i], float(self.values[i]),
                     tuple(float(v) for v in self.sample_values[self.offsets[i]:self.offsets[i + 1]]))

    @property
    def points(self) -> list[Point]:
        return [self.point(i) for i in range(len(self.runs))]

    def samples(self, lo: int, hi: int) -> np.ndarray:
        """The samples of runs lo..hi-1."""
        return self.sample_values[self.offsets[lo]:self.offsets[hi]]

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


def _within_noise(series: Series, runs: np.ndarray) -> Optional[float]:
    """Pooled standard deviation of the logs of the repeats within these runs (those with two or more), or None."""
    counts = np.diff(series.offsets)[runs]
    dof = int((counts - 1).sum())
    if not dof:
        return None
    logs = [np.log(series.samples(i, i + 1)) for i in runs.tolist()]
    return math.sqrt(sum(float(((v - v.mean()) ** 2).sum()) for v in logs) / dof)


def _differences(a: Run, b: Run) -> tuple[tuple[str, Optional[str], Optional[str]], ...]:
    return tuple((name, x, y) for name, x, y in zip(CONTEXT_COLUMNS, a.context, b.context) if x != y)


def _pool(series: Series, runs: np.ndarray) -> np.ndarray:
    return np.concatenate([series.samples(i, i + 1) for i in runs.tolist()]) if runs.size else np.zeros(0)


def detect(series: Series, rule: Rule) -> None:
    """Fill the series' noise, threshold, outliers and changes (docs/HISTORY.md, The change-point rule)."""
    usable = np.flatnonzero(series.used)  # disqualified runs are shown, never used
    y = np.log(series.values[usable])
    within = _within_noise(series, usable)
    noise = robust_noise(y, within)
    series.noise = noise
    if noise is None:
        return
    floor = math.log1p(rule.min_change)
    limit = max(floor, rule.outlier_factor * noise)
    apart = outlier_mask(y, limit, rule.reach)
    for i in np.flatnonzero(apart).tolist():
        near = y[max(0, i - rule.reach):i] if i else y[1:1 + rule.reach]
        series.outliers.append(Outlier(int(usable[i]), math.exp(float(y[i]) - float(np.median(near)))))
    pending = last_apart(y, limit, rule.reach)  # judged by the next run: left out of the scan
    if pending:
        apart[-1] = True
    keep = usable[~apart]
    z = y[~apart]
    series.threshold = math.expm1(min(limit, 700.0))  # what a single run must stand apart by to be an outlier
    if pending:
        index = int(usable[-1])
        series.changes.append(Change(index, "not confirmed", math.exp(float(y[-1] - np.median(y[-1 - rule.reach:-1]))),
                                     None, None, None, min(y.size - 1, rule.reach), 1,
                                     _differences(series.runs[index - 1], series.runs[index]),
                                     "the last run only: a step or a single-run outlier, the next run tells"))
    if z.size < rule.min_before + rule.persist:
        return
    higher = metric_direction(series.metric) == "higher"
    start, b = 0, rule.min_before
    medians = sliding_medians(z, rule.window)  # of every window of `window` runs, read by each scan
    while True:
        sc, passing = _candidates(z[start:], rule, floor, within, None if medians is None else medians[start:])
        found = np.flatnonzero(passing[b - start:]) + b - start  # indices into z[start:]
        confirmed = False
        for first in found.tolist():
            if start + first < b:
                continue  # inside a cluster already judged
            last = first
            while last + 1 < passing.size and passing[last + 1]:
                last += 1
            at = first + int(np.nanargmax(np.abs(sc.t[first:last + 1])))  # the boundary of the cluster where t peaks
            lo, hi = start + int(sc.lo[at]), start + int(sc.hi[at])
            at += start
            before, after = _pool(series, keep[lo:at]), _pool(series, keep[at:hi])
            outcome = compare_latency(before, after, alpha=rule.alpha)
            index = int(keep[at])
            diffs = _differences(series.runs[index - 1], series.runs[index])
            if outcome.verdict is None and outcome.p_raw is not None and outcome.ratio is not None:
                verdict = classify(outcome.p_raw, outcome.ratio, alpha=rule.alpha, min_change=rule.min_change,
                                   higher_is_better=higher)
                if verdict in (FASTER, SLOWER):
                    series.changes.append(Change(
                        index, "improvement" if verdict == FASTER else "regression", outcome.ratio, outcome.ci_low,
                        outcome.ci_high, outcome.p_raw, outcome.n_baseline, outcome.n_candidate, diffs))
                    start, b, confirmed = at, at + rule.min_before, True
                    break
                reason = f"p = {outcome.p_raw:.3g} or the size within {rule.min_change:.0%}: not significant"
            else:
                reason = outcome.reason or str(outcome.verdict)
            series.changes.append(Change(index, "not confirmed", math.exp(float(sc.d_median[at - start])), None,
                                         None, outcome.p_raw, outcome.n_baseline, outcome.n_candidate, diffs, reason))
            b = start + last + 1
        if not confirmed:
            break
    series.changes.sort(key=lambda c: c.index)


def _candidates(z: np.ndarray, rule: Rule, floor: float, within: Optional[float],
                medians: Optional[np.ndarray]) -> tuple[Scan, np.ndarray]:
    """The scan of the values since the last change and the boundaries that pass the rule's size and noise gates."""
    sc = scan(z, 0, rule.window, rule.min_before, rule.persist, within, medians)
    with np.errstate(invalid="ignore"):
        size = np.abs(sc.d_median) > floor  # the medians of the runs before and after: beyond min_change
        noise = (np.abs(sc.t) > rule.noise_factor) & (np.sign(sc.t) == np.sign(sc.d_median))  # t, the same way
        passing = size & noise
    return sc, passing


# --------------------------------------------------------------------------- series from the runs table


def _text(value: Any) -> Optional[str]:
    """A recorded value as text; None for unknown (None, pandas' NA, NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType":
        return None
    return str(value)


def _runs(frame: pd.DataFrame) -> tuple[dict[str, int], list[Run], list[tuple[Any, ...]]]:
    """Each run of the table (by results_file): its rank in run order, the runs in that order, their setups."""
    cols = [*RUN_COLUMNS, *SETUP_COLUMNS, *CONTEXT_COLUMNS]
    first = frame[cols].drop_duplicates("results_file")
    data = {c: [None if _text(v) is None else v for v in first[c].tolist()] for c in cols}
    data["chip"] = [c if c is not None else a for c, a in zip(data["chip"], data["accelerator"])]
    data["engine"] = [e if e is not None else b for e, b in zip(data["engine"], data["backend"])]
    keyed = []
    for i, file in enumerate(data["results_file"]):
        try:
            key, precision = order_key(data["timestamp"][i], data["timestamp_precision"][i], str(data["run_id"][i]),
                                       str(data["run_dir"][i]))
        except ValueError:  # a table edited by hand: results.json's timestamps are checked by the models
            raise ResultsError(f"{file}: timestamp {data['timestamp'][i]!r} is not an ISO-8601 time, date or "
                               "--MM-DD; correct it (or collect the table again)") from None
        keyed.append((key, precision, i, str(file)))
    keyed.sort(key=lambda k: k[0])
    rank: dict[str, int] = {}
    runs: list[Run] = []
    setups: list[tuple[Any, ...]] = []
    for r, (_, precision, i, file) in enumerate(keyed):
        rank[file] = r
        runs.append(Run(str(data["run_dir"][i]), str(data["run_id"][i]), data["timestamp"][i], precision,
                        tuple(None if data[c][i] is None else str(data[c][i]) for c in CONTEXT_COLUMNS), r))
        setups.append(tuple(data[c][i] for c in SETUP_COLUMNS))
    return rank, runs, setups


def _codes(values: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """Codes of tuples numbered in their sorted order (unknown last), and the distinct tuples in that order."""
    distinct = sorted(set(values), key=lambda t: tuple(_sortable(v) for v in t))
    number = {t: i for i, t in enumerate(distinct)}
    return np.fromiter((number[t] for t in values), dtype=np.int64, count=len(values)), distinct


def _shape_codes(frame: pd.DataFrame) -> tuple[np.ndarray, list[tuple[Any, ...]]]:
    """Each row's shape code, and the shapes (SHAPE_COLUMNS' values, unknown None) in sorted order."""
    unknown = -1.0  # lengths, concurrencies and rates are never negative
    stacked = np.column_stack([frame[c].to_numpy(dtype=float, na_value=unknown) for c in SHAPE_COLUMNS])
    distinct, codes = np.unique(stacked, axis=0, return_inverse=True)
    shapes = [tuple(None if v == unknown else (int(v) if c != "request_rate" else float(v))
                    for c, v in zip(SHAPE_COLUMNS, row)) for row in distinct.tolist()]
    return codes.reshape(-1).astype(np.int64), shapes


def build_series(frame: pd.DataFrame, metrics: Sequence[str]) -> tuple[list[Series], int]:
    """The series of a runs table (analysis/runtable.py's columns), one per setup, shape and metric, points in run
    order; and the number of runs."""
    for m in metrics:
        metric_direction(m)
        if m not in frame.columns:
            raise UsageError(f"--metric {m}: not a column of the runs table (docs/RUNS_TABLE.md)")
    if not len(frame):
        return [], 0
    rank, runs, run_setups = _runs(frame)
    setup_of_run, setups = _codes(run_setups)
    row_rank = frame["results_file"].map(rank).to_numpy(dtype=np.int64)
    row_setup = setup_of_run[row_rank]
    row_shape, shapes = _shape_codes(frame)
    series = []
    for m_index, m in enumerate(metrics):
        v = frame[m].to_numpy(dtype=float, na_value=np.nan)
        doubtful_rows = _doubtful_rows(frame, m)
        ok = np.isfinite(v) & (v > 0)  # unknown is left out, never 0; a log needs a positive value
        order = np.lexsort((v[ok], row_rank[ok], row_shape[ok], row_setup[ok]))
        st, sh, rk, vv = row_setup[ok][order], row_shape[ok][order], row_rank[ok][order], v[ok][order]
        dq = (np.zeros(len(frame), dtype=bool) if doubtful_rows is None else doubtful_rows)[ok][order]
        if not st.size:
            continue  # no run recorded this metric
        # a run's disqualified repeats are left out when it has others; a run of disqualified repeats only is kept
        # (its point is shown) and marked
        group = np.r_[0, np.cumsum((np.diff(st) != 0) | (np.diff(sh) != 0) | (np.diff(rk) != 0))]
        qualified = np.bincount(group, weights=~dq)[group] > 0
        keep = ~dq | ~qualified
        st, sh, rk, vv, dq = st[keep], sh[keep], rk[keep], vv[keep], dq[keep]
        cuts = np.flatnonzero((np.diff(st) != 0) | (np.diff(sh) != 0)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, st.size]):
            ranks, vals = rk[a:b], vv[a:b]
            starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
            offsets = np.r_[starts, ranks.size]
            counts = np.diff(offsets)
            lo, hi = starts + (counts - 1) // 2, starts + counts // 2  # samples are sorted within a run
            series.append((st[a], sh[a], m_index, Series(
                setups[st[a]], shapes[sh[a]], m, [runs[r] for r in ranks[starts].tolist()],
                (vals[lo] + vals[hi]) / 2.0, vals, offsets, ranks[starts], disqualified=dq[a:b][starts],
                doubtful=None if doubtful_rows is None else dq[a:b][starts])))
    series.sort(key=lambda t: t[:3])
    return [s for *_, s in series], len(runs)


def _sortable(value: Any) -> tuple[int, Any]:
    if value is None:
        return (2, "")
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value))




def needed_columns(metrics: Sequence[str]) -> list[str]:
    """The runs-table columns history reads for these metrics."""
    return list(dict.fromkeys([*RUN_COLUMNS, *SETUP_COLUMNS, *CONTEXT_COLUMNS, *SHAPE_COLUMNS, *VALIDITY_COLUMNS,
                               *metrics]))


def registry_metric(column: str) -> str:
    """The registry metric a runs-table column is of: `tpot_ms_mean` -> `tpot_ms`; other columns are their own."""
    base, _, stat = column.rpartition("_")
    return base if base in LATENCY_NAMES and stat else column


def _doubtful_rows(frame: pd.DataFrame, metric: str) -> Optional[np.ndarray]:
    """Per row of the table: a failed validity check says not to believe the metric there; None without the
    validity columns."""
    if "validity_failed" not in frame.columns:
        return None
    failed = frame["failed"].to_numpy(dtype=float, na_value=np.nan) if "failed" in frame.columns else None
    success = frame["success"].to_numpy(dtype=float, na_value=np.nan) if "success" in frame.columns else None
    names = frame["validity_failed"].tolist()
    out = np.zeros(len(frame), dtype=bool)
    m = registry_metric(metric)
    for i, text in enumerate(names):
        if _text(text) is None:
            continue
        share = None
        if failed is not None and success is not None and math.isfinite(failed[i] + success[i]) and failed[i] + success[i] > 0:
            share = float(failed[i] / (failed[i] + success[i]))
        out[i] = not believed(doubtful_of_names([n.strip() for n in str(text).split(";")], share), m)
    return out


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
