"""Creating and updating the metadata/config part of a run's results.json (called by the shell)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Mapping, Optional

from pydantic import ValidationError

from .. import __version__
from ..catalog.engines import config_from_server_args
from ..contract.errors import ResultsError, UsageError
from ..contract.locking import locked, recover_backup
from ..contract.io import RESULTS_NAME, format_loc, load_run, model_message, save_run
from ..contract.models import Config, Metadata, Results, SloSpec
from ..contract.redact import redact
from ..contract.times import now_iso, precision_of

META_KEYS = tuple(Metadata.model_fields)
REQUIRED_ON_CREATE = ("experiment", "model")
LIST_META_KEYS = ("node_names", "node_hostnames")


def config_value(text: str) -> Any:
    """A --config value: a JSON scalar when it is one (8, 2.5, true, null), else the string itself; "" is null."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float, bool)) or value is None else text


def _run(cmd: list[str], cwd: Optional[Path] = None) -> Optional[str]:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit(cwd: Path) -> Optional[str]:
    """HEAD of the repository around cwd, `-dirty` when tracked files are modified."""
    sha = _run(["git", "rev-parse", "HEAD"], cwd)
    if not sha:
        return None
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd)
    return f"{sha}-dirty" if status else sha


def detect_accelerator() -> dict[str, str]:
    """Driver/runtime/hardware facts the machine reports (nvidia-smi, xpu-smi, /proc/cpuinfo)."""
    facts: dict[str, str] = {}
    names = _run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"])
    if names:
        rows = [[c.strip() for c in line.split(",")] for line in names.splitlines() if line.strip()]
        if rows and len(rows[0]) >= 3:
            name, mem_mib, driver = rows[0][:3]
            facts["driver_version"] = driver
            mem = re.match(r"\s*(\d+(?:\.\d+)?)", mem_mib)  # "143771" or, from some drivers, "143771 MiB"
            size = f" {round(float(mem.group(1)) / 1024)}GB" if mem else ""
            facts["hardware"] = f"{len(rows)}x {name}{size}"
        banner = _run(["nvidia-smi"]) or ""
        cuda = re.search(r"CUDA Version:\s*([\d.]+)", banner)
        if cuda:
            facts["runtime_version"] = f"CUDA {cuda.group(1)}"
        return facts
    for tool in ("xpu-smi", "xpu_smi"):
        xpu_banner = _run([tool])
        if xpu_banner:
            driver_match = re.search(r"Driver Version:\s*([\w.\-]+)", xpu_banner)
            runtime_match = re.search(r"(?:XRE|Runtime) Version:\s*([\w.\-]+)", xpu_banner)
            if driver_match:
                facts["driver_version"] = driver_match.group(1)
            if runtime_match:
                facts["runtime_version"] = runtime_match.group(1)
            return facts
    facts["hardware"] = describe_cpu()
    return facts


def describe_cpu() -> str:
    """`AMD EPYC 7B13 (2 cores, 24 GB RAM)` from /proc/cpuinfo and /proc/meminfo."""
    model = None
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(errors="replace"), re.M)
        model = found.group(1).strip() if found else None
    except OSError:
        pass
    ram = "?"
    try:
        total = re.search(r"^MemTotal:\s*(\d+)\s*kB", Path("/proc/meminfo").read_text(errors="replace"), re.M)
        ram = str(round(int(total.group(1)) / 1048576)) if total else "?"
    except OSError:
        pass
    return f"{model or 'unknown CPU'} ({os.cpu_count() or '?'} cores, {ram} GB RAM)"


def _model_error(run_dir: Path, exc: ValidationError, prefix: str = "") -> ResultsError:
    err = exc.errors()[0]
    loc = format_loc((prefix, *err["loc"]) if prefix else err["loc"])
    return ResultsError(f"{run_dir / RESULTS_NAME}: {loc}: {model_message(err)}")


def write_metadata(
    run_dir: Path,
    meta: Mapping[str, str],
    config: Mapping[str, str],
    slo: Optional[SloSpec] = None,
    detect: bool = True,
    cwd: Optional[Path] = None,
) -> Results:
    """Create RUN_DIR/results.json or update the given keys; scenarios are kept as they are.

    Holds the run's lock from reading results.json to writing it (a `parse` meanwhile waits)."""
    unknown = sorted(set(meta) - set(META_KEYS))
    if unknown:
        raise UsageError(f"unknown --meta key(s) {', '.join(unknown)}; known: {', '.join(META_KEYS)}")
    recover_backup(run_dir)  # a re-import killed while it swapped this run directory
    with locked(run_dir):
        return _write_metadata_locked(run_dir, meta, config, slo, detect, cwd)


_DOCKER_ENV = re.compile(r"docker:(\S+)")


def image_of_env(env: Any) -> Optional[str]:
    """The container image an env text names (`docker:IMAGE (container ...)`, run/phase.py's engine_environment);
    None for a Python environment or a docker env without an image."""
    match = _DOCKER_ENV.match(env) if isinstance(env, str) else None
    return match.group(1) if match else None


_NODES_PREFIX = re.compile(r"\d+ nodes x ")
_COUNT = re.compile(r"\s*(\d+)\s*x\s")


def _node_hardware(meta: dict[str, Any]) -> None:
    """On several nodes: `hardware` says so (`2 nodes x 8x H200`) and gpus_per_node is set (from the per-node string)."""
    hardware = meta.get("hardware")
    try:
        nodes = int(meta.get("nodes") or 1)
    except (TypeError, ValueError):
        return  # the model's validation names the bad value
    if nodes <= 1 or not isinstance(hardware, str) or not hardware or _NODES_PREFIX.match(hardware):
        return
    count = _COUNT.match(hardware)
    if not meta.get("gpus_per_node") and count:
        meta["gpus_per_node"] = int(count.group(1))
    meta["hardware"] = f"{nodes} nodes x {hardware}"


def _write_metadata_locked(run_dir: Path, meta: Mapping[str, str], config: Mapping[str, str], slo: Optional[SloSpec],
                           detect: bool, cwd: Optional[Path]) -> Results:
    file = run_dir / RESULTS_NAME
    if file.is_dir():
        raise ResultsError(f"{file}: a directory, not a results.json; move it away")
    # a broken or looping link is refused by load_run (not replaced by a new file)
    existing = load_run(file) if file.exists() or file.is_symlink() else None
    meta_dict: dict[str, Any] = existing.metadata.model_dump() if existing else {}
    meta_dict.update({k: (v if v != "" else None) for k, v in meta.items()})
    if meta.get("timestamp") and "timestamp_source" not in meta:  # a time given by hand
        meta_dict["timestamp_source"] = "given"
        if "timestamp_precision" not in meta:
            meta_dict["timestamp_precision"] = precision_of(meta["timestamp"])
    for key in LIST_META_KEYS:  # given as comma-separated text
        if isinstance(meta_dict.get(key), str):
            meta_dict[key] = meta_dict[key].split(",")
    if existing is None:
        missing = [k for k in REQUIRED_ON_CREATE if not meta_dict.get(k)]
        if missing:
            raise UsageError(
                f"{file} does not exist yet: give {' '.join(f'--meta {k}=...' for k in missing)} to create it"
            )
        meta_dict.setdefault("run_id", run_dir.resolve().name)
        if not meta_dict.get("timestamp"):  # the workflow's clock as it creates the run
            meta_dict.update(timestamp=now_iso(), timestamp_precision="second", timestamp_source="clock")
        meta_dict.setdefault("host", socket.gethostname())
        if not meta_dict.get("git_commit"):
            meta_dict["git_commit"] = git_commit(cwd or Path.cwd())
    # hardware "auto" (platforms/<chip>.env) or a new run with nothing given: ask the machine
    wants_detection = meta_dict.get("hardware") == "auto" or (existing is None and detect)
    if wants_detection:
        facts = detect_accelerator()
        if meta_dict.get("hardware") == "auto":
            meta_dict["hardware"] = facts.get("hardware")
        for key, value in facts.items():
            if not meta_dict.get(key):
                meta_dict[key] = value
    _node_hardware(meta_dict)
    if not meta_dict.get("image"):
        meta_dict["image"] = image_of_env(meta_dict.get("env"))
    meta_dict["tool_version"] = __version__
    cfg: dict[str, Any] = existing.config.model_dump(exclude_none=False) if existing else {}
    for key, text in config.items():
        value = config_value(text)
        if key.endswith("server_args") and isinstance(value, str):
            value = redact(value.strip())
        cfg[key] = value
    if isinstance(config.get("server_args"), str):
        # the settings the phase's own server command gives (null when it does not), over any --config of the same
        # key; a multi-node run's server_args is the srun line, its engine's argv that of rank 0 (which serves)
        derived = config_from_server_args(cfg["server_args"])
        if not derived and isinstance(cfg.get("rank0_server_args"), str):
            derived = config_from_server_args(cfg["rank0_server_args"])
        cfg.update(derived)
    try:
        metadata = Metadata.model_validate(meta_dict)
    except ValidationError as exc:
        raise _model_error(run_dir, exc, "metadata") from None
    try:
        config_model = Config.model_validate(cfg)
    except ValidationError as exc:
        raise _model_error(run_dir, exc, "config") from None
    try:
        results = Results(
            metadata=metadata,
            config=config_model,
            scenarios=existing.scenarios if existing else [],
            slo=slo if slo is not None else (existing.slo if existing else None),
            skipped=existing.skipped if existing else [],
            slo_search=existing.slo_search if existing else [],
            raw_files=existing.raw_files if existing else [],
        )
    except ValidationError as exc:
        raise _model_error(run_dir, exc) from None
    save_run(results, file)
    return results
