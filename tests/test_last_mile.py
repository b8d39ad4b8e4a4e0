"""What a new user hit after a run (issue 36, item 4): a damaged results.json rebuilt by `parse` and
`reparse` from raw_outputs/ (ingest/rebuild.py), `validate` of an interrupted run naming the resume command
(analysis/validate._resume_command), `compare` of a path that is not there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main

RAW = Path(__file__).parent / "data" / "raw"
META = ("--meta", "experiment=dsv4_cpu", "--meta", "run_id=20260707-132641", "--meta", "engine=vllm", "--meta",
        "chip=cpu", "--meta", "model=tiny", "--meta", "phase=vllm", "--meta", "git_commit=abc1234", "--meta",
        "script=experiments/cpu/dsv4_cpu/run_bench.sh", "--meta", "platform=cpu",
        "--config", "server_args=python -m vllm.entrypoints.openai.api_server --port 8000")


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run as the run loop leaves it: experiments/cpu/dsv4_cpu/results/<RUN_ID>/ with raw outputs, parsed."""
    run = tmp_path / "experiments" / "cpu" / "dsv4_cpu" / "results" / "20260707-132641"
    (run / "raw_outputs").mkdir(parents=True)
    for f in sorted(RAW.glob("vllm_0705_*.jsonl")):
        shutil.copyfile(f, run / "raw_outputs" / f"cpu_{f.name}")
    (run / "logs").mkdir()
    (run / "logs" / "plan_20260707_132641_4242.txt").write_text("c2_i128_o32\n", encoding="utf-8")  # the loop's
    assert cli("metadata", str(run), "--no-detect", *META).exit_code == 0
    assert cli("parse", str(run)).exit_code == 0
    return run


def damaged(run: Path) -> tuple[bytes, dict]:
    good = json.loads((run / "results.json").read_text(encoding="utf-8"))
    data = (run / "results.json").read_bytes()
    return data, good


@pytest.mark.parametrize("command", ["parse", "reparse"])
def test_a_results_json_that_is_no_json_is_rebuilt_from_raw_outputs_and_kept_aside(run: Path, command: str) -> None:
    data, good = damaged(run)
    data = b"<<<<<<< HEAD\n" + data[:300]  # a merge conflict, cut short
    (run / "results.json").write_bytes(data)
    result = cli(command, str(run), *(["--no-plots", "--no-html"] if command == "reparse" else []))
    assert result.exit_code == 0, result.output
    aside = sorted(run.glob("results.json.damaged-*"))
    assert [p.read_bytes() for p in aside] == [data]  # the damaged file, never lost
    assert result.stderr == (
        f"warning: {run}/results.json: damaged (results.json:1:1: invalid JSON: Expecting value); "
        f"rebuilt from raw_outputs/, the damaged file kept as {aside[0].name}; recovered: metadata.engine (from "
        "the raw file names), metadata.chip (from the raw file names); unknown now: metadata.experiment, "
        "metadata.model, metadata.run_id, metadata.timestamp, config.server_args (set them with "
        f"`sskj-results metadata {run} --meta KEY=VALUE`)\n")
    rebuilt = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert rebuilt["scenarios"] == good["scenarios"]  # every scenario back from the raw files
    assert (rebuilt["metadata"]["engine"], rebuilt["metadata"]["chip"]) == ("vllm", "cpu")
    assert rebuilt["metadata"]["experiment"] == "unknown" and rebuilt["config"]["server_args"] is None


def test_an_invalid_results_json_keeps_every_field_that_still_validates(run: Path) -> None:
    _, good = damaged(run)
    broken = json.loads(json.dumps(good))
    broken["metadata"]["timestamp"] = "yesterday"
    broken["scenarios"][0]["concurrency"] = "many"
    (run / "results.json").write_text(json.dumps(broken), encoding="utf-8")
    result = cli("parse", str(run))
    assert result.exit_code == 0, result.output
    assert "results.json: damaged (results.json: metadata.timestamp: String should match pattern" in result.stderr
    assert ("(and 1 more)); rebuilt from raw_outputs/, the damaged file kept as results.json.damaged-" in result.stderr
            and "recovered: metadata (11 field(s)), config (1 field(s)), slo; unknown now: metadata.timestamp, "
            "metadata.timestamp_precision, metadata.timestamp_source (set them" in result.stderr)
    rebuilt = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert rebuilt["scenarios"] == good["scenarios"]
    for key in ("experiment", "run_id", "phase", "git_commit", "model", "script"):
        assert rebuilt["metadata"][key] == good["metadata"][key]
    assert rebuilt["config"]["server_args"] == good["config"]["server_args"]
    assert rebuilt["metadata"]["timestamp"] is None
    assert json.loads(next(run.glob("results.json.damaged-*")).read_text(encoding="utf-8")) == broken


def test_a_damaged_results_json_without_raw_outputs_is_refused_and_left_alone(run: Path) -> None:
    shutil.rmtree(run / "raw_outputs")
    (run / "results.json").write_text("{", encoding="utf-8")
    result = cli("parse", str(run))
    assert result.exit_code == 1
    assert "invalid JSON" in result.output
    assert (run / "results.json").read_text(encoding="utf-8") == "{"
    assert not list(run.glob("results.json.damaged-*"))


def test_a_valid_results_json_is_not_rebuilt(run: Path) -> None:
    before = (run / "results.json").read_bytes()
    result = cli("parse", str(run))
    assert result.exit_code == 0 and "damaged" not in result.output
    assert (run / "results.json").read_bytes() == before and not list(run.glob("results.json.damaged-*"))


def test_validate_of_an_interrupted_run_names_the_resume_command(run: Path) -> None:
    result = cli("validate", str(run))  # the loop's phase-end writes report.md: an interrupted run has none
    assert result.exit_code == 1
    assert (f"{run}: no report.md: the run loop stopped before its end (interrupted or failed); resume it with "
            "`RESUME=1 RUN_ID=20260707-132641 PLATFORM=cpu bash experiments/cpu/dsv4_cpu/run_bench.sh` (or "
            f"report what it measured: `sskj-results report {run}`)") in result.output
    moved = run.parent.parent / "elsewhere"
    run.rename(moved)
    result = cli("validate", str(moved))
    assert (f"resume it with `RESUME=1 RUN_ID=20260707-132641 RESULT_ROOT={moved} PLATFORM=cpu bash "
            "experiments/cpu/dsv4_cpu/run_bench.sh`") in result.output


def test_validate_of_an_import_without_report_still_suggests_report(tmp_path: Path) -> None:
    run = tmp_path / "r"
    assert cli("metadata", str(run), "--no-detect", "--meta", "experiment=e", "--meta", "run_id=r", "--meta",
               "engine=vllm", "--meta", "chip=cpu", "--meta", "model=m", "--config", "server_args=x").exit_code == 0
    result = cli("validate", str(run))
    assert f"{run}: no human-readable report (report.md); run `sskj-results report {run}`" in result.output


def test_compare_of_a_missing_directory_names_it(run: Path, tmp_path: Path) -> None:
    result = cli("compare", str(tmp_path / "results" / "nope"))
    assert result.exit_code == 1
    assert result.output == f"error: {tmp_path / 'results' / 'nope'}: no such run directory\n"
    result = cli("compare", str(tmp_path / "typo"), str(run))
    assert result.exit_code == 1 and result.output == f"error: {tmp_path / 'typo'}: no such run directory\n"


def test_collect_keeps_the_run_loops_own_record_over_a_later_import_of_its_raw_files(run: Path, tmp_path: Path,
                                                                                     monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    results = run.parent
    assert cli("import-legacy", str(run / "raw_outputs"), "--platform", "cpu", "--out", "imported").exit_code == 0
    result = cli("collect", str(results), "imported", "--out", "runs.csv")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("wrote runs.csv: 4 row(s) from 1 run(s); 2 run(s) read, 1 with no row of their own "
                             "(doubles dropped, or no scenario)\n")
    # the run's folder (20260707-...) gives the 0705 file names their year: the import is cpu_vllm_20260705
    assert result.stderr == ("dropped: imported/cpu_vllm_20260705: 4 scenario(s) left out, the same raw runs (raw file "
                             f"sha256 and line) as in {run}\n")
    import pandas as pd

    frame = pd.read_csv("runs.csv")
    assert set(frame["phase"]) == {"vllm"} and set(frame["git_commit"]) == {"abc1234"}
    assert set(frame["run_dir"]) == {str(run)}
    # given in the other order, the same record is kept
    again = cli("collect", "imported", str(results), "--out", "again.csv", "--no-cache")
    assert again.exit_code == 0 and set(pd.read_csv("again.csv")["run_dir"]) == {str(run)}
