"""The repository's experiments: dry runs (exact commands, metadata), the
Docker path with patches (fake docker), and the thin Python wrappers."""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from shellkit import (
    COMMON,
    FAKES,
    REPO,
    SSKJ_RESULTS,
    engine_settings,
    free_port,
    load_json,
    needs_results,
    plan_command_lines,
    port_listening,
    run_script,
)

from sskj_results.catalog.engines import engine as engine_row, engine_argv

pytestmark = pytest.mark.shell

H200_VS = REPO / "experiments" / "h200" / "dsv4_h200_sglang_vs_vllm"
P800 = REPO / "experiments" / "p800" / "dsv4_p800_sglang"
P800_VS = REPO / "experiments" / "p800" / "dsv4_p800_sglang_vs_vllm"


def own_argv(name: str, given: list[tuple[str, str]], model: str = "/data/models/DeepSeek-V4-Flash",
             tp: str = "8") -> list[str]:
    """Engine NAME's own words (after its launch point) for these settings, as its row spells them, with the
    experiments' host and port: what a dry run must print for the phase."""
    from sskj_results.catalog.engines import engine, engine_argv
    from sskj_results.run.launch import server_cmd

    argv = server_cmd(name, "server", [], {"MODEL_PATH": model, "TP": tp, "SERVER_HOST": "127.0.0.1",
                                           "PORT": "30000", engine(name).python_var: "python"}, given)
    return engine_argv(argv)[1]


def split_server(cmd: list[str]) -> tuple[list[str], list[str]]:
    """A server command as (launcher and launch point, the engine's own words)."""
    from sskj_results.catalog.engines import engine_argv

    own = engine_argv(cmd)[1]
    return cmd[:len(cmd) - len(own)], own


def setting(cmd: list[str], key: str) -> str | None:
    """The last value a server command gives setting KEY (its engine row's spellings), None when none."""
    values = engine_settings(cmd)[key]
    return values[-1] if values else None


def command_lines(stdout: str) -> list[list[str]]:
    return plan_command_lines(stdout)


def options(cmd: list[str]) -> dict[str, str | None]:
    """--flag value pairs of a command line (value None for bare flags)."""
    out: dict[str, str | None] = {}
    for i, word in enumerate(cmd):
        if word.startswith("--"):
            nxt = cmd[i + 1] if i + 1 < len(cmd) else None
            out[word] = None if nxt is None or nxt.startswith("--") else nxt
    return out


def validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([SSKJ_RESULTS, "validate", str(path)], capture_output=True, text=True, timeout=120)


@needs_results
def test_dry_run_h200_sglang_vs_vllm(tmp_path, base_env, tag):
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20260707-132641", RESULT_ROOT=str(tmp_path / "r"))
    for key in ("CLIENT_PYTHON", "ENGINE_PYTHON"):  # use the platform file's
        env.pop(key)
    proc = run_script(H200_VS / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    cmds = command_lines(proc.stdout)
    servers = [c for c in cmds if engine_argv(c)]
    # the same KV-cache dtype, maximum of running requests and context on both engines, each in its own spelling
    given = [("kv_cache_dtype", "fp8"), ("max_num_seqs", "1024"), ("max_model_len", "33792")]
    assert [split_server(c)[1] for c in servers] == [own_argv("sglang", given), own_argv("vllm", given)]
    assert servers[0][0] == f"{REPO}/envs/sglang/bin/python"
    assert servers[1][:3] == ["env", *engine_row("vllm").server_env, f"{REPO}/envs/vllm/bin/python"]
    # paste-ready: the client as it runs; the watch by `sskj-results run-client` (the engine's pid and log,
    # known only once it runs) is said in one comment line per phase
    clients = [c for c in cmds if "sglang.bench_serving" in c]
    assert not [c for c in cmds if "run-client" in c]
    watch = [line for line in proc.stdout.splitlines() if line.startswith("# each client runs under `sskj-results run-client ")]
    assert [line.split()[7] for line in watch] == [str(tmp_path / "r" / "phase1_sglang"), str(tmp_path / "r" / "phase2_vllm")]
    # paste-ready: each phase starts its engine in the background, waits for its health, runs its scenarios,
    # stops it (lib::stop_server itself) and ends (phase-end): the shell variables are set before their use
    lines = proc.stdout.splitlines()

    def at(test) -> list[int]:
        return [i for i, line in enumerate(lines) if test(line)]

    starts = at(lambda line: line.startswith("setsid ") and line.endswith(' >>"$SERVER_LOG" 2>&1 </dev/null & SERVER_PID=$!'))
    logs = at(lambda line: line.startswith("SERVER_LOG="))
    waits = at(lambda line: line.endswith(' wait-health http://127.0.0.1:30000/health --pid "$SERVER_PID" --timeout 1800 '
                                          '--log "$SERVER_LOG"'))
    stops = at(lambda line: line == f'LIB_SERVER_PID="$SERVER_PID" STOP_GRACE_S=30 bash -c \'source "$1" && '
                                    f'lib::stop_server\' stop {COMMON}/lib.sh')
    ends = at(lambda line: line.endswith(f" phase-end {tmp_path}/r/phase1_sglang --runset {tmp_path}/r --baseline sglang")
              or line.endswith(f" phase-end {tmp_path}/r/phase2_vllm --runset {tmp_path}/r --baseline sglang"))
    scenarios = at(lambda line: line.startswith("# scenario "))
    assert len(logs) == len(starts) == len(waits) == len(stops) == len(ends) == 2, proc.stdout[:3000]
    for phase in (0, 1):
        own = [i for i in scenarios if (phase == 0) == (i < starts[1])]
        assert logs[phase] < starts[phase] < waits[phase] < min(own) <= max(own) < stops[phase] < ends[phase]
    assert lines[logs[0]] == f"SERVER_LOG={tmp_path}/r/phase1_sglang/logs/sglang_$(date +%Y%m%d_%H%M%S).log"
    warmups = [c for c in cmds if c[1].endswith("warmup.py")]
    assert len(clients) == 64 and len(warmups) == 64  # 32 scenarios x 2 phases
    first = clients[0]
    assert first[:3] == [f"{REPO}/envs/client/bin/python", "-m", "sglang.bench_serving"]
    opts = options(first)
    assert opts["--backend"] == "sglang" and opts["--max-concurrency"] == "32"
    assert opts["--random-input-len"] == "512" and opts["--random-output-len"] == "256"
    assert opts["--num-prompts"] == "128"
    assert opts["--output-file"] == str(tmp_path / "r/phase1_sglang/raw_outputs/nvidia_h200_sglang_0707_32_512_256.jsonl")
    assert "--output-details" in opts
    assert options(clients[32])["--backend"] == "vllm"
    # the answer kept (status line, headers, body) for parse: a refusal can be 200 {"success": false}
    stem = "server_metrics/nvidia_h200_{}_0707_32_512_256.reset.http"
    assert ["curl", "-sS", "-i", "-o", str(tmp_path / "r/phase1_sglang" / stem.format("sglang")), "--max-time", "60",
            "-X", "POST", "http://127.0.0.1:30000/flush_cache"] in cmds
    assert ["curl", "-sS", "-i", "-o", str(tmp_path / "r/phase2_vllm" / stem.format("vllm")), "--max-time", "60",
            "-X", "POST", "http://127.0.0.1:30000/reset_prefix_cache"] in cmds
    assert cmds[-1][1:] == ["compare", str(tmp_path / "r/phase1_sglang"), str(tmp_path / "r/phase2_vllm"),
                            "--baseline", str(tmp_path / "r/phase1_sglang"), "--out", str(tmp_path / "r"), "--html"]
    for index, engine, server in ((1, "sglang", servers[0]), (2, "vllm", servers[1])):
        run = tmp_path / "r" / f"phase{index}_{engine}"
        results = load_json(run / "results.json")
        assert shlex.split(results["config"]["server_args"]) == server
        assert shlex.split(results["config"][f"phase{index}_server_args"]) == server
        meta = results["metadata"]
        assert (meta["engine"], meta["chip"], meta["accelerator"]) == (engine, "nvidia_h200", "NVIDIA H200")
        assert meta["hardware"] == "8x NVIDIA H200 143GB"
        assert meta["script"] == "experiments/h200/dsv4_h200_sglang_vs_vllm/run_bench.sh"
        assert meta["run_id"] == "20260707-132641"
        assert meta["devices"] is None  # all devices
        assert (results["config"]["tp"], results["config"]["max_num_seqs"], results["config"]["max_model_len"]) == \
            (8, 1024, 33792)
        assert results["scenarios"] == []
        assert validate(run / "results.json").returncode == 0
        assert list((run / "raw_outputs").iterdir()) == []  # nothing ran
    assert not (tmp_path / "docker_calls.log").exists()


@needs_results
def test_dry_run_p800_runs_vllm_kunlun_as_the_second_phase(tmp_path, base_env, tag):
    """vLLM-Kunlun (engine vllm-xpu) after SGLang in the P800 container: vLLM's serve CLI with the
    engine table's flags, dev mode for the cache reset, /metrics around each client, recorded per phase."""
    env = dict(base_env, DRY_RUN="1", PLATFORM="kunlun_p800", RUN_ID="20260708-120000",
               RESULT_ROOT=str(tmp_path / "r"))
    proc = run_script(P800_VS / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    cmds = command_lines(proc.stdout)
    inside = ["--env", "SSKJ_SERVER_TAG=sskj-30000", "sskj_p800_sglang", "python3", "-m"]
    servers = [c for c in cmds if c[:2] == ["docker", "exec"] and "--port" in c]
    # the same settings, the memory share too, in each engine's spelling
    given = [("kv_cache_dtype", "auto"), ("max_num_seqs", "64"), ("max_model_len", "5120"), ("mem_fraction", "0.85")]
    assert [split_server(c)[1] for c in servers] == [own_argv("sglang", given), own_argv("vllm-xpu", given)]
    assert servers[0][:len(inside) + 2] == ["docker", "exec", *inside]
    assert servers[1][:len(inside) + 4] == ["docker", "exec", "--env", engine_row("vllm-xpu").server_env[0], *inside]
    second = cmds.index(servers[1])
    clients = [c for c in cmds if "sglang.bench_serving" in c]
    assert len(clients) == 20  # 10 scenarios x 2 phases
    assert {options(c)["--backend"] for c in cmds[second:] if c in clients} == {"vllm"}
    resets = [c[-1] for c in cmds[second:] if c[0] == "curl" and "POST" in c]
    assert resets == ["http://127.0.0.1:30000/reset_prefix_cache"] * 10
    stem = "kunlun_p800_vllm-xpu_0708_1_1000_256"
    metrics = [c for c in cmds[second:] if c[-1] == "http://127.0.0.1:30000/metrics"]
    assert len(metrics) == 20  # before and after each vLLM scenario (SGLang's phase has its own)
    assert metrics[0][-2] == str(tmp_path / f"r/phase2_vllm/server_metrics/{stem}.before.prom")
    assert options(clients[10])["--output-file"] == str(tmp_path / f"r/phase2_vllm/raw_outputs/{stem}.jsonl")
    for index, name, engine, server in ((1, "sglang", "sglang", servers[0]), (2, "vllm", "vllm-xpu", servers[1])):
        results = load_json(tmp_path / "r" / f"phase{index}_{name}" / "results.json")
        assert shlex.split(results["config"][f"phase{index}_server_args"]) == server
        meta = results["metadata"]
        assert (meta["engine"], meta["chip"], meta["phase"]) == (engine, "kunlun_p800", name)
        assert meta["experiment"] == "dsv4_p800_sglang_vs_vllm" and meta["env"].startswith("docker:")
        config = results["config"]
        assert (config["tp"], config["kv_cache_dtype"], config["max_num_seqs"], config["max_model_len"]) == \
            (8, "auto", 64, 5120)
    assert cmds[-1][1:] == ["compare", str(tmp_path / "r/phase1_sglang"), str(tmp_path / "r/phase2_vllm"),
                            "--baseline", str(tmp_path / "r/phase1_sglang"), "--out", str(tmp_path / "r"), "--html"]


@needs_results
def test_dry_run_p800_prints_docker_launch_and_records_patches(tmp_path, base_env, tag):
    patches = tmp_path / "patches"
    patches.mkdir()
    patch_text = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-A = 1\n+A = 2\n"
    (patches / "0001-fix.patch").write_text(patch_text)
    (patches / "series").write_text("# order\n0001-fix.patch sglang\n")
    env = dict(
        base_env,
        DRY_RUN="1",
        PLATFORM="kunlun_p800",
        RUN_ID="20260708-120000",
        RESULT_ROOT=str(tmp_path / "r"),
        PATCH_ROOT=str(patches),
        CONTAINER_NAME="ignored-from-env",  # the platform file wins
    )
    proc = run_script(P800 / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    cmds = command_lines(proc.stdout)
    given = [("kv_cache_dtype", "auto"), ("max_num_seqs", "64"), ("max_model_len", "5120"), ("mem_fraction", "0.85")]
    launch = ["docker", "exec", "--env", "SSKJ_SERVER_TAG=sskj-30000", "sskj_p800_sglang", "python3",
              "-m", engine_row("sglang").launch_module, *own_argv("sglang", given)]
    assert launch in cmds
    assert ["docker", "cp", str(patches / "0001-fix.patch"), "sskj_p800_sglang:/tmp/sskj_patches/0001-fix.patch"] in cmds
    # Patches come before the server.
    assert cmds.index(launch) > next(i for i, c in enumerate(cmds) if c[:2] == ["docker", "cp"])
    clients = [c for c in cmds if "sglang.bench_serving" in c]
    assert len(clients) == 10
    samplers = [c for c in cmds if "xpu-smi" in " ".join(c)]
    assert samplers == []  # samplers are not commands to paste
    results = load_json(tmp_path / "r" / "results.json")
    assert shlex.split(results["config"]["server_args"]) == launch
    assert results["metadata"]["chip"] == "kunlun_p800" and results["metadata"]["engine"] == "sglang"
    assert results["metadata"]["env"].startswith("docker:")
    recorded = results["config"]["patches"]
    recorded = recorded if isinstance(recorded, list) else json.loads(recorded)
    assert recorded == [
        {
            "file": "0001-fix.patch",
            "sha256": hashlib.sha256(patch_text.encode()).hexdigest(),
            "package": "sglang",
            "target": "<site-packages of sglang>",
            "status": "dry_run",
        }
    ]
    assert validate(tmp_path / "r" / "results.json").returncode == 0
    calls = (tmp_path / "docker_calls.log").read_text().splitlines() if (tmp_path / "docker_calls.log").exists() else []
    # DRY_RUN started nothing (the preflight only looked: inspect, module and model lookups)
    assert calls and not [c for c in calls if c.startswith(("docker run", "docker start", "docker cp"))
                          or f"-m {engine_row('sglang').launch_module}" in c]


def _fake_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    pkg = site / "fakepkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("VALUE = 1\n")
    return site


def _patch_dir(tmp_path: Path) -> tuple[Path, str]:
    patches = tmp_path / "patches"
    patches.mkdir()
    text = "--- a/fakepkg/mod.py\n+++ b/fakepkg/mod.py\n@@ -1 +1 @@\n-VALUE = 1\n+VALUE = 2\n"
    (patches / "0001-value.patch").write_text(text)
    (patches / "series").write_text("0001-value.patch fakepkg\n")
    return patches, text


@needs_results
def test_apply_patches_applies_once_and_records_sha256(tmp_path, base_env, tag):
    site = _fake_site(tmp_path)
    patches, text = _patch_dir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    assert subprocess.run([SSKJ_RESULTS, "metadata", str(run), "--meta", "experiment=t", "--meta", "model=m"], capture_output=True).returncode == 0
    env = dict(
        base_env,
        CONTAINER_NAME="c1",
        CONTAINER_PYTHON=sys.executable,
        PATCH_ROOT=str(patches),
        CONTAINER_PATCH_DIR=str(tmp_path / "in_container"),
        PYTHONPATH=f"{site}:{base_env['PYTHONPATH']}",
    )
    script = COMMON / "apply_patches.sh"
    first = subprocess.run(["bash", str(script), str(run)], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert (site / "fakepkg" / "mod.py").read_text() == "VALUE = 2\n"
    second = subprocess.run(["bash", str(script), str(run)], env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert (site / "fakepkg" / "mod.py").read_text() == "VALUE = 2\n"  # not applied twice
    recorded = load_json(run / "results.json")["config"]["patches"]
    recorded = recorded if isinstance(recorded, list) else json.loads(recorded)
    assert recorded == [
        {
            "file": "0001-value.patch",
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "package": "fakepkg",
            "target": str(site),
            "status": "already_applied",
        }
    ]
    calls = (tmp_path / "docker_calls.log").read_text()
    assert f"docker cp {patches}/0001-value.patch c1:{tmp_path}/in_container/0001-value.patch" in calls


@needs_results
def test_apply_patches_refuses_a_patch_that_does_not_apply(tmp_path, base_env, tag):
    site = _fake_site(tmp_path)
    (site / "fakepkg" / "mod.py").write_text("VALUE = 7\n")
    patches, _ = _patch_dir(tmp_path)
    env = dict(
        base_env,
        CONTAINER_NAME="c1",
        CONTAINER_PYTHON=sys.executable,
        PATCH_ROOT=str(patches),
        CONTAINER_PATCH_DIR=str(tmp_path / "in_container"),
        PYTHONPATH=f"{site}:{base_env['PYTHONPATH']}",
    )
    proc = subprocess.run(
        ["bash", str(COMMON / "apply_patches.sh"), str(tmp_path)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1
    assert "patch 0001-value.patch does not apply to fakepkg" in proc.stderr
    assert (site / "fakepkg" / "mod.py").read_text() == "VALUE = 7\n"
    assert not (tmp_path / "results.json").exists()  # nothing recorded for a patch that did not apply


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
@needs_results
def test_docker_platform_run_stops_the_server_inside_the_container(tmp_path, base_env, make_experiment, tag):
    """kunlun_p800 with the fake docker: the server runs via `docker exec`,
    patches are applied first, xpu-smi is sampled, and stopping the run also
    stops the tagged processes "inside the container"."""
    site = _fake_site(tmp_path)
    patches, _ = _patch_dir(tmp_path)
    exp = make_experiment(phases="sglang")
    port = free_port()
    env = dict(
        base_env,
        PLATFORM="kunlun_p800",
        PORT=str(port),
        RUN_ID="20260708-120000",
        RESULT_ROOT=str(tmp_path / "r"),
        PATCH_ROOT=str(patches),
        CONTAINER_PATCH_DIR=str(tmp_path / "in_container"),
        PYTHONPATH=f"{site}:{base_env['PYTHONPATH']}",
        SAMPLE_INTERVAL_MS="1000",
    )
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "r"
    results = load_json(run / "results.json")
    server = shlex.split(results["config"]["server_args"])
    assert server[:6] == ["docker", "exec", "--env", f"SSKJ_SERVER_TAG=sskj-{port}", "sskj_p800_sglang", "python3"]
    assert (site / "fakepkg" / "mod.py").read_text() == "VALUE = 2\n"
    assert len(results["scenarios"]) == 2
    xpu_logs = sorted((run / "gpu_logs").glob("*.xpu-smi.log"))
    assert [p.name for p in xpu_logs] == [
        "kunlun_p800_sglang_0708_1_16_8.xpu-smi.log",
        "kunlun_p800_sglang_0708_2_16_8.xpu-smi.log",
    ]
    assert "XPU-SMI" in xpu_logs[0].read_text()
    calls = (tmp_path / "docker_calls.log").read_text()
    assert "docker inspect" in calls
    assert f"sskj-stop sskj-{port} TERM" in calls  # the in-container stop
    assert not port_listening(port)


def test_warmup_succeeds_and_reports_server_errors(tmp_path, base_env, tag):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(FAKES / "fake_openai_server.py"), "--port", str(port), "--max-model-len", "64"],
        env=base_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not port_listening(port):
            assert time.monotonic() < deadline, "fake server did not start"
            time.sleep(0.1)
        warmup = [sys.executable, str(COMMON / "warmup.py"), "--base-url", f"http://127.0.0.1:{port}"]
        ok = subprocess.run(warmup + ["--input-len", "16", "--num-requests", "2"], capture_output=True, text=True, timeout=60)
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.count("ok in") == 2
        bad = subprocess.run(warmup + ["--input-len", "100"], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 1
        assert "HTTP 400" in bad.stderr and "exceeds max_model_len 64" in bad.stderr
        usage = subprocess.run(warmup + ["--input-len", "0"], capture_output=True, text=True, timeout=60)
        assert usage.returncode == 2
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_warmup_unreachable_server_fails(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(COMMON / "warmup.py"), "--base-url", f"http://127.0.0.1:{free_port()}", "--input-len", "8"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "cannot list models" in proc.stderr


def test_python_wrappers_exec_the_cli(tmp_path):
    record = tmp_path / "argv.log"
    stub = tmp_path / "stub"
    stub.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> {record}\n')
    stub.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "SSKJ_RESULTS_BIN": str(stub)}
    parse = subprocess.run(
        [sys.executable, str(COMMON / "parse_backend.py"), "runs/x", "--slo-tier", "S3"], env=env, timeout=60
    )
    compare = subprocess.run(
        [sys.executable, str(COMMON / "compare.py"), "runs/a", "runs/b", "--out", "o"], env=env, timeout=60
    )
    assert parse.returncode == 0 and compare.returncode == 0
    assert record.read_text().splitlines() == [
        "parse runs/x --slo-tier S3",
        "report runs/x",
        "compare runs/a runs/b --out o",
    ]


@needs_results
def test_dry_run_dspark_phases_record_their_spec_tokens(tmp_path, base_env, tag):
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20260707-000000", RESULT_ROOT=str(tmp_path / "r"))
    env.pop("ENGINE_PYTHON")
    proc = run_script(REPO / "experiments" / "h200" / "dsv4_h200_dspark" / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    launches = [c for c in command_lines(proc.stdout) if engine_row("vllm-dspark").launch_module in c]
    assert [setting(c, "spec_tokens") for c in launches] == ["5", "3", "1"]
    assert all(setting(c, "spec_method") == "dspark" for c in launches)
    assert all(c[2] == f"{REPO}/envs/vllm-dspark/bin/python" for c in launches)
    # the team's DSpark (seed 001/002): the DSpark checkpoint served, the draft model naming that same checkpoint
    dspark = "/data/models/DeepSeek-V4-Flash-DSpark"
    assert all(split_server(c)[1][0] == dspark and setting(c, "spec_model") == dspark for c in launches)
    assert all("--no-disable-hybrid-kv-cache-manager" in c for c in launches)
    for index, tokens in ((1, 5), (2, 3), (3, 1)):
        results = load_json(tmp_path / "r" / f"phase{index}_dspark_t{tokens}" / "results.json")
        assert results["config"]["spec_tokens"] == tokens
        assert results["config"]["spec_method"] == "dspark"
        assert results["metadata"]["engine"] == "vllm-dspark"
        assert setting(shlex.split(results["config"][f"phase{index}_server_args"]), "spec_tokens") == str(tokens)


@needs_results
def test_long_context_runs_the_21_seed_scenarios_and_the_full_matrix_on_request(tmp_path, base_env, tag):
    from sskj_results.run.plan import load_grid

    exp = REPO / "experiments" / "h200" / "dsv4_h200_long_context"
    default = {r.name for r in load_grid(exp / "scenarios.tsv", None, None)}
    assert default == ({f"c25_i65536_o{o}" for o in (256, 1024, 4096)}
                       | {f"c{c}_i{i}_o{o}" for c in (2, 5, 10) for i in (131072, 262144) for o in (256, 1024, 4096)})
    full = {r.name for r in load_grid(exp / "scenarios_full.tsv", None, None)}
    assert len(full) == 36 and default < full
    # every engine gets the same context length, KV-cache dtype and max running requests
    one = tmp_path / "one.tsv"
    one.write_text("2 131072 256\n")
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20260707-132641", RESULT_ROOT=str(tmp_path / "r"),
               SCENARIOS_FILE=str(one))
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    assert sum(line.startswith("# scenario ") for line in proc.stdout.splitlines()) == 3
    servers = [c for c in command_lines(proc.stdout) if engine_argv(c)]
    rows = [engine_row(name) for name in ("sglang", "vllm", "vllm-dspark")]
    for row, cmd in zip(rows, servers):
        assert (setting(cmd, "max_model_len"), setting(cmd, "kv_cache_dtype"), setting(cmd, "max_num_seqs")) == \
            ("270336", row.spelled("kv_cache_dtype", "fp8"), "64"), row.name
    sglang, vllm, dspark = servers
    assert setting(dspark, "spec_method") == "dspark" and setting(vllm, "spec_method") is None
    # the DSpark phase serves the DSpark checkpoint with seed 001's flags; the others the base model
    models = [split_server(c)[1][split_server(c)[1].index(row.model_flag) + 1] if row.model_flag
              else split_server(c)[1][0] for row, c in zip(rows, servers)]
    assert models == ["/data/models/DeepSeek-V4-Flash"] * 2 + ["/data/models/DeepSeek-V4-Flash-DSpark"]
    assert (setting(dspark, "spec_tokens"), setting(dspark, "spec_model")) == ("5", models[2])
    assert "--no-disable-hybrid-kv-cache-manager" in servers[2] and "--no-disable-hybrid-kv-cache-manager" not in servers[1]
    assert "is too small for" not in proc.stderr  # every phase's context holds the grid with its margin


@needs_results
def test_long_context_on_a_too_small_context_is_refused_before_any_engine_starts(tmp_path, base_env, tag):
    exp = REPO / "experiments" / "h200" / "dsv4_h200_long_context"
    env = dict(base_env, PLATFORM="nvidia_h200", RUN_ID="20260707-132641", RESULT_ROOT=str(tmp_path / "r"),
               CONTEXT_LEN="266240")  # 262144 + 4096: no room for the speculative tokens or a margin
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 1
    refused = [line.split("] preflight: ", 1)[1] for line in proc.stderr.splitlines() if "context 266240" in line]
    assert [line.split(":", 1)[0] for line in refused] == ["engine sglang", "engine vllm", "engine vllm-dspark"]
    assert all("too small for 3 of 21 scenarios (c2_i262144_o4096, c5_i262144_o4096, c10_i262144_o4096)" in line
               for line in refused)
    assert "needs 268908 = 262144 input + 4096 output + 5 speculative + 2663 margin (1 %)" in refused[2]
    assert "preflight failed: nothing was started" in proc.stderr
    assert not (tmp_path / "r").exists()


@needs_results
def test_devices_limit_the_server_set_tp_and_are_recorded(tmp_path, base_env, tag):
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20260707-132641", RESULT_ROOT=str(tmp_path / "r"),
               DEVICES="4,5,6,7", SCENARIOS_FILE=str(tmp_path / "none.tsv"), CONCURRENCIES="1", SHAPES="64x8")
    env.pop("ENGINE_PYTHON")
    proc = run_script(H200_VS / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    servers = [c for c in command_lines(proc.stdout) if engine_argv(c)]
    assert servers[0][:2] == ["env", "CUDA_VISIBLE_DEVICES=4,5,6,7"] and setting(servers[0], "tp") == "4"
    assert servers[1][:3] == ["env", "CUDA_VISIBLE_DEVICES=4,5,6,7", *engine_row("vllm").server_env]
    assert setting(servers[1], "tp") == "4"
    meta = load_json(tmp_path / "r" / "phase1_sglang" / "results.json")["metadata"]
    assert meta["devices"] == "CUDA_VISIBLE_DEVICES=4,5,6,7"
    # TP= wins over the device count; Docker platforms pass the platform's variable to docker exec
    p800 = run_script(P800 / "run_bench.sh", dict(env, PLATFORM="kunlun_p800", DEVICES="0,1", TP="1",
                                                    RESULT_ROOT=str(tmp_path / "p")))
    assert p800.returncode == 0, p800.stderr
    launch = next(c for c in command_lines(p800.stdout) if engine_row("sglang").launch_module in c)
    assert launch[:6] == ["docker", "exec", "--env", "XPU_VISIBLE_DEVICES=0,1", "--env", "SSKJ_SERVER_TAG=sskj-30000"]
    assert setting(launch, "tp") == "1"
    assert load_json(tmp_path / "p" / "results.json")["metadata"]["devices"] == "XPU_VISIBLE_DEVICES=0,1"


@pytest.mark.slow  # two dry runs of shipped 3-phase experiments: about 30 s; make test runs it
def test_dry_run_warns_once_per_scenario_before_the_gpu_is_spent(tmp_path, base_env, tag):
    def dry(exp: str, **extra: str) -> list[str]:
        env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20260707-132641",
                   RESULT_ROOT=str(tmp_path / exp), **extra)
        proc = run_script(REPO / "experiments" / "h200" / exp / "run_bench.sh", env)
        assert proc.returncode == 0, proc.stderr
        return [line.split("] ", 2)[2] for line in proc.stderr.splitlines() if "preflight: validity:" in line]

    # the long-context matrix keeps seed 002's 2 prompts per slot and says so in its config.env: no warning
    assert dry("dsv4_h200_long_context") == []
    # one prompt per slot: each scenario named once (not once per phase), with the count that would pass
    warned = dry("dsv4_h200_dspark", PROMPTS_PER_CONCURRENCY="1", MIN_PROMPTS="1", CONCURRENCIES="1 4", SHAPES="1000x256")
    assert [w.split(": ", 3)[2] for w in warned] == ["c1_i1000_o256", "c4_i1000_o256"]
    assert "send ≥ 16 prompts" in warned[1]


@pytest.mark.parametrize("args", [[], ["RUN", "--listing"], ["RUN", "--bogus"]], ids=["none", "listing-alone", "unknown"])
def test_apply_patches_misuse_is_one_usage_line(tmp_path, base_env, args):
    proc = subprocess.run(["bash", str(COMMON / "apply_patches.sh"), *[str(tmp_path) if a == "RUN" else a for a in args]],
                          env=dict(base_env, CONTAINER_NAME="c1", CONTAINER_PYTHON=sys.executable, PATCH_ROOT=str(tmp_path)),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "usage: apply_patches.sh RUN_DIR [--listing FILE [--recorded]]" in proc.stderr


@needs_results
def test_a_dry_run_with_the_default_results_directory_leaves_nothing_behind(tmp_path, base_env, tag):
    """The README's command as typed (no RESULT_ROOT): the plan names results/<RUN_ID>/, but nothing of it
    is left in the experiment (git status stays clean); RESULT_ROOT=DIR keeps the metadata in DIR."""
    run_id = "20991231-235959"
    results = H200_VS / "results"
    existed = results.exists()
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID=run_id)
    proc = run_script(H200_VS / "run_bench.sh", env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert f"# phase 1: sglang (engine sglang) -> {results / run_id / 'phase1_sglang'}" in proc.stdout
    assert not (results / run_id).exists() and results.exists() == existed
    assert proc.stderr.splitlines()[-1].endswith(
        "[INFO] dry run: nothing was started, nothing is kept (RESULT_ROOT=DIR keeps the metadata it records in DIR)")


@needs_results
def test_the_p800_dry_run_shows_the_container_step_before_the_engine(tmp_path, base_env, tag):
    """The P800 plan runs `docker exec` in the platform's container: it shows the step that makes sure the
    container runs (start a stopped one; create a missing one, which the run does only with
    AUTO_START_CONTAINER=1), and the dry run itself starts or creates no container."""
    env = dict(base_env, DRY_RUN="1", PLATFORM="kunlun_p800", RUN_ID="20260708-120000", RESULT_ROOT=str(tmp_path / "r"))
    proc = run_script(P800 / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    step = lines.index("docker start sskj_p800_sglang || docker run -d --name sskj_p800_sglang --privileged "
                       "--net=host --ipc=host -v /data:/data --entrypoint sleep sglang-kunlun-p800:latest infinity")
    assert lines[step - 1] == ("# the container sskj_p800_sglang: started when stopped; when missing the run refuses "
                               "(AUTO_START_CONTAINER=1 creates it, as this line does)")
    engine = next(i for i, line in enumerate(lines) if line.startswith("setsid docker exec "))
    first_exec = next(i for i, line in enumerate(lines) if "docker exec" in line)
    assert step < engine == first_exec
    assert lines[-2:] == ["# parse, report, validate (and the run set's index)",
                          f"{base_env['SSKJ_RESULTS_BIN']} phase-end {tmp_path / 'r'}"]
    stop = next(line for line in lines if line.startswith('LIB_SERVER_PID="$SERVER_PID" '))
    assert stop == ('LIB_SERVER_PID="$SERVER_PID" STOP_GRACE_S=30 LIB_SERVER_CONTAINER=sskj_p800_sglang '
                    f"LIB_SERVER_TAG=sskj-30000 bash -c 'source \"$1\" && lib::stop_server' stop {COMMON}/lib.sh")
    calls = Path(env["FAKE_DOCKER_LOG"]).read_text().splitlines() if Path(env["FAKE_DOCKER_LOG"]).exists() else []
    assert not [c for c in calls if c.startswith(("docker start", "docker run", "docker create"))]  # only looked
