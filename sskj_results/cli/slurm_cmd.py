from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from .common import handle_errors


@click.command("slurm-plan")
@click.argument("experiments", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--run-id", required=True, help="RUN_ID of every job (fixed at submit time).")
@click.option("--repo-root", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Repository root (platforms/, scripts/common/slurm_job.sh).")
@click.option("--platform", default=None, help="Platform of every experiment (default: from the experiment's directory).")
@click.option("--nodes", type=int, default=None, help="Nodes per job (default: the experiment's NNODES, else 1).")
@click.option("--partition", default=None, help="Partition (default: SLURM_PARTITION of the platform).")
@click.option("--time", "time_limit", default=None, help="Time limit per job (default: SLURM_TIME).")
@click.option("--results-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Put run directories at RESULTS_ROOT/<experiment>/<RUN_ID> (default: <experiment>/results/<RUN_ID>).")
@handle_errors
def slurm_plan(experiments: tuple[Path, ...], run_id: str, repo_root: Path, platform: Optional[str],
               nodes: Optional[int], partition: Optional[str], time_limit: Optional[str],
               results_root: Optional[Path]) -> None:
    """Print the sbatch commands of a submission (used by scripts/common/submit.sh; submits nothing).

    Output, NUL-separated fields: per experiment `job`, experiment name, run
    directory, argument count, the sbatch arguments; then `compare`, the
    comparison directory, argument count, the sbatch arguments of the
    comparison job (its --dependency is added by the caller).
    """
    from ..run.slurm import plan_submission

    plan = plan_submission(list(experiments), repo_root=repo_root, run_id=run_id, platform=platform, nodes=nodes,
                           partition=partition, time_limit=time_limit, results_root=results_root)
    fields: list[str] = []
    for job in plan.jobs:
        fields += ["job", job.experiment, str(job.run_dir), str(len(job.argv)), *job.argv]
    fields += ["compare", str(plan.compare_dir), str(len(plan.compare_argv)), *plan.compare_argv]
    sys.stdout.buffer.write(b"".join(f.encode("utf-8", "surrogateescape") + b"\0" for f in fields))
    sys.stdout.buffer.flush()
