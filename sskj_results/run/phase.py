"""What a phase records about itself before it starts: where its engine runs, versions, the metadata fields.

Settings come from a mapping (the run's environment, as the shell exported it).
"""

from __future__ import annotations

import os
import shutil
import socket
from typing import Mapping, Optional

from ..catalog.clients import choose_module, probe_modules
from ..catalog.engines import engine, package_version
from ..contract.errors import ConfigError, SskjError
from .launch import launcher

# results.json metadata field <- the setting it is read from (an empty setting is left out)
METADATA_FIELDS = (
    ("experiment", "EXPERIMENT"), ("run_id", "RUN_ID"), ("model", "MODEL_PATH"), ("backend", "PHASE_ENGINE"),
    ("engine", "PHASE_ENGINE"), ("hardware", "HARDWARE"), ("accelerator", "ACCELERATOR"), ("chip", "CHIP"),
    ("platform", "PLATFORM"), ("script", "SCRIPT_PATH"), ("env", "ENGINE_ENV"), ("phase", "PHASE_NAME"),
    ("engine_version", "ENGINE_VERSION"), ("client", "CLIENT_LABEL"), ("client_version", "CLIENT_VERSION"),
    ("description", "DESCRIPTION"), ("driver_version", "DRIVER_VERSION"), ("runtime_version", "RUNTIME_VERSION"),
    ("devices", "BENCH_DEVICES"), ("price_per_accel_hour", "PRICE_PER_ACCEL_HOUR"),
)


def client_label(settings: Mapping[str, str], module: Optional[str] = None) -> str:
    """The recorded client name (metadata.client) of the module the phase runs, `(Rust client)` added
    with CLIENT_IMPL=rust."""
    row = choose_module(settings.get("CLIENT") or "sglang", module=module)
    return row.label + (" (Rust client)" if settings.get("CLIENT_IMPL") == "rust" else "")


# Run by the client's Python: its package version and which of the catalog's modules it has. A module is
# looked for as a file under its top package (found without being imported): importing a client package
# to look for one of its submodules costs seconds.
_PROBE_SNIPPET = """
import importlib.util
import os
from importlib import metadata
version = ""
for name in NAMES:
    try:
        version = metadata.version(name)
        break
    except Exception:
        pass
print(version)

def has(module):
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except Exception:
        return False
    if spec is None:
        return False
    if not rest:
        return True
    for location in spec.submodule_search_locations or ():
        base = os.path.join(location, *rest)
        if os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py")):
            return True
    return False

print(" ".join(module for module in MODULES if has(module)))
"""


def client_probe(settings: Mapping[str, str], timeout_s: float = 60.0) -> tuple[Optional[str], set[str]]:
    """(version of the client's package, the catalog's probe modules it has), asked once per run to
    CLIENT_PYTHON (phase-begin hands the answer on in BENCH_CLIENT_PROBE); (None, empty) when it cannot be
    asked."""
    import subprocess

    python = settings.get("CLIENT_PYTHON", "")
    client = settings.get("CLIENT") or "sglang"
    cached = settings.get("BENCH_CLIENT_PROBE", "").split("\t")
    if len(cached) == 4 and cached[:2] == [python, client]:
        return cached[2] or None, set(cached[3].split())
    if not python or not ((os.path.isfile(python) and os.access(python, os.X_OK)) or shutil.which(python)):
        return None, set()
    snippet = f"NAMES = {[client]!r}\nMODULES = {probe_modules(client)!r}\n{_PROBE_SNIPPET}"
    try:
        done = subprocess.run([python, "-c", snippet], capture_output=True, text=True, timeout=timeout_s,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None, set()
    lines = done.stdout.splitlines() + ["", ""]
    return lines[0].strip() or None, set(lines[1].split())


def probe_record(settings: Mapping[str, str], version: Optional[str], present: set[str]) -> str:
    """BENCH_CLIENT_PROBE: the probe's answer, for the run's later phases (same client Python, same client)."""
    fields = [settings.get("CLIENT_PYTHON", ""), settings.get("CLIENT") or "sglang", version or "", " ".join(sorted(present))]
    return "" if any("\t" in f or "\n" in f for f in fields) else "\t".join(fields)


def client_module(settings: Mapping[str, str], present: set[str]) -> str:
    """The module the phase's client runs: CLIENT_MODULE when set, else the newest the client's Python has
    (client catalog). Raises ConfigError for a module the client does not have."""
    try:
        return choose_module(settings.get("CLIENT") or "sglang", present, settings.get("CLIENT_MODULE")).module
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


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
    if row.program:
        return None  # the engine's own program: no Python to ask for a package version
    python = _launcher(name, settings)
    if python and settings.get("RUNTIME") == "docker":  # not the server's own `docker exec --env ...` prefix
        python = ["docker", "exec", settings.get("CONTAINER_NAME", ""), settings.get("CONTAINER_PYTHON", "")]
    return package_version(python, list(row.dists)) if python else None


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
