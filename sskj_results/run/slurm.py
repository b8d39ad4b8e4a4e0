"""Slurm submission plan: one sbatch command per experiment plus one dependent comparison job.

Pure: reads the platform and experiment KEY=VALUE files, submits nothing.
`scripts/common/submit.sh` runs the commands this module builds.

Resources come from the platform file (platforms/<name>.env), overridden by
the experiment's config.env, overridden by the environment, overridden by the
command line (--nodes, --partition, --time). Keys (all optional):

SLURM_PARTITION, SLURM_TIME, SLURM_ACCOUNT, SLURM_QOS, GPUS_PER_NODE,
SLURM_GRES, SLURM_CPUS_PER_TASK, SLURM_MEM, SLURM_EXTRA_ARGS,
and NNODES (nodes the engine spans; the job asks for that many nodes).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..contract.envfile import PLATFORM_KEYS, parse_env_file
from ..contract.errors import ConfigError, UsageError

__all__ = ["SLURM_KEYS", "SlurmJob", "SlurmPlan", "plan_submission", "platform_for"]

# Keys a platform file (or config.env) may set for Slurm (their meanings live in PLATFORM_KEYS),
# and NNODES, which an experiment sets.
SLURM_KEYS: dict[str, str] = {
    **{key: PLATFORM_KEYS[key][1] for key in (
        "SLURM_PARTITION", "SLURM_TIME", "SLURM_ACCOUNT", "SLURM_QOS", "GPUS_PER_NODE", "SLURM_GRES",
        "SLURM_CPUS_PER_TASK", "SLURM_MEM", "SLURM_EXTRA_ARGS")},
    "NNODES": "nodes the engine spans (sbatch --nodes; multi-node engines when > 1)",
}

# Seconds before the time limit at which the job's batch shell gets SIGTERM,
# so that it stops the engine and records what it measured.
SIGNAL_GRACE_S = 180

_TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$|^\d+-\d+$|^(UNLIMITED|INFINITE)$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_PLATFORM = re.compile(r"^[a-z0-9_]+$")


@dataclass(frozen=True)
class SlurmJob:
    """One experiment job: what to run, where its results go, the sbatch command."""

    experiment: str
    experiment_dir: Path
    run_dir: Path
    platform: str
    nodes: int
    argv: list[str]


@dataclass(frozen=True)
class SlurmPlan:
    jobs: list[SlurmJob]
    compare_dir: Path
    compare_argv: list[str]  # without --dependency (the job ids are known only after submission)


def platform_for(experiment_dir: Path, repo_root: Path) -> str:
    """The platform whose name is the experiment's parent directory or ends with _<parent>.

    experiments/h200/x -> nvidia_h200, experiments/p800/x -> kunlun_p800, experiments/cpu/x -> cpu.
    """
    parent = experiment_dir.parent.name
    names = sorted(p.stem for p in (repo_root / "platforms").glob("*.env"))
    matches = [n for n in names if n == parent or n.endswith(f"_{parent}")]
    if len(matches) != 1:
        raise ConfigError(
            f"{experiment_dir}: cannot tell the platform from its directory '{parent}' "
            f"({'several match: ' + ', '.join(matches) if matches else 'none matches'}); "
            f"give --platform (known: {', '.join(names)})"
        )
    return matches[0]


def _settings(experiment_dir: Path, platform: str, repo_root: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """Platform file, then config.env, then the environment (which wins), as the run loop loads them."""
    if not _PLATFORM.match(platform):
        raise UsageError(f"invalid platform '{platform}' (expected a name like nvidia_h200)")
    platform_file = repo_root / "platforms" / f"{platform}.env"
    if not platform_file.is_file():
        raise ConfigError(f"unknown platform '{platform}': no {platform_file}")
    scope = dict(environ)
    scope.setdefault("REPO_ROOT", str(repo_root))
    # As scripts/common/platform.sh sets them before it reads a platform file.
    scope.setdefault("SSKJ_ENVS_DIR", str(repo_root / "envs"))
    scope.setdefault("SSKJ_MODELS_DIR", str(repo_root / "models"))
    preset = set(environ)
    values: dict[str, str] = {}
    protect = {"CHIP", "ACCELERATOR", "RUNTIME", "DOCKER_IMAGE", "CONTAINER_NAME", "CONTAINER_PYTHON"}
    result = parse_env_file(platform_file, scope, preset, protect)
    values.update(result.as_dict())
    scope.update(values)
    config = experiment_dir / "config.env"
    if config.is_file():
        values.update(parse_env_file(config, scope, preset, set()).as_dict())
    for key in SLURM_KEYS:
        if environ.get(key):
            values[key] = environ[key]
    return values


def _positive(value: str, key: str, where: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"{where}: {key} must be a positive integer, got '{value}'")
    return int(value)


def _resource_args(values: Mapping[str, str], where: str) -> list[str]:
    args: list[str] = []
    if values.get("SLURM_ACCOUNT"):
        args.append(f"--account={values['SLURM_ACCOUNT']}")
    if values.get("SLURM_QOS"):
        args.append(f"--qos={values['SLURM_QOS']}")
    if values.get("SLURM_GRES"):
        args.append(f"--gres={values['SLURM_GRES']}")
    elif values.get("GPUS_PER_NODE"):
        args.append(f"--gpus-per-node={_positive(values['GPUS_PER_NODE'], 'GPUS_PER_NODE', where)}")
    if values.get("SLURM_CPUS_PER_TASK"):
        args.append(f"--cpus-per-task={_positive(values['SLURM_CPUS_PER_TASK'], 'SLURM_CPUS_PER_TASK', where)}")
    if values.get("SLURM_MEM"):
        args.append(f"--mem={values['SLURM_MEM']}")
    return args


def _check_time(value: str, where: str) -> str:
    if not _TIME.match(value):
        raise ConfigError(f"{where}: time limit '{value}' is not a Slurm time (MM, HH:MM:SS, D-HH:MM:SS)")
    return value


def plan_submission(
    experiment_dirs: Sequence[Path],
    *,
    repo_root: Path,
    run_id: str,
    platform: Optional[str] = None,
    nodes: Optional[int] = None,
    partition: Optional[str] = None,
    time_limit: Optional[str] = None,
    results_root: Optional[Path] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> SlurmPlan:
    """Build the sbatch commands of one submission (see the module docstring)."""
    if not experiment_dirs:
        raise UsageError("give at least one experiment directory")
    if not _NAME.match(run_id):
        raise UsageError(f"invalid RUN_ID '{run_id}' (letters, digits, . _ -)")
    if nodes is not None and nodes < 1:
        raise UsageError(f"--nodes must be at least 1, got {nodes}")
    env = dict(os.environ if environ is None else environ)
    repo_root = repo_root.resolve()
    job_script = repo_root / "scripts" / "common" / "slurm_job.sh"
    jobs: list[SlurmJob] = []
    seen: dict[Path, str] = {}
    for given in experiment_dirs:
        exp_dir = given.resolve()
        if not (exp_dir / "run_bench.sh").is_file():
            raise ConfigError(f"{given}: not an experiment directory (no run_bench.sh)")
        name = exp_dir.name
        plat = platform or env.get("PLATFORM") or platform_for(exp_dir, repo_root)
        where = f"{exp_dir / 'config.env'} (platform {plat})"
        values = _settings(exp_dir, plat, repo_root, env)
        job_nodes = nodes if nodes is not None else _positive(values.get("NNODES") or "1", "NNODES", where)
        run_dir = (results_root / name / run_id) if results_root else (exp_dir / "results" / run_id)
        run_dir = run_dir.resolve()
        if run_dir in seen:
            raise UsageError(f"{given}: its run directory {run_dir} is also that of {seen[run_dir]}")
        seen[run_dir] = str(given)
        argv = ["sbatch", "--parsable", f"--job-name=sskj-{name}", f"--nodes={job_nodes}", "--ntasks-per-node=1"]
        part = partition or values.get("SLURM_PARTITION")
        if part:
            argv.append(f"--partition={part}")
        limit = time_limit or values.get("SLURM_TIME")
        if limit:
            argv.append(f"--time={_check_time(limit, where)}")
        argv += _resource_args(values, where)
        argv += [
            f"--output={run_dir}/slurm-%j.log",
            "--open-mode=append",
            "--requeue",
            f"--signal=B:TERM@{SIGNAL_GRACE_S}",
            f"--chdir={repo_root}",
        ]
        argv += shlex.split(values.get("SLURM_EXTRA_ARGS", ""))
        argv += [str(job_script), "run", str(exp_dir), run_id, str(run_dir), plat, str(job_nodes)]
        jobs.append(SlurmJob(name, exp_dir, run_dir, plat, job_nodes, argv))

    compare_dir = ((results_root or (repo_root / "results")) / f"comparison_{run_id}").resolve()
    compare_argv = ["sbatch", "--parsable", f"--job-name=sskj-compare-{run_id}", "--nodes=1", "--ntasks=1"]
    first_partition = partition or _first(jobs, "--partition=")
    if first_partition:
        compare_argv.append(f"--partition={first_partition}")
    for prefix in ("--account=", "--qos="):
        value = _first(jobs, prefix)
        if value:
            compare_argv.append(f"{prefix}{value}")
    compare_argv += [
        f"--output={compare_dir}/slurm-%j.log",
        "--open-mode=append",
        "--kill-on-invalid-dep=no",
        f"--chdir={repo_root}",
        str(job_script), "compare", str(compare_dir),
        *(str(job.run_dir) for job in jobs),
    ]
    return SlurmPlan(jobs, compare_dir, compare_argv)


def _first(jobs: Sequence[SlurmJob], prefix: str) -> Optional[str]:
    for job in jobs:
        for arg in job.argv:
            if arg.startswith(prefix):
                return arg[len(prefix):]
    return None
