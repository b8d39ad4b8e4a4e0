"""Which platform this is, which platforms exist, and whether a loaded platform is complete (`sskj-results platform`).

The shell (scripts/common/platform.sh) loads platforms/<name>.env itself
(lib::load_env_file) and asks here for the rest:
  detect  nvidia-smi's first GPU name: *H200* -> nvidia_h200, *H20* ->
          nvidia_h20, *RTX PRO 6000* / *6000D* -> nvidia_rtx6000d (another
          NVIDIA GPU is an error naming it); else a working xpu-smi ->
          kunlun_p800; else cpu.
  file    the platform file of a name: a plain name ([a-z0-9_]+) of a file
          in the repository's platforms/ directory, nothing else.
  check   the keys of the loaded platform (the environment): every problem.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Callable, Mapping, Optional

from ..catalog.chips import catalog_chip
from ..catalog.engines import engine
from ..contract.errors import ConfigError

REQUIRED = ("CHIP", "ACCELERATOR", "HARDWARE", "ENGINE", "DEFAULT_PORT", "MODEL_ROOT")
REQUIRED_DOCKER = ("DOCKER_IMAGE", "CONTAINER_NAME", "CONTAINER_PYTHON", "PATCH_ROOT")
# nvidia-smi GPU name pattern -> platform (first match wins: H200 before H20)
NVIDIA = ((re.compile(r"H200"), "nvidia_h200"), (re.compile(r"H20"), "nvidia_h20"),
          (re.compile(r"RTX PRO 6000|6000D"), "nvidia_rtx6000d"))

Runner = Callable[[list[str]], Optional[str]]


def known(repo: Path) -> list[str]:
    """The platforms that have an .env file, sorted."""
    return sorted(p.stem for p in (repo / "platforms").glob("*.env"))


def tool_stdout(argv: list[str], timeout_s: float = 30.0) -> Optional[str]:
    """A tool's stdout, or None when it is missing, fails or hangs (timeout_s)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def detect(repo: Path, run: Runner = tool_stdout) -> str:
    """This machine's platform (see the module docstring)."""
    out = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    name = out.split("\n", 1)[0] if out else ""
    if name:
        for pattern, platform in NVIDIA:
            if pattern.search(name):
                return platform
        raise ConfigError(f"unknown NVIDIA GPU '{name}': set PLATFORM to one of {' '.join(known(repo))}")
    if run(["xpu-smi"]) is not None:
        return "kunlun_p800"
    return "cpu"


def resolve_name(repo: Path, name: str) -> str:
    """A platform named as `--chip` takes it (`H200`, `p800`) -> its platforms/*.env name; else NAME as given."""
    if (repo / "platforms" / f"{name}.env").is_file():
        return name
    chip, known = catalog_chip(name)
    return chip if known and (repo / "platforms" / f"{chip}.env").is_file() else name


def platform_file(repo: Path, name: str) -> Path:
    """platforms/<name>.env of a plain name that exists (or a chip name of one: resolve_name)."""
    name = resolve_name(repo, name)
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ConfigError(f"invalid PLATFORM '{name}' (expected a name like nvidia_h200)")
    path = repo / "platforms" / f"{name}.env"
    if not path.is_file():
        raise ConfigError(f"unknown platform '{name}': no {path} (known: {' '.join(known(repo))})")
    return path


def problems(settings: Mapping[str, str]) -> list[str]:
    """Every problem of the loaded platform's keys (empty: valid)."""
    out: list[str] = []
    required = list(REQUIRED)
    runtime = settings.get("RUNTIME") or "native"
    if runtime == "docker":
        required += REQUIRED_DOCKER
    elif runtime != "native":
        out.append(f"RUNTIME must be 'native' or 'docker', got '{runtime}'")
    missing = [k for k in required if not settings.get(k)]
    if missing:
        out.append(f"missing keys: {' '.join(missing)}")
    port = settings.get("DEFAULT_PORT", "")
    if port and not (port.isascii() and port.isdigit()):
        out.append(f"DEFAULT_PORT must be a number, got '{port}'")
    if settings.get("ENGINE"):
        try:
            engine(settings["ENGINE"])
        except ConfigError:
            out.append(f"unknown ENGINE '{settings['ENGINE']}'")
    return out
