"""`sskj-results collect`: parse options, call one library function, print."""

from __future__ import annotations

from pathlib import Path

import click

from .common import handle_errors


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Table to write: NAME.parquet (pandas, pyarrow) or NAME.csv (spreadsheets).")
@click.option("--no-cache", is_flag=True,
              help="Read every results.json again and write no .<out>.cache.parquet beside --out.")
@handle_errors
def collect(paths: tuple[Path, ...], out: Path, no_cache: bool) -> None:
    """Write one table of every run under PATHS: one row per scenario per run.

    PATHS are run directories, multi-phase run directories, results.json
    files or any directory (searched recursively for results.json). Invalid
    runs are skipped and listed on stderr. A raw run found in two run directories
    (same raw file sha256 and line) is counted once; what was left out is said on stderr. Unchanged results.json files (same
    size and modification time) are taken from a cache beside --out.
    Columns: docs/RUNS_TABLE.md.
    """
    from ..render.collect import collect as collect_runs

    result = collect_runs(paths, out, use_cache=not no_cache)
    for skip in result.skipped:
        click.echo(f"skipped: {skip.reason}", err=True)
    for drop in result.dropped:
        click.echo(f"dropped: {drop.line()}", err=True)
    cached = result.runs - result.read + len(result.skipped)
    rowless = result.runs - result.written  # read, but every row a double (listed above) or none at all
    click.echo(f"wrote {result.out}: {result.rows} row(s) from {result.written} run(s)"
               + (f" ({cached} unchanged, from the cache)" if cached else "")
               + (f"; {result.runs} run(s) read, {rowless} with no row of their own (doubles dropped, or no "
                  "scenario)" if rowless else "")
               + (f"; {len(result.skipped)} invalid run(s) skipped" if result.skipped else ""))
