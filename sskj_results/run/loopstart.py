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
import re
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
    run_dirs: list[str] = field(default_factory=list)
    compare_args: list[str] = field(default_factory=list)
    compare_warning: str = ""


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


def comparison(env: Mapping[str, str], root: str, names: Sequence[str], run_dirs: Sequence[str]) -> tuple[list[str], str]:
    """The `compare` of a run of several phases (written to the run directory, with its HTML) and a warning
    when COMPARE_BASELINE names no phase (compared without a baseline); nothing for one phase."""
    if len(names) < 2:
        return [], ""
    args, warning = ["compare", *run_dirs], ""
    wanted = env.get("COMPARE_BASELINE") or ""
    baseline = [d for name, d in zip(names, run_dirs) if name == wanted]
    if baseline:
        args += ["--baseline", baseline[-1]]
    elif wanted:
        warning = f"COMPARE_BASELINE={wanted} names no phase; comparing without a baseline"
    for option, key in (("--title", "COMPARE_TITLE"), ("--matrix", "COMPARE_MATRIX")):
        if env.get(key):
            args += [option, env[key]]
    return args + ["--out", root, "--html"], warning


def run_start(env: Mapping[str, str], experiment_dir: str, root_given: bool, entry_script: str,
              resume_settings: Sequence[str], names: Sequence[str] = ()) -> RunStart | Refusal:
    """The run's start with the configuration loaded (ENV: RUN_ID, PLATFORM, RESULT_ROOT when a file set it).
    ROOT_GIVEN: the caller's environment set RESULT_ROOT (the resume command repeats it, a dry run keeps what
    it writes there). NAMES: the phases' names; each phase's run directory is phase<N>_<NAME>/ of the run
    directory when there are several, else the run directory itself. Refused: RESUME=1 of a run directory
    that does not exist, a run directory that already holds a run (a real run without RESUME=1)."""
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
    run_dirs = [f"{root}/phase{i}_{name}" for i, name in enumerate(names, start=1)] if len(names) > 1 else [root]
    compare_args, warning = comparison(env, root, names, run_dirs)
    return RunStart(root, existing, remove, resume, note, run_dirs, compare_args, warning)


ACCEL_KINDS = {"nvidia-smi": "nvidia", "xpu-smi": "xpu"}  # ACCEL_SAMPLER -> the accelerators preflight counts


def preflight_args(env: Mapping[str, str], experiment_dir: str, orchestrator: int, phase_files: Sequence[str],
                   detected: bool, platform_only: bool = False) -> list[str]:
    """The `preflight` call of a run's start, from the run's settings: PLATFORM_ONLY, the platform choice alone
    (a detected platform, checked before any server command is built: a wrong one would build every command
    wrongly); else every phase (PHASE_FILES: ENGINE MODEL CLIENT_PYTHON SERVER_WORD..., NUL-terminated), the
    client, model, port, accelerators, Docker image, disk and the planned grid. A dry run only warns; with
    STOP_STALE_ENGINE=0 a stale engine is refused instead of stopped."""
    kind = ACCEL_KINDS.get(env.get("ACCEL_SAMPLER") or "none", "none")
    auto = ["--hardware-auto"] if env.get("HARDWARE") == "auto" else []
    if platform_only:
        return ["preflight", "--detected-platform", env.get("PLATFORM", ""), "--experiment-dir", experiment_dir,
                "--accelerators", f"{kind}:0", *auto]
    args = ["preflight", "--host", env.get("SERVER_HOST", ""), "--port", env.get("PORT", ""),
            "--orchestrator", str(orchestrator), "--experiment-dir", experiment_dir,
            "--grace", env.get("STOP_GRACE_S") or "30",
            "--disk", f"{env.get('RESULT_ROOT', '')}:{env.get('SSKJ_MIN_FREE_GB') or '1'}"]
    if env.get("DRY_RUN", "0") == "1":
        args.append("--warn-only")
    if (env.get("STOP_STALE_ENGINE") or "1") == "0":
        args.append("--no-stop-stale")
    count = env.get("ACCEL_COUNT") or ""
    counted = re.match(r"([0-9]+)x", env.get("HARDWARE") or "")
    if not count and counted:
        count = counted.group(1)
    args += ["--accelerators", f"{kind}:{count or env.get('TP') or '1'}", *auto]
    if detected:
        args += ["--detected-platform", env.get("PLATFORM", "")]
    if (env.get("RUNTIME") or "native") == "docker":
        args += ["--docker-image", env.get("DOCKER_IMAGE", "")]
    args += ["--client", env.get("CLIENT") or "sglang"]  # its module: from the client catalog
    # the planned grid: every phase's context must cover its shapes; without SLO search also the validity rules
    # known before the run (said once, not per phase)
    args += ["--scenarios", env.get("SCENARIOS_FILE") or f"{experiment_dir}/scenarios.tsv",
             "--concurrencies", env.get("CONCURRENCIES", ""), "--shapes", env.get("SHAPES", ""),
             "--prompts-per-concurrency", env.get("PROMPTS_PER_CONCURRENCY", ""),
             "--min-prompts", env.get("MIN_PROMPTS", "")]
    if env.get("NUM_PROMPTS"):
        args += ["--num-prompts", env["NUM_PROMPTS"]]
    if env.get("SLO_SEARCH", "0") == "1":
        args.append("--slo-search")
    for file in phase_files:
        args += ["--phase-file", file]
    return args
