from __future__ import annotations

import os

import click

from .common import handle_errors


@click.command("slurm-nodes")
@click.argument("nnodes", type=click.IntRange(min=1))
@handle_errors
def slurm_nodes(nnodes: int) -> None:
    """Print the head address, then each node's name and host name, of the first NNODES nodes of the job's
    allocation (SLURM_JOB_NODELIST), NUL-terminated; nothing outside an allocation (used by multinode.sh).
    """
    from ..run.allocation import allocation

    found = allocation(nnodes, os.environ.get("SLURM_JOB_NODELIST", ""))
    if found is not None:
        head, nodes = found
        click.echo("".join(f"{w}\0" for w in [head, *(w for pair in nodes for w in pair)]), nl=False)
