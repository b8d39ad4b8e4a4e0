"""The shell half stays thin (docs/ARCHITECTURE.md, *The shell stays thin*): scripts/common/*.sh under its
ceiling, counted as `wc -l scripts/common/*.sh` counts it."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CEILING = 2200


def shell_lines() -> int:
    return sum(path.read_bytes().count(b"\n") for path in sorted((REPO / "scripts" / "common").glob("*.sh")))


def test_the_shell_stays_under_its_ceiling() -> None:
    lines = shell_lines()
    assert lines < CEILING, (f"scripts/common/*.sh has {lines} lines, the ceiling is {CEILING}: move what is planning, "
                             "bookkeeping or parsing into the package (docs/ARCHITECTURE.md, *The shell stays thin*)")


def test_the_count_is_the_one_the_docs_give() -> None:
    files = sorted(str(p) for p in (REPO / "scripts" / "common").glob("*.sh"))
    total = subprocess.run(["wc", "-l", *files], capture_output=True, text=True, check=True).stdout.split()[-2]
    assert int(total) == shell_lines()
    assert f"The ceiling is {CEILING:,} lines" in (REPO / "docs" / "ARCHITECTURE.md").read_text().replace("\n", " ")
