"""Every shell script of the workflow passes ShellCheck (with -x)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from shellkit import FAKES, REPO

pytestmark = pytest.mark.shell


def shell_scripts() -> list[str]:
    files = sorted(
        {
            *REPO.glob("scripts/**/*.sh"),
            *REPO.glob("experiments/**/*.sh"),
            *REPO.glob("platforms/**/*.sh"),
            *(p for p in (FAKES / "bin").iterdir() if p.is_file()),
        }
    )
    return [str(p) for p in files if "/results/" not in str(p)]


def test_there_are_scripts_to_check():
    names = {s.rsplit("/", 1)[-1] for s in shell_scripts()}
    assert {"lib.sh", "platform.sh", "adaptive_bench_lib.sh", "apply_patches.sh", "run_bench.sh"} <= names


@pytest.mark.slow  # ShellCheck over every script: about 25 s; make test runs it
@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed (apt-get install shellcheck)")
def test_shellcheck_clean():
    proc = subprocess.run(
        ["shellcheck", "-x", "--severity=style", *shell_scripts()],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
