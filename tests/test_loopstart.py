"""A run's start (sskj_results/run/loopstart.py, `config --start`): RESUME=1's refusals, the run directory,
what a dry run leaves behind and the resume command, as the shell decided them before (bench::run_experiment,
bench::list_runs, bench::resume_command)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sskj_results.run.loopstart import (Refusal, RunStart, _dirname, comparison, preflight_args, resume_refusal, run_ids,
                                        run_start)


def test_resume_needs_a_run_id_and_a_run_that_exists(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    assert resume_refusal({}, str(exp)) is None
    assert resume_refusal({"RESUME": "1"}, str(exp)) == Refusal("RESUME=1 needs RUN_ID=<the run to continue>", 2)
    (exp / "results" / "20260101-000000").mkdir(parents=True)
    (exp / "results" / "b-run").mkdir()
    (exp / "results" / ".hidden").mkdir()
    (exp / "results" / "a-file").write_text("")
    refused = resume_refusal({"RESUME": "1", "RUN_ID": "x"}, str(exp))
    assert refused == Refusal(f"RESUME=1: {exp}/results/x does not exist (no run x to resume; its runs: "
                              "20260101-000000 b-run)")
    assert resume_refusal({"RESUME": "1", "RUN_ID": "20260101-000000"}, str(exp)) is None
    given = resume_refusal({"RESUME": "1", "RUN_ID": "20260101-000000", "RESULT_ROOT": str(tmp_path / "no")}, str(exp))
    assert given is not None and given.message.startswith(f"RESUME=1: {tmp_path}/no does not exist")
    assert run_ids(str(tmp_path / "nothing")) == "none"


def test_a_real_run_never_writes_over_a_run(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "results.json").write_text("{}")
    env = {"RUN_ID": "7", "PLATFORM": "cpu", "RESULT_ROOT": str(root)}
    refused = run_start(env, str(tmp_path), True, "run_bench.sh", [])
    assert refused == Refusal(f"{root} already holds a run; use RESUME=1 RUN_ID=7 or a new RUN_ID")
    began = run_start(dict(env, RESUME="1"), str(tmp_path), True, "run_bench.sh", [])
    assert isinstance(began, RunStart) and began.note == f"resuming run 7 in {root}"
    dry = run_start(dict(env, DRY_RUN="1"), str(tmp_path), True, "run_bench.sh", [])
    assert isinstance(dry, RunStart) and dry.dry_existing and dry.dry_remove == ""
    gone = run_start(dict(env, RESUME="1", RESULT_ROOT=str(tmp_path / "gone")), str(tmp_path), True, "x", [])
    assert gone == Refusal(f"RESUME=1: {tmp_path}/gone does not exist")


def test_a_dry_run_removes_from_the_highest_directory_it_made(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    exp.mkdir()
    env = {"RUN_ID": "1", "PLATFORM": "cpu", "DRY_RUN": "1"}
    began = run_start(env, str(exp), False, "run_bench.sh", [])
    assert isinstance(began, RunStart)
    assert (began.result_root, began.dry_remove, began.dry_existing) == (f"{exp}/results/1", f"{exp}/results", False)
    (exp / "results").mkdir()
    began = run_start(env, str(exp), False, "run_bench.sh", [])
    assert isinstance(began, RunStart) and began.dry_remove == f"{exp}/results/1"
    kept = run_start(dict(env, RESULT_ROOT=str(tmp_path / "a" / "b")), str(exp), True, "run_bench.sh", [])
    assert isinstance(kept, RunStart) and kept.dry_remove == "", "RESULT_ROOT=DIR keeps what a dry run writes"
    real = run_start(dict(env, DRY_RUN="0"), str(exp), False, "run_bench.sh", [])
    assert isinstance(real, RunStart) and real.dry_remove == ""


def test_the_resume_command_repeats_what_the_environment_gave(tmp_path: Path) -> None:
    env = {"RUN_ID": "9", "PLATFORM": "nvidia_h200", "RESULT_ROOT": str(tmp_path / "r r")}
    began = run_start(env, str(tmp_path), True, "experiments/x/run_bench.sh", ["SHAPES=1x2 3x4"])
    assert isinstance(began, RunStart)
    assert began.resume_cmd == ["RESUME=1", "RUN_ID=9", f"RESULT_ROOT={tmp_path}/r r", "PLATFORM=nvidia_h200",
                                "SHAPES=1x2 3x4", "bash", "experiments/x/run_bench.sh"]
    began = run_start(dict(env, RESULT_ROOT=""), str(tmp_path), False, "run_bench.sh", [])
    assert isinstance(began, RunStart) and began.resume_cmd == ["RESUME=1", "RUN_ID=9", "PLATFORM=nvidia_h200",
                                                                 "bash", "run_bench.sh"]


@pytest.mark.parametrize("path", ["/a/b", "/a/b/", "a", "a/b", "/a", "/", "a//b//", "//x"])
def test_the_parent_directory_is_the_shells_dirname(path: str) -> None:
    shell = subprocess.run(["dirname", path], capture_output=True, text=True, check=True).stdout.rstrip("\n")
    assert _dirname(path) == shell


BASE = {"SERVER_HOST": "127.0.0.1", "PORT": "30000", "RESULT_ROOT": "/r", "PROMPTS_PER_CONCURRENCY": "8",
        "MIN_PROMPTS": "16", "PLATFORM": "nvidia_h200"}


def test_the_preflight_of_a_real_run_checks_every_phase_and_the_grid() -> None:
    env = dict(BASE, ACCEL_SAMPLER="nvidia-smi", HARDWARE="8x NVIDIA H200 141GB", RUNTIME="native", CLIENT="vllm",
               NUM_PROMPTS="50")
    assert preflight_args(env, "/e", 42, ["/t/p1", "/t/p2"], detected=False) == [
        "preflight", "--host", "127.0.0.1", "--port", "30000", "--orchestrator", "42", "--experiment-dir", "/e",
        "--grace", "30", "--disk", "/r:1", "--accelerators", "nvidia:8", "--client", "vllm",
        "--scenarios", "/e/scenarios.tsv", "--concurrencies", "", "--shapes", "", "--prompts-per-concurrency", "8",
        "--min-prompts", "16", "--num-prompts", "50", "--phase-file", "/t/p1", "--phase-file", "/t/p2"]


def test_the_preflight_of_a_dry_run_on_docker_only_warns() -> None:
    env = dict(BASE, DRY_RUN="1", STOP_STALE_ENGINE="0", ACCEL_SAMPLER="xpu-smi", HARDWARE="auto", ACCEL_COUNT="",
               TP="4", RUNTIME="docker", DOCKER_IMAGE="img:1", SCENARIOS_FILE="/s.tsv", CONCURRENCIES="1 2",
               SHAPES="1x2", SLO_SEARCH="1", STOP_GRACE_S="5", SSKJ_MIN_FREE_GB="20")
    args = preflight_args(env, "/e", 1, [], detected=True)
    assert args[:12] == ["preflight", "--host", "127.0.0.1", "--port", "30000", "--orchestrator", "1",
                         "--experiment-dir", "/e", "--grace", "5", "--disk"]
    assert args[12:21] == ["/r:20", "--warn-only", "--no-stop-stale", "--accelerators", "xpu:4", "--hardware-auto",
                           "--detected-platform", "nvidia_h200", "--docker-image"]
    assert args[21:] == ["img:1", "--client", "sglang", "--scenarios", "/s.tsv", "--concurrencies", "1 2", "--shapes",
                         "1x2", "--prompts-per-concurrency", "8", "--min-prompts", "16", "--slo-search"]
    # the accelerator count: ACCEL_COUNT, else HARDWARE's leading count, else TP, else 1; none without a sampler
    assert "cpu:" not in " ".join(preflight_args({}, "/e", 1, [], False))
    assert preflight_args({"ACCEL_COUNT": "2", "HARDWARE": "8x H"}, "/e", 1, [], False)[14] == "none:2"
    assert preflight_args({}, "/e", 1, [], False)[14] == "none:1"


def test_a_detected_platform_is_checked_alone_first() -> None:
    env = dict(BASE, ACCEL_SAMPLER="nvidia-smi", HARDWARE="auto")
    assert preflight_args(env, "/e", 1, ["/t/p1"], detected=True, platform_only=True) == [
        "preflight", "--detected-platform", "nvidia_h200", "--experiment-dir", "/e", "--accelerators", "nvidia:0",
        "--hardware-auto"]


def test_each_phase_has_its_run_directory_and_several_one_comparison(tmp_path: Path) -> None:
    env = {"RUN_ID": "1", "PLATFORM": "cpu", "RESULT_ROOT": "/r", "COMPARE_BASELINE": "vllm", "COMPARE_MATRIX": "m"}
    one = run_start(env, str(tmp_path), True, "run_bench.sh", [], ["sglang"])
    assert isinstance(one, RunStart) and (one.run_dirs, one.compare_args, one.compare_warning) == (["/r"], [], "")
    two = run_start(env, str(tmp_path), True, "run_bench.sh", [], ["sglang", "vllm"])
    assert isinstance(two, RunStart) and two.run_dirs == ["/r/phase1_sglang", "/r/phase2_vllm"]
    assert two.compare_args == ["compare", "/r/phase1_sglang", "/r/phase2_vllm", "--baseline", "/r/phase2_vllm",
                                "--matrix", "m", "--out", "/r", "--html"]
    assert two.compare_warning == ""
    args, warning = comparison(dict(env, COMPARE_BASELINE="sgl", COMPARE_TITLE="T"), "/r", ["a", "b"], ["/r/1", "/r/2"])
    assert args == ["compare", "/r/1", "/r/2", "--title", "T", "--matrix", "m", "--out", "/r", "--html"]
    assert warning == "COMPARE_BASELINE=sgl names no phase; comparing without a baseline"
    assert comparison({}, "/r", ["a", "b"], ["/r/1", "/r/2"]) == (["compare", "/r/1", "/r/2", "--out", "/r", "--html"], "")
