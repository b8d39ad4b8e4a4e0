"""The package type-checks cleanly with mypy, configured by [tool.mypy] in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_reports_no_errors() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 0, f"mypy exited with {proc.returncode}:\n{output}"
