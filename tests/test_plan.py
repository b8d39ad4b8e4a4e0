"""The run planner (`sskj-results next`): grid, prompts, resume, skips, SLO search."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.errors import ConfigError
from sskj_results.contract.io import load_run, save_run
from sskj_results.contract.models import RawFile, Source, Validity, ValidityCheck
from sskj_results.run.plan import GridRow, Planner, PromptsRule, load_grid, measured, record_skip
from sskj_results.analysis.slo import resolve_slo, slo_status

from .conftest import SEED


def test_grid_from_tsv_sorted_by_shape_then_concurrency(tmp_path: Path) -> None:
    tsv = tmp_path / "scenarios.tsv"
    tsv.write_text(
        "concurrency\tinput_len\toutput_len\tnum_prompts\n# comment line\n64\t1000\t256\n"
        "8\t4000\t512\t40   # trailing comment\n\n1 1000 256\n16\t1000\t256\n16\t1000\t256\n"
    )
    rows = load_grid(tsv, None, None)
    assert [(r.concurrency, r.input_len, r.output_len, r.num_prompts) for r in rows] == [
        (1, 1000, 256, None), (16, 1000, 256, None), (64, 1000, 256, None), (8, 4000, 512, 40)]


def test_grid_from_config_variables_when_there_is_no_file(tmp_path: Path) -> None:
    rows = load_grid(tmp_path / "scenarios.tsv", "16 1 4", "128x64 1024x128")
    assert [(r.input_len, r.concurrency) for r in rows] == [
        (128, 1), (128, 4), (128, 16), (1024, 1), (1024, 4), (1024, 16)]


@pytest.mark.parametrize("content, message", [
    ("8 1000\n", "scenarios.tsv:2: expected 'concurrency input_len output_len"),
    ("8 1000 x\n", "scenarios.tsv:2: 'x' is not a positive integer"),
])
def test_bad_tsv_rows_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "scenarios.tsv").write_text("1 2 3\n" + content)
    with pytest.raises(ConfigError, match=message):
        load_grid(tmp_path / "scenarios.tsv", None, None)


def test_no_grid_and_bad_shape(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no scenarios"):
        load_grid(tmp_path / "scenarios.tsv", "", "")
    with pytest.raises(ConfigError, match="'128by64' is not INPUTxOUTPUT"):
        load_grid(None, "1", "128by64")


def test_prompts_rule() -> None:
    rule = PromptsRule(num_prompts=None, per_concurrency=4, minimum=16)
    assert rule.prompts(GridRow(1, 8, 8)) == 16 and rule.prompts(GridRow(8, 8, 8)) == 32
    assert rule.prompts(GridRow(8, 8, 8, num_prompts=5)) == 5
    assert PromptsRule(num_prompts=7).prompts(GridRow(64, 8, 8)) == 7


def _run_dir(tmp_path: Path, done: dict[tuple[int, int, int], bool] | None = None) -> Path:
    """A run dir whose results.json holds scenarios imported from raw files (True: meets the SLO)."""
    run = tmp_path / "run"
    (run / "raw_outputs").mkdir(parents=True)
    base = load_run(SEED)
    template = base.scenarios[0]
    scenarios, records = [], []
    for (c, i, o), ok in (done or {}).items():
        name = f"raw_outputs/cpu_vllm_0102_{c}_{i}_{o}.jsonl"
        (run / name).write_text('{"x": 1}\n')
        s = template.model_copy(deep=True)
        s.name, s.concurrency, s.input_len, s.output_len = f"c{c}_i{i}_o{o}", c, i, o
        s.slo_status = slo_status(100.0 if ok else 9000.0, 10.0, resolve_slo())
        s.source = Source(file=name, line=1, sha256="0" * 64, format="sglang")
        scenarios.append(s)
        records.append(RawFile(file=name, sha256="0" * 64, size=9, runs=1))
    save_run(base.model_copy(update={"scenarios": scenarios, "raw_files": records, "skipped": [],
                                     "slo_search": []}), run)
    return run


def _planner(run: Path, grid: list[GridRow], session: Path | None = None) -> Planner:
    return Planner(run_dir=run, grid=grid, prompts=PromptsRule(), chip="cpu", engine="vllm", mmdd="0102",
                   session=session or run / "logs" / "plan.txt")


GRID = [GridRow(c, 16, 8) for c in (1, 2, 4, 8)] + [GridRow(c, 32, 4) for c in (1, 2, 4, 8)]


def test_grid_walk_proposes_each_scenario_once_per_session(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    planner = _planner(run, GRID)
    seen = []
    while (s := planner.next_in_grid([])) is not None:
        seen.append(s.line())
    assert seen[0] == "1 16 8 8 cpu_vllm_0102_1_16_8 cpu_vllm_0102_1_16_8.jsonl"
    assert len(seen) == 8 and len(set(seen)) == 8
    # a new session (RESUME=1) proposes again what was never measured
    assert _planner(run, GRID, tmp_path / "other.txt").next_in_grid([]) is not None


def test_resume_skips_imported_scenarios_but_remeasures_missing_or_changed_raw_files(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, {(1, 16, 8): True, (2, 16, 8): True, (4, 16, 8): True})
    assert measured(run, load_run(run)) == {(1, 16, 8): 1, (2, 16, 8): 1, (4, 16, 8): 1}
    (run / "raw_outputs" / "cpu_vllm_0102_1_16_8.jsonl").unlink()  # missing
    (run / "raw_outputs" / "cpu_vllm_0102_2_16_8.jsonl").write_text("damaged, longer\n")  # changed since import
    log: list[str] = []
    planner = _planner(run, GRID)
    names = [planner.next_in_grid(log).stem for _ in range(3)]  # type: ignore[union-attr]
    assert names == ["cpu_vllm_0102_1_16_8", "cpu_vllm_0102_2_16_8", "cpu_vllm_0102_8_16_8"]
    assert "scenario c4_i16_o8 already done; skipping" in log


def test_repeats_interleave_rounds_and_each_repeat_has_its_own_raw_file(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    grid = [GridRow(1, 16, 8), GridRow(2, 16, 8), GridRow(1, 32, 4)]
    planner = _planner(run, grid)
    stems = []
    while (s := planner.next_in_grid([], repeats=3)) is not None:
        stems.append(s.stem.removeprefix("cpu_vllm_0102_"))
    # round r of every scenario before round r + 1
    assert stems == ["1_16_8", "2_16_8", "1_32_4", "1_16_8_r2", "2_16_8_r2", "1_32_4_r2",
                     "1_16_8_r3", "2_16_8_r3", "1_32_4_r3"]


def test_resume_of_a_partly_repeated_run_measures_only_the_missing_repeats(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, {(1, 16, 8): True, (2, 16, 8): True})
    results = load_run(run)  # c1 has its second repeat too
    second = results.scenarios[0].model_copy(deep=True)
    name = "raw_outputs/cpu_vllm_0102_1_16_8_r2.jsonl"
    (run / name).write_text('{"x": 1}\n')
    second.source = Source(file=name, line=1, sha256="0" * 64, format="sglang")
    save_run(results.model_copy(update={"scenarios": [*results.scenarios, second], "raw_files": [
        *results.raw_files, RawFile(file=name, sha256="0" * 64, size=9, runs=1)]}), run)
    assert measured(run, load_run(run)) == {(1, 16, 8): 2, (2, 16, 8): 1}
    log: list[str] = []
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(2, 16, 8)])
    stems = []
    while (s := planner.next_in_grid(log, repeats=2)) is not None:
        stems.append(s.stem.removeprefix("cpu_vllm_0102_"))
    assert stems == ["2_16_8_r2"]
    assert "scenario c1_i16_o8 already done 2 times; skipping" in log


def test_repeat_raw_file_names_map_to_the_repeats_of_results_json() -> None:
    """The loop's `<stem>`, `<stem>_r2` ... `<stem>_r10` become repeats 1 ... 10 in order (ingest/naming.py)."""
    from sskj_results.ingest.naming import name_scenarios

    planner = Planner(run_dir=Path("."), grid=[], prompts=PromptsRule(), chip="cpu", engine="vllm", mmdd="0102")
    files = [planner.scenario(GridRow(4, 16, 8), r if r > 1 else None).raw_name for r in range(1, 11)]
    template = load_run(SEED).scenarios[0]
    scenarios = []
    for file in reversed(files):
        s = template.model_copy(deep=True)
        s.concurrency, s.input_len, s.output_len, s.request_rate = 4, 16, 8, None
        s.source = Source(file=f"raw_outputs/{file}", line=1, sha256="0" * 64, format="sglang")
        scenarios.append(s)
    named = name_scenarios(scenarios)
    assert [(s.name, s.repeat, s.source.file) for s in named] == [  # type: ignore[union-attr]
        ("c4_i16_o8" if r == 1 else f"c4_i16_o8_r{r}", r, f"raw_outputs/{files[r - 1]}") for r in range(1, 11)]


def test_next_cli_repeats(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    args = ["next", str(run), "--chip", "cpu", "--engine", "vllm", "--mmdd", "0102", "--concurrencies", "1",
            "--shapes", "16x8", "--session", str(tmp_path / "s.txt"), "--repeats", "2"]
    lines = [CliRunner().invoke(main, args).output.strip() for _ in range(3)]
    assert lines == ["1 16 8 8 cpu_vllm_0102_1_16_8 cpu_vllm_0102_1_16_8.jsonl",
                     "1 16 8 8 cpu_vllm_0102_1_16_8_r2 cpu_vllm_0102_1_16_8_r2.jsonl", ""]
    bad = CliRunner().invoke(main, [*args[:-1], "0"])
    assert bad.exit_code == 2 and "--repeats" in bad.output


def test_failure_skips_larger_concurrencies_of_its_shape_and_records_them(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, {(1, 16, 8): True, (2, 16, 8): True})
    record_skip(run, GridRow(4, 16, 8), "oom", 'CUDA out of memory, "quoted"\nsecond line')
    planner = _planner(run, GRID)
    first = planner.next_in_grid([])
    assert first is not None and first.stem == "cpu_vllm_0102_1_32_4"
    with open(run / "skipped_after_oom.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["scenario", "concurrency", "input_len", "output_len", "reason", "log_excerpt"]
    assert rows[1] == ["c4_i16_o8", "4", "16", "8", "oom", 'CUDA out of memory, "quoted"\nsecond line']
    assert rows[2][:5] == ["c8_i16_o8", "8", "16", "8", "skipped: c4 of this shape failed"]
    # on resume the recorded failure still cuts the shape and nothing is recorded twice
    again = _planner(run, GRID, tmp_path / "resume.txt")
    assert again.next_in_grid([]).stem == "cpu_vllm_0102_1_32_4"  # type: ignore[union-attr]
    with open(run / "skipped_after_oom.csv", newline="") as fh:
        assert len(list(csv.reader(fh))) == 3


def test_a_scenario_of_the_loop_without_its_whole_record_is_measured_again(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, {(1, 16, 8): True})
    assert measured(run, load_run(run)) == {(1, 16, 8): 1}  # imported: its raw file is its record
    stem = "cpu_vllm_0102_1_16_8"
    for folder, name in (("client_info", f"{stem}.json"), ("server_metrics", f"{stem}.before.prom")):
        (run / folder).mkdir(exist_ok=True)
        (run / folder / name).write_text("{}")
    assert measured(run, load_run(run)) == {}  # the loop's, stopped before its client statistics
    (run / "client_stats").mkdir()
    (run / "client_stats" / f"{stem}.json").write_text("{}")
    assert measured(run, load_run(run)) == {}  # nor its /metrics after the client
    (run / "server_metrics" / f"{stem}.after.prom").write_text("")
    assert measured(run, load_run(run)) == {(1, 16, 8): 1}


def test_a_dry_run_of_a_run_with_a_failure_plans_its_skips_without_writing_them(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, {(1, 16, 8): True, (2, 16, 8): True})
    record_skip(run, GridRow(4, 16, 8), "oom")
    before = (run / "skipped_after_oom.csv").read_bytes()
    log: list[str] = []
    dry = dataclasses.replace(_planner(run, GRID), record=False)
    assert dry.next_in_grid(log).stem == "cpu_vllm_0102_1_32_4"  # type: ignore[union-attr]
    assert "scenario c8_i16_o8 would be recorded in skipped_after_oom.csv: skipped: c4 of this shape failed" in log
    assert (run / "skipped_after_oom.csv").read_bytes() == before


def test_next_plans_a_phase_whose_directory_does_not_exist_yet(tmp_path: Path) -> None:
    """A dry run of an existing run reaches a phase it never began: planned, nothing made."""
    args = ["next", str(tmp_path / "phase2_vllm"), "--chip", "cpu", "--engine", "vllm", "--mmdd", "0102",
            "--concurrencies", "1", "--shapes", "16x8", "--session", str(tmp_path / "s.txt")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "1 16 8 8 cpu_vllm_0102_1_16_8 cpu_vllm_0102_1_16_8.jsonl"
    assert not (tmp_path / "phase2_vllm").exists()


def test_slo_search_doubles_then_stops_and_records(tmp_path: Path) -> None:
    capacity = 3
    run = _run_dir(tmp_path)
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(8, 16, 8)])
    order = []
    for _ in range(20):
        s = planner.next_in_slo_search([], None, None, None, max_steps=32)  # the recorded verdicts
        if s is None:
            break
        order.append(s.concurrency)
        results = load_run(run)
        done = {(x.concurrency, x.input_len, x.output_len): x.slo_status.overall == "✅" for x in results.scenarios}
        done[(s.concurrency, 16, 8)] = s.concurrency <= capacity
        run_next = _run_dir(tmp_path / f"step{len(order)}", done)
        (run / "results.json").write_bytes((run_next / "results.json").read_bytes())
        for f in (run_next / "raw_outputs").iterdir():
            (run / "raw_outputs" / f.name).write_bytes(f.read_bytes())
    assert order == [1, 2, 4, 3]
    assert load_run(run).slo_search[0].best_concurrency == 3


def test_slo_search_stops_a_shape_whose_proposal_failed_in_this_session(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(4, 16, 8), GridRow(2, 32, 4)])
    log: list[str] = []
    assert planner.next_in_slo_search(log, None, None, None, 32).concurrency == 1  # type: ignore[union-attr]
    # c1 produced no result (client failed): the shape stops, the next shape starts at its own minimum
    nxt = planner.next_in_slo_search(log, None, None, None, 32)
    assert nxt is not None and (nxt.concurrency, nxt.input_len) == (2, 32)
    assert any("c1 was run in this session without a result" in line for line in log)


def _points_dir(run: Path, points: list[tuple[int, bool, bool, int, str]]) -> Path:
    """results.json with scenarios of shape 16x8: (concurrency, meets the SLO, valid, prompts, stem suffix)."""
    (run / "raw_outputs").mkdir(parents=True, exist_ok=True)
    base = load_run(SEED)
    scenarios, records = [], []
    for c, ok, valid, prompts, suffix in points:
        name = f"raw_outputs/cpu_vllm_0102_{c}_16_8{suffix}.jsonl"
        (run / name).write_text('{"x": 1}\n')
        s = base.scenarios[0].model_copy(deep=True)
        s.name, s.concurrency, s.input_len, s.output_len, s.num_prompts = f"c{c}_i16_o8{suffix}", c, 16, 8, prompts
        s.slo_status = slo_status(100.0 if ok else 9000.0, 10.0, resolve_slo())
        check = ValidityCheck(name="prompts_per_slot", ok=valid, value=prompts / c, threshold=4.0, message="m")
        s.validity = Validity(ok=valid, checks=[check])
        s.source = Source(file=name, line=1, sha256="0" * 64, format="sglang")
        scenarios.append(s)
        records.append(RawFile(file=name, sha256="0" * 64, size=9, runs=1))
    save_run(base.model_copy(update={"scenarios": scenarios, "raw_files": records, "skipped": [],
                                     "slo_search": [], "validity_thresholds": None}), run)
    return run


def test_slo_search_measures_an_invalid_point_once_more_then_reads_it(tmp_path: Path) -> None:
    run = _points_dir(tmp_path / "run", [(1, True, True, 8, ""), (2, True, False, 4, "")])
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(8, 16, 8)])
    log: list[str] = []
    again = planner.next_in_slo_search(log, None, None, None, 32)
    # c2 passed the SLO but measured 4 prompts for 2 slots: measured again, twice the prompts,
    # into a new raw file beside the first
    assert again is not None
    assert again.line() == "2 16 8 8 cpu_vllm_0102_2_16_8_r2 cpu_vllm_0102_2_16_8_r2.jsonl"
    assert "the point at concurrency 2 is invalid; measuring it once more with 8 prompts" in log[-1]
    # the second measurement is invalid too: recorded as it is, the search goes on (no third measurement)
    _points_dir(run, [(1, True, True, 8, ""), (2, True, False, 4, ""), (2, True, False, 8, "_r2")])
    nxt = planner.next_in_slo_search(log, None, None, None, 32)
    assert nxt is not None and nxt.stem == "cpu_vllm_0102_4_16_8" and nxt.num_prompts == 16
    search = load_run(run).slo_search[0]
    assert [(st.concurrency, st.scenario, st.valid) for st in search.steps] == [
        (1, "c1_i16_o8", True), (2, "c2_i16_o8_r2", False)]


@pytest.mark.parametrize("check", ["streaming_granularity", "client_cpu"])
def test_slo_search_does_not_believe_the_mark_of_a_point_whose_tpot_is_refused(tmp_path: Path, check: str) -> None:
    # c2 meets the SLO by its mark, but its second measurement streamed in bursts (TPOT refused: the point is
    # partly unreliable) or starved the client (disqualified): its mark is unknown, as a ❔ one, and the search
    # stops this shape unfinished at the best concurrency known to pass (c1) instead of doubling past it
    run = _points_dir(tmp_path / "run", [(1, True, True, 8, ""), (2, True, False, 4, ""), (2, True, True, 8, "_r2")])
    data = load_run(run)
    data.scenarios[2].validity = Validity(ok=False, checks=[
        ValidityCheck(name=check, ok=False, value=1.0, threshold=0.5, message="m")])
    save_run(data, run)
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(8, 16, 8)])
    assert planner.next_in_slo_search([], None, None, None, 32) is None
    search = load_run(run).slo_search[0]
    assert [(st.concurrency, st.ok) for st in search.steps] == [(1, True), (2, None)]
    assert search.best_concurrency == 1 and search.finished is False


def test_slo_search_remeasure_that_failed_stops_the_shape(tmp_path: Path) -> None:
    run = _points_dir(tmp_path / "run", [(1, True, False, 2, "")])
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(4, 16, 8)])
    log: list[str] = []
    first = planner.next_in_slo_search(log, None, None, None, 32)
    assert first is not None and first.stem.endswith("_1_16_8_r2") and first.num_prompts == 4
    # the client wrote nothing: the same re-measure is not proposed again in this session
    assert planner.next_in_slo_search(log, None, None, None, 32) is None
    assert "c1 was run in this session without a result; stopping this shape" in log[-1]
    # without remeasure the invalid point is read as it is
    plain = _planner(run, [GridRow(1, 16, 8), GridRow(4, 16, 8)], tmp_path / "plain.txt")
    nxt = plain.next_in_slo_search([], None, None, None, 32, remeasure=False)
    assert nxt is not None and nxt.stem == "cpu_vllm_0102_2_16_8"


def test_slo_search_remeasures_count_as_steps(tmp_path: Path) -> None:
    run = _points_dir(tmp_path / "run", [(1, True, False, 2, "")])
    planner = _planner(run, [GridRow(1, 16, 8), GridRow(4, 16, 8)])
    (run / "logs").mkdir()
    (run / "logs" / "plan.txt").write_text("c1_i16_o8\nc1_i32_o4_r2\n")  # one step of this shape, one of another
    log: list[str] = []
    assert planner.next_in_slo_search(log, None, None, None, max_steps=1) is None
    assert "stopped after 1 steps" in log[-1]


def test_next_cli_slo_search_prints_the_remeasure_for_bash(tmp_path: Path) -> None:
    run = _points_dir(tmp_path / "run", [(1, True, True, 8, ""), (2, True, False, 4, "")])
    result = CliRunner().invoke(main, [
        "next", str(run), "--chip", "cpu", "--engine", "vllm", "--mmdd", "0102",
        "--concurrencies", "1 8", "--shapes", "16x8", "--slo-search", "--session", str(tmp_path / "s.txt")])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["2 16 8 8 cpu_vllm_0102_2_16_8_r2 cpu_vllm_0102_2_16_8_r2.jsonl"]


def test_next_cli_with_slo_tier_prints_a_line_bash_reads(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    args = ["next", str(run), "--chip", "cpu", "--engine", "vllm", "--mmdd", "0102", "--client", "vllm",
            "--concurrencies", "1 4", "--shapes", "16x8", "--slo-search", "--slo-tier", "S2",
            "--session", str(tmp_path / "s.txt")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stdout == "1 16 8 8 cpu_vllm_0102_1_16_8 cpu_vllm_0102_1_16_8.json\n"
    bad = CliRunner().invoke(main, [*args[:2], "--chip", "../x", *args[4:]])
    assert bad.exit_code == 2 and "becomes part of a file name" in bad.output


def test_slo_next_accepts_the_tier_the_shell_passes(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, {(1, 16, 8): True})
    results = load_run(run)
    # the stored verdict says it fails; judged by S3 its latencies (543 ms, 18 ms) pass
    failing = results.scenarios[0].model_copy(deep=True)
    failing.slo_status = slo_status(9000.0, 9000.0, resolve_slo())
    save_run(results.model_copy(update={"scenarios": [failing]}), run)
    plain = CliRunner().invoke(main, ["slo-next", str(run), "--input-len", "16", "--output-len", "8",
                                      "--max-concurrency", "8"])
    assert plain.exit_code == 0 and plain.stdout == ""
    tiered = CliRunner().invoke(main, ["slo-next", str(run), "--input-len", "16", "--output-len", "8",
                                       "--max-concurrency", "8", "--slo-tier", "S3"])
    assert tiered.exit_code == 0, tiered.output
    assert (failing.latencies.ttft_ms.p95, failing.latencies.tpot_ms.mean) == (543.21, 18.24)
    assert tiered.stdout == "2\n"  # c1 meets S3, so the search doubles



def test_phase_specs() -> None:
    from sskj_results.run.specs import parse_phase_spec

    assert parse_phase_spec("dspark_t3:vllm-dspark:SPEC_TOKENS=3").settings == ("SPEC_TOKENS=3",)
    assert parse_phase_spec("sglang").engine == "sglang"
    with pytest.raises(ConfigError, match="expected NAME"):
        parse_phase_spec("../x")
    with pytest.raises(ConfigError, match="unexpected 'vllm'"):
        parse_phase_spec("a:B=1:vllm")
    with pytest.raises(ConfigError, match="unknown engine 'tgi'"):
        parse_phase_spec("tgi")
