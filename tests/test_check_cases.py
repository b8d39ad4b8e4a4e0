"""Each check meets the case it exists for, and its exact boundary (docs/VALIDITY.md): a limit met exactly passes,
one step beyond it fails, so that turning a `<=` into `<` (or the reverse) turns a test red."""

from __future__ import annotations

import numpy as np
import pytest

from sskj_results.analysis.plausibility import degenerate, tpot_bound
from sskj_results.analysis.validity import (DEFAULT_THRESHOLDS, Evidence, judge, latency_order, retokenized_tokens,
                                           streaming_granularity, streaming_summary)

# the metrics derived from TPOT follow it into doubt (contract/metrics.py derived_from)
DERIVED = ("slo_attainment", "request_goodput", "interactivity")


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


# --------------------------------------------------------------------------- the client's own numbers agree


def own(**summaries: dict[str, float]) -> Evidence:
    return Evidence(concurrency=1, output_len=32, success=4, failed=0, summaries=summaries)


def totals(counted: float, retokenized: float | None) -> Evidence:
    return Evidence(concurrency=1, output_len=32, success=4, failed=0, counted_output_tokens=counted,
                    retokenized_output_tokens=retokenized)


@pytest.mark.parametrize("counted, retokenized", [(218_257, 2_356), (285, 3), (26_009, 16_265)])
def test_tokens_counted_but_never_retokenized_fail_with_both_totals(counted: int, retokenized: int) -> None:
    c = retokenized_tokens(totals(counted, retokenized), DEFAULT_THRESHOLDS)
    assert c.ok is False and c.value == pytest.approx((counted - retokenized) / counted)
    assert f"counted {counted:,} output tokens" in c.message and f"retokenize to {retokenized:,}" in c.message
    assert "tokens whose text never arrived" in c.message


def test_retokenized_tokens_boundary_and_the_real_files_direction() -> None:
    assert retokenized_tokens(totals(1000, 800), DEFAULT_THRESHOLDS).ok is True  # exactly 20 % fewer
    assert retokenized_tokens(totals(1000, 799), DEFAULT_THRESHOLDS).ok is False
    # the shared CPU fixtures: a tiny random model's texts retokenize into more tokens than counted (48 vs 5,980)
    assert retokenized_tokens(totals(48, 5_980), DEFAULT_THRESHOLDS).ok is True
    unknown_total = retokenized_tokens(totals(1000, None), DEFAULT_THRESHOLDS)
    assert unknown_total.ok is True and unknown_total.value is None and "not applicable" in unknown_total.message


def test_a_median_ttft_above_the_median_e2e_is_impossible_and_named_with_its_numbers() -> None:
    c = latency_order(own(ttft_ms={"mean": 90.0, "p50": 98.006}, e2e_ms={"mean": 120.0, "p50": 97.987}),
                      DEFAULT_THRESHOLDS)
    assert c.ok is False and c.value == pytest.approx(0.019)
    assert "median TTFT 98.006 ms > median E2E 97.987 ms" in c.message and "mean" not in c.message.split(":")[0]
    # equal is possible (one-token outputs: the first token is the last); the check orders shared statistics only
    assert latency_order(own(ttft_ms={"p50": 97.987, "p99": 300.0}, e2e_ms={"p50": 97.987}), DEFAULT_THRESHOLDS).ok
    assert latency_order(own(ttft_ms={"p50": 1.0}), DEFAULT_THRESHOLDS).value is None


@pytest.mark.parametrize("median, mean", [(0.014, 12.0), (0.17, 2.0), (0.05, 5.3)])
def test_chunking_seen_only_in_the_summaries_marks_tpot_and_itl_unreliable(median: float, mean: float) -> None:
    ev = own(itl_ms={"p50": median, "mean": mean}, tpot_ms={"mean": mean})
    v = judge(ev)
    c = next(c for c in v.checks if c.name == "streaming_summary")
    assert c.ok is False and c.value == pytest.approx(median / mean)
    assert f"median ITL {median:.3g} ms against mean ITL {mean:.3g} ms" in c.message
    assert v.unreliable_metrics == ["tpot_ms", "itl_ms", *DERIVED]


def test_streaming_summary_boundary_and_when_it_does_not_judge() -> None:
    assert streaming_summary(own(itl_ms={"p50": 1.0, "mean": 10.0}), DEFAULT_THRESHOLDS).ok is True  # exactly 10 %
    assert streaming_summary(own(itl_ms={"p50": 0.999, "mean": 10.0}), DEFAULT_THRESHOLDS).ok is False
    # no mean ITL: against the TPOT mean
    by_tpot = streaming_summary(own(itl_ms={"p50": 0.1}, tpot_ms={"mean": 7.0}), DEFAULT_THRESHOLDS)
    assert by_tpot.ok is False and "against TPOT mean 7 ms" in by_tpot.message
    # the real files' ratios (0.82 to 1.28) pass
    assert streaming_summary(own(itl_ms={"p50": 6.45, "mean": 7.86}), DEFAULT_THRESHOLDS).ok is True
    per_request = Evidence(concurrency=1, output_len=32, success=1, failed=0, tokens_per_chunk=np.array([1.0]),
                           summaries={"itl_ms": {"p50": 0.01, "mean": 10.0}})
    assert "not applicable" in streaming_summary(per_request, DEFAULT_THRESHOLDS).message
    speculative = Evidence(concurrency=1, output_len=32, success=1, failed=0, speculative=True, draft_tokens=4,
                           summaries={"itl_ms": {"p50": 0.01, "mean": 10.0}})
    assert streaming_summary(speculative, DEFAULT_THRESHOLDS).ok is None


def test_a_digit_run_is_degenerate_from_eleven_digits_on() -> None:
    assert degenerate("1" * 11) and degenerate("1 2 3 4 5 6 7 8 9 0 1") and degenerate(" \n\t ")
    assert not degenerate("1" * 10) and not degenerate("") and not degenerate("Chapter 12345678901")


def test_how_to_change_a_lower_bound_and_an_impossible_order() -> None:
    from sskj_results.analysis.grades import RULES, passing_limit

    low = streaming_summary(own(itl_ms={"p50": 0.014, "mean": 12.0}), DEFAULT_THRESHOLDS)
    limit = passing_limit("streaming_summary", [(low, 4)])
    assert limit is not None and limit <= low.value and limit > low.value / 2  # the value itself passes, 0 is not it
    short = retokenized_tokens(totals(26_009, 16_265), DEFAULT_THRESHOLDS)
    limit = passing_limit("retokenized_tokens", [(short, 4)])
    assert limit is not None and short.value is not None and limit >= short.value
    assert RULES["latency_order"].field == ""  # no threshold makes TTFT above E2E possible


def test_compare_judges_a_recorded_median_itl_share_again_as_a_lower_bound() -> None:
    from types import SimpleNamespace

    from sskj_results.analysis.grades import regrade
    from sskj_results.contract.models import ValidityThresholds

    v = judge(own(itl_ms={"p50": 0.5, "mean": 10.0}))  # 5 %
    point = SimpleNamespace(concurrency=1, failed=0, acceptance=None, output_len=32)
    looser = regrade(v, point, ValidityThresholds(min_median_itl_share=0.05))  # type: ignore[arg-type]
    stricter = regrade(v, point, ValidityThresholds(min_median_itl_share=0.06))  # type: ignore[arg-type]
    assert looser is not None and stricter is not None
    assert next(c for c in looser.checks if c.name == "streaming_summary").ok is True
    assert next(c for c in stricter.checks if c.name == "streaming_summary").ok is False


def test_a_speculative_run_without_a_plain_run_of_its_family_or_a_draft_count_is_unpaired() -> None:
    from sskj_results.analysis.speccompare import unpaired
    from sskj_results.contract.models import Config

    from .test_plausibility import seed_002_runs

    sglang, vllm, dspark = seed_002_runs()
    (line,) = unpaired([sglang, dspark], ["sglang", "vllm-dspark"])
    assert line.startswith("vllm-dspark: ") and "no plain run of its engine family (vllm)" in line
    assert unpaired([vllm, dspark], ["vllm", "vllm-dspark"]) == []
    dspark.results = dspark.results.model_copy(update={"config": Config(spec_method="dspark")})
    (line,) = unpaired([vllm, dspark], ["vllm", "vllm-dspark"])
    assert "unknown number of draft tokens per step" in line
