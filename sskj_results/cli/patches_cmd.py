from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from .common import handle_errors


@click.command("patches")
@click.argument("patch_root", type=click.Path(file_okay=False, path_type=Path))
@click.option("--record", "run_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Record the patches in RUN_DIR/results.json config.patches instead of listing them.")
@click.option("--result", "outcomes", multiple=True, metavar="FILE=STATUS=TARGET",
              help="With --record: what happened to one patch (applied, already_applied, dry_run) and where. Repeatable.")
@handle_errors
def patches(patch_root: Path, run_dir: Optional[Path], outcomes: tuple[str, ...]) -> None:
    """List PATCH_ROOT/series as `FILE PACKAGE SHA256 DRY_RUN_TARGET` lines, or record what was applied (used
    by apply_patches.sh; the run loop gets the listing from `phase-begin --patches`)."""
    from ..contract.errors import UsageError
    from ..ingest.metadata import write_metadata
    from ..run.patches import listing, patches_record, read_series

    series = read_series(patch_root)
    if run_dir is None:
        click.echo(listing(series), nl=False)
        return
    results: dict[str, tuple[str, str]] = {}
    for item in outcomes:
        parts = item.split("=", 2)
        if len(parts) != 3:
            raise UsageError(f"--result {item!r}: expected FILE=STATUS=TARGET")
        results[parts[0]] = (parts[1], parts[2])
    write_metadata(run_dir, {}, {"patches": patches_record(series, results)}, detect=False)
    click.echo(f"{run_dir / 'results.json'}: {len(series)} patch(es) recorded", err=True)
