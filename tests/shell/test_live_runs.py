"""Live runs you can trust: two runs on one machine never share an engine; the end-of-run summary; STRICT=1."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shellkit import FAKES, free_port, port_listening, run_script

pytestmark = [pytest.mark.shell, pytest.mark.slow]  # real runs of the loop with fake engines: 30-90 s

CONFIG = """\
MODEL_PATH="fake-model"
PROMPT_METHOD="client-random-text"
CONCURRENCIES="1 2"
SHAPES="{shape}"
MIN_PROMPTS="4"
PROMPTS_PER_CONCURRENCY="2"
WARMUP_REQUESTS="1"
STOP_GRACE_S="5"
HEALTH_TIMEOUT_S="30"
"""


def experiment(make_experiment, tmp_path: Path, name: str, phases: str, shape: str) -> Path:
    exp = make_experiment(phases=phases, config=CONFIG.format(shape=shape))
    return exp.rename(tmp_path / name)


def env_of(base_env, tmp_path: Path, name: str, **extra: str) -> dict[str, str]:
    env = dict(base_env, PLATFORM="cpu", RUN_ID="20250102-030405", RESULT_ROOT=str(tmp_path / name / "results"),
               FAKE_CLIENT_LOG=str(tmp_path / f"{name}_client_calls.log"))
    env.update(extra)
    return env


def engine_prompts(run_root: Path) -> list[int]:
    """The prompt length of every completion request that reached the engines of a run (their request logs)."""
    lengths = []
    for log in sorted(run_root.rglob("logs/*.log")):
        if "orchestrator" in log.name:
            continue
        lengths += [int(n) for n in re.findall(r"POST /v1/completions prompt=(\d+)", log.read_text())]
    return lengths


def test_two_overlapping_runs_never_reach_each_others_engine(tmp_path, base_env, make_experiment, tag):
    port = free_port()
    first = experiment(make_experiment, tmp_path, "first", "vllm sglang", "16x8")
    env_a = env_of(base_env, tmp_path, "first", PORT=str(port), FAKE_SERVER_ARGS="--reuse-port --latency-ms 20")
    run_a = subprocess.Popen(["bash", str(first / "run_bench.sh")], env=env_a, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not port_listening(port):
            assert run_a.poll() is None and time.monotonic() < deadline, "the first run's engine never listened"
            time.sleep(0.1)
        # the same port: the second run refuses, naming the first run's engine, and starts none of its own
        # (its preflight; a listener that appears after it is refused by the loop: tests/shell/test_lib.py)
        same = experiment(make_experiment, tmp_path, "same", "vllm", "24x8")
        env_b = env_of(base_env, tmp_path, "same", PORT=str(port), PORT_FREE_TIMEOUT_S="2",
                       FAKE_SERVER_ARGS="--reuse-port")
        refused = run_script(same / "run_bench.sh", env_b, timeout=120)
        assert refused.returncode == 1, refused.stderr
        assert (f"[ERROR] preflight: port {port} is used by the engine of a running experiment (run "
                f"{tmp_path / 'first' / 'results' / 'phase1_vllm'}, orchestrator pid {run_a.pid}): wait for it, stop "
                "it, or set PORT") in refused.stderr
        assert engine_prompts(tmp_path / "same") == []
        # PORT=auto: a free port from the platform's default on (here the first run's port, so the next one)
        auto = experiment(make_experiment, tmp_path, "auto", "vllm", "32x8")
        env_c = env_of(base_env, tmp_path, "auto", PORT="auto", DEFAULT_PORT=str(port),
                       FAKE_SERVER_ARGS="--reuse-port")
        done = run_script(auto / "run_bench.sh", env_c, timeout=240)
        assert done.returncode == 0, done.stderr
        out_a, err_a = run_a.communicate(timeout=240)
    finally:
        if run_a.poll() is None:
            os.killpg(run_a.pid, signal.SIGTERM)
            run_a.communicate(timeout=60)
    assert run_a.returncode == 0, err_a
    # every request of each run reached its own engine, none the other's (the engines' request logs)
    first_prompts, auto_prompts = engine_prompts(tmp_path / "first"), engine_prompts(tmp_path / "auto")
    assert first_prompts and set(first_prompts) == {16}
    assert auto_prompts and set(auto_prompts) == {32}
    server_args = (tmp_path / "auto" / "results" / "results.json").read_text()
    assert f"--port {port} " not in server_args and "--port auto" not in server_args
    # the end of each run: its summary
    assert "summary: 4 point(s) measured (phase1_vllm 2, phase2_sglang 2)" in err_a
    assert "summary: 2 point(s) measured (results 2)" in done.stderr


def test_strict_makes_disqualified_points_a_failed_run_and_the_summary_names_them(
        tmp_path, base_env, make_experiment, tag):
    exp = experiment(make_experiment, tmp_path, "bursty", "vllm", "16x8")
    env = env_of(base_env, tmp_path, "bursty", PORT=str(free_port()), FAKE_SERVER_ARGS="--tokens-per-chunk 4")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr  # without STRICT the run ends normally, and says what to look at
    lines = proc.stderr.splitlines()
    start = next(i for i, x in enumerate(lines) if "summary: 2 point(s) measured (results 2)" in x)
    assert lines[start + 1] == ("  valid 0, qualified 0, partly unreliable 2 (streaming_granularity 2) (their other "
                                "metrics stand), disqualified 0, unknown 0")
    assert lines[start + 2] == "  results c1_i16_o8: ◐ TPOT, ITL unreliable: streaming_granularity"
    assert lines[start + 4].startswith(f"  look at: {tmp_path / 'bursty' / 'results' / 'report.md'}")
    strict = env_of(base_env, tmp_path, "bursty", PORT=str(free_port()), FAKE_SERVER_ARGS="--tokens-per-chunk 4",
                    STRICT="1", RUN_ID="20250102-030406", RESULT_ROOT=str(tmp_path / "bursty" / "strict"))
    proc = run_script(exp / "run_bench.sh", strict)
    assert proc.returncode == 1
    assert "error: STRICT=1: 2 disqualified or partly unreliable point(s)" in proc.stderr


def test_an_engine_that_joins_the_port_during_a_scenario_stops_the_phase_and_the_scenario_is_not_kept(
        tmp_path, base_env, make_experiment, tag):
    port = free_port()
    exp = experiment(make_experiment, tmp_path, "joined", "vllm", "16x64")
    calls = tmp_path / "joined_client_calls.log"
    env = env_of(base_env, tmp_path, "joined", PORT=str(port), FAKE_SERVER_ARGS="--reuse-port --latency-ms 40",
                 CONCURRENCIES="1")
    run = subprocess.Popen(["bash", str(exp / "run_bench.sh")], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    intruder = None
    try:
        deadline = time.monotonic() + 90
        while not calls.exists():  # the first scenario's client has started (4 requests of 64 tokens: 10 s)
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.stderr else ""
            time.sleep(0.1)
        intruder = subprocess.Popen([sys.executable, str(FAKES / "fake_openai_server.py"), "--port", str(port),
                                     "--reuse-port"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
        _, err = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGTERM)
            run.communicate(timeout=60)
        if intruder is not None:
            intruder.kill()
            intruder.wait()
    assert run.returncode == 1
    assert (f"[ERROR] after the client of cpu_vllm_0102_1_16_64: port {port} is held by pid {intruder.pid} "
            f"({sys.executable} {FAKES / 'fake_openai_server.py'} --port {port} --reuse-port), not by the engine this "
            "run started (pid ") in err
    assert "c1_i16_o64 not recorded, phase stopped" in err
    assert not list((tmp_path / "joined" / "results" / "raw_outputs").iterdir())  # nothing measured is kept
