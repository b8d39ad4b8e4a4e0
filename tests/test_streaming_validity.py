"""The streaming-granularity and acceptance checks: bursts of tokens per chunk, speculative steps, null acceptance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
from click.testing import CliRunner

from sskj_results.analysis.grades import grade, mark, regrade
from sskj_results.analysis.validity import Evidence, judge
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Scenario, ValidityThresholds
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.ingest.sidecars import acceptance_counter_names

from .test_validity import PROM, Case

DATA = Path(__file__).resolve().parent / "data"
SPEC_PROM = """# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{model_name="tiny"}} {drafts}
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{{model_name="tiny"}} {draft_tokens}
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{model_name="tiny"}} {accepted}
"""


def chunked(case: Case, run_dir: Path, tokens_per_chunk: list[float]) -> None:
    """Write case with request i streaming its tokens in chunks of tokens_per_chunk[i] (its gaps pooled to match)."""
    case.write(run_dir)
    raw = run_dir / "raw_outputs" / f"{case.stem}.jsonl"
    data = json.loads(raw.read_text())
    itls = []
    for n, per in zip(data["output_lens"], tokens_per_chunk):
        gaps = max(1, round(n / per)) - 1
        itls.append([(case.request_s - 0.1) / gaps] * gaps if gaps else [])
    data["itls"] = itls
    raw.write_text(json.dumps(data) + "\n")


def run_with(tmp_path: Path, tokens_per_chunk: list[float], spec: Optional[tuple[str, int]] = None,
             accepted_per_draft: Optional[float] = None, prompts: int = 8) -> Scenario:
    run = tmp_path / "run"
    config = {"server_args": "vllm serve tiny"}
    if spec is not None:
        settings = json.dumps({"method": spec[0], "num_speculative_tokens": spec[1]})
        config["server_args"] = f"vllm serve tiny --speculative-config '{settings}'"
    write_metadata(run, {"experiment": "validity", "model": "tiny", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   config, detect=False)
    case = Case(prompts=prompts)
    chunked(case, run, tokens_per_chunk)
    if spec is not None and accepted_per_draft is not None:
        metrics = run / "server_metrics"
        for side, drafts in (("before", 100.0), ("after", 300.0)):
            path = metrics / f"{case.stem}.{side}.prom"
            path.write_text(path.read_text() + SPEC_PROM.format(drafts=drafts, draft_tokens=drafts * spec[1],
                                                                 accepted=drafts * accepted_per_draft))
    outcome = parse_run_dir(run)
    assert not outcome.problems, outcome.problems
    (scenario,) = load_run(run).scenarios
    return scenario


def check(scenario: Scenario, name: str):  # noqa: ANN201 - a ValidityCheck
    assert scenario.validity is not None
    (found,) = [c for c in scenario.validity.checks if c.name == name]
    return found


def test_a_point_streamed_token_by_token_passes(tmp_path: Path) -> None:
    scenario = run_with(tmp_path, [1.0] * 8)
    found = check(scenario, "streaming_granularity")
    assert found.ok is True and found.value == 0.0 and found.threshold == 0.25
    assert scenario.validity is not None and scenario.validity.unreliable_metrics == []
    assert grade(scenario.validity) == "valid"


def test_a_point_whose_tokens_arrive_in_bursts_has_tpot_and_itl_unreliable_not_the_point(tmp_path: Path) -> None:
    # the CPU run: half the requests get their 32 tokens in two chunks
    scenario = run_with(tmp_path, [16.0] * 4 + [1.0] * 4)
    found = check(scenario, "streaming_granularity")
    assert found.ok is False and found.value == 0.5
    assert found.message.startswith("4 of 8 successful requests got more than 1.5 output tokens per streamed chunk "
                                    "(chunks less than 0.1 ms apart count as one) (50.0%")
    assert "TPOT and ITL are unreliable" in found.message
    assert "TTFT is the time to the first chunk, E2E and throughput stand" in found.message
    # TPOT and ITL, and what is computed from TPOT: goodput (TPOT below the SLO), interactivity (1000 / TPOT)
    assert scenario.validity is not None and scenario.validity.unreliable_metrics == [
        "tpot_ms", "itl_ms", "slo_attainment", "request_goodput", "interactivity"]
    assert grade(scenario.validity) == "partial"
    assert mark(scenario.validity) == "◐ TPOT, ITL unreliable: streaming_granularity"


def test_one_token_chunks_read_back_to_back_are_a_burst(tmp_path: Path) -> None:
    # the CPU engine at concurrency 1 (recorded 2026-12-02): a TTFT of ~180 ms, then all 63 one-token chunks within
    # 0.4 ms. One token per chunk as counted, one chunk as read: bursty (TPOT 0.006 ms was the symptom)
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "validity", "model": "tiny", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve tiny"}, detect=False)
    case = Case(prompts=8)
    case.write(run)
    raw = run / "raw_outputs" / f"{case.stem}.jsonl"
    data = json.loads(raw.read_text())
    for i, n in enumerate(data["output_lens"]):
        data["itls"][i] = [0.00001] * (n - 1) if i < 4 else [0.002] * (n - 1)  # 10 µs apart, or 2 ms apart
    raw.write_text(json.dumps(data) + "\n")
    assert not parse_run_dir(run).problems
    (scenario,) = load_run(run).scenarios
    found = check(scenario, "streaming_granularity")
    assert found.ok is False and found.value == 0.5
    assert scenario.validity is not None and scenario.validity.unreliable_metrics[:2] == ["tpot_ms", "itl_ms"]


def test_a_few_multi_token_chunks_leave_the_point_valid(tmp_path: Path) -> None:
    # as the real CPU files: a request now and then with several tokens in one chunk (1 of 8 = 12.5 %)
    scenario = run_with(tmp_path, [4.0] + [1.0] * 7)
    found = check(scenario, "streaming_granularity")
    assert found.ok is True and found.value == 0.125


def test_the_real_cpu_files_pass_the_streaming_check(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["import-legacy", str(DATA / "raw"), "--out", str(tmp_path / "out"),
                                       "--chip", "cpu"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    values = []
    for path in sorted((tmp_path / "out").rglob("results.json")):
        for scenario in load_run(path).scenarios:
            found = check(scenario, "streaming_granularity")
            assert found.ok is True, found.message
            values.append(found.value)
    assert max(values) > 0  # they do carry multi-token chunks (up to 1 of 12 requests)


def test_a_speculative_run_with_one_plus_k_tokens_per_chunk_is_not_flagged(tmp_path: Path) -> None:
    scenario = run_with(tmp_path, [4.0] * 8, spec=("ngram", 3), accepted_per_draft=2.0)
    found = check(scenario, "streaming_granularity")
    assert found.ok is True and found.value == 0.0, found.message
    assert "4 (1 + 3 draft tokens)" in found.message
    assert check(scenario, "acceptance").ok is True and check(scenario, "acceptance").value == 3.0
    assert grade(scenario.validity) == "valid"


def test_a_speculative_run_beyond_one_plus_k_tokens_per_chunk_is_flagged(tmp_path: Path) -> None:
    scenario = run_with(tmp_path, [8.0] * 8, spec=("ngram", 3), accepted_per_draft=2.0)
    assert check(scenario, "streaming_granularity").ok is False


def test_the_same_bursts_without_speculation_are_flagged(tmp_path: Path) -> None:
    scenario = run_with(tmp_path, [4.0] * 8)
    assert check(scenario, "streaming_granularity").ok is False


def test_a_speculative_phase_without_acceptance_fails_the_acceptance_check_and_says_why(tmp_path: Path) -> None:
    scenario = run_with(tmp_path, [1.0] * 8, spec=("ngram", 3))
    found = check(scenario, "acceptance")
    assert found.ok is False and found.value is None
    stem = Case().stem
    assert found.message == (f"speculative phase (ngram) without an acceptance length: the client reported none, and "
                             f"server_metrics/{stem}.*.prom hold no speculative counters that moved over the scenario "
                             f"({', '.join(acceptance_counter_names())}); nothing shows that the measured "
                             "engine decoded speculatively")
    # every engine row's acceptance counters, under their own names (catalog/engines.py)
    assert {"vllm:spec_decode_*", "sglang:spec_verify_calls_total"} <= set(acceptance_counter_names())
    assert grade(scenario.validity) == "qualified" and mark(scenario.validity) == "⚠ acceptance"


def test_a_speculative_phase_without_server_metrics_says_which_files_are_missing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    scenario = run_with(tmp_path, [1.0] * 8, spec=("ngram", 3))
    stem = Case().stem
    for side in ("before", "after"):
        (run / "server_metrics" / f"{stem}.{side}.prom").unlink()
    parse_run_dir(run, validity=ValidityThresholds(max_bursty_share=0.3))  # new thresholds: every scenario judged again
    (scenario,) = load_run(run).scenarios
    assert check(scenario, "acceptance").message == (
        f"speculative phase (ngram) without an acceptance length: the client reported none, and "
        f"server_metrics/{stem}.before.prom and server_metrics/{stem}.after.prom are missing; nothing shows that "
        "the measured engine decoded speculatively")


def test_a_plain_phase_passes_the_acceptance_check() -> None:
    ev = Evidence(concurrency=1, output_len=4, success=1, failed=0, speculative=False)
    (found,) = [c for c in judge(ev).checks if c.name == "acceptance"]
    assert found.ok is True and found.message == "not speculative: no acceptance length expected"


def test_unknown_without_per_request_gaps_and_for_an_unknown_draft_length() -> None:
    ev = Evidence(concurrency=1, output_len=4, success=1, failed=0)
    (found,) = [c for c in judge(ev).checks if c.name == "streaming_granularity"]
    assert found.ok is None and "not recorded" in found.message
    ev = Evidence(concurrency=1, output_len=4, success=1, failed=0, tokens_per_chunk=np.array([4.0]),
                  speculative=True, accept_length=2.0)
    (found,) = [c for c in judge(ev).checks if c.name == "streaming_granularity"]
    assert found.ok is None and "unknown number of draft tokens" in found.message


def test_compare_validity_judges_the_recorded_burst_share_again(tmp_path: Path) -> None:
    scenario = run_with(tmp_path, [16.0] * 4 + [1.0] * 4)
    again = regrade(scenario.validity, scenario, ValidityThresholds(max_bursty_share=0.6))
    assert again is not None and again.unreliable_metrics == []
    assert [c.ok for c in again.checks if c.name == "streaming_granularity"] == [True]
