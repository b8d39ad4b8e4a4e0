"""`sskj-results runset`: (re)build the index of a multi-phase run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

if TYPE_CHECKING:
    from ..contract.models import SloSpec

from .common import ExitError, handle_errors, slo_options


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
    from ..contract.runset import write_run_set

    file, run_set = write_run_set(run_set_dir, list(phase_dirs), baseline, title, matrix)
    if file is None:
        reason = "no phase directory with a results.json yet" if not (run_set_dir / "results.json").is_file() \
            else "its results.json is a run (a single-phase run needs no index)"
        click.echo(f"{run_set_dir}: nothing to index: {reason}")
        return
    names = ", ".join(p.dir for p in run_set.phases)
    click.echo(f"wrote {file} (run set of {len(run_set.phases)} phase(s): {names})")
    if run_set.baseline is not None and run_set.baseline not in {p.dir for p in run_set.phases}:
        click.echo(f"warning: baseline {run_set.baseline!r} names no phase yet; `compare {run_set_dir}` needs it",
                   err=True)


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--no-plots", is_flag=True, help="Do not draw the PNG plots.")
@click.option("--no-html", is_flag=True, help="Do not write report.html / comparison.html.")
@slo_options
@handle_errors
def reparse(path: Path, no_plots: bool, no_html: bool, slo_tier: Optional[str], slo_ttft_p95_ms: Optional[float],
            slo_tpot_mean_ms: Optional[float]) -> None:
    """Re-import PATH's raw outputs and rewrite its results.json, report.md and report.html.

    PATH is a run directory, or a run-set directory (a multi-phase run): then
    every phase, the index and the comparison of the phases (PATH/comparison.md
    and comparison.html) are rewritten; or a folder of runs (results/, imported/):
    each run or run set in it. What `experiments/<platform>/<name>/parse_results.py` runs.
    """
    from ..run.reparse import reparse_targets
    from ..analysis.slo import resolve_slo

    slo = None
    if slo_tier is not None or slo_ttft_p95_ms is not None or slo_tpot_mean_ms is not None:
        slo = resolve_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms)
    problems = sum(_reparse_one(target, slo, no_plots, no_html) for target in reparse_targets(path))
    if problems:
        raise ExitError(f"{problems} raw run(s) not imported (listed above); fix or remove them", 1)


def _reparse_one(path: Path, slo: Optional[SloSpec], no_plots: bool, no_html: bool) -> int:
    """Reparse one run or run set and print what was written; the count of raw runs not imported."""
    from ..run.reparse import reparse as run_reparse

    out = run_reparse(path, slo, plots=not no_plots, html=not no_html)
    for run in out.runs:
        if run.rebuilt is not None:
            click.echo(f"warning: {run.rebuilt.line()}", err=True)
        if run.parsed is None:
            shown = ", ".join(run.missing_raw[:3]) + (f" and {len(run.missing_raw) - 3} more" if len(run.missing_raw) > 3 else "")
            click.echo(f"warning: {run.run_dir}: raw files missing ({shown}); results.json kept as it is, "
                       "only the report rewritten (restore raw_outputs/ to re-parse)", err=True)
            click.echo(f"wrote {_written(run.report.markdown, run.report.html)}")
            continue
        for warning in run.parsed.warnings:
            click.echo(f"warning: {warning}", err=True)
        for problem in run.parsed.problems:
            click.echo(f"skipped: {run.run_dir / str(problem)}", err=True)
        click.echo(f"{run.run_dir / 'results.json'}: {len(run.parsed.results.scenarios)} scenario(s); "
                   f"wrote {_written(run.report.markdown, run.report.html)}")
    if out.index is not None:
        click.echo(f"wrote {out.index} (run set)")
    if out.comparison is not None:
        click.echo(f"wrote {out.comparison.markdown}, {out.comparison.json}"
                   + (f" and {out.comparison.html}" if out.comparison.html else ""))
    return out.problems


def _written(markdown: Path, page: Optional[Path]) -> str:
    return f"{markdown} and {page}" if page is not None else str(markdown)
