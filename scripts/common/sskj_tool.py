"""Where the thin Python wrappers in scripts/common find the sskj-results command."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def sskj_results_bin() -> str:
    """$SSKJ_RESULTS_BIN, else sskj-results on PATH, else <repo>/.venv/bin/sskj-results."""
    explicit = os.environ.get("SSKJ_RESULTS_BIN")
    if explicit:
        return explicit
    found = shutil.which("sskj-results")
    if found:
        return found
    venv = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "sskj-results"
    if venv.exists():
        return str(venv)
    sys.exit("sskj-results not found: install the package (pip install -e <repo>) or set SSKJ_RESULTS_BIN")


def exec_sskj_results(*args: str) -> None:
    """Replace this process with `sskj-results ARGS...` (its output and exit code are the caller's)."""
    tool = sskj_results_bin()
    os.execv(tool, [tool, *args])
