"""Statistics behind `sskj-results compare`. Pure: numpy arrays in, numbers out; no I/O.

Per matched scenario and per candidate run (against the baseline run):

* per-request latencies (TTFT, TPOT, E2E of successful requests): two-sided
  Mann-Whitney U test, and a bootstrap confidence interval of the ratio of
  medians (candidate / baseline);
* output token throughput of repeated runs (>= 2 repeats per side): Welch's
  t-test and a confidence interval of the ratio of means;
* per-request metrics of repeated runs: one median per repeat, then Welch's
  t-test across the repeats' medians (the repeat is the unit, so the test
  measures the difference against run-to-run variation);
* Holm-Bonferroni over the whole family of tests that produced a p-value;
* a change counts only when the adjusted p-value is below alpha AND the ratio
  differs from 1 by more than the practical threshold (``min_change``).

When the sample sizes cannot reach alpha at all, the verdict is
"insufficient samples" instead of a meaningless p-value. Nothing here turns an
exception into a verdict: errors propagate.

SciPy is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from dataclasses import dataclass, replace
from typing import Final, Hashable, Literal, Optional, Sequence

import numpy as np

Verdict = Literal["faster", "slower", "no significant difference", "insufficient samples", "not comparable"]
FASTER: Final = "faster"
SLOWER: Final = "slower"
NO_DIFFERENCE: Final = "no significant difference"
INSUFFICIENT: Final = "insufficient samples"
NOT_COMPARABLE: Final = "not comparable"
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, INSUFFICIENT, NOT_COMPARABLE)

MANN_WHITNEY = "mann-whitney-u"
WELCH = "welch-t"
WELCH_MEDIANS = "welch-t-repeat-medians"  # Welch's t over one median per repeat

DEFAULT_RESAMPLES = 2000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 20260707


@dataclass(frozen=True)
class Outcome:
    """One test between a baseline sample and a candidate sample.

    ``verdict`` is None while the test waits for the multiple-testing
    correction (``decide``); tests that never produce a p-value carry their
    final verdict ("insufficient samples", "not comparable") from the start.
    """

    test: str
    n_baseline: int
    n_candidate: int
    verdict: Optional[Verdict] = None
    p_raw: Optional[float] = None
    p_adjusted: Optional[float] = None
    ratio: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    baseline_value: Optional[float] = None
    candidate_value: Optional[float] = None
    reason: Optional[str] = None
    se_log: Optional[float] = None  # standard error of log(ratio), for the minimum detectable change
    df: Optional[float] = None  # its degrees of freedom (inf: normal)
    mdc: Optional[float] = None  # minimum detectable change at 80 % power (a fraction), set by `decide`


def not_comparable(test: str, reason: str, n_baseline: int = 0, n_candidate: int = 0) -> Outcome:
    """An outcome that was never tested: no data, or different scenario parameters."""
    return Outcome(test=test, n_baseline=n_baseline, n_candidate=n_candidate, verdict=NOT_COMPARABLE, reason=reason)


# Magnitudes the tests compute with without overflow (squares of variances
# included); a sample outside makes the comparison "not comparable".
COMPUTABLE = 1e50


def _out_of_range(*samples: np.ndarray) -> Optional[str]:
    """Why samples cannot be tested (a value non-finite, or beyond COMPUTABLE or below 1/COMPUTABLE), or None."""
    for values in samples:
        if not values.size:
            continue
        magnitude = np.abs(values)
        nonzero = magnitude[magnitude > 0]
        if not np.all(np.isfinite(values)) or np.any(magnitude > COMPUTABLE) or \
                (nonzero.size and np.any(nonzero < 1 / COMPUTABLE)):
            return "a value is outside the computable range (1e-50 to 1e50 in magnitude)"
    return None


def min_mann_whitney_p(n1: int, n2: int) -> float:
    """Smallest two-sided p-value a Mann-Whitney U test can reach with these sample sizes: 2 / C(n1 + n2, n1)."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def mann_whitney_p(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value (SciPy's automatic choice of exact or asymptotic method).

    Two samples made of one single repeated value carry no evidence of a
    difference: p = 1 (SciPy would divide by a zero variance).
    """
    from scipy.stats import mannwhitneyu

    both = np.concatenate([baseline, candidate])
    if both.size and both.min() == both.max():
        return 1.0
    return float(mannwhitneyu(candidate, baseline, alternative="two-sided").pvalue)


def bootstrap_medians(values: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``n_resamples`` bootstrap resamples of ``values`` (with replacement, same size), as one array.

    Exact and O(n log n + n_resamples) instead of O(n * n_resamples): drawing
    an index uniformly is ``floor(n * U)`` for a uniform U, so the k-th smallest
    index of a resample is ``floor(n * U_(k))`` where U_(k) is the k-th order
    statistic of n uniforms, ``Beta(k, n - k + 1)``. For even n the next order
    statistic is ``U_(k) + (1 - U_(k)) * Beta(1, n - k)`` (the smallest of the
    n - k uniforms above it). The resample median is then read from the sorted
    values, exactly as ``np.median`` of the resample would give.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("bootstrap of an empty sample")
    if n == 1:
        return np.full(n_resamples, x[0])
    if n % 2:
        k = (n + 1) // 2
        u = rng.beta(k, n - k + 1, size=n_resamples)
        return x[np.minimum((n * u).astype(np.int64), n - 1)]
    k = n // 2
    u1 = rng.beta(k, n - k + 1, size=n_resamples)
    u2 = u1 + (1.0 - u1) * rng.beta(1, n - k, size=n_resamples)
    lo = x[np.minimum((n * u1).astype(np.int64), n - 1)]
    hi = x[np.minimum((n * u2).astype(np.int64), n - 1)]
    return (lo + hi) / 2.0


def median_ratio_ci(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float, float]:
    """(ratio, low, high): median(candidate) / median(baseline) with a percentile bootstrap CI.

    Baseline and candidate are resampled independently from two streams of one
    seeded generator, so the interval is reproducible and does not depend on
    which other runs are compared.
    """
    base_rng, cand_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    ratio = float(np.median(candidate) / np.median(baseline))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = bootstrap_medians(candidate, n_resamples, cand_rng) / bootstrap_medians(baseline, n_resamples, base_rng)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return ratio, float(low), float(high)


def compare_latency(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    alpha: float,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    unit: str = "ms",
) -> Outcome:
    """Per-request values (latencies, rates): Mann-Whitney U p-value and the median ratio with its CI.

    The verdict stays open (None) for ``decide`` unless the data cannot be
    tested: no samples on a side ("not comparable"), sizes that cannot reach
    alpha ("insufficient samples"), a zero baseline median ("not comparable").
    """
    base = np.asarray(baseline, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    n1, n2 = base.size, cand.size
    if n1 == 0 or n2 == 0:
        side = "baseline" if n1 == 0 else "candidate"
        return not_comparable(MANN_WHITNEY, f"no per-request data in the {side}", n1, n2)
    extreme = _out_of_range(base, cand)
    if extreme:
        return not_comparable(MANN_WHITNEY, extreme, n1, n2)
    base_median = float(np.median(base))
    cand_median = float(np.median(cand))
    floor = min_mann_whitney_p(n1, n2)
    if floor > alpha:
        return Outcome(
            test=MANN_WHITNEY, n_baseline=n1, n_candidate=n2, verdict=INSUFFICIENT,
            ratio=cand_median / base_median if base_median > 0 else None,
            baseline_value=base_median, candidate_value=cand_median,
            reason=f"n = {n1} vs {n2}: the smallest reachable p-value is {floor:.3g} > alpha {alpha:g}",
        )
    if base_median <= 0:
        return not_comparable(MANN_WHITNEY, f"baseline median is 0 {unit}; the ratio is undefined", n1, n2)
    ratio, low, high = median_ratio_ci(base, cand, n_resamples=n_resamples, confidence=confidence, seed=seed)
    z = float(NormalDist().inv_cdf(0.5 + confidence / 2))
    se_log = (math.log(high) - math.log(low)) / (2 * z) if low > 0 and math.isfinite(high) else None
    return Outcome(
        test=MANN_WHITNEY, n_baseline=n1, n_candidate=n2, p_raw=mann_whitney_p(base, cand),
        ratio=ratio, ci_low=low, ci_high=high, baseline_value=base_median, candidate_value=cand_median,
        se_log=se_log, df=math.inf if se_log is not None else None,
    )


def compare_means_welch(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Outcome:
    """Repeated-run values (e.g. output token throughput per repeat): Welch's t-test, ratio of means.

    The interval is Fieller's interval of the ratio of the two means with
    Welch-Satterthwaite degrees of freedom (`fieller`): never below 0 for
    values that are never negative. Needs two values per side.
    """
    base = np.asarray(baseline, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    n1, n2 = base.size, cand.size
    extreme = _out_of_range(base, cand)
    if extreme:
        return not_comparable(WELCH, extreme, n1, n2)
    if n1 < 2 or n2 < 2:
        return Outcome(
            test=WELCH, n_baseline=n1, n_candidate=n2, verdict=INSUFFICIENT,
            baseline_value=float(base.mean()) if n1 else None,
            candidate_value=float(cand.mean()) if n2 else None,
            reason=f"{n1} vs {n2} repeats: a test across repeats needs at least 2 per side",
        )
    m1, m2 = float(base.mean()), float(cand.mean())
    if m1 <= 0:
        return not_comparable(WELCH, "baseline mean is 0; the ratio is undefined", n1, n2)
    v1, v2 = float(base.var(ddof=1)), float(cand.var(ddof=1))
    se2 = v1 / n1 + v2 / n2
    if se2 == 0.0:
        if m1 == m2:
            return Outcome(test=WELCH, n_baseline=n1, n_candidate=n2, p_raw=1.0, ratio=1.0, ci_low=1.0,
                           ci_high=1.0, baseline_value=m1, candidate_value=m2)
        return Outcome(
            test=WELCH, n_baseline=n1, n_candidate=n2, verdict=INSUFFICIENT, ratio=m2 / m1,
            baseline_value=m1, candidate_value=m2,
            reason="identical values within each side; Welch's t-test is undefined without variance",
        )
    from scipy.stats import t as student_t
    from scipy.stats import ttest_ind

    p = float(ttest_ind(cand, base, equal_var=False).pvalue)
    se = math.sqrt(se2)
    df = se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
    q = float(student_t.ppf(0.5 + confidence / 2.0, df))
    low, high = fieller(m1, m2, v1 / n1, v2 / n2, q)
    if base.min() >= 0 and cand.min() >= 0:
        low = max(low, 0.0)  # a ratio of non-negative means is never negative
    return Outcome(
        test=WELCH, n_baseline=n1, n_candidate=n2, p_raw=p, ratio=m2 / m1, ci_low=low, ci_high=high,
        baseline_value=m1, candidate_value=m2, se_log=se / m1 if m2 > 0 else None, df=df,
    )


def fieller(m1: float, m2: float, var1: float, var2: float, q: float) -> tuple[float, float]:
    """Fieller's interval of m2 / m1 for independent means with these variances (of the means) and critical
    value q: the ratios r with (m2 - r m1)² <= q² (var2 + r² var1). Unbounded (-inf, inf) when the baseline
    mean is not significantly different from 0 (m1² <= q² var1)."""
    a = m1 * m1 - q * q * var1
    if a <= 0:
        return -math.inf, math.inf
    b = m1 * m2
    c = m2 * m2 - q * q * var2
    root = math.sqrt(max(b * b - a * c, 0.0))
    return (b - root) / a, (b + root) / a


def compare_repeat_medians(
    baseline: Sequence[np.ndarray],
    candidate: Sequence[np.ndarray],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Outcome:
    """Per-request values of repeated runs: one median per repeat (a repeat without values is left out), then
    Welch's t-test across the repeats' medians; ratio of the mean medians with Welch's interval.

    Two repeats per side can reach any alpha when the repeats agree (a rank test over 2 + 2 values cannot:
    its smallest p is 1/3). No values at all on a side is "not comparable", as for per-request tests.
    """
    base = np.array([float(np.median(v)) for v in baseline if np.asarray(v).size], dtype=float)
    cand = np.array([float(np.median(v)) for v in candidate if np.asarray(v).size], dtype=float)
    if not base.size or not cand.size:
        side = "baseline" if not base.size else "candidate"
        return not_comparable(WELCH_MEDIANS, f"no per-request data in the {side}", base.size, cand.size)
    return replace(compare_means_welch(base, cand, confidence=confidence), test=WELCH_MEDIANS)


POWER = 0.8  # the power of the minimum detectable change


def minimum_detectable_change(se_log: float, df: float, *, alpha: float, min_change: float,
                              power: float = POWER) -> float:
    """The smallest change (a fraction: 0.12 = 12 %) found with this power by a test whose log-ratio has this
    standard error: its estimate must clear both the critical value at alpha and the practical threshold,
    so c = max(t_(1-alpha/2) * se, log(1 + min_change)) + t_power * se, reported as exp(c) - 1."""
    from scipy.stats import t as student_t

    df = min(df, 1e6)
    reach = max(float(student_t.ppf(1 - alpha / 2, df)) * se_log, math.log1p(min_change))
    return math.expm1(reach + float(student_t.ppf(power, df)) * se_log)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (monotone, capped at 1)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def classify(p_adjusted: float, ratio: float, *, alpha: float, min_change: float, higher_is_better: bool) -> Verdict:
    """faster / slower only when significant AND |ratio - 1| > min_change; otherwise no significant difference."""
    if p_adjusted < alpha and abs(ratio - 1.0) > min_change:
        improved = ratio > 1.0 if higher_is_better else ratio < 1.0
        return FASTER if improved else SLOWER
    return NO_DIFFERENCE


def hypotheses(keys: Sequence[Hashable], p_values: Sequence[float]) -> list[int]:
    """Index of each test's hypothesis in the Holm family: tests with the same key (one run, scenario and source
    metric, e.g. TTFT and the prefill rate derived from it) and the same p-value are the same numbers seen twice
    (one rejects exactly when the other does) and count once."""
    found: dict[Hashable, list[tuple[float, int]]] = {}
    out: list[int] = []
    count = 0
    for key, p in zip(keys, p_values):
        same = found.setdefault(key, [])
        match = next((h for q, h in same if math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-300)), None)
        if match is None:
            match, count = count, count + 1
            same.append((p, match))
        out.append(match)
    return out


def decide(
    outcomes: Sequence[Outcome],
    higher_is_better: Sequence[bool],
    *,
    alpha: float,
    min_change: float,
    same: Optional[Sequence[Hashable]] = None,
) -> list[Outcome]:
    """Apply Holm-Bonferroni over every hypothesis that has a p-value (`same`: a key per outcome, see
    `hypotheses`; None: every test its own), then give each its verdict."""
    if len(outcomes) != len(higher_is_better):
        raise ValueError("one higher_is_better flag per outcome")
    open_idx = [i for i, o in enumerate(outcomes) if o.verdict is None]
    p_raws: list[float] = []
    ratios: list[float] = []
    for i in open_idx:
        p_raw, ratio = outcomes[i].p_raw, outcomes[i].ratio
        if p_raw is None or ratio is None:
            raise ValueError(f"outcome {i} has no p-value or ratio but no verdict either")
        p_raws.append(p_raw)
        ratios.append(ratio)
    which = hypotheses([same[i] if same is not None else i for i in open_idx], p_raws)
    distinct = [p_raws[which.index(h)] for h in range(len(set(which)))]
    family = holm(distinct)
    adjusted = [family[h] for h in which]
    out = list(outcomes)
    lone = alpha / max(len(distinct), 1)  # what Holm asks of a change that is the family's only one
    for i, p_adj, ratio in zip(open_idx, adjusted, ratios):
        o = outcomes[i]
        verdict = classify(p_adj, ratio, alpha=alpha, min_change=min_change,
                           higher_is_better=higher_is_better[i])
        mdc = None
        if o.se_log is not None and o.df is not None and o.se_log > 0:
            mdc = minimum_detectable_change(o.se_log, o.df, alpha=lone, min_change=min_change)
        out[i] = replace(o, p_adjusted=p_adj, verdict=verdict, mdc=mdc)
    return out


def family_size(keys: Sequence[Hashable], outcomes: Sequence[Outcome]) -> int:
    """The number of hypotheses of the Holm family (`decide`'s count)."""
    tested = [(k, o.p_raw) for k, o in zip(keys, outcomes) if o.p_raw is not None]
    return len(set(hypotheses([k for k, _ in tested], [p for _, p in tested])))
