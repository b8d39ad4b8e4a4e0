"""Tests across repeats with a pooled run-to-run variance (the minimum detectable change is `stats`). Pure maths:
numpy arrays in, `stats.Outcome`s out; no I/O.

The model (docs/COMPARE.md, *The noise model*): a repeat's value of a metric at one shape (the 20 % trimmed mean
of the logs of its requests' values — a trimmed geometric mean — or its throughput) is, on the log scale, its
side's level plus run-to-run noise plus the sampling noise of that mean; both sides of a test share one
variance. The residual variance of each test, s², with n1 + n2 - 2 degrees of freedom, is shrunk towards a
prior fitted to every test of the same metric and candidate run (the comparison's scenarios) by Smyth's
empirical Bayes (limma's moderated t): the prior's degrees of freedom d0 say how much the tests agree on their
noise, from 0 (every test keeps its own s²) to infinity (one pooled variance). The moderated variance is never
below the within-repeat bound: a repeat's value cannot vary less than the trimmed mean of its requests does.
The repeat stays the unit of replication: requests never count as samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Union

import numpy as np

from ..contract.metrics import metric as metric_row
from . import stats
from .stats import INSUFFICIENT, Outcome, _out_of_range, compare_means_welch

MODERATED = "moderated-t"  # one value per repeat (throughput, goodput), log scale, pooled variance
MODERATED_MEANS = "moderated-t-repeat-trimmed-means"  # one trimmed log mean per repeat of a per-request metric
MIN_POOL = 3  # tests with a variance needed to fit a prior; fewer keep their own variances
TRIM = 0.2  # the share of a repeat's requests trimmed from each end before the mean of their logs
MIN_REQUESTS = 8  # below, a repeat's sampling variance is unknown (0: no bound)


@dataclass(frozen=True)
class Repeats:
    """One test across repeats before pooling: log of one value per repeat on each side, and the lower bound of
    one repeat's log-scale variance (the sampling variance of its median; 0 when unknown)."""

    test: str
    base: np.ndarray
    cand: np.ndarray
    floor: float = 0.0

    @property
    def df(self) -> int:
        return self.base.size + self.cand.size - 2

    @property
    def variance(self) -> float:
        """Residual variance of the two sides around their own means (pooled, log scale)."""
        ss = float(((self.base - self.base.mean()) ** 2).sum() + ((self.cand - self.cand.mean()) ** 2).sum())
        return ss / self.df


def source(metric: str) -> str:
    """The compared per-request metric whose numbers a per-request metric is (`derived_from`: the prefill rate is
    input / TTFT), else the metric itself: tests of the two with one p-value are one hypothesis
    (`stats.hypotheses`)."""
    row = metric_row(metric)
    while row.compared == "per-request" and len(row.derived_from) == 1 and \
            metric_row(row.derived_from[0]).compared == "per-request":
        row = metric_row(row.derived_from[0])
    return row.name


def _trimmed(logs: np.ndarray) -> tuple[np.ndarray, int]:
    """The sorted values and how many are trimmed from each end (floor(TRIM * n))."""
    x = np.sort(logs)
    return x, int(math.floor(TRIM * x.size))


def trimmed_log_mean(values: np.ndarray) -> float:
    """The mean of the logs of the values with TRIM of them cut from each end (values > 0)."""
    x, g = _trimmed(np.log(np.asarray(values, dtype=float)))
    return float(x[g:x.size - g].mean())


def trimmed_mean_variance(values: np.ndarray) -> float:
    """Distribution-free sampling variance of `trimmed_log_mean` (Tukey and McLaughlin): the winsorized
    variance of the logs / ((1 - 2 TRIM)^2 n); 0 (unknown) below MIN_REQUESTS values."""
    x, g = _trimmed(np.log(np.asarray(values, dtype=float)))
    n = x.size
    if n < MIN_REQUESTS:
        return 0.0
    w = np.clip(x, x[g], x[n - 1 - g])
    kept = n - 2 * g
    return float(w.var(ddof=1) * (n - 1) / (kept * (kept - 1)))


def per_request_repeats(base: Sequence[np.ndarray], cand: Sequence[np.ndarray]) -> Union[Outcome, Repeats]:
    """A per-request metric of repeated runs: one trimmed log mean per repeat (a repeat without values is left
    out), ready for pooling, with the within-repeat bound of a repeat's variance (the mean sampling variance
    of those means). A value <= 0 has no log: then one median per repeat and Welch's t-test
    (`welch-t-repeat-medians`, as before the pooled test)."""
    base = [np.asarray(v, dtype=float) for v in base if np.asarray(v).size]
    cand = [np.asarray(v, dtype=float) for v in cand if np.asarray(v).size]
    if not base or not cand:
        side = "baseline" if not base else "candidate"
        return stats.not_comparable(MODERATED_MEANS, f"no per-request data in the {side}", len(base), len(cand))
    if min(float(v.min()) for v in base + cand) <= 0:
        return stats.compare_repeat_medians(base, cand)
    floor = float(np.mean([trimmed_mean_variance(v) for v in base + cand]))
    return repeats(MODERATED_MEANS, np.exp([trimmed_log_mean(v) for v in base]),
                   np.exp([trimmed_log_mean(v) for v in cand]), floor)


def repeats(test: str, base: np.ndarray, cand: np.ndarray, floor: float = 0.0) -> Union[Outcome, Repeats]:
    """A test across repeats ready for pooling, or its outcome when it cannot be pooled: fewer than 2 repeats
    on a side (insufficient samples), values out of range (not comparable), a value <= 0 (no log scale:
    Welch's t-test on the values, with Fieller's interval)."""
    base = np.asarray(base, dtype=float)
    cand = np.asarray(cand, dtype=float)
    if base.size < 2 or cand.size < 2 or _out_of_range(base, cand) or min(base.min(), cand.min()) <= 0:
        return replace(compare_means_welch(base, cand), test=test)
    return Repeats(test, np.log(base), np.log(cand), floor)


def _trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (Newton's iteration, as limma's trigammaInverse)."""
    from scipy.special import polygamma

    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(polygamma(1, y))
        step = tri * (1 - tri / x) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def fit_prior(variances: Sequence[float], dfs: Sequence[int]) -> tuple[float, float]:
    """(d0, s0²): the prior of the tests' variances by Smyth's (2004) moments of their logs; (0, 0) with fewer
    than MIN_POOL positive variances; d0 infinite when they vary no more than sampling alone explains."""
    from scipy.special import digamma, polygamma

    s2 = np.asarray(variances, dtype=float)
    d = np.asarray(dfs, dtype=float)
    keep = s2 > 0
    s2, d = s2[keep], d[keep]
    if s2.size < MIN_POOL:
        return 0.0, 0.0
    e = np.log(s2) - digamma(d / 2) + np.log(d / 2)
    excess = float(e.var(ddof=1) - np.mean(polygamma(1, d / 2)))
    if excess <= 0:
        return math.inf, float(np.exp(e.mean()))
    d0 = 2 * _trigamma_inverse(excess)
    return d0, float(np.exp(e.mean() + digamma(d0 / 2) - math.log(d0 / 2)))


def moderated(items: Sequence[Repeats], *, confidence: float) -> list[Outcome]:
    """Moderated t-tests of the items, which share one prior (one metric of one candidate run, or every test of
    the run when a metric has too few): difference of the mean logs, the ratio its exponential."""
    from scipy.stats import t as student_t

    d0, s0 = fit_prior([r.variance for r in items], [r.df for r in items])
    total = sum(r.df for r in items)
    out = []
    for r in items:
        n1, n2 = r.base.size, r.cand.size
        own = r.variance
        if math.isinf(d0):
            s2, df = s0, float(total)
        elif d0 > 0:
            s2, df = (d0 * s0 + r.df * own) / (d0 + r.df), min(d0 + r.df, float(total))
        else:
            s2, df = own, float(r.df)
        s2 = max(s2, r.floor)
        m1, m2 = float(r.base.mean()), float(r.cand.mean())
        diff = m2 - m1
        values = dict(test=r.test, n_baseline=n1, n_candidate=n2, baseline_value=math.exp(m1),
                      candidate_value=math.exp(m2))
        if s2 <= 0:
            if diff == 0:
                out.append(Outcome(p_raw=1.0, ratio=1.0, ci_low=1.0, ci_high=1.0, **values))  # type: ignore[arg-type]
            else:
                out.append(Outcome(verdict=INSUFFICIENT, ratio=math.exp(diff), **values,  # type: ignore[arg-type]
                                   reason="identical values within each side; no variance to test against"))
            continue
        se = math.sqrt(s2 * (1 / n1 + 1 / n2))
        p = float(2 * student_t.sf(abs(diff) / se, df))
        half = float(student_t.ppf(0.5 + confidence / 2, df)) * se
        out.append(Outcome(p_raw=p, ratio=math.exp(diff), ci_low=math.exp(diff - half), ci_high=math.exp(diff + half),
                           se_log=se, df=df, **values))  # type: ignore[arg-type]
    return out


def pool(items: Sequence[tuple[tuple[int, str], Union[Outcome, Repeats]]], *,
         confidence: float, across_metrics: bool = False) -> list[Outcome]:
    """Outcomes for (key, item) pairs, key = (candidate run, metric): the Repeats of one key share a prior (a
    key with fewer than MIN_POOL keeps each test's own variance). With `across_metrics`, the keys with too
    few tests share one prior per candidate run instead (every metric's tests: correlated, see
    docs/COMPARE.md, so off by default)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for i, (key, item) in enumerate(items):
        if isinstance(item, Repeats):
            groups.setdefault(key, []).append(i)
    lone: list[list[int]] = []
    by_run: dict[int, list[int]] = {}
    for key, idx in list(groups.items()):
        if len(idx) < MIN_POOL:
            if across_metrics:
                by_run.setdefault(key[0], []).extend(idx)
            else:
                lone.extend([i] for i in idx)
            del groups[key]
    out: list[Optional[Outcome]] = [item if isinstance(item, Outcome) else None for _, item in items]
    for idx in list(groups.values()) + list(by_run.values()) + lone:
        chosen = [items[i][1] for i in idx]
        for i, outcome in zip(idx, moderated([c for c in chosen if isinstance(c, Repeats)], confidence=confidence)):
            out[i] = outcome
    missing = [i for i, o in enumerate(out) if o is None]
    if missing:
        raise ValueError(f"items {missing} were not tested")
    return [o for o in out if o is not None]
