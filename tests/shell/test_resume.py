"""Runs you can resume and script exactly: the settings a run records and RESUME=1 takes again, the printed
resume command, a dry run that writes nothing into an existing run, a scenario without its whole record
measured again, run_bench.sh as a command (--help, arguments, misspelled settings, its platform)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from shellkit import (REPO, bash_lib, client_calls, default_signals, free_port, load_json, needs_results, run_script,
                      wait_for, wait_no_tagged)

pytestmark = [pytest.mark.shell, needs_results]

CONFIG = """\
MODEL_PATH="fake-model"
PROMPT_METHOD="client-random-text"
CONCURRENCIES="1 2"
SHAPES="16x8 32x4"
MIN_PROMPTS="4"
PROMPTS_PER_CONCURRENCY="2"
WARMUP_REQUESTS="0"
STOP_GRACE_S="5"
HEALTH_TIMEOUT_S="30"
"""
H200 = REPO / "experiments" / "h200" / "dsv4_h200_dspark" / "run_bench.sh"


def run_env(base_env, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(base_env, PLATFORM="cpu", PORT=str(free_port()), RUN_ID="20250102-030405",
               RESULT_ROOT=str(tmp_path / "results" / "run"))
    env.update(extra)
    return env


def tree(root: Path) -> dict[str, str]:
    """Every file under ROOT -> the SHA-256 of its bytes (directories as "dir")."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


@pytest.mark.slow  # real runs of the loop with a fake engine: a run, a Ctrl-C, resumes
def test_a_run_stopped_by_ctrl_c_resumes_with_the_printed_command_to_exactly_its_own_grid(
        tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm", config=CONFIG)
    # the user's overrides: a grid of one scenario measured twice (config.env says 4 scenarios, once)
    env = run_env(base_env, tmp_path, REPEATS="2", CONCURRENCIES="1", SHAPES="16x8", FAKE_SERVER_ARGS="--latency-ms 150")
    run = Path(env["RESULT_ROOT"])
    proc = subprocess.Popen(["bash", str(exp / "run_bench.sh")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=default_signals)
    try:
        wait_for(lambda: (run / "raw_outputs" / "cpu_vllm_0102_1_16_8.jsonl").exists(), 90, "first repeat")
        wait_for(lambda: len(client_calls(tmp_path)) == 2, 30, "second repeat")
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert load_json(run / "run_settings.json")["settings"]["CONCURRENCIES"] == "1"
    printed = err.splitlines()[err.splitlines().index(next(line for line in err.splitlines()
                                                            if line.endswith("Resume with:"))) + 1]
    assert printed == (f"RESUME=1 RUN_ID=20250102-030405 RESULT_ROOT={shlex.quote(str(run))} PLATFORM=cpu "
                       f"CONCURRENCIES=1 SHAPES=16x8 REPEATS=2 bash {exp / 'run_bench.sh'}")

    # another grid is refused, naming the difference, before anything starts
    other = run_script(exp / "run_bench.sh", dict(env, RESUME="1", REPEATS="3", FAKE_SERVER_ARGS=""))
    assert other.returncode == 2, other.stderr
    assert ("RESUME=1: the run was started with REPEATS=2, this resume sets REPEATS=3 (run_settings.json)"
            in other.stderr)
    assert len(client_calls(tmp_path)) == 2

    # the printed command, in an environment without the overrides: exactly the missing repeat
    bare = {k: v for k, v in env.items() if k not in ("REPEATS", "CONCURRENCIES", "SHAPES", "RUN_ID", "RESULT_ROOT",
                                                     "PLATFORM", "FAKE_SERVER_ARGS")}
    resumed = subprocess.run(["bash", "-c", printed], env=bare, capture_output=True, text=True, timeout=240,
                             start_new_session=True)
    assert resumed.returncode == 0, resumed.stderr
    assert client_calls(tmp_path) == [(1, 16, 8)] * 3
    assert [s["name"] for s in load_json(run / "results.json")["scenarios"]] == ["c1_i16_o8", "c1_i16_o8_r2"]

    # RESUME=1 alone takes the recorded settings: nothing left to run
    again = run_script(exp / "run_bench.sh", {k: v for k, v in dict(env, RESUME="1").items()
                                              if k not in ("REPEATS", "CONCURRENCIES", "SHAPES")})
    assert again.returncode == 0, again.stderr
    assert "resuming with the run's settings: CONCURRENCIES=1 REPEATS=2 SHAPES=16x8" in again.stderr, [l for l in again.stderr.splitlines() if "esum" in l]
    assert len(client_calls(tmp_path)) == 3
    assert wait_no_tagged(tag) == []


@pytest.mark.slow  # real runs of the loop with a fake engine
def test_a_dry_run_writes_nothing_into_a_finished_run_and_a_scenario_without_its_after_snapshot_is_measured_again(
        tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm", config=CONFIG)
    env = run_env(base_env, tmp_path, SHAPES="16x8")
    run = Path(env["RESULT_ROOT"])
    done = run_script(exp / "run_bench.sh", env)
    assert done.returncode == 0, done.stderr
    assert client_calls(tmp_path) == [(1, 16, 8), (2, 16, 8)]
    before = tree(run)
    assert "logs/plan_" in " ".join(before) and any(p.startswith("server_metrics/") for p in before)
    for extra in ({"RESUME": "1"}, {}):
        dry = run_script(exp / "run_bench.sh", dict(env, DRY_RUN="1", **extra))
        assert dry.returncode == 0, dry.stderr
        assert tree(run) == before, dry.stderr  # every file byte-identical, logs included; no new file
        assert f"nothing written into the existing run {run}" in dry.stderr
        assert "metadata written to" not in dry.stderr

    # Ctrl-C just after the client: the scenario has its raw file but not its /metrics after it
    stem = "cpu_vllm_0102_2_16_8"
    (run / "server_metrics" / f"{stem}.after.prom").unlink()
    resumed = run_script(exp / "run_bench.sh", dict(env, RESUME="1"))
    assert resumed.returncode == 0, resumed.stderr
    assert client_calls(tmp_path) == [(1, 16, 8), (2, 16, 8), (2, 16, 8)]
    assert (run / "server_metrics" / f"{stem}.after.prom").is_file()
    # the same for the client's own record
    (run / "client_stats" / "cpu_vllm_0102_1_16_8.json").unlink()
    resumed = run_script(exp / "run_bench.sh", dict(env, RESUME="1"))
    assert resumed.returncode == 0, resumed.stderr
    assert client_calls(tmp_path)[3:] == [(1, 16, 8)]
    assert len(load_json(run / "results.json")["scenarios"]) == 2


def test_run_bench_help_prints_the_settings_from_the_package_and_starts_nothing(tmp_path, base_env, tag):
    from sskj_results.catalog.settings import SETTINGS

    proc = run_script(H200, dict(base_env), args=["--help"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: [SETTING=VALUE ...] bash {H200} [--help]\n")
    for setting in SETTINGS:
        assert f"  {setting.name} " in proc.stdout
    assert not (H200.parent / "results").exists() or not any(
        p.stat().st_mtime > time.time() - 60 for p in (H200.parent / "results").iterdir())
    refused = run_script(H200, dict(base_env), args=["--resume"])
    assert refused.returncode == 2
    assert "takes no arguments, got: --resume" in refused.stderr
    server = H200.parent / "start_server.sh"
    helped = run_script(server, dict(base_env), args=["--help"])
    assert helped.returncode == 0 and helped.stdout.startswith("usage: [SETTING=VALUE ...] bash start_server.sh")
    assert run_script(server, dict(base_env), args=["--bogus"]).returncode == 2


@pytest.mark.parametrize("name, meant", [("CONCURENCIES", "CONCURRENCIES"), ("SHAPE", "SHAPES"),
                                         ("CONCURRENCY", "CONCURRENCIES"), ("SLO_TEIR", "SLO_TIER")])
def test_a_misspelled_setting_is_named_with_the_setting_meant(tmp_path, base_env, make_experiment, tag, name, meant):
    exp = make_experiment(phases="vllm", config=CONFIG)
    proc = run_script(exp / "run_bench.sh", run_env(base_env, tmp_path, DRY_RUN="1", **{name: "1"}))
    assert proc.returncode == 2
    assert f"{name} is not a setting sskj reads: did you mean {meant}?" in proc.stderr
    assert not Path(tmp_path / "results").exists()


def test_the_platform_must_be_the_experiment_folders_unless_overridden_and_takes_chip_names(tmp_path, base_env, tag):
    env = dict(base_env, DRY_RUN="1", RESULT_ROOT=str(tmp_path / "dry"), MODEL_PATH=str(tmp_path))
    wrong = run_script(H200, dict(env, PLATFORM="kunlun_p800"))
    assert wrong.returncode == 2
    assert (f"PLATFORM=kunlun_p800: {H200.parent} is an experiment of platform nvidia_h200; run it with "
            "PLATFORM=nvidia_h200, or set OTHER_PLATFORM=1") in wrong.stderr
    assert not (tmp_path / "dry").exists()
    for given in ("H200", "nvidia_h200"):
        ok = run_script(H200, dict(env, PLATFORM=given))
        assert ok.returncode == 0, ok.stderr
        assert "# DRY_RUN: experiment dsv4_h200_dspark, platform nvidia_h200," in ok.stdout
    forced = run_script(H200, dict(env, PLATFORM="kunlun_p800", OTHER_PLATFORM="1"))
    assert "is an experiment of platform" not in forced.stderr


def test_the_run_settings_record_is_the_one_list_of_settings(tmp_path):
    from sskj_results.catalog.settings import RECORDED
    from sskj_results.run.runrecord import read_record, resume_settings, write_record

    values = {name: "" for name in RECORDED} | {"REPEATS": "2"}
    assert write_record(tmp_path, values) and not write_record(tmp_path, {"REPEATS": "9"})
    assert read_record(tmp_path) == values
    assert resume_settings(values, {"REPEATS": "2"}, {"REPEATS"}) == values
    (tmp_path / "run_settings.json").write_text(json.dumps({"settings": {"REPEATS": 2}}))
    with pytest.raises(Exception, match=r"run_settings.json: \$.settings is not an object of strings"):
        read_record(tmp_path)


def test_the_scripts_under_test_get_sigint_even_when_the_suite_ignores_it(base_env, tag):
    """Started with SIGINT ignored (nohup, `trap '' INT`), the suite still hands its scripts a SIGINT they can
    trap: bash cannot trap a signal ignored at its start, and the Ctrl-C tests would fail."""
    probe = "trap 'echo trapped' INT; kill -INT $$; sleep 0.2"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        out = bash_lib(probe, env=dict(base_env))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert out.stdout == "trapped\n", out.stderr


def test_setup_envs_help_is_its_own_usage_and_installs_nothing(base_env, tag):
    script = REPO / "scripts" / "common" / "setup_envs.sh"
    proc = run_script(script, dict(base_env), args=["--help"])
    assert proc.returncode == 0, proc.stderr
    assert "Usage: scripts/common/setup_envs.sh PLATFORM" in proc.stdout
    assert "sskj-results setup-envs [OPTIONS]" not in proc.stdout and proc.stderr == ""
    refused = run_script(script, dict(base_env), args=["--platform"])
    assert refused.returncode == 2 and "usage: setup_envs.sh PLATFORM" in refused.stderr


@pytest.mark.slow  # a real two-phase run of the loop with a fake engine
def test_a_dry_resume_of_a_run_stopped_before_its_second_phase_plans_it_and_writes_nothing(
        tmp_path, base_env, make_experiment, tag):
    import shutil

    exp = make_experiment(phases="sglang vllm", config=CONFIG)
    env = run_env(base_env, tmp_path, CONCURRENCIES="1", SHAPES="16x8")
    run = Path(env["RESULT_ROOT"])
    done = run_script(exp / "run_bench.sh", env)
    assert done.returncode == 0, done.stderr
    shutil.move(run / "phase2_vllm", tmp_path / "aside")  # as if stopped before its second phase began
    before = tree(run)
    dry = run_script(exp / "run_bench.sh", dict(env, DRY_RUN="1", RESUME="1"))
    after = tree(run)
    # back: the real run's calls, checked against the CLI after the test, name it
    shutil.move(tmp_path / "aside", run / "phase2_vllm")
    assert dry.returncode == 0, dry.stderr
    assert after == before, dry.stderr
    assert "# scenario c1_i16_o8" in dry.stdout.split("# phase 2: vllm")[1]
    assert "# scenario c1_i16_o8" not in dry.stdout.split("# phase 2: vllm")[0]


def test_common_environment_variables_are_never_taken_for_misspelled_settings():
    from sskj_results.catalog.settings import misspelled

    common = ("PATH HOME USER SHELL TERM LANG PWD OLDPWD HOSTNAME LOGNAME TMPDIR TZ COLUMNS PROMPT_COMMAND CUDA_HOME "
              "CUDA_VISIBLE_DEVICES HF_HOME HF_TOKEN OMP_NUM_THREADS PYTHONPATH VIRTUAL_ENV PYENV_ROOT NCCL_DEBUG "
              "MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK SERVER_PORT HTTP_PROXY NO_PROXY TOKENIZERS_PARALLELISM "
              "VLLM_USE_V1 SGLANG_LOG_LEVEL SSH_TTY TMUX DISPLAY").split()
    assert misspelled(common, []) == []
    assert misspelled(["CONCURENCIES", "SHAPE", "REPEAT", "SPEC_TOKEN", "MODEL_ROOT"], ["MODEL_ROOT"]) == [
        ("CONCURENCIES", "CONCURRENCIES"), ("REPEAT", "REPEATS"), ("SHAPE", "SHAPES"), ("SPEC_TOKEN", "SPEC_TOKENS")]
