"""The server command of a phase (sskj_results/run/launch.py, `sskj-results server-cmd`)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.catalog.engines import ENGINES, Engine, config_from_server_args, engine
from sskj_results.cli import main
from sskj_results.contract.errors import ConfigError, UsageError
from sskj_results.run.launch import server_cmd

BASE = {"MODEL_PATH": "/m", "TP": "2", "SERVER_HOST": "127.0.0.1", "PORT": "30000",
        "SGLANG_PYTHON": "/e/sg/python", "VLLM_PYTHON": "/e/vl/python"}


def _settings(row: Engine) -> dict[str, str]:
    return dict(BASE, **{row.python_var: f"/e/{row.name}/python", row.extra_args_var: "--a 1  --b\n--ignored"})


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_every_engine_command_in_order_from_its_row(row: Engine, tmp_path: Path) -> None:
    """launcher, launch point, the row's head, settings in its spelling (or its config file), the experiment's
    flags, host, port, its *_EXTRA_ARGS (first line, split on blanks)."""
    s = dict(_settings(row), ENGINE_CONFIG_DIR=str(tmp_path))
    given = [(k, v) for k, v in [("max_num_seqs", "64"), ("max_model_len", "4096"), ("kv_cache_dtype", "fp8")]
             if k in row.flags or k in row.file_keys]  # the settings the row has
    argv = server_cmd(row.name, "server", ["--own", "x"], s, given)
    point = ["-m", row.launch_module] if row.launch_module else []  # a program row: its program is the launcher's
    start = (["env", *row.server_env] if row.server_env else []) + [f"/e/{row.name}/python", *point,
                                                                    *row.launch_args]
    assert argv[:len(start)] == start
    model = [row.model_flag, "/m"] if row.model_flag else ["/m"]
    i = argv.index("/m") - len(model) + 1
    assert argv[i:i + len(model)] == model
    if "tp" in row.flags:  # an engine without tensor parallelism has no TP flag (TP must be 1 then)
        assert argv[argv.index(row.flags["tp"][0]) + 1] == "2"
    assert set(row.metrics_flags) <= set(argv)
    flags = row.flags_for(given)
    host = argv.index(row.host_flag)  # the row's own spellings of host and port (LMDeploy: --server-name)
    tail = ["--own", "x", *argv[argv.index("--own") + 2:host], row.host_flag, "127.0.0.1", row.port_flag,
            "30000", "--a", "1", "--b"]
    assert argv[-len(tail):] == tail and argv[argv.index("--own") - len(flags):argv.index("--own")] == flags
    for key, _ in given:
        if key in row.file_keys:  # recorded as a config-file setting, read back from the file named
            assert config_from_server_args(shlex.join(argv))[key] is not None


def test_launcher_and_server_environment_and_devices() -> None:
    s = dict(BASE, DEVICES="0,1", DEVICES_ENV="XPU_VISIBLE_DEVICES", DSPARK_PYTHON="/e/ds/python")
    row = engine("vllm-dspark")
    assert server_cmd("vllm-dspark", "base", [], s) == [
        "env", "XPU_VISIBLE_DEVICES=0,1", *row.server_env, "/e/ds/python", "-m", row.launch_module, *row.launch_args]


def test_launcher_native_fallback_and_docker() -> None:
    assert server_cmd("vllm", "launcher", ["A=1"], {"ENGINE_PYTHON": "/any"}) == ["env", "A=1", "/any"]
    docker = {"RUNTIME": "docker", "CONTAINER_NAME": "c1", "CONTAINER_PYTHON": "python3", "PORT": "31000"}
    assert server_cmd("sglang", "base", ["B=2"], docker) == [
        "docker", "exec", "--env", "B=2", "--env", "SSKJ_SERVER_TAG=sskj-31000", "c1", "python3", "-m",
        "sglang.launch_server"]


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
@pytest.mark.parametrize("rank", ["0", "1"])
def test_multinode_flags_by_the_rows_style(row: Engine, rank: str) -> None:
    s = dict(_settings(row), NNODES="2", NODE_RANK=rank, DIST_INIT_ADDR="head.example:29500", **{row.extra_args_var: ""})
    if not row.multinode:
        with pytest.raises(ConfigError, match="runs on a single node only"):
            server_cmd(row.name, "server", [], s)
        return
    argv = server_cmd(row.name, "server", [], s)
    expected = {"dist-init": ["--nnodes", "2", "--node-rank", rank, "--dist-init-addr", "head.example:29500"],
                "master-addr": ["--nnodes", "2", "--node-rank", rank, "--master-addr", "head.example",
                                "--master-port", "29500", *(["--headless"] if rank == "1" else [])]}[row.multinode]
    assert argv[argv.index("--nnodes"):] == expected


def test_errors_name_what_to_set() -> None:
    with pytest.raises(ConfigError, match="missing required variables: MODEL_PATH TP"):
        server_cmd("sglang", "server", [], {"SERVER_HOST": "h", "PORT": "1"})
    with pytest.raises(ConfigError, match="set SGLANG_PYTHON or ENGINE_PYTHON"):
        server_cmd("sglang", "launcher", [], {})
    with pytest.raises(ConfigError, match="NODE_RANK and DIST_INIT_ADDR"):
        server_cmd("sglang", "server", [], dict(BASE, NNODES="2"))
    with pytest.raises(UsageError, match="expected KEY=VALUE"):
        server_cmd("vllm", "base", ["not-an-assignment"], BASE)
    with pytest.raises(ConfigError, match="unknown engine"):
        server_cmd("tgi", "launcher", [], BASE)


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
    names = [row.name for row in ENGINES] + ["myengine"]
    for name in names:
        phase = tmp_path / f"{name}.phase"
        phase.write_bytes(b"".join(w.encode() + b"\0" for w in (name, "", "", str(missing), "-m", "x.serve")))
        result = CliRunner().invoke(main, ["preflight", "--warn-only", "--phase-file", str(phase)])
        said[name] = [line.split(" or set ", 1)[1] for line in result.output.splitlines()
                      if f"engine interpreter {missing} does not exist" in line]
    assert said == {**{row.name: [f"{row.python_var} (or ENGINE_PYTHON)"] for row in ENGINES},
                    "myengine": ["ENGINE_PYTHON"]}


def test_an_engine_that_is_its_own_program(monkeypatch) -> None:
    """A row whose engine is a program (llama-server), not a Python module: started by its path (its platform
    key, else its name on PATH, in a container by its name), no `-m`; preflight only looks for the program; its
    version is unknown, not asked to a Python."""
    import dataclasses

    from sskj_results.catalog import engines
    from sskj_results.run.phase import engine_version
    from sskj_results.run.preflight import interpreter_of

    row = dataclasses.replace(engine("sglang"), name="progeng", python_var="PROGENG_SERVER", launch_module="",
                              launch_args=(), console_script=("prog-server",), program="prog-server", dists=())
    monkeypatch.setattr(engines, "ENGINES", (*engines.ENGINES, row))
    assert server_cmd("progeng", "base", [], {}) == ["prog-server"]
    assert server_cmd("progeng", "base", ["A=1"], {"PROGENG_SERVER": "/opt/bin/prog-server"}) == [
        "env", "A=1", "/opt/bin/prog-server"]
    docker = {"RUNTIME": "docker", "CONTAINER_NAME": "c1", "PORT": "31000"}  # no CONTAINER_PYTHON needed
    assert server_cmd("progeng", "base", [], docker) == ["docker", "exec", "--env", "SSKJ_SERVER_TAG=sskj-31000", "c1",
                                                         "prog-server"]
    argv = server_cmd("progeng", "server", [], dict(BASE, PROGENG_SERVER="/opt/bin/prog-server"))
    assert argv[:3] == ["/opt/bin/prog-server", row.model_flag, "/m"] and "-m" not in argv
    found = interpreter_of(argv)
    assert found is not None and found.program and found.python == "/opt/bin/prog-server" and not found.module
    assert engine_version("progeng", {"PROGENG_SERVER": "/opt/bin/prog-server"}) is None
    assert engines.python_keys()["PROGENG_SERVER"].startswith("Path of the SGLang server program (prog-server")
