"""What a phase records about itself before it starts: where its engine runs, versions, the metadata fields.

Settings come from a mapping (the run's environment, as the shell exported it).
"""

from __future__ import annotations

import os
import shutil
import socket
from typing import Mapping, Optional

from ..catalog.engines import engine, package_version
from ..contract.errors import SskjError
from .launch import launcher

# results.json metadata field <- the setting it is read from (an empty setting is left out)
METADATA_FIELDS = (
    ("experiment", "EXPERIMENT"), ("run_id", "RUN_ID"), ("model", "MODEL_PATH"), ("backend", "PHASE_ENGINE"),
    ("engine", "PHASE_ENGINE"), ("hardware", "HARDWARE"), ("accelerator", "ACCELERATOR"), ("chip", "CHIP"),
    ("platform", "PLATFORM"), ("script", "SCRIPT_PATH"), ("env", "ENGINE_ENV"), ("phase", "PHASE_NAME"),
    ("engine_version", "ENGINE_VERSION"), ("client", "CLIENT_LABEL"), ("client_version", "CLIENT_VERSION"),
    ("description", "DESCRIPTION"), ("driver_version", "DRIVER_VERSION"), ("runtime_version", "RUNTIME_VERSION"),
    ("devices", "BENCH_DEVICES"),
)


def client_label(settings: Mapping[str, str]) -> str:
    return "vllm bench serve" if settings.get("CLIENT") == "vllm" else "sglang.bench_serving"


def _launcher(name: str, settings: Mapping[str, str]) -> list[str]:
    try:
        return launcher(name, [], settings)
    except (SskjError, KeyError):
        return []


def engine_environment(name: str, settings: Mapping[str, str]) -> str:
    """Where the engine runs: the Docker image and container, or the environment directory of its Python."""
    if settings.get("RUNTIME") == "docker":
        return (f"docker:{settings.get('DOCKER_IMAGE', '')} (container {settings.get('CONTAINER_NAME', '')}, "
                f"{settings.get('CONTAINER_PYTHON', '')}; docker run {settings.get('DOCKER_RUN_ARGS', '')})")
    words = _launcher(name, settings)
    python = words[-1] if words else "unknown/bin/python"
    return os.path.dirname(os.path.dirname(python))


def engine_version(name: str, settings: Mapping[str, str]) -> Optional[str]:
    """The installed version of the engine's package, asked to its own Python (None when unknown)."""
    try:
        row = engine(name)
    except SskjError:
        return None
    python = _launcher(name, settings)
    if python and settings.get("RUNTIME") == "docker":  # not the server's own `docker exec --env ...` prefix
        python = ["docker", "exec", settings.get("CONTAINER_NAME", ""), settings.get("CONTAINER_PYTHON", "")]
    return package_version(python, list(row.dists)) if python else None


def client_version(settings: Mapping[str, str]) -> Optional[str]:
    """The installed version of the bench client's package (None when unknown)."""
    python = settings.get("CLIENT_PYTHON", "")
    if not python or not ((os.path.isfile(python) and os.access(python, os.X_OK)) or shutil.which(python)):
        return None
    return package_version([python], [settings.get("CLIENT") or "sglang"])


def metadata_meta(settings: Mapping[str, str], facts: Mapping[str, str]) -> list[str]:
    """The `--meta KEY=VALUE` options of a phase's metadata, from its settings and the facts found here."""
    values = {**settings, **facts}
    devices = settings.get("DEVICES", "")
    values["BENCH_DEVICES"] = f"{settings.get('DEVICES_ENV') or 'CUDA_VISIBLE_DEVICES'}={devices}" if devices else ""
    args: list[str] = []
    for key, name in METADATA_FIELDS:
        if values.get(name):
            args += ["--meta", f"{key}={values[name]}"]
    args += ["--meta", f"host={socket.gethostname() or 'unknown'}"]
    if settings.get("SLO_TIER"):
        args += ["--slo-tier", settings["SLO_TIER"]]
    return args
