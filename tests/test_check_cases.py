"""Each check meets the case it exists for, and its exact boundary (docs/VALIDITY.md): a limit met exactly passes,
one step beyond it fails, so that turning a `<=` into `<` (or the reverse) turns a test red."""

from __future__ import annotations

import numpy as np
import pytest

from sskj_results.analysis.plausibility import tpot_bound
from sskj_results.analysis.validity import DEFAULT_THRESHOLDS, Evidence, streaming_granularity


def streamed(tokens_per_chunk: list[float], draft_tokens: int | None = None) -> Evidence:
    n = len(tokens_per_chunk)
    return Evidence(concurrency=1, output_len=32, success=n, failed=0,
                    tokens_per_chunk=np.array(tokens_per_chunk, dtype=float),
                    speculative=draft_tokens is not None, draft_tokens=draft_tokens)


# --------------------------------------------------------------------------- streaming_granularity: 25 % bursty


def test_a_bursty_share_of_exactly_25_percent_passes_and_one_more_request_fails() -> None:
    at_limit = streaming_granularity(streamed([3.0, 1.0, 1.0, 1.0]), DEFAULT_THRESHOLDS)
    assert (at_limit.value, at_limit.threshold, at_limit.ok) == (0.25, 0.25, True)
    beyond = streaming_granularity(streamed([3.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0]), DEFAULT_THRESHOLDS)  # 2/7 = 28.6 %
    assert beyond.ok is False and "2 of 7" in beyond.message


def test_a_request_of_exactly_the_tokens_per_chunk_limit_is_not_bursty() -> None:
    # 1.5 tokens per chunk is the plain limit itself; a speculative phase's is 1 + k (k = 4: 5)
    assert streaming_granularity(streamed([1.5, 1.5, 1.5, 1.5]), DEFAULT_THRESHOLDS).value == 0.0
    assert streaming_granularity(streamed([1.51, 1.51, 1.0, 1.0]), DEFAULT_THRESHOLDS).value == 0.5
    assert streaming_granularity(streamed([5.0] * 4, draft_tokens=4), DEFAULT_THRESHOLDS).value == 0.0
    assert streaming_granularity(streamed([5.01] * 4, draft_tokens=4), DEFAULT_THRESHOLDS).value == 1.0


# --------------------------------------------------------------------------- the draft bound: a speedup of 1 + k


def test_a_tpot_speedup_of_exactly_one_plus_k_is_within_the_bound_and_beyond_it_is_not() -> None:
    exactly = tpot_bound(1.0, 6.0, 5, "vllm")
    assert exactly is not None and (exactly.speedup, exactly.bound, exactly.ok) == (6.0, 6.0, True)
    beyond = tpot_bound(1.0, 6.01, 5, "vllm")
    assert beyond is not None and beyond.ok is False and "beyond the draft bound 1 + 5 = 6x" in beyond.message
    assert tpot_bound(1.0, 6.0, None, "vllm") is None  # draft tokens unknown: no bound, not a pass


@pytest.mark.parametrize("spec, plain, ok", [(1.00, 7.08, False), (1.10, 6.49, True)])
def test_the_seed_002_pairs_on_either_side_of_the_bound(spec: float, plain: float, ok: bool) -> None:
    bound = tpot_bound(spec, plain, 5, "vllm")
    assert bound is not None and bound.ok is ok
