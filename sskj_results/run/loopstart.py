"""A run's start, decided once by `config --start` before anything is written: whether RESUME=1 has a run to
continue, the run directory and where the run writes, what a dry run may leave behind, and the command that
resumes the run (printed by the shell after a failure or an interrupt).

A dry run writes nothing into a run that exists (RESUME=1, or its RUN_ID): its log, engine config files and
session go to the run's temporary directory (BENCH_DRY_EXISTING=1). A dry run with the default results
directory leaves nothing in the experiment's results/: what it made is removed at its exit, from the
highest directory that did not exist (BENCH_DRY_REMOVE); RESULT_ROOT=DIR keeps it in DIR.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence


@dataclass(frozen=True)
class Refusal:
    """Why the run cannot start (one line) and the exit status."""

    message: str
    status: int = 1


@dataclass(frozen=True)
class RunStart:
    """What the shell needs to start the run (records of `config --start`)."""

    result_root: str
    dry_existing: bool = False
    dry_remove: str = ""
    resume_cmd: list[str] = field(default_factory=list)
    note: str = ""


def _dirname(path: str) -> str:
    """The directory of PATH as the shell's `dirname` gives it (trailing slashes ignored; "." for a bare name)."""
    stripped = path.rstrip("/")
    if not stripped:
        return "/"
    head = os.path.dirname(stripped).rstrip("/")
    return head if head else ("/" if stripped.startswith("/") else ".")


def run_ids(results_dir: str) -> str:
    """The run directories under an experiment's results/ (their names, space-separated), or "none"."""
    try:
        names = sorted(e.name for e in os.scandir(results_dir) if not e.name.startswith(".") and e.is_dir())
    except OSError:
        names = []
    return " ".join(names) if names else "none"


def default_root(env: Mapping[str, str], experiment_dir: str) -> str:
    return env.get("RESULT_ROOT") or f"{experiment_dir}/results/{env.get('RUN_ID', '')}"


def resume_refusal(env: Mapping[str, str], experiment_dir: str) -> Optional[Refusal]:
    """Before the configuration is loaded (and its checks run): RESUME=1 without a RUN_ID (status 2), or of a
    run that does not exist, with the runs the experiment has."""
    if env.get("RESUME", "0") != "1":
        return None
    if not env.get("RUN_ID"):
        return Refusal("RESUME=1 needs RUN_ID=<the run to continue>", 2)
    root = default_root(env, experiment_dir)
    if not os.path.isdir(root):
        return Refusal(f"RESUME=1: {root} does not exist (no run {env['RUN_ID']} to resume; its runs: "
                       f"{run_ids(f'{experiment_dir}/results')})")
    return None


def _non_empty_dir(path: str) -> bool:
    try:
        return os.path.isdir(path) and bool(os.listdir(path))
    except OSError:
        return False


def run_start(env: Mapping[str, str], experiment_dir: str, root_given: bool, entry_script: str,
              resume_settings: Sequence[str]) -> RunStart | Refusal:
    """The run's start with the configuration loaded (ENV: RUN_ID, PLATFORM, RESULT_ROOT when a file set it).
    ROOT_GIVEN: the caller's environment set RESULT_ROOT (the resume command repeats it, a dry run keeps what
    it writes there). Refused: RESUME=1 of a run directory that does not exist, a run directory that already
    holds a run (a real run without RESUME=1)."""
    root = default_root(env, experiment_dir)
    dry = env.get("DRY_RUN", "0") == "1"
    existing = dry and _non_empty_dir(root)
    remove = ""
    if dry and not root_given and not os.path.exists(root):
        remove = root
        while not os.path.exists(_dirname(remove)):
            remove = _dirname(remove)
    note = ""
    if env.get("RESUME", "0") == "1":
        if not os.path.isdir(root):
            return Refusal(f"RESUME=1: {root} does not exist")
        note = f"resuming run {env.get('RUN_ID', '')} in {root}"
    elif os.path.exists(f"{root}/results.json") and not dry:
        return Refusal(f"{root} already holds a run; use RESUME=1 RUN_ID={env.get('RUN_ID', '')} or a new RUN_ID")
    resume = ["RESUME=1", f"RUN_ID={env.get('RUN_ID', '')}", *([f"RESULT_ROOT={root}"] if root_given else []),
              f"PLATFORM={env.get('PLATFORM', '')}", *resume_settings, "bash", entry_script]
    return RunStart(root, existing, remove, resume, note)
