"""`sskj-results runset`: (re)build the index of a multi-phase run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from .common import handle_errors


@click.command()
@click.argument("run_set_dir", type=click.Path(path_type=Path))
@click.argument("phase_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--baseline", default=None, metavar="PHASE",
              help="Phase (its directory or metadata.phase) that `compare RUN_SET_DIR` takes as baseline. "
                   "Default: the first phase (or the one the index already names).")
@click.option("--title", default=None, help="Title `compare RUN_SET_DIR` gives the comparison.")
@click.option("--matrix", default=None, metavar="NAME",
              help="Matrix name `compare RUN_SET_DIR` puts in the default title, e.g. `long-context matrix`.")
@handle_errors
def runset(run_set_dir: Path, phase_dirs: tuple[Path, ...], baseline: Optional[str], title: Optional[str],
           matrix: Optional[str]) -> None:
    """(Re)write RUN_SET_DIR/results.json as the index of its phases (a run set).

    The phases are PHASE_DIRS in that order, else every subdirectory holding a
    run's results.json (`phase<N>_*` by N, then the others by name). Idempotent:
    safe to run after every phase. Nothing is written while no phase exists, nor
    when RUN_SET_DIR/results.json is a run (a single-phase run needs no index).
    """
    from ..runset import write_run_set

    file, run_set = write_run_set(run_set_dir, list(phase_dirs), baseline, title, matrix)
    if file is None:
        reason = "no phase directory with a results.json yet" if not (run_set_dir / "results.json").is_file() \
            else "its results.json is a run (a single-phase run needs no index)"
        click.echo(f"{run_set_dir}: nothing to index: {reason}")
        return
    names = ", ".join(p.dir for p in run_set.phases)
    click.echo(f"wrote {file} (run set of {len(run_set.phases)} phase(s): {names})")
