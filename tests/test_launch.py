"""The server command of a phase (sskj_results/run/launch.py, `sskj-results server-cmd`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.errors import ConfigError, UsageError
from sskj_results.run.launch import server_cmd

BASE = {"MODEL_PATH": "/m", "TP": "2", "SERVER_HOST": "127.0.0.1", "PORT": "30000",
        "SGLANG_PYTHON": "/e/sg/python", "VLLM_PYTHON": "/e/vl/python"}


def test_sglang_command_in_order() -> None:
    s = dict(BASE, SGLANG_EXTRA_ARGS="--a 1  --b\n--ignored")
    assert server_cmd("sglang", "sglang", ["--kv-cache-dtype", "fp8_e4m3"], s) == [
        "/e/sg/python", "-m", "sglang.launch_server", "--model-path", "/m", "--tp-size", "2", "--trust-remote-code",
        "--enable-metrics", "--kv-cache-dtype", "fp8_e4m3", "--host", "127.0.0.1", "--port", "30000", "--a", "1", "--b"]


def test_vllm_command_carries_the_server_environment_and_devices() -> None:
    s = dict(BASE, DEVICES="0,1", DEVICES_ENV="XPU_VISIBLE_DEVICES", VLLM_EXTRA_ARGS="--x")
    assert server_cmd("vllm-dspark", "vllm", ["--max-num-seqs", "8"], dict(s, DSPARK_PYTHON="/e/ds/python")) == [
        "env", "XPU_VISIBLE_DEVICES=0,1", "VLLM_SERVER_DEV_MODE=1", "/e/ds/python", "-m",
        "vllm.entrypoints.cli.main", "serve", "/m", "--trust-remote-code", "--tensor-parallel-size", "2",
        "--max-num-seqs", "8", "--host", "127.0.0.1", "--port", "30000", "--x"]


def test_launcher_native_fallback_and_docker() -> None:
    assert server_cmd("vllm", "launcher", ["A=1"], {"ENGINE_PYTHON": "/any"}) == ["env", "A=1", "/any"]
    docker = {"RUNTIME": "docker", "CONTAINER_NAME": "c1", "CONTAINER_PYTHON": "python3", "PORT": "31000"}
    assert server_cmd("sglang", "base", ["B=2"], docker) == [
        "docker", "exec", "--env", "B=2", "--env", "SSKJ_SERVER_TAG=sskj-31000", "c1", "python3", "-m",
        "sglang.launch_server"]


@pytest.mark.parametrize("rank, tail", [("0", []), ("1", ["--headless"])])
def test_multinode_flags_per_family(rank: str, tail: list[str]) -> None:
    s = dict(BASE, NNODES="2", NODE_RANK=rank, DIST_INIT_ADDR="head.example:29500")
    assert server_cmd("sglang", "sglang", [], s)[-6:] == [
        "--nnodes", "2", "--node-rank", rank, "--dist-init-addr", "head.example:29500"]
    vllm = server_cmd("vllm", "vllm", [], s)
    assert vllm[vllm.index("--nnodes"):] == [
        "--nnodes", "2", "--node-rank", rank, "--master-addr", "head.example", "--master-port", "29500", *tail]


def test_errors_name_what_to_set() -> None:
    with pytest.raises(ConfigError, match="missing required variables: MODEL_PATH TP"):
        server_cmd("sglang", "sglang", [], {"SERVER_HOST": "h", "PORT": "1"})
    with pytest.raises(ConfigError, match="set SGLANG_PYTHON or ENGINE_PYTHON"):
        server_cmd("sglang", "launcher", [], {})
    with pytest.raises(ConfigError, match="NODE_RANK and DIST_INIT_ADDR"):
        server_cmd("sglang", "sglang", [], dict(BASE, NNODES="2"))
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        server_cmd("vllm", "base", ["not-an-assignment"], BASE)
    with pytest.raises(ConfigError, match="unknown engine"):
        server_cmd("trt", "launcher", [], BASE)


def test_cli_prints_nul_separated_argv_from_the_environment() -> None:
    result = CliRunner().invoke(main, ["server-cmd", "vllm", "--kind", "launcher", "--", "K=V"],
                                env={"VLLM_PYTHON": "/p", "DEVICES": ""})
    assert result.exit_code == 0, result.output
    assert result.output == "env\0K=V\0/p\0"


def test_run_settings_default_check_and_count_devices() -> None:
    from sskj_results.run.launch import run_settings

    values, problems = run_settings({"DEFAULT_PORT": "18000", "MODEL_PATH": "/m", "DEVICES": "0,1,", "DEFAULT_TP": "8"})
    assert problems == []
    assert values["PORT"] == "18000" and values["TP"] == "2" and values["SERVER_HOST"] == "127.0.0.1"
    assert values["OOM_PATTERN"] == "out of memory|OutOfMemoryError|OOM error"
    assert run_settings({"MODEL_PATH": "/m", "DEFAULT_PORT": "1", "DEFAULT_TP": "8"})[0]["TP"] == "8"
    _, problems = run_settings({"PORT": "x", "TP": "-1", "CLIENT": "trt"})
    assert problems == ["PORT must be a non-negative integer, got 'x'", "TP must be a non-negative integer, got '-1'",
                        "CLIENT must be 'sglang' (python -m sglang.bench_serving) or 'vllm' (vllm bench serve), got 'trt'",
                        "missing required variables: MODEL_PATH"]


def test_preflight_names_each_engines_own_python_key_for_a_missing_interpreter(tmp_path: Path) -> None:
    """The key to set is the engine table's python_var (the one engine -> variable mapping), ENGINE_PYTHON
    for an engine the table does not know."""
    missing = tmp_path / "no-env" / "python"
    said = {}
    for engine in ("sglang", "vllm-dspark", "vllm-xpu", "vllm-cpu", "myengine"):
        phase = tmp_path / f"{engine}.phase"
        phase.write_bytes(b"".join(w.encode() + b"\0" for w in (engine, "", "", str(missing), "-m", "x.serve")))
        result = CliRunner().invoke(main, ["preflight", "--warn-only", "--phase-file", str(phase)])
        said[engine] = [line.split(" or set ", 1)[1] for line in result.output.splitlines()
                        if f"engine interpreter {missing} does not exist" in line]
    assert said == {"sglang": ["SGLANG_PYTHON (or ENGINE_PYTHON)"], "vllm-dspark": ["DSPARK_PYTHON (or ENGINE_PYTHON)"],
                    "vllm-xpu": ["XPU_PYTHON (or ENGINE_PYTHON)"], "vllm-cpu": ["VLLM_PYTHON (or ENGINE_PYTHON)"],
                    "myengine": ["ENGINE_PYTHON"]}
