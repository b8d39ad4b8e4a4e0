"""Paths given where a run is expected: raw client outputs, folders of runs, nothing comparable (ingest/sniff.py,
contract/runset.runs_inside, publish.refuse_incomparable, run/reparse.reparse_targets)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.ingest.rawkeys import SGLANG, VLLM
from sskj_results.ingest.sniff import raw_client_format

DATA = Path(__file__).parent / "data"
RUNS = DATA / "compare" / "runs"
RAW = DATA / "raw" / "vllm_0705_2_128_32.jsonl"  # sglang.bench_serving output (backend vllm), with bare Infinity


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new user's folder: raw_outputs/ with one raw client file, imported/ with two runs."""
    (tmp_path / "raw_outputs").mkdir()
    shutil.copyfile(RAW, tmp_path / "raw_outputs" / "sglang_0707_2_128_32.jsonl")
    for name in ("sglang", "vllm"):
        shutil.copytree(RUNS / name, tmp_path / "imported" / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_raw_client_format_tells_raw_files_from_results(tmp_path: Path) -> None:
    assert raw_client_format(RAW) == SGLANG
    assert raw_client_format(RUNS / "vllm" / "results.json") is None
    vllm = tmp_path / "vllm.json"
    vllm.write_text(json.dumps({"model_id": "m", "completed": 3, "mean_e2el_ms": 1.0}), encoding="utf-8")
    assert raw_client_format(vllm) == VLLM
    long_line = tmp_path / "long.jsonl"  # a first line longer than what is read: judged by its keys
    long_line.write_text('{"backend": "sglang", "completed": 2, "ttfts": [' + "0.1, " * 300_000 + "0.1]}\n")
    assert raw_client_format(long_line) == SGLANG
    text = tmp_path / "notes.txt"
    text.write_text("hello\n", encoding="utf-8")
    assert raw_client_format(text) is None


def test_validate_a_raw_file_says_to_import_it(user: Path) -> None:
    result = cli("validate", "raw_outputs/sglang_0707_2_128_32.jsonl")
    assert result.exit_code == 1
    assert result.output == ("error: raw_outputs/sglang_0707_2_128_32.jsonl: is a raw client output "
                             "(sglang-bench-serving), not a results.json; run `sskj-results import-legacy "
                             "raw_outputs` to import it into run directories\n")


def test_compare_raw_files_says_to_import_them(user: Path) -> None:
    result = cli("compare", "raw_outputs/sglang_0707_2_128_32.jsonl", "imported/sglang", "--no-plots")
    assert result.exit_code == 1
    assert result.output.startswith("error: raw_outputs/sglang_0707_2_128_32.jsonl: is a raw client output")
    assert not Path("comparison").exists()
    result = cli("report", "raw_outputs", "--no-plots")
    assert result.exit_code == 1
    assert result.output == ("error: raw_outputs: holds raw client outputs, not runs; run `sskj-results "
                             "import-legacy raw_outputs` to import it into run directories\n")


def test_report_and_compare_take_a_folder_of_runs(user: Path) -> None:
    result = cli("report", "imported/", "--no-plots")
    assert result.exit_code == 0, result.output
    assert result.output == "wrote imported/sglang/report.md\nwrote imported/vllm/report.md\n"
    result = cli("compare", "imported/", "--no-plots", "--out", "cmp")
    assert result.exit_code == 0, result.output
    doc = json.loads(Path("cmp/comparison.json").read_text(encoding="utf-8"))
    assert [r["path"] for r in doc["runs"]] == ["imported/sglang", "imported/vllm"]


def test_a_folder_with_no_run_says_what_to_give(user: Path) -> None:
    Path("empty").mkdir()
    for args in (("report", "empty"), ("compare", "empty", "imported/vllm")):
        result = cli(*args)
        assert result.exit_code == 1
        assert result.output == ("error: empty: no results.json here nor one level down; give a run directory "
                                 "(one holding results.json), a folder of them, or a results.json\n")
    shutil.rmtree("imported/vllm")
    result = cli("compare", "imported", "--no-plots")
    assert result.exit_code == 2
    assert result.output == ("error: compare needs at least two runs (a baseline and one to compare with it); "
                             "imported holds only imported/sglang\n")


def test_compare_with_no_scenario_in_common_refuses(user: Path) -> None:
    for name, keep in (("sglang", lambda c: c != 32), ("vllm", lambda c: c == 32)):
        file = user / "imported" / name / "results.json"
        data = json.loads(file.read_text(encoding="utf-8"))
        data["scenarios"] = [s for s in data["scenarios"] if keep(s["concurrency"])]
        file.write_text(json.dumps(data), encoding="utf-8")
    result = cli("compare", "imported/sglang", "imported/vllm", "--no-plots", "--out", "cmp")
    assert result.exit_code == 1
    assert result.output == ("error: imported/sglang, imported/vllm: no scenario in common (matched by concurrency, "
                             "input_len and output_len); nothing to compare; `sskj-results report RUN` shows each "
                             "run alone\n")
    assert not Path("cmp").exists()


def test_compare_a_dry_runs_run_set_says_nothing_was_measured(user: Path) -> None:
    # a DRY_RUN=1 multi-phase run: each phase's results.json holds metadata only, and no index is written
    for phase, engine in (("phase1_sglang", "sglang"), ("phase2_vllm", "vllm")):
        result = cli("metadata", f"results/20260101-000000/{phase}", "--no-detect", "--meta", "experiment=x",
                     "--meta", "run_id=20260101-000000", "--meta", f"engine={engine}", "--meta", "model=m")
        assert result.exit_code == 0, result.output
    result = cli("compare", "results/20260101-000000", "--no-plots")
    assert result.exit_code == 1
    assert result.output == ("error: results/20260101-000000/phase1_sglang, results/20260101-000000/phase2_vllm: "
                             "no run holds a measured scenario (a DRY_RUN=1 run writes metadata only); "
                             "nothing to compare\n")


def _dry_run(run_dir: str, engine: str) -> None:
    """What a DRY_RUN=1 phase leaves: metadata and config (dry_run=true), no scenario."""
    result = cli("metadata", run_dir, "--no-detect", "--meta", "experiment=x", "--meta", "run_id=20260101-000000",
                 "--meta", f"engine={engine}", "--meta", "model=m", "--config", "dry_run=true",
                 "--config", "server_args=python -m sglang.launch_server")
    assert result.exit_code == 0, result.output


def test_compare_a_one_phase_dry_run_says_it_is_a_dry_run(user: Path) -> None:
    _dry_run("results/20260101-000000", "sglang")
    result = cli("compare", "results/20260101-000000", "--no-plots")
    assert result.exit_code == 1
    assert result.output == ("error: results/20260101-000000: a dry run (DRY_RUN=1, config.dry_run = true): nothing "
                             "was measured, nothing to compare; run the experiment without DRY_RUN=1, then compare\n")


def test_compare_a_dry_runs_phases_says_they_are_dry_runs(user: Path) -> None:
    for phase, engine in (("phase1_sglang", "sglang"), ("phase2_vllm", "vllm")):
        _dry_run(f"results/20260101-000000/{phase}", engine)
    result = cli("compare", "results/20260101-000000", "--no-plots")
    assert result.exit_code == 1
    assert result.output == ("error: results/20260101-000000/phase1_sglang, results/20260101-000000/phase2_vllm: "
                             "dry runs (DRY_RUN=1, config.dry_run = true): nothing was measured, nothing to compare; "
                             "run the experiment without DRY_RUN=1, then compare\n")
    assert not Path("comparison").exists()


def test_reparse_a_folder_of_runs_reparses_each(user: Path) -> None:
    shutil.move("imported", "results")
    result = cli("reparse", "results", "--no-plots", "--no-html")
    assert result.exit_code == 0, result.output
    assert result.stdout == "wrote results/sglang/report.md\nwrote results/vllm/report.md\n"
    assert not Path("results/results.json").exists()  # not mistaken for a run set of two phases


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_after_the_delay_and_cleared() -> None:
    from sskj_results.cli.progress import Progress

    now = [0.0]
    stream = _Tty()
    with Progress("importing", stream=stream, clock=lambda: now[0], delay_s=2.0) as progress:
        progress(0, 4, "a.jsonl")  # within the first 2 s: nothing
        assert stream.getvalue() == ""
        now[0] = 2.5
        progress(1, 4, "b.jsonl")
        assert stream.getvalue() == "\rimporting [######..................] 1/4 b.jsonl"
        now[0] = 3.0
        progress(4, 4, "")
    assert stream.getvalue().endswith("\rimporting [########################] 4/4" + " " * 8 + "\r" + " " * 40 + "\r")


def test_progress_is_quiet_when_stderr_is_not_a_terminal() -> None:
    from sskj_results.cli.progress import Progress

    stream = io.StringIO()
    with Progress("importing", stream=stream, clock=lambda: 100.0, delay_s=0.0) as progress:
        progress(1, 2, "x")
    assert stream.getvalue() == ""


def test_a_long_import_and_report_call_progress(user: Path) -> None:
    from sskj_results.ingest.legacy import Platform, import_legacy
    from sskj_results.render.publish import ReportOptions, write_reports

    calls: list[tuple[int, int, str]] = []
    import_legacy(Path("raw_outputs"), Path("out"), Platform(chip="cpu", accelerator=None, hardware=None),
                  progress=lambda d, t, i: calls.append((d, t, i)))
    assert calls == [(0, 1, "sglang_0707_2_128_32.jsonl"), (1, 1, "")]
    calls.clear()
    write_reports("imported/vllm", ReportOptions(plots=False, html=True), lambda d, t, i: calls.append((d, t, i)))
    assert calls == [(1, 3, "report.md"), (2, 3, "report.html"), (3, 3, "")]
