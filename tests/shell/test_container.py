"""bench::ensure_container with the fake docker: the container it creates works on any image and on Podman."""

from __future__ import annotations

import subprocess

import pytest
from shellkit import COMMON

pytestmark = pytest.mark.shell


def _ensure(env: dict[str, str], run_args: str) -> subprocess.CompletedProcess:
    script = (f"set -euo pipefail\nsource {COMMON / 'adaptive_bench_lib.sh'}\n"
              "CONTAINER_NAME=c1 DOCKER_IMAGE=img:1 AUTO_START_CONTAINER=1 bench::ensure_container\n")
    return subprocess.run(["bash", "-c", script], env=dict(env, FAKE_DOCKER_RUNNING="missing", DOCKER_RUN_ARGS=run_args),
                          capture_output=True, text=True, timeout=60)


def test_created_container_sleeps_by_entrypoint_and_drops_shm_size_under_ipc_host(tmp_path, base_env) -> None:
    done = _ensure(base_env, "--privileged --net=host --ipc=host --shm-size=64g -v /data:/data")
    assert done.returncode == 0, done.stderr
    run = [line for line in (tmp_path / "docker_calls.log").read_text().splitlines() if line.startswith("docker run")]
    # an image's ENTRYPOINT would take a `sleep infinity` command as its arguments; Podman refuses the pair
    assert run == ["docker run -d --name c1 --privileged --net=host --ipc=host -v /data:/data "
                   "--entrypoint sleep img:1 infinity "]
    assert "DOCKER_RUN_ARGS: --shm-size=64g dropped (--ipc=host shares the host's /dev/shm)" in done.stderr


def test_shm_size_is_kept_without_ipc_host(tmp_path, base_env) -> None:
    done = _ensure(base_env, "--shm-size=64g")
    assert done.returncode == 0, done.stderr
    assert "docker run -d --name c1 --shm-size=64g --entrypoint sleep img:1 infinity " in \
        (tmp_path / "docker_calls.log").read_text().splitlines()
    assert "dropped" not in done.stderr
