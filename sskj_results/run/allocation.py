"""The nodes of the Slurm allocation a multi-node engine runs on (`sskj-results slurm-nodes`, multinode.sh).

From SLURM_JOB_NODELIST (`scontrol show hostnames`), the first NNODES nodes in
node-rank order; the head's address is its NodeAddr and each node's host name
its NodeHostname (`scontrol show node -o`), the node name where scontrol does
not say.
"""

from __future__ import annotations

from typing import Callable, Optional

from ..contract.errors import ConfigError
from .platforms import tool_stdout

Runner = Callable[[list[str]], Optional[str]]


def _run(argv: list[str]) -> Optional[str]:
    return tool_stdout(argv, timeout_s=60.0)  # a busy slurmctld answers slowly


def node_field(node: str, field: str, run: Runner = _run) -> Optional[str]:
    """A field of `scontrol show node -o NODE` (e.g. NodeAddr); None when not found.

    The field name is matched without regard to case: slurm.conf spells it
    NodeHostname, scontrol prints NodeHostName.
    """
    out = run(["scontrol", "show", "node", "-o", node]) or ""
    prefix = f"{field.lower()}="
    for word in out.split("\n", 1)[0].split():
        if word.lower().startswith(prefix):
            return word[len(prefix):]
    return None


def allocation(nnodes: int, nodelist: str, run: Runner = _run) -> Optional[tuple[str, list[tuple[str, str]]]]:
    """(head address, [(node name, host name)] of the first NNODES nodes); None outside an allocation."""
    if not nodelist:
        return None
    names = (run(["scontrol", "show", "hostnames", nodelist]) or "").split()
    if not names:
        return None
    if len(names) < nnodes:
        raise ConfigError(f"NNODES={nnodes} but the allocation has {len(names)} node(s) ({nodelist}); "
                          f"submit with --nodes {nnodes}")
    names = names[:nnodes]
    head = node_field(names[0], "NodeAddr", run) or names[0]
    return head, [(name, node_field(name, "NodeHostname", run) or name) for name in names]
