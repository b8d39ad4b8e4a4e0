from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import echo, handle_errors


@click.command("slurm-compare")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
@handle_errors
def slurm_compare(ctx: click.Context, out_dir: Path, run_dirs: tuple[Path, ...]) -> None:
    """Validate the runs of every RUN_DIR and compare all of them into OUT_DIR (the comparison job of submit.sh).

    A RUN_DIR with phase directories (DIR/*/results.json) stands for its
    phases. Exit 0 when every run is valid and compared (one run: nothing to
    compare), 1 otherwise.
    """
    from ..contract.runset import job_runs
    from .report_cmd import compare
    from .validate_cmd import validate

    runs, empty = job_runs(run_dirs)
    for d in empty:
        echo(f"error: {d}: no results.json (the job did not record anything; see its slurm-*.log)", err=True)
    if not runs:
        raise click.ClickException("no run to compare")
    echo(f"validating {len(runs)} run(s)", err=True)
    status = 1 if empty else 0
    try:
        ctx.invoke(validate, paths=tuple(runs), fmt="text", quiet=False)
    except SystemExit as exc:
        status = 1 if exc.code else status
    if len(runs) < 2:
        echo("warning: one run only: nothing to compare", err=True)
        sys.exit(status)
    ctx.invoke(compare, run_dirs=tuple(runs), out_dir=out_dir)
    echo(f"comparison: {out_dir / 'comparison.md'}", err=True)
    sys.exit(status)
