"""The metric engine's fast paths give numpy's own results, bit for bit (analysis/metrics.py, issue 46): percentiles
from one partition, gaps flattened a request at a time."""

from __future__ import annotations

import numpy as np
import pytest

from itertools import chain
from typing import Any

from sskj_results.analysis.metrics import flatten_gaps, percentiles, summarize

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


def numpys_flat(itls: list[list[Any]]) -> np.ndarray:
    return np.fromiter(chain.from_iterable(itls), dtype=np.float64, count=sum(map(len, itls)))


def test_flattened_gaps_are_numpys_and_writable() -> None:
    rng = np.random.default_rng(3)
    itls: list[list[Any]] = [rng.gamma(2.0, 0.01, int(k)).tolist() for k in rng.integers(0, 300, 200)]
    itls += [[], [0, 1, 2], [True, 0.5], [10**30, 1e-300, 5e-324], [1.7976931348623157e308]]
    flat, counts = flatten_gaps(itls)
    assert flat.tobytes() == numpys_flat(itls).tobytes()
    assert counts.tolist() == [len(g) for g in itls]
    flat[0] = 1.0  # an array of its own, not a view of something read-only
    assert flatten_gaps([[], []])[0].size == 0


@pytest.mark.parametrize("odd", [None, "0.5", 10**400, [0.1]])
def test_a_gap_that_is_not_a_float_is_left_to_numpy(odd: Any) -> None:
    itls = [[0.1, 0.2], [0.3, odd, 0.4]]
    try:
        expected = numpys_flat(itls)
    except (TypeError, ValueError, OverflowError) as exc:
        with pytest.raises(type(exc)):
            flatten_gaps(itls)
    else:
        assert np.array_equal(flatten_gaps(itls)[0], expected, equal_nan=True)
