"""bench::ensure_container with the fake docker: the container it creates (the command `phase-begin` plans,
sskj_results/run/dryplan.py) works on any image and on Podman."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from shellkit import COMMON, run_script

from sskj_results.run.dryplan import container_create

pytestmark = pytest.mark.shell


def _ensure(env: dict[str, str], run_args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    create, warnings = container_create({"CONTAINER_NAME": "c1", "DOCKER_IMAGE": "img:1", "DOCKER_RUN_ARGS": run_args})
    script = (f"set -euo pipefail\nsource {COMMON / 'adaptive_bench_lib.sh'}\n"
              f"BENCH_CONTAINER_CREATE=({shlex.join(create)})\n"
              "CONTAINER_NAME=c1 AUTO_START_CONTAINER=1 bench::ensure_container\n")
    done = subprocess.run(["bash", "-c", script], env=dict(env, FAKE_DOCKER_RUNNING="missing"),
                          capture_output=True, text=True, timeout=60)
    return done, warnings


def test_created_container_sleeps_by_entrypoint_and_drops_shm_size_under_ipc_host(tmp_path, base_env) -> None:
    done, warnings = _ensure(base_env, "--privileged --net=host --ipc=host --shm-size=64g -v /data:/data")
    assert done.returncode == 0, done.stderr
    run = [line for line in (tmp_path / "docker_calls.log").read_text().splitlines() if line.startswith("docker run")]
    # an image's ENTRYPOINT would take a `sleep infinity` command as its arguments; Podman refuses the pair
    assert run == ["docker run -d --name c1 --privileged --net=host --ipc=host -v /data:/data "
                   "--entrypoint sleep img:1 infinity "]
    assert warnings == ["DOCKER_RUN_ARGS: --shm-size=64g dropped (--ipc=host shares the host's /dev/shm)"]


def test_shm_size_is_kept_without_ipc_host(tmp_path, base_env) -> None:
    done, warnings = _ensure(base_env, "--shm-size=64g")
    assert done.returncode == 0, done.stderr
    assert "docker run -d --name c1 --shm-size=64g --entrypoint sleep img:1 infinity " in \
        (tmp_path / "docker_calls.log").read_text().splitlines()
    assert warnings == []


def test_a_phase_of_a_docker_platform_warns_of_the_dropped_shm_size_once(tmp_path, base_env, make_experiment) -> None:
    """phase-begin plans the container command and says what it dropped (on stderr, as the shell did)."""
    exp = make_experiment()
    env = dict(base_env, DRY_RUN="1", PLATFORM="kunlun_p800", RUN_ID="20260708-120000",
               RESULT_ROOT=str(tmp_path / "r"), DOCKER_RUN_ARGS="--ipc=host --shm-size=8g")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("[WARN] DOCKER_RUN_ARGS: --shm-size=8g dropped (--ipc=host shares the host's /dev/shm)") == 1
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("docker start ")]
    assert "--shm-size" not in line and line.endswith(" --ipc=host --entrypoint sleep sglang-kunlun-p800:latest infinity")
