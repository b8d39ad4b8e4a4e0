"""The checks on imported files, as a user imports them (`import-legacy`): a file judged with what it says (its
speculative counters, its summaries, its two output totals), one-token outputs without a TPOT, degenerate outputs
(docs/VALIDITY.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.plausibility import repetitive_outputs
from sskj_results.analysis.validity import DEFAULT_THRESHOLDS
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Scenario

PROSE = ("The committee reviewed the proposal in detail and asked for a revised budget, a clearer schedule and "
         "letters of support from two partner institutions before the next meeting in spring.")

# the metrics derived from TPOT follow it into doubt (contract/metrics.py derived_from)
DERIVED = ("slo_attainment", "request_goodput", "interactivity")


def imported(tmp_path: Path, name: str, *runs: dict[str, Any]) -> list[Scenario]:
    raw = tmp_path / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    (raw / name).write_text("\n".join(json.dumps(r) for r in runs) + "\n")
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "out"), "--chip", "cpu",
                                       "--model", "tiny"])
    assert result.exit_code == 0, result.output
    return [s for run in sorted((tmp_path / "out").iterdir()) if run.is_dir() for s in load_run(run).scenarios]


def check(scenario: Scenario, name: str):  # noqa: ANN201 - a ValidityCheck
    assert scenario.validity is not None
    return next(c for c in scenario.validity.checks if c.name == name)


def sglang_summary(**extra: Any) -> dict[str, Any]:
    """An sglang.bench_serving line without per-request data."""
    run: dict[str, Any] = {
        "backend": "sglang", "dataset_name": "random", "request_rate": "inf", "max_concurrency": 4,
        "random_input_len": 128, "random_output_len": 64, "random_range_ratio": 1.0, "num_prompts": 64,
        "completed": 64, "duration": 10.0, "total_input_tokens": 8192, "total_output_tokens": 4096,
        "total_output_tokens_retokenized": 4101, "request_throughput": 6.4, "output_throughput": 409.6,
        "mean_ttft_ms": 50.0, "median_ttft_ms": 48.0, "p99_ttft_ms": 80.0,
        "mean_e2e_latency_ms": 620.0, "median_e2e_latency_ms": 610.0, "p99_e2e_latency_ms": 700.0,
        "mean_tpot_ms": 9.0, "median_tpot_ms": 8.9, "p99_tpot_ms": 11.0,
        "mean_itl_ms": 9.0, "median_itl_ms": 8.7, "p99_itl_ms": 14.0,
    }
    run.update(extra)
    return run


def test_a_clean_summary_gains_no_flag(tmp_path: Path) -> None:
    (s,) = imported(tmp_path, "sglang_1201_4_128_64.jsonl", sglang_summary())
    for name in ("retokenized_tokens", "latency_order", "streaming_summary"):
        assert check(s, name).ok is True, check(s, name).message
    assert s.latencies.tpot_ms.mean == 9.0


def test_a_summary_only_chunked_file_is_flagged_with_its_numbers(tmp_path: Path) -> None:
    (s,) = imported(tmp_path, "sglang_1201_4_128_64.jsonl", sglang_summary(median_itl_ms=0.014, mean_itl_ms=12.0))
    c = check(s, "streaming_summary")
    assert c.ok is False and "median ITL 0.014 ms against mean ITL 12 ms (0.1%), below 10%" in c.message
    assert s.validity is not None and s.validity.unreliable_metrics == ["tpot_ms", "itl_ms", *DERIVED]


def test_tokens_never_produced_are_flagged_from_the_files_two_totals(tmp_path: Path) -> None:
    (s,) = imported(tmp_path, "sglang_1201_4_128_64.jsonl",
                    sglang_summary(total_output_tokens=218257, total_output_tokens_retokenized=2356))
    c = check(s, "retokenized_tokens")
    assert c.ok is False
    assert "counted 218,257 output tokens; its generated texts retokenize to 2,356 (1.1% of them)" in c.message


def test_a_median_ttft_above_the_median_e2e_is_flagged(tmp_path: Path) -> None:
    (s,) = imported(tmp_path, "sglang_1201_4_128_64.jsonl",
                    sglang_summary(median_ttft_ms=98.006, median_e2e_latency_ms=97.987))
    c = check(s, "latency_order")
    assert c.ok is False and "median TTFT 98.006 ms > median E2E 97.987 ms" in c.message


@pytest.mark.parametrize("details", [False, True])
def test_one_token_outputs_have_no_tpot(tmp_path: Path, details: bool) -> None:
    n = 8
    run = sglang_summary(random_output_len=1, total_output_tokens=n, total_output_tokens_retokenized=n,
                         num_prompts=n, completed=n, mean_tpot_ms=0.0, median_tpot_ms=0.0, p99_tpot_ms=0.0,
                         mean_itl_ms=0.0, median_itl_ms=0.0, p99_itl_ms=0.0,
                         mean_e2e_latency_ms=50.0, median_e2e_latency_ms=48.0, p99_e2e_latency_ms=80.0)
    if details:
        run.update(input_lens=[128] * n, output_lens=[1] * n, ttfts=[0.05] * n, itls=[[] for _ in range(n)],
                   generated_texts=["a"] * n, errors=[""] * n)
    (s,) = imported(tmp_path, "sglang_1201_4_128_1.jsonl", run)
    assert s.latencies.tpot_ms.mean is None and s.latencies.tpot_ms.p50 is None and s.latencies.tpot_ms.p99 is None
    assert s.latencies.itl_ms.mean is None
    assert any("TPOT and ITL unknown: every successful request returned one output token" in note for note in s.notes)
    assert s.latencies.ttft_ms.mean == 50.0  # the rest as the client wrote it


def test_two_token_outputs_keep_the_clients_tpot_as_written(tmp_path: Path) -> None:
    n = 8  # the boundary: one gap per request is a gap to time, even when the client says it took 0.0 ms
    (s,) = imported(tmp_path, "sglang_1201_4_128_2.jsonl",
                    sglang_summary(random_output_len=2, total_output_tokens=2 * n, total_output_tokens_retokenized=2 * n,
                                   num_prompts=n, completed=n, mean_tpot_ms=0.0, median_tpot_ms=0.0, p99_tpot_ms=0.0))
    assert s.latencies.tpot_ms.mean == 0.0 and not any("no gap to time" in note for note in s.notes)


def vllm_detailed(tokens_per_chunk: int, counters: bool) -> dict[str, Any]:
    """`vllm bench serve --save-detailed` of 8 requests of 33 tokens streamed tokens_per_chunk at a time, with the
    client's spec_decode_* counters (4 draft tokens per step, acceptance 2.86) when counters."""
    n, out = 8, 33
    chunks = (out - 1) // tokens_per_chunk
    rng = np.random.default_rng(3)
    itls = [list(np.round(rng.uniform(0.02, 0.03, chunks), 4)) for _ in range(n)]
    run: dict[str, Any] = {
        "date": "20251201-101500", "backend": "vllm", "endpoint_type": "openai", "dataset_name": "random",
        "model_id": "tiny", "request_rate": "inf", "max_concurrency": 2, "num_prompts": n, "duration": 4.0,
        "completed": n, "failed": 0, "total_input_tokens": 128 * n, "total_output_tokens": out * n,
        "request_throughput": 2.0, "output_throughput": 66.0, "random_range_ratio": 0.0,
        "input_lens": [128] * n, "output_lens": [out] * n, "ttfts": [0.05] * n, "itls": itls,
        "generated_texts": [PROSE] * n, "errors": [""] * n,
        "mean_ttft_ms": 50.0, "median_ttft_ms": 50.0, "p99_ttft_ms": 50.0,
    }
    if counters:  # acceptance 1 + accepted / drafts = 1 + 186 / 100
        run.update(spec_decode_num_drafts=100, spec_decode_draft_tokens=400, spec_decode_accepted_tokens=186,
                   spec_decode_acceptance_length=2.86, spec_decode_per_position_acceptance_rates=[0.7, 0.5, 0.4, 0.26])
    return run


def test_a_speculative_stream_is_judged_with_the_files_own_counters(tmp_path: Path) -> None:
    (s,) = imported(tmp_path / "a", "vllm_1201_2_128_33.json", vllm_detailed(tokens_per_chunk=3, counters=True))
    c = check(s, "streaming_granularity")
    assert c.ok is True and "more than 5 (1 + 4 draft tokens)" in c.message
    assert check(s, "acceptance").ok is True
    (plain,) = imported(tmp_path / "b", "vllm_1201_2_128_33.json", vllm_detailed(tokens_per_chunk=3, counters=False))
    c = check(plain, "streaming_granularity")
    assert c.ok is False and "8 of 8 successful requests got more than 1.5 output tokens" in c.message


def test_whitespace_and_digit_runs_are_degenerate_outputs() -> None:
    texts = ["   \n\n   ", "0000000000000000000000", "1 1 1 1 1 1 1 1 1 1 1 1", PROSE]
    c = repetitive_outputs(texts, DEFAULT_THRESHOLDS)
    assert c.ok is False and c.value == 0.75 and "3 of 4 saved outputs" in c.message
    short = repetitive_outputs(["42", "Yes.", "3.14", PROSE], DEFAULT_THRESHOLDS)  # short answers stay unjudged
    assert short.ok is True and short.value == 0.0


DATA_RAW = Path(__file__).resolve().parent / "data" / "raw"
NEW_CHECKS = ("retokenized_tokens", "latency_order", "streaming_summary")


@pytest.mark.parametrize("which", ["shared-fixtures", "tests-data-raw"])
def test_the_real_files_gain_no_new_flag(which: str, request: pytest.FixtureRequest) -> None:
    """The real client files we hold (vLLM CPU engine; sglang.bench_serving and vllm bench serve) stay clean: every
    new check passes, their streaming is judged as before, and their TPOT is the client's."""
    from sskj_results.ingest.evidence import judge_run
    from sskj_results.ingest.scenario import read_raw_file

    folder = request.getfixturevalue("shared_raw") if which == "shared-fixtures" else DATA_RAW

    if not folder.is_dir():
        pytest.skip(f"{folder} is not on this machine")
    judged = 0
    for path in sorted(folder.iterdir()):
        for run in read_raw_file(path, path.name, digest=False).runs:
            checks = {c.name: c for c in judge_run(run).checks}
            for name in NEW_CHECKS:
                assert checks[name].ok is True, (path.name, checks[name].message)
            assert checks["streaming_granularity"].ok is True, (path.name, checks["streaming_granularity"].message)
            assert run.client["tpot_ms"]["mean"] > 0
            judged += 1
    assert judged == 5
