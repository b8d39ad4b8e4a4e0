#!/usr/bin/env python3
"""Side-by-side comparison of runs (e.g. SGLang vs vLLM).

Thin wrapper kept for the team's habit `python3 scripts/common/compare.py RUN_DIR... --out DIR`:
execs `sskj-results compare` with the same arguments. All logic lives in the
sskj_results package.
"""

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


def main() -> int:
    tool = sskj_results_bin()
    os.execv(tool, [tool, "compare", *sys.argv[1:]])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
