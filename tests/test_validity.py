"""Validity checks: raw data built to break exactly one check each, through `sskj-results parse`."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.ingest.evidence import server_token_deltas
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.contract.io import load_run
from sskj_results.ingest.metadata import write_metadata
from sskj_results.contract.models import Scenario, ValidityThresholds
from sskj_results.analysis.grades import mark
from sskj_results.analysis.validity import CHECK_ORDER, parse_thresholds, remeasure_prompts

DATA = Path(__file__).resolve().parent / "data" / "validity"
STEM = "cpu_vllm_1130_{c}_{i}_{o}"
PROM = """# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{{engine="0",model_name="tiny"}} {prompt}
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="tiny"}} {generation}
"""


@dataclass(frozen=True)
class Case:
    """One scenario's raw file and side files; every default passes every check."""

    concurrency: int = 2
    input_len: int = 128
    output_len: int = 32
    prompts: int = 8
    request_s: float = 1.0  # each request's end-to-end latency
    idle_s: float = 0.0  # extra benchmark time with nothing in flight
    range_ratio: float = 1.0
    output_lens: Optional[list[int]] = None
    errors: dict[int, str] = field(default_factory=dict)
    server_prompt_extra: float = 0.0  # server prompt tokens = client's * (1 + extra)
    server_generation_extra: float = 0.0
    client_cpu_s: Optional[float] = 2.0
    client_wall_s: float = 10.0

    @property
    def stem(self) -> str:
        return STEM.format(c=self.concurrency, i=self.input_len, o=self.output_len)

    def raw(self) -> dict[str, Any]:
        lens = self.output_lens or [self.output_len] * self.prompts
        ttft = 0.1
        itls = [[(self.request_s - ttft) / (n - 1)] * (n - 1) if n > 1 else [] for n in lens]
        ok = [i not in self.errors for i in range(self.prompts)]
        duration = self.request_s * self.prompts / self.concurrency + self.idle_s
        out_tokens = sum(n for n, good in zip(lens, ok) if good)
        in_tokens = self.input_len * sum(ok)
        return {
            "backend": "vllm", "dataset_name": "random-ids", "request_rate": float("inf"),
            "max_concurrency": self.concurrency, "random_input_len": self.input_len,
            "random_output_len": self.output_len, "random_range_ratio": self.range_ratio,
            "duration": duration, "completed": sum(ok), "total_input_tokens": in_tokens,
            "total_output_tokens": out_tokens, "request_throughput": sum(ok) / duration,
            "input_throughput": in_tokens / duration, "output_throughput": out_tokens / duration,
            "mean_e2e_latency_ms": self.request_s * 1000, "median_ttft_ms": ttft * 1000,
            "mean_ttft_ms": ttft * 1000, "p99_ttft_ms": ttft * 1000,
            "input_lens": [self.input_len] * self.prompts, "output_lens": [n if good else 0 for n, good in zip(lens, ok)],
            "ttfts": [ttft if good else 0.0 for good in ok], "itls": [g if good else [] for g, good in zip(itls, ok)],
            "generated_texts": ["x"] * self.prompts, "errors": [self.errors.get(i, "") for i in range(self.prompts)],
        }

    def write(self, run_dir: Path) -> None:
        data = self.raw()
        (run_dir / "raw_outputs").mkdir(parents=True, exist_ok=True)
        (run_dir / "raw_outputs" / f"{self.stem}.jsonl").write_text(json.dumps(data) + "\n")
        metrics = run_dir / "server_metrics"
        metrics.mkdir(exist_ok=True)
        before = (1000.0, 500.0)  # counters carry earlier traffic (warmup)
        after = (before[0] + data["total_input_tokens"] * (1 + self.server_prompt_extra),
                 before[1] + data["total_output_tokens"] * (1 + self.server_generation_extra))
        (metrics / f"{self.stem}.before.prom").write_text(PROM.format(prompt=before[0], generation=before[1]))
        (metrics / f"{self.stem}.after.prom").write_text(PROM.format(prompt=after[0], generation=after[1]))
        if self.client_cpu_s is not None:
            stats = run_dir / "client_stats"
            stats.mkdir(exist_ok=True)
            (stats / f"{self.stem}.json").write_text(json.dumps({
                "stem": self.stem, "exit_code": 0, "wall_s": self.client_wall_s, "user_cpu_s": self.client_cpu_s * 0.75,
                "system_cpu_s": self.client_cpu_s * 0.25, "max_rss_kib": 300000,
            }))


def new_run(run_dir: Path) -> Path:
    write_metadata(run_dir, {"experiment": "validity", "model": "tiny", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve tiny"}, detect=False)
    return run_dir


def parsed(tmp_path: Path, case: Case, thresholds: Optional[ValidityThresholds] = None) -> Scenario:
    run = new_run(tmp_path / "run")
    case.write(run)
    outcome = parse_run_dir(run, validity=thresholds)
    assert not outcome.problems, outcome.problems
    (scenario,) = load_run(run).scenarios
    return scenario


def states(scenario: Scenario) -> dict[str, Optional[bool]]:
    assert scenario.validity is not None
    assert [c.name for c in scenario.validity.checks] == list(CHECK_ORDER)
    return {c.name: c.ok for c in scenario.validity.checks}


def test_a_clean_point_passes_every_check(tmp_path: Path) -> None:
    scenario = parsed(tmp_path, Case())
    assert states(scenario) == {name: True for name in CHECK_ORDER}
    assert scenario.validity is not None and scenario.validity.ok is True
    assert mark(scenario.validity) == "✔"
    checks = {c.name: c for c in scenario.validity.checks}
    assert checks["prompts_per_slot"].value == 4.0 and checks["prompts_per_slot"].threshold == 4.0
    assert checks["achieved_concurrency"].value == pytest.approx(2.0)
    assert checks["achieved_concurrency"].threshold == pytest.approx(1.6)
    assert checks["output_token_parity"].value == 0.0
    assert checks["client_cpu"].value == pytest.approx(0.2)


BROKEN = {
    # num_prompts / concurrency = 4 / 2 = 2 < 4 (the run never reached steady state)
    "prompts_per_slot": Case(prompts=4),
    # 8 x 1 s of requests in a 10 s benchmark: 0.8 in flight on average, for 2 requested
    "achieved_concurrency": Case(idle_s=6.0),
    # one request of eight stopped at 31 tokens of 32
    "output_length": Case(output_lens=[32] * 7 + [31]),
    # lengths drawn from [16, 32] (no output_length check), one success without a token
    "zero_token_successes": Case(range_ratio=0.5, output_lens=[32, 20, 16, 25, 32, 18, 30, 0]),
    # the server generated 10 % more tokens than the client counted
    "output_token_parity": Case(server_generation_extra=0.10),
    # random-ids prompts re-tokenized by the server: 13.8 % more prompt tokens
    "prompt_token_parity": Case(server_prompt_extra=0.138),
    # the client used 0.95 of a core
    "client_cpu": Case(client_cpu_s=9.5),
    # one request of eight failed
    "completeness": Case(errors={7: "Bad Request"}),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_each_broken_point_fails_its_check_and_nothing_else(tmp_path: Path, broken: str) -> None:
    scenario = parsed(tmp_path, BROKEN[broken])
    got = states(scenario)
    assert [name for name, ok in got.items() if ok is False] == [broken]
    assert scenario.validity is not None and scenario.validity.ok is False
    qualifying = broken in ("prompts_per_slot", "achieved_concurrency")  # the workload's shape: ⚠, not ✖
    assert mark(scenario.validity) == ("⚠ " if qualifying else "✖ ") + broken
    failing = next(c for c in scenario.validity.checks if c.name == broken)
    assert failing.value is not None and failing.threshold is not None and failing.message


def test_what_a_broken_point_cannot_judge_is_unknown_not_failed(tmp_path: Path) -> None:
    # with a failed request the client's token totals leave it out, the server's do not: unknown
    got = states(parsed(tmp_path, BROKEN["completeness"]))
    assert got["output_token_parity"] is None and got["prompt_token_parity"] is None
    # a length range: "shorter than requested" cannot be told per request
    assert states(parsed(tmp_path / "b", BROKEN["zero_token_successes"]))["output_length"] is None


def test_missing_side_files_leave_their_checks_unknown(tmp_path: Path) -> None:
    run = new_run(tmp_path / "run")
    case = Case(client_cpu_s=None)
    case.write(run)
    shutil.rmtree(run / "server_metrics")
    parse_run_dir(run)
    (scenario,) = load_run(run).scenarios
    got = states(scenario)
    assert got["client_cpu"] is None and got["output_token_parity"] is None and got["prompt_token_parity"] is None
    assert all(ok is True for name, ok in got.items() if name not in ("client_cpu", "output_token_parity", "prompt_token_parity"))
    assert scenario.validity is not None and scenario.validity.ok is None and mark(scenario.validity) == ""
    message = {c.name: c.message for c in scenario.validity.checks}["client_cpu"]
    assert "client_stats/" in message


def test_side_files_arriving_later_are_judged_by_the_next_parse(tmp_path: Path) -> None:
    run = new_run(tmp_path / "run")
    case = Case(client_cpu_s=None)
    case.write(run)
    parse_run_dir(run)
    assert states(load_run(run).scenarios[0])["client_cpu"] is None
    replace(case, client_cpu_s=9.5).write(run)
    outcome = parse_run_dir(run)
    assert outcome.files_read == 1
    assert states(load_run(run).scenarios[0])["client_cpu"] is False


def test_import_legacy_judges_what_raw_files_allow(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    case = Case(prompts=4)
    (raw / f"{case.stem}.jsonl").write_text(json.dumps(case.raw()) + "\n")
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "out"), "--chip", "cpu",
                                       "--model", "tiny"])
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "out").iterdir()
    (scenario,) = load_run(run).scenarios
    got = states(scenario)
    assert got["prompts_per_slot"] is False
    assert got["output_token_parity"] is None and got["prompt_token_parity"] is None and got["client_cpu"] is None
    assert got["completeness"] is True and got["output_length"] is True
    assert "imported from raw files only" in {c.name: c.message for c in scenario.validity.checks}["client_cpu"]


def test_thresholds_are_configurable_recorded_and_kept(tmp_path: Path) -> None:
    run = new_run(tmp_path / "run")
    Case(prompts=4).write(run)
    result = CliRunner().invoke(main, ["parse", str(run), "--validity", "min_prompts_per_slot=2"])
    assert result.exit_code == 0, result.output
    res = load_run(run)
    assert res.validity_thresholds is not None and res.validity_thresholds.min_prompts_per_slot == 2
    assert states(res.scenarios[0])["prompts_per_slot"] is True
    # a later parse without the option keeps the recorded limit and re-reads nothing
    result = CliRunner().invoke(main, ["parse", str(run)])
    assert "0 raw file(s) read, 1 unchanged" in result.output
    assert states(load_run(run).scenarios[0])["prompts_per_slot"] is True
    # a new limit judges the point again
    result = CliRunner().invoke(main, ["parse", str(run), "--validity", "min-prompts-per-slot=4"])
    assert "1 raw file(s) read" in result.output
    assert states(load_run(run).scenarios[0])["prompts_per_slot"] is False


@pytest.mark.parametrize("item, message", [
    ("min_prompts=2", "expected NAME=VALUE with NAME one of"),
    ("max_client_cpu", "expected NAME=VALUE"),
    ("max_client_cpu=fast", "'fast' is not a number"),
    ("min_concurrency_fraction=2", "--validity:"),
    ("max_zero_token_successes=0.5", "a whole number"),
])
def test_bad_threshold_settings_are_one_line_usage_errors(tmp_path: Path, item: str, message: str) -> None:
    run = new_run(tmp_path / "run")
    Case().write(run)
    result = CliRunner().invoke(main, ["parse", str(run), "--validity", item])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert parse_thresholds([]) is None


def test_server_counters_summed_over_labels_and_resets_unknown() -> None:
    before = 'vllm:prompt_tokens_total{engine="0"} 10\nvllm:prompt_tokens_total{engine="1"} 5\n'
    after = 'vllm:prompt_tokens_total{engine="0"} 110\nvllm:prompt_tokens_total{engine="1"} 55\n' \
            'vllm:generation_tokens_total{engine="0"} 7\n'
    assert server_token_deltas(before, after) == (150.0, 7.0)
    assert server_token_deltas(after, before) == (None, None)
    sglang = "sglang:prompt_tokens_total 900\nsglang:generation_tokens_total 40\n"
    assert server_token_deltas("", sglang) == (900.0, 40.0)


def test_a_real_run_with_as_many_prompts_as_slots_is_not_steady(tmp_path: Path) -> None:
    """Real raw output and /metrics of the CPU engine: c4_i64_o32 with 4 prompts (tests/data/validity/README.md)."""
    run = new_run(tmp_path / "run")
    shutil.copytree(DATA / "c4_prompts4", run, dirs_exist_ok=True)
    parse_run_dir(run)
    (scenario,) = load_run(run).scenarios
    assert scenario.num_prompts == scenario.concurrency == 4
    got = states(scenario)
    assert got["prompts_per_slot"] is False
    checks = {c.name: c for c in scenario.validity.checks}
    assert checks["prompts_per_slot"].value == 1.0
    assert "never reached steady state" in checks["prompts_per_slot"].message
    assert got["output_token_parity"] is True and got["completeness"] is True


def test_remeasure_once_with_more_prompts(tmp_path: Path) -> None:
    invalid = parsed(tmp_path, Case(prompts=4))
    assert remeasure_prompts([invalid]) == 8  # twice as many, and at least 4 per slot
    assert remeasure_prompts([invalid], ValidityThresholds(min_prompts_per_slot=10)) == 20
    valid = parsed(tmp_path / "b", Case())
    assert remeasure_prompts([valid]) is None
    unknown = valid.model_copy(update={"validity": None})
    assert remeasure_prompts([unknown]) is None
    assert remeasure_prompts([invalid, invalid]) is None  # measured twice already: record it


def _search_run(tmp_path: Path, points: list[tuple[int, bool, bool]]) -> Path:
    """A run of shape i128_o32 with (concurrency, meets SLO, valid) points, in measuring order."""
    from sskj_results.contract.models import Validity, ValidityCheck
    from sskj_results.analysis.slo import resolve_slo, slo_status

    run = new_run(tmp_path / "search")
    Case().write(run)
    parse_run_dir(run)
    template = load_run(run).scenarios[0]
    scenarios = []
    for i, (c, meets, valid) in enumerate(points):
        s = template.model_copy(deep=True)
        s.name, s.concurrency, s.num_prompts = f"c{c}_{i}", c, 4 * c if valid else c
        s.slo_status = slo_status(100.0 if meets else 9000.0, 10.0, resolve_slo())
        check = ValidityCheck(name="prompts_per_slot", ok=valid, value=4.0 if valid else 1.0, threshold=4.0, message="m")
        s.validity = Validity(ok=valid, checks=[check])
        scenarios.append(s)
    from sskj_results.contract.io import save_run
    save_run(load_run(run).model_copy(update={"scenarios": scenarios}), run / "results.json")
    return run


def test_slo_search_remeasures_an_invalid_point_once_then_records_it(tmp_path: Path) -> None:
    from sskj_results.analysis.slo_search import decide

    run = _search_run(tmp_path, [(1, True, True), (2, True, False)])
    res = load_run(run)
    d = decide(res, 128, 32, 1, 8, remeasure=True)
    assert (d.next_concurrency, d.num_prompts) == (2, 8)  # c2 again, with 2 x 2 prompts -> at least 4 per slot: 8
    assert [(s.concurrency, s.valid) for s in d.search.steps] == [(1, True), (2, False)]
    # without remeasure the invalid point is taken as it is
    assert decide(res, 128, 32, 1, 8).next_concurrency == 4
    # measured again (still invalid): recorded, the search goes on from its verdict
    res = load_run(_search_run(tmp_path / "b", [(1, True, True), (2, True, False), (2, True, False)]))
    d = decide(res, 128, 32, 1, 8, remeasure=True)
    assert (d.next_concurrency, d.num_prompts) == (4, None)
    result = CliRunner().invoke(main, ["slo-next", str(run), "--input-len", "128", "--output-len", "32",
                                       "--max-concurrency", "8", "--remeasure-invalid"])
    assert result.exit_code == 0 and result.stdout == "2 8\n"


def _supervised(run: Path, case: Case, code: str) -> dict[str, Any]:
    """Run `python -c code` through the real run-client supervisor under case's stem; its stats file."""
    import sys

    from sskj_results.run.plan import GridRow
    from sskj_results.run.supervise import run_client

    status, stats = run_client([sys.executable, "-c", code], run_dir=run, stem=case.stem,
                               row=GridRow(case.concurrency, case.input_len, case.output_len), server_pid=None,
                               server_log=None, log_offset=0, client_log=None, raw=None, poll_s=0.05)
    assert status == 0 and stats.exit_code == 0
    written: dict[str, Any] = json.loads((run / "client_stats" / f"{case.stem}.json").read_text())
    return written


# burns about 0.3 s of CPU, then sleeps 1 s: well below one core over its wall time
_MOSTLY_IDLE = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(1.0)\n"


def test_client_cpu_reads_what_the_real_supervisor_writes(tmp_path: Path) -> None:
    """run-client's client_stats/<stem>.json, not a hand-written one, is what the client_cpu check reads."""
    run = new_run(tmp_path / "run")
    case = Case(client_cpu_s=None)
    case.write(run)
    written = _supervised(run, case, _MOSTLY_IDLE)
    cpu = written["user_cpu_s"] + written["system_cpu_s"]
    assert cpu >= 0.3 and written["wall_s"] >= 1.0  # wait4's times of the real child
    parse_run_dir(run)
    (scenario,) = load_run(run).scenarios
    check = {c.name: c for c in scenario.validity.checks}["client_cpu"]
    assert check.value == pytest.approx(cpu / written["wall_s"], abs=0.01)
    assert check.ok is True and check.value < 0.9
    assert f"over {written['wall_s']:.2f} s wall" in check.message
    # the same measured stats against a limit below them: the check fails on the supervisor's numbers
    outcome = parse_run_dir(run, validity=ValidityThresholds(max_client_cpu=check.value / 2))
    assert not outcome.problems
    (again,) = load_run(run).scenarios
    assert states(again)["client_cpu"] is False
    assert [name for name, ok in states(again).items() if ok is False] == ["client_cpu"]


def test_a_remeasure_raw_file_parses_as_the_latest_point_of_its_concurrency(tmp_path: Path) -> None:
    """The SLO loop's `<stem>_r2` raw file beside the first: both kept, the repeat read as the latest."""
    from sskj_results.analysis.slo_search import decide

    run = new_run(tmp_path / "run")
    first, again = Case(prompts=4), Case(prompts=8)
    first.write(run)
    again.write(run)  # side files of the second measurement under its own stem
    for sub, ext in (("raw_outputs", "jsonl"), ("client_stats", "json")):
        (run / sub / f"{first.stem}.{ext}").rename(run / sub / f"{first.stem}_r2.{ext}")
    for when in ("before", "after"):
        (run / "server_metrics" / f"{first.stem}.{when}.prom").rename(
            run / "server_metrics" / f"{first.stem}_r2.{when}.prom")
    first.write(run)
    outcome = parse_run_dir(run)
    assert not outcome.problems, outcome.problems
    points = load_run(run).scenarios
    assert [(s.name, s.num_prompts, s.validity.ok if s.validity else None) for s in points] == [
        ("c2_i128_o32", 4, False), ("c2_i128_o32_r2", 8, True)]
    d = decide(load_run(run), 128, 32, 2, 8, remeasure=True)
    assert d.num_prompts is None and d.next_concurrency == 4
    assert [(s.scenario, s.valid) for s in d.search.steps] == [("c2_i128_o32_r2", True)]
