"""sskj_results.analysis.stats on synthetic data whose truth is known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sskj_results.analysis import stats
from sskj_results.analysis.stats import (
    FASTER, INSUFFICIENT, NO_DIFFERENCE, NOT_COMPARABLE, SLOWER, Outcome, bootstrap_medians, compare_latency,
    compare_means_welch, decide, holm, median_ratio_ci, min_mann_whitney_p,
)

ALPHA = 0.05
MIN_CHANGE = 0.05


def latency_sample(n: int, median: float, seed: int, sigma: float = 0.3) -> np.ndarray:
    return median * np.random.default_rng(seed).lognormal(0.0, sigma, n)


def verdict(base: np.ndarray, cand: np.ndarray, **kw) -> Outcome:
    outcome = compare_latency(base, cand, alpha=ALPHA, **kw)
    if outcome.verdict is not None:
        return outcome
    return decide([outcome], [False], alpha=ALPHA, min_change=MIN_CHANGE)[0]


# --------------------------------------------------------------------------- sample-size floor


def test_min_mann_whitney_p_is_two_over_binomial():
    assert min_mann_whitney_p(3, 3) == pytest.approx(2 / 20)
    assert min_mann_whitney_p(4, 4) == pytest.approx(2 / 70)
    assert min_mann_whitney_p(2, 10) == pytest.approx(2 / 66)
    assert min_mann_whitney_p(0, 5) == 1.0
    assert min_mann_whitney_p(1, 1) == 1.0
    assert min_mann_whitney_p(2000, 2000) == 0.0  # underflows; no OverflowError


def test_three_per_side_is_insufficient_even_for_a_huge_shift():
    out = compare_latency(np.array([100.0, 101, 102]), np.array([10.0, 11, 12]), alpha=ALPHA)
    assert out.verdict == INSUFFICIENT
    assert out.p_raw is None
    assert out.ratio == pytest.approx(11 / 101)
    assert "0.1 > alpha 0.05" in out.reason


def test_four_per_side_can_reach_alpha():
    out = verdict(np.array([100.0, 101, 102, 103]), np.array([10.0, 11, 12, 13]))
    assert out.verdict == FASTER
    assert out.p_raw == pytest.approx(2 / 70)


# --------------------------------------------------------------------------- known truth


def test_same_distribution_is_no_significant_difference():
    base = latency_sample(300, 100.0, seed=1)
    cand = latency_sample(300, 100.0, seed=2)
    out = verdict(base, cand)
    assert out.verdict == NO_DIFFERENCE
    assert out.ci_low < 1.0 < out.ci_high


def test_identical_inputs_are_not_significant():
    base = latency_sample(200, 50.0, seed=3)
    out = verdict(base, base.copy())
    assert out.verdict == NO_DIFFERENCE
    assert out.ratio == 1.0
    assert out.p_raw == pytest.approx(1.0)


def test_forty_percent_lower_latency_is_faster():
    base = latency_sample(300, 100.0, seed=4)
    cand = latency_sample(300, 60.0, seed=5)
    out = verdict(base, cand)
    assert out.verdict == FASTER
    assert 0.5 < out.ratio < 0.7
    assert out.ci_high < 1.0
    assert out.p_adjusted < 1e-10


def test_forty_percent_higher_latency_is_slower():
    base = latency_sample(300, 60.0, seed=6)
    cand = latency_sample(300, 100.0, seed=7)
    out = verdict(base, cand)
    assert out.verdict == SLOWER
    assert out.ratio > 1.4
    assert out.ci_low > 1.0


def test_significant_but_small_change_is_not_reported():
    base = latency_sample(20000, 100.0, seed=8, sigma=0.05)
    cand = latency_sample(20000, 97.0, seed=9, sigma=0.05)
    out = compare_latency(base, cand, alpha=ALPHA)
    assert out.p_raw < 1e-6  # clearly significant ...
    decided = decide([out], [False], alpha=ALPHA, min_change=MIN_CHANGE)[0]
    assert decided.verdict == NO_DIFFERENCE  # ... but only 3 %, below --min-change
    assert decide([out], [False], alpha=ALPHA, min_change=0.01)[0].verdict == FASTER


def test_empty_side_is_not_comparable():
    out = compare_latency(np.array([]), latency_sample(50, 10.0, seed=10), alpha=ALPHA)
    assert out.verdict == NOT_COMPARABLE
    assert out.reason == "no per-request data in the baseline"
    out = compare_latency(latency_sample(50, 10.0, seed=10), np.array([]), alpha=ALPHA)
    assert out.reason == "no per-request data in the candidate"


def test_constant_samples_do_not_divide_by_zero():
    out = verdict(np.full(30, 5.0), np.full(30, 5.0))
    assert out.verdict == NO_DIFFERENCE
    assert out.p_raw == 1.0


# --------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("n", [1, 2, 7, 8, 51, 300])
def test_bootstrap_medians_match_the_naive_bootstrap(n):
    x = np.random.default_rng(n).lognormal(size=n)
    fast = bootstrap_medians(x, 40000, np.random.default_rng(1))
    idx = np.random.default_rng(2).integers(0, n, size=(40000, n))
    naive = np.median(x[idx], axis=1)
    # Same distribution: the two empirical CDFs agree everywhere (Kolmogorov-Smirnov distance).
    grid = np.union1d(fast, naive)
    cdf_fast = np.searchsorted(np.sort(fast), grid, side="right") / fast.size
    cdf_naive = np.searchsorted(np.sort(naive), grid, side="right") / naive.size
    assert np.abs(cdf_fast - cdf_naive).max() < 0.015
    assert fast.mean() == pytest.approx(naive.mean(), rel=0.01)


def test_bootstrap_values_are_midpoints_of_sample_values():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    meds = bootstrap_medians(x, 5000, np.random.default_rng(0))
    allowed = {(a + b) / 2 for a in x for b in x}
    assert set(np.unique(meds)) <= allowed


def test_bootstrap_ci_is_reproducible_and_seed_dependent():
    base = latency_sample(100, 100.0, seed=11)
    cand = latency_sample(100, 80.0, seed=12)
    a = median_ratio_ci(base, cand, seed=1)
    assert a == median_ratio_ci(base, cand, seed=1)
    b = median_ratio_ci(base, cand, seed=2)
    assert a[0] == b[0]  # the point estimate does not depend on the seed
    assert (a[1], a[2]) != (b[1], b[2])
    assert a[1] < a[0] < a[2]


def test_bootstrap_ci_covers_the_true_ratio():
    true_ratio = 0.8
    covered = 0
    for seed in range(40):
        base = latency_sample(200, 100.0, seed=1000 + seed)
        cand = latency_sample(200, 100.0 * true_ratio, seed=2000 + seed)
        _, low, high = median_ratio_ci(base, cand, n_resamples=1000, seed=seed)
        covered += low <= true_ratio <= high
    assert covered >= 34  # nominal 95 %: 38 of 40


# --------------------------------------------------------------------------- Holm


def test_holm_adjusts_in_input_order():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_holm_is_applied_over_the_whole_family():
    outcomes = [Outcome(test=stats.MANN_WHITNEY, n_baseline=10, n_candidate=10, p_raw=0.02, ratio=0.5)] * 3
    decided = decide(outcomes, [False] * 3, alpha=ALPHA, min_change=MIN_CHANGE)
    assert [o.p_adjusted for o in decided] == pytest.approx([0.06, 0.06, 0.06])
    assert {o.verdict for o in decided} == {NO_DIFFERENCE}
    alone = decide(outcomes[:1], [False], alpha=ALPHA, min_change=MIN_CHANGE)[0]
    assert alone.verdict == FASTER


def test_final_verdicts_are_kept_and_not_counted_in_the_family():
    done = Outcome(test=stats.MANN_WHITNEY, n_baseline=3, n_candidate=3, verdict=INSUFFICIENT)
    open_ = Outcome(test=stats.MANN_WHITNEY, n_baseline=50, n_candidate=50, p_raw=0.03, ratio=1.3)
    decided = decide([done, open_], [False, False], alpha=ALPHA, min_change=MIN_CHANGE)
    assert decided[0] is done
    assert decided[1].p_adjusted == pytest.approx(0.03)
    assert decided[1].verdict == SLOWER


def test_an_error_is_never_a_verdict():
    broken = Outcome(test=stats.MANN_WHITNEY, n_baseline=5, n_candidate=5)  # no p-value, no verdict
    with pytest.raises(ValueError, match="no p-value"):
        decide([broken], [False], alpha=ALPHA, min_change=MIN_CHANGE)
    with pytest.raises(ValueError):
        decide([broken], [], alpha=ALPHA, min_change=MIN_CHANGE)
    with pytest.raises(ValueError):
        bootstrap_medians(np.array([]), 10, np.random.default_rng(0))


# --------------------------------------------------------------------------- Welch (repeated runs)


def test_welch_higher_throughput_is_faster():
    base = np.array([100.0, 102.0, 98.0])
    cand = np.array([150.0, 149.0, 152.0])
    out = compare_means_welch(base, cand)
    assert out.test == stats.WELCH
    assert out.ratio == pytest.approx(cand.mean() / base.mean())
    decided = decide([out], [True], alpha=ALPHA, min_change=MIN_CHANGE)[0]
    assert decided.verdict == FASTER
    reverse = decide([compare_means_welch(cand, base)], [True], alpha=ALPHA, min_change=MIN_CHANGE)[0]
    assert reverse.verdict == SLOWER


def test_welch_interval_is_fiellers_interval_of_the_ratio():
    """Fieller's interval: the ratios r whose difference m2 - r * m1 Welch's t does not reject."""
    from scipy import stats as sps

    base = np.array([100.0, 104.0, 97.0, 101.0])
    cand = np.array([110.0, 118.0, 109.0])
    out = compare_means_welch(base, cand, confidence=0.95)
    v1, v2 = base.var(ddof=1) / 4, cand.var(ddof=1) / 3
    df = (v1 + v2) ** 2 / (v1**2 / 3 + v2**2 / 2)
    q = sps.t.ppf(0.975, df)
    for bound in (out.ci_low, out.ci_high):  # on the boundary: |t| of m2 - r m1 equals q
        assert (cand.mean() - bound * base.mean()) ** 2 == pytest.approx(q * q * (v2 + bound * bound * v1))
    assert out.ci_low < out.ratio < out.ci_high
    assert out.p_raw == pytest.approx(sps.ttest_ind(cand, base, equal_var=False).pvalue)


def test_ratio_intervals_never_go_below_zero():
    """A noisy small candidate: the old interval 1 + (diff - half) / m1 went below 0; a ratio cannot."""
    base = np.array([100.0, 160.0, 40.0])
    cand = np.array([5.0, 60.0, 1.0])
    welch = compare_means_welch(base, cand)
    assert welch.ci_low is not None and welch.ci_low >= 0.0 and welch.ci_low < welch.ratio < welch.ci_high
    from sskj_results.analysis import pooled

    item = pooled.repeats(pooled.MODERATED, base, cand)
    assert isinstance(item, pooled.Repeats)
    (moderated,) = pooled.moderated([item], confidence=0.95)
    assert moderated.ci_low is not None and 0.0 < moderated.ci_low < moderated.ratio < moderated.ci_high


def test_welch_needs_two_repeats_per_side():
    out = compare_means_welch(np.array([100.0]), np.array([120.0, 121.0]))
    assert out.verdict == INSUFFICIENT
    assert out.reason == "1 vs 2 repeats: a test across repeats needs at least 2 per side"


def test_welch_without_variance():
    same = compare_means_welch(np.array([100.0, 100.0]), np.array([100.0, 100.0]))
    assert same.p_raw == 1.0 and same.verdict is None
    differ = compare_means_welch(np.array([100.0, 100.0]), np.array([120.0, 120.0]))
    assert differ.verdict == INSUFFICIENT
    assert "without variance" in differ.reason


def test_welch_same_distribution_is_no_significant_difference():
    rng = np.random.default_rng(5)
    out = compare_means_welch(rng.normal(1000, 20, 5), rng.normal(1000, 20, 5))
    assert decide([out], [True], alpha=ALPHA, min_change=MIN_CHANGE)[0].verdict == NO_DIFFERENCE


def test_repeat_medians_two_repeats_per_side_can_reach_alpha_where_a_rank_test_cannot() -> None:
    """With 2 repeats per side a rank test's smallest p is 1/3; Welch on the repeats' medians reaches alpha."""
    rng = np.random.default_rng(5)
    base = [rng.normal(100.0, 5.0, 40) for _ in range(2)]
    slow = [rng.normal(120.0, 6.0, 40) for _ in range(2)]
    assert stats.min_mann_whitney_p(2, 2) > 0.05
    outcome = stats.compare_repeat_medians(base, slow)
    assert outcome.test == stats.WELCH_MEDIANS and (outcome.n_baseline, outcome.n_candidate) == (2, 2)
    assert outcome.p_raw is not None and outcome.p_raw < 0.05
    assert outcome.ratio == pytest.approx(np.mean([np.median(v) for v in slow]) / np.mean([np.median(v) for v in base]))
    assert outcome.ci_low is not None and outcome.ci_low > 1.0


def test_repeat_medians_test_against_run_to_run_variation() -> None:
    """Two runs whose repeats differ by more than their requests do: a per-request test calls the shift
    significant, the test across repeats does not."""
    rng = np.random.default_rng(11)
    shifts = [0.9, 1.1, 1.0, 1.08, 0.93, 1.02]  # one level per repeat: run-to-run variation
    base = [rng.normal(100.0 * k, 1.0, 200) for k in shifts[:3]]
    cand = [rng.normal(103.0 * k, 1.0, 200) for k in shifts[3:]]
    pooled = stats.compare_latency(np.concatenate(base), np.concatenate(cand), alpha=0.05)
    per_repeat = stats.compare_repeat_medians(base, cand)
    assert pooled.p_raw is not None and pooled.p_raw < 1e-6
    assert per_repeat.p_raw is not None and per_repeat.p_raw > 0.3


def test_repeat_medians_without_values_on_a_side_are_not_comparable() -> None:
    outcome = stats.compare_repeat_medians([np.empty(0), np.empty(0)], [np.ones(3), np.ones(3)])
    assert outcome.verdict == stats.NOT_COMPARABLE and outcome.reason == "no per-request data in the baseline"
    one = stats.compare_repeat_medians([np.arange(5.0) + 1, np.empty(0)], [np.ones(3), np.ones(3) * 2])
    assert one.verdict == stats.INSUFFICIENT and one.n_baseline == 1 and "1 vs 2 repeats" in (one.reason or "")
