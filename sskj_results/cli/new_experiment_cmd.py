from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from .common import handle_errors, repo_root


@click.command("new-experiment")
@click.argument("platform")
@click.argument("name")
@click.option("--from", "source", metavar="EXPERIMENT",
              help="Copy this experiment (e.g. h200/dsv4_h200_dspark) instead of experiments/TEMPLATE.")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Repository root (default: $REPO_ROOT, else the checkout holding this package, else the "
                   "clone around the current directory).")
@handle_errors
def new_experiment(platform: str, name: str, source: Optional[str], repo: Optional[Path]) -> None:
    """Create experiments/PLATFORM/NAME/ from TEMPLATE (or --from EXPERIMENT) and print the dry run to try.

    PLATFORM is the experiments/ directory of the platform (cpu, h20, h200,
    p800, pro6000, or a new platform's name). The copy gets EXPERIMENT="NAME"
    in config.env and its name and paths in README.md; results/ is never
    copied; an existing directory is never overwritten.
    """
    from ..run.newexp import create_experiment

    root = (repo or repo_root()).resolve()
    made = create_experiment(root, platform, name, source)
    click.echo(f"created {made.path} from {made.source}")
    if made.platform is None:
        click.echo(f"note: no platforms/*.env matches experiments/{platform}/: add platforms/<chip>.env "
                   "(see BENCHMARK_WORKFLOW.md) and give PLATFORM=<chip>")
    click.echo("try it (prints every command, starts nothing):")
    click.echo(f"  {made.dry_run}")
