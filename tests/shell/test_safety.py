"""Run safety in whole runs: no secret in anything printed or written, config files that try to
run code are refused, names cannot escape, no orphan engine after SIGKILL, preflight stops a run
before the engine starts, a platform choice that contradicts the experiment is an error."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest
from shellkit import (DEFAULT_CONFIG, FAKES, REPO, free_port, load_json, needs_results, plan_command_lines, port_listening,
                      run_script)

pytestmark = [pytest.mark.shell, needs_results]

SECRET_SERVER_ARGS = (
    "--hf_token=S3CRET1 --key S3CRET2 --env=HF_TOKEN=S3CRET3 -e OPENAI_API_KEY=S3CRET4 "
    "--url=https://bob:S3CRET5@hub.example/x HUGGING_FACE_HUB_TOKEN=S3CRET6 --client-secret S3CRET7"
)


def run_env(base_env, tmp_path, **extra) -> dict[str, str]:
    env = dict(base_env, PLATFORM="cpu", PORT=str(free_port()), RUN_ID="20250102-030405",
               RESULT_ROOT=str(tmp_path / "results" / "run"))
    env.update(extra)
    return env


def all_text(root: Path) -> str:
    """Everything the tool wrote under root; of an engine's log only the tool's lines ('# ' + command),
    not what the (fake) engine itself printed."""
    parts = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            text = p.read_text(errors="replace")
            if p.parent.name == "logs" and p.name.startswith("vllm_"):
                text = "\n".join(line for line in text.splitlines() if line.startswith("# "))
            parts.append(text)
    return "\n".join(parts)


def secrets_in(text: str) -> list[str]:
    return sorted(set(re.findall(r"S3CRET\d+", text)))


@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry_run"])
def test_no_secret_in_any_printed_command_log_or_file(tmp_path, base_env, make_experiment, tag, dry):
    config = DEFAULT_CONFIG + 'HF_TOKEN="S3CRET8"\nRECORD_CONFIG="HF_TOKEN"\nCONCURRENCIES="1"\n'
    exp = make_experiment(phases="vllm", config=config)
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS=SECRET_SERVER_ARGS, FAKE_API_KEY="S3CRET9",
                  **({"DRY_RUN": "1"} if dry else {}))
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    run = Path(env["RESULT_ROOT"])
    written = all_text(run)
    assert secrets_in(proc.stdout + proc.stderr + written) == []
    results = load_json(run / "results.json")
    assert results["config"]["hf_token"] == "<redacted>"  # RECORD_CONFIG: it was set, not its value
    words = shlex.split(results["config"]["server_args"])
    assert words[words.index("--api-key") + 1] == "<redacted>"
    assert "--env=HF_TOKEN=<redacted>" in words and "HUGGING_FACE_HUB_TOKEN=<redacted>" in words
    if dry:
        printed = [c for c in plan_command_lines(proc.stdout) if str(FAKES / "fake_openai_server.py") in c]
        assert printed and "--hf_token=<redacted>" in printed[0]
    else:
        logs = "".join(p.read_text() for p in (run / "logs").glob("vllm_*.log"))
        assert "--client-secret" in logs and "redacted" in logs


@pytest.mark.parametrize("key", ["BASH_ENV", "PYTHONPATH", "LD_PRELOAD", "PATH", "PS4", "PROMPT_COMMAND", "ENV"])
def test_config_that_would_run_code_is_refused(tmp_path, base_env, make_experiment, tag, key):
    marker = tmp_path / "payload_ran"
    payload = tmp_path / "payload.sh"
    payload.write_text(f"touch {marker}\n")
    exp = make_experiment(phases="vllm", config=DEFAULT_CONFIG + f'{key}="{payload}"\n')
    env = run_env(base_env, tmp_path, DRY_RUN="1")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 1
    line = DEFAULT_CONFIG.count("\n") + 1
    assert f"config.env:{line}: {key} changes how programs start" in proc.stderr
    assert not marker.exists() and not Path(env["RESULT_ROOT"]).exists()


@pytest.mark.parametrize("var, value", [("RUN_ID", "../../escape"), ("RUN_ID", ".."), ("EXPERIMENT", "../x"),
                                        ("EXPERIMENT", "a/b"), ("RUN_ID", "20250101 x")])
def test_names_cannot_leave_the_experiment(tmp_path, base_env, make_experiment, tag, var, value):
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, **{var: value})
    env.pop("RESULT_ROOT")
    before = {p for p in tmp_path.rglob("*")}
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 2
    assert f"{var} '{value}'" in proc.stderr and "path segment" in proc.stderr
    assert {p for p in tmp_path.rglob("*")} == before  # nothing written anywhere


def test_invalid_phase_name_is_refused_before_anything_is_written(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="'../up:vllm'")
    env = run_env(base_env, tmp_path)
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 2 and "invalid phase spec '../up:vllm'" in proc.stderr
    assert not Path(env["RESULT_ROOT"]).exists()


def engine_pids(port: int) -> list[int]:
    needle = f"port={port};".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found

def start_then_sigkill_the_orchestrator(exp: Path, env: dict[str, str], run: Path,
                                        port: int) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start a run, wait until its engine serves, SIGKILL the orchestrator (no trap runs); the engine
    outlives it. Returns the dead orchestrator's process and the engine.pid it left."""
    proc = subprocess.Popen(["bash", str(exp / "run_bench.sh")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (run / "engine.pid").exists() or not port_listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, "the engine never came up"
            time.sleep(0.2)
        pidfile = dict(line.split("=", 1) for line in (run / "engine.pid").read_text().splitlines())
        assert pidfile["port"] == str(port) and pidfile["orchestrator"] == str(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        time.sleep(1)
        assert port_listening(port) and engine_pids(port), "the engine should outlive a SIGKILLed orchestrator"
    except BaseException:
        kill_leftovers(proc, port)
        raise
    return proc, pidfile


def kill_leftovers(proc: Optional[subprocess.Popen], port: int) -> None:
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in engine_pids(port):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass



@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_sigkill_of_the_orchestrator_leaves_an_engine_the_next_run_finds_and_stops(
        tmp_path, base_env, make_experiment, tag):
    config = DEFAULT_CONFIG.replace('CONCURRENCIES="1 2"', 'CONCURRENCIES="1 2 4 8"') + 'MIN_PROMPTS="16"\n'
    exp = make_experiment(phases="vllm", config=config)
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--latency-ms 300", STOP_GRACE_S="5")
    port = int(env["PORT"])
    run = Path(env["RESULT_ROOT"])
    proc = None
    try:
        proc, pidfile = start_then_sigkill_the_orchestrator(exp, env, run, port)
        # A dry run on the same port only reports it, with the command that stops it.
        dry = run_script(exp / "run_bench.sh", dict(env, DRY_RUN="1", RUN_ID="20250102-030406",
                                                     RESULT_ROOT=str(tmp_path / "dry")))
        assert dry.returncode == 0, dry.stderr
        assert f"stale engine pid {pidfile['pid']}" in dry.stderr and f"kill -TERM -- -{pidfile['pid']}" in dry.stderr
        assert port_listening(port)
        # Refusing instead of stopping (STOP_STALE_ENGINE=0) says how to stop it.
        refused = run_script(exp / "run_bench.sh", dict(env, STOP_STALE_ENGINE="0", RUN_ID="20250102-030407",
                                                         RESULT_ROOT=str(tmp_path / "refused")))
        assert refused.returncode == 1 and f"kill -TERM -- -{pidfile['pid']}" in refused.stderr
        assert not (tmp_path / "refused").exists() and port_listening(port)
        # The next real run (resume) finds the stale engine, stops it, says so, and completes.
        second = run_script(exp / "run_bench.sh", dict(env, RESUME="1"))
        assert second.returncode == 0, second.stderr
        assert f"stopped stale engine pid {pidfile['pid']}" in second.stderr
        assert len(load_json(run / "results.json")["scenarios"]) == 4
        assert not port_listening(port) and not engine_pids(port)
    finally:
        kill_leftovers(proc, port)


def preflight_case(tmp_path: Path, base_env: dict[str, str], name: str):
    """(extra environment, expected message) of one preflight failure."""
    if name == "engine_python":
        return {"ENGINE_PYTHON": str(tmp_path / "no-env" / "bin" / "python")}, "engine interpreter"
    if name == "client_python":
        return {"CLIENT_PYTHON": str(tmp_path / "no-env" / "bin" / "python")}, "client interpreter"
    if name == "client_module":
        return {"PYTHONPATH": ""}, "client module sglang.bench_serving is not installed"
    if name == "model":
        return {"MODEL_PATH": str(tmp_path / "no-model")}, "model path"
    if name == "model_config":
        (tmp_path / "empty-model").mkdir()
        return {"MODEL_PATH": str(tmp_path / "empty-model")}, "has no config.json"
    if name == "accelerators":
        return {"ACCEL_SAMPLER": "nvidia-smi", "ACCEL_COUNT": "8", "FAKE_GPU_COUNT": "2"}, \
            "2 nvidia device(s) visible (nvidia-smi), the platform expects 8"
    if name == "disk":
        return {"SSKJ_MIN_FREE_GB": "100000000"}, "GB free under"
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["engine_python", "client_python", "client_module", "model", "model_config",
                                  "accelerators", "disk", "port"])
def test_each_preflight_failure_stops_before_the_engine_starts(tmp_path, base_env, make_experiment, tag, name):
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path)
    holder = None
    if name == "port":
        holder = socket.socket()
        holder.bind(("127.0.0.1", int(env["PORT"])))
        holder.listen(1)
        extra, message = {}, f"port {env['PORT']} on 127.0.0.1 is in use (port {env['PORT']} is held by pid {os.getpid()} ("
    else:
        extra, message = preflight_case(tmp_path, base_env, name)
    env.update(extra)
    try:
        start = time.monotonic()
        proc = run_script(exp / "run_bench.sh", env)
        elapsed = time.monotonic() - start
        assert proc.returncode == 1, proc.stderr
        assert message in proc.stderr and "preflight failed: nothing was started" in proc.stderr
        # The fake engine never started: no server log, no run directory, no client call.
        assert not Path(env["RESULT_ROOT"]).exists()
        assert not (tmp_path / "client_calls.log").exists()
        assert elapsed < 60
        # DRY_RUN runs the same preflight and reports the problem as a warning.
        dry = run_script(exp / "run_bench.sh", dict(env, DRY_RUN="1", RESULT_ROOT=str(tmp_path / "dry")))
        assert dry.returncode == 0, dry.stderr
        assert "[WARN] preflight: " in dry.stderr and message in dry.stderr
    finally:
        if holder is not None:
            holder.close()


def test_missing_docker_image_stops_a_docker_platform(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="sglang")
    env = run_env(base_env, tmp_path, PLATFORM="kunlun_p800", FAKE_DOCKER_IMAGE="missing",
                  PATCH_ROOT=str(tmp_path / "nopatches"), FAKE_XPU_COUNT="8")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 1
    assert "Docker image sglang-kunlun-p800:latest is not present: docker pull sglang-kunlun-p800:latest" in proc.stderr
    assert not Path(env["RESULT_ROOT"]).exists()


def test_a_p800_experiment_detected_as_cpu_is_an_error_unless_platform_is_given(tmp_path, base_env, tag):
    p800 = REPO / "experiments" / "p800" / "dsv4_p800_sglang" / "run_bench.sh"
    path = ":".join(p for p in base_env["PATH"].split(":") if "tests/fakes/bin" not in p)
    env = dict(base_env, PATH=path, DRY_RUN="1", RUN_ID="20250102-030405", RESULT_ROOT=str(tmp_path / "r"))
    env.pop("PLATFORM", None)
    proc = run_script(p800, env)
    assert proc.returncode == 1
    assert "platform detected as cpu, but this experiment's directory is for kunlun_p800" in proc.stderr
    assert "PLATFORM=cpu" in proc.stderr and not (tmp_path / "r").exists()


def test_hardware_auto_that_cannot_query_the_gpus_is_an_error_unless_platform_is_given(tmp_path, base_env, tag):
    h20 = tmp_path / "repo"
    import shutil
    shutil.copytree(REPO, h20, ignore=lambda _d, n: [x for x in n if x in {".git", ".venv", "envs", "models",
                                                                         "results", "__pycache__", ".mypy_cache"}])
    exp = h20 / "experiments" / "h20" / "auto_exp"
    shutil.copytree(h20 / "experiments" / "TEMPLATE", exp)
    # nvidia-smi answers "NVIDIA H20" for detection, then fails for the count query
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text('#!/usr/bin/env bash\n[[ "$*" == *name,memory* ]] && exit 9\n'
                                     'if [[ -f "$FAKE_ONCE" ]]; then exit 9; fi; touch "$FAKE_ONCE"; echo "NVIDIA H20"\n')
    (fake / "nvidia-smi").chmod(0o755)
    env = dict(base_env, PATH=f"{fake}:{base_env['PATH']}", DRY_RUN="1", FAKE_ONCE=str(tmp_path / "once"),
               RUN_ID="20250102-030405", RESULT_ROOT=str(tmp_path / "r"))
    env.pop("PLATFORM", None)
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 1
    assert "HARDWARE=auto but the platform's accelerators cannot be queried" in proc.stderr


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_a_stale_engine_of_a_docker_platform_is_stopped_inside_its_container(
        tmp_path, base_env, make_experiment, tag):
    """P800 runs its engine in a container: after a SIGKILLed orchestrator, the next run stops the
    engine's host process group and, inside the container, every process tagged with its port."""
    exp = make_experiment(phases="sglang", config=DEFAULT_CONFIG + 'MIN_PROMPTS="16"\n')
    docker_log = tmp_path / "docker.log"
    env = run_env(base_env, tmp_path, PLATFORM="kunlun_p800", PATCH_ROOT=str(tmp_path / "nopatches"),
                  FAKE_XPU_COUNT="8", FAKE_DOCKER_LOG=str(docker_log), FAKE_SERVER_ARGS="--latency-ms 300",
                  STOP_GRACE_S="5")
    port = int(env["PORT"])
    run = Path(env["RESULT_ROOT"])
    proc = None
    try:
        proc, pidfile = start_then_sigkill_the_orchestrator(exp, env, run, port)
        assert pidfile["container"] and pidfile["tag"] == f"sskj-{port}"
        second = run_script(exp / "run_bench.sh", dict(env, RESUME="1", FAKE_SERVER_ARGS=""))
        assert second.returncode == 0, second.stderr
        assert f"stopped stale engine pid {pidfile['pid']}" in second.stderr
        calls = docker_log.read_text()
        assert f"docker exec {pidfile['container']} sh -c" in calls and f"sskj-stop sskj-{port} TERM" in calls
        assert not port_listening(port) and not engine_pids(port)
    finally:
        kill_leftovers(proc, port)
