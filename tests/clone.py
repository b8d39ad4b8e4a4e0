"""The repository as a newcomer gets it, and the environment a newcomer's shell has: for the tests that run the
README's commands the way they are first run (tests/e2e/test_cpu_experiment.py, tests/test_first_use.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

REPO = Path(__file__).resolve().parents[1]
# Variables of the test's own environment that would hand the run something a newcomer does not have: the
# project's venv and command, a platform, a run's settings.
NEWCOMER_UNSET = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "SSKJ_RESULTS_BIN", "PLATFORM", "DRY_RUN", "RESUME",
                  "RUN_ID", "RESULT_ROOT", "PORT", "PROMPT_TEXT", "PROMPT_METHOD", "MODEL_PATH", "TOKENIZER_PATH")


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, timeout=300).stdout


def clean_clone(dest: Path) -> Path:
    """`git clone` of this repository into DEST, with the working tree's changes not yet committed laid over it
    (modified, new and deleted files that git does not ignore): in CI the commit itself, on a developer's machine
    what they are about to commit. No .venv, envs/, models/ or results: what git does not track."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(dest)], check=True,
                   capture_output=True, timeout=600)
    for name in _git("ls-files", "-z", "--modified", "--others", "--exclude-standard").split(b"\0"):
        if not name:
            continue
        relative = os.fsdecode(name)
        source, target = REPO / relative, dest / relative
        if source.is_file() and not source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif not source.exists() and not source.is_symlink():
            target.unlink(missing_ok=True)  # deleted in the working tree
    return dest


def _holds_a_venv(directory: str) -> bool:
    """A PATH entry that is a venv's bin/ (its parent holds pyvenv.cfg) or offers sskj-results."""
    path = Path(directory)
    return (path.parent / "pyvenv.cfg").is_file() or (path / "sskj-results").exists()


def newcomer_env(extra: Mapping[str, str] = (), path_first: str = "") -> dict[str, str]:
    """The test's environment as a newcomer's shell has it: no venv on PATH (none of the project's, no
    sskj-results), none of NEWCOMER_UNSET; PATH_FIRST (a venv's bin/ that a user activated) in front."""
    env = {k: v for k, v in os.environ.items() if k not in NEWCOMER_UNSET}
    entries = [p for p in env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(os.pathsep)
               if p and not _holds_a_venv(p)]
    env["PATH"] = os.pathsep.join([*([path_first] if path_first else []), *entries])
    env.update(extra)
    return env
