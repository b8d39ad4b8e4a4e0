"""Percentiles from one partition are numpy's own, bit for bit (analysis/metrics.py, issue 46)."""

from __future__ import annotations

import numpy as np
import pytest

from sskj_results.analysis.metrics import percentiles, summarize

QSETS = ([50, 90, 95, 99], [90], [90, 95], [99.9], [0, 100], [100], [0], [95, 50, 99, 90],
         [12.5, 37.3, 99.99, 100, 0.01, 50])


def samples() -> list[np.ndarray]:
    rng = np.random.default_rng(46)
    out = []
    for n in [*range(2, 40), 97, 100, 101, 1000, 1001, 20_011]:
        out += [rng.random(n), rng.gamma(2.0, 0.01, n), np.round(rng.random(n) * 5) / 7, np.full(n, 0.125)]
    return out


def test_every_percentile_equals_numpys_bit_for_bit() -> None:
    for sample in samples():
        for qs in QSETS:
            expected = np.percentile(sample, qs)
            got = percentiles(sample, qs)
            assert got.tobytes() == expected.tobytes(), (sample.size, qs, got, expected)


def test_the_sample_is_not_reordered() -> None:
    sample = np.random.default_rng(1).random(1001)
    before = sample.copy()
    percentiles(sample, [50, 90, 99])
    assert np.array_equal(sample, before)


@pytest.mark.parametrize("sample", [np.array([1.0, np.nan, 3.0]), np.arange(11), np.array([0.5]),
                                    np.arange(12, dtype=np.float32) / 7])
def test_nan_integers_single_values_and_other_floats_are_numpys(sample: np.ndarray) -> None:
    expected = np.percentile(sample, [50, 90, 95, 99])
    assert np.array_equal(percentiles(sample, [50, 90, 95, 99]), expected, equal_nan=True)


def test_a_percentile_out_of_range_is_refused_as_numpy_does() -> None:
    with pytest.raises(ValueError):
        percentiles(np.arange(5.0), [101])


def test_summarize_reports_numpys_percentiles_in_ms() -> None:
    gaps = np.random.default_rng(7).gamma(2.0, 0.01, 5001)
    stats = summarize(gaps)
    p50, p90, p95, p99 = np.percentile(gaps, [50, 90, 95, 99]) * 1000
    assert (stats["p50"], stats["p90"], stats["p95"], stats["p99"]) == (p50, p90, p95, p99)
