from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from .common import handle_errors


@click.command()
@click.option("--write", "out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the schema to this file (atomically) instead of printing it.")
@click.option("--run-set", "run_set", is_flag=True,
              help="The schema of a run-set index (the results.json of a multi-phase run) instead.")
@handle_errors
def schema(out: Optional[Path], run_set: bool) -> None:
    """Print the JSON Schema of results.json (draft 2020-12), generated from the models."""
    from ..contract.io import atomic_write_text
    from ..contract.schema import run_set_schema_text, schema_text

    text = run_set_schema_text() if run_set else schema_text()
    if out is None:
        click.echo(text, nl=False)
    else:
        atomic_write_text(out, text)
        click.echo(f"wrote {out}")
