from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import click

from .common import handle_errors


@click.command("platform")
@click.argument("action", type=click.Choice(["detect", "file", "check"]))
@click.argument("arg", required=False)
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True,
              help="The repository (its platforms/ directory).")
@handle_errors
def platform(action: str, arg: Optional[str], repo: Path) -> None:
    """Platform facts for scripts/common/platform.sh (sskj_results/run/platforms.py).

    detect: print this machine's platform. file NAME: print platforms/NAME.env
    (a plain name of an existing file). check FILE: report every problem of the
    loaded platform's keys, read from the environment (FILE names it in messages).
    """
    from ..contract.errors import UsageError
    from ..run.platforms import detect, platform_file, problems

    if action == "detect":
        click.echo(detect(repo), nl=False)
        return
    if arg is None:
        raise UsageError(f"platform {action} needs an argument")
    if action == "file":
        click.echo(platform_file(repo, arg), nl=False)
        return
    found = problems(os.environ)
    for problem in found:
        click.echo(f"error: {arg}: {problem}", err=True)
    if found:
        sys.exit(1)
