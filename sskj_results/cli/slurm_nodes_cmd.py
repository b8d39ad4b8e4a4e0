from __future__ import annotations

import os
import sys
from typing import Optional

import click

from .common import handle_errors


@click.command("slurm-nodes")
@click.argument("nnodes", type=click.IntRange(min=1))
@click.option("--launch", "launch_of", nargs=3, default=None, metavar="EXPERIMENT_DIR SPEC RANK_SCRIPT",
              help="Answer with the records of the phase's srun launch (run/allocation.py: launch) instead.")
@handle_errors
def slurm_nodes(nnodes: int, launch_of: Optional[tuple[str, str, str]]) -> None:
    """Print the head address, then each node's name and host name, of the first NNODES nodes of the job's
    allocation (SLURM_JOB_NODELIST), NUL-terminated; nothing outside an allocation (used by multinode.sh).

    With --launch: records (run/records.py) of a phase's launch over the nodes: MULTINODE_ADDR, the arrays
    MULTINODE_NODES, MULTINODE_HOSTS, MULTINODE_RECORDS (the metadata's options) and MULTINODE_SRUN; outside
    an allocation a dry run gets placeholders and a run is refused (exit 1).
    """
    from ..run.allocation import allocation, launch

    found = allocation(nnodes, os.environ.get("SLURM_JOB_NODELIST", ""))
    if launch_of is None:
        if found is not None:
            head, nodes = found
            click.echo("".join(f"{w}\0" for w in [head, *(w for pair in nodes for w in pair)]), nl=False)
        return
    from ..contract.errors import ConfigError
    from ..run.records import Records
    from .loop_cmd import _error, _write

    try:
        planned = launch(dict(os.environ, NNODES=os.environ.get("NNODES") or str(nnodes)), found, *launch_of)
    except ConfigError as exc:
        _error(str(exc))
        sys.exit(1)
    rec = Records()
    rec.var("MULTINODE_ADDR", planned.addr, export=False)
    rec.array("MULTINODE_NODES", planned.nodes)
    rec.array("MULTINODE_HOSTS", planned.hostnames)
    rec.array("MULTINODE_RECORDS", planned.record_args)
    rec.array("MULTINODE_SRUN", planned.srun)
    _write(rec)
