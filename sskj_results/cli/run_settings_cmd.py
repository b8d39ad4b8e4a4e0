from __future__ import annotations

import os
import sys

import click

from .common import handle_errors


@click.command("run-settings")
@handle_errors
def run_settings() -> None:
    """Print the run-wide settings (PORT, SERVER_HOST, TP, ...) with their defaults, NUL-terminated KEY=VALUE records
    to export (used by the shell; read from the environment; sskj_results/run/launch.py). Every problem is an error line, exit 1.
    """
    from ..run.launch import run_settings as settings_of

    values, problems = settings_of(os.environ)
    for problem in problems:
        click.echo(f"error: {problem}", err=True)
    if problems:
        sys.exit(1)
    click.echo("".join(f"{key}={value}\0" for key, value in values.items()), nl=False)
