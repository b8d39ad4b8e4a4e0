"""The nodes of the Slurm allocation a multi-node engine runs on (`sskj-results slurm-nodes`, multinode.sh).

From SLURM_JOB_NODELIST (`scontrol show hostnames`), the first NNODES nodes in
node-rank order; the head's address is its NodeAddr and each node's host name
its NodeHostname (`scontrol show node -o`), the node name where scontrol does
not say.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Optional

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


class Launch(NamedTuple):
    """A multi-node engine's launch: the dist-init address, each node's name and host name, what the phase's
    metadata records of the nodes, and the srun command that starts every rank."""

    addr: str
    nodes: list[str]
    hostnames: list[str]
    record_args: list[str]
    srun: list[str]


def launch(env: Mapping[str, str], found: Optional[tuple[str, list[tuple[str, str]]]], experiment_dir: str,
           spec: str, rank_script: str) -> Launch:
    """The srun launch of a phase's engine over NNODES nodes (multinode.sh): the allocation's nodes (FOUND), or
    outside an allocation in a dry run placeholders (head HEAD_NODE_ADDR, nodes node0, node1, ...); else
    refused (ConfigError). The head's address is MULTINODE_HEAD_ADDR when set, with DIST_INIT_PORT (29500).
    Rank 0 runs on the head node, which serves the API; every task runs RANK_SCRIPT with its node rank. The
    platform keys named SLURM_* are unset for srun, which would read them as its own options."""
    nnodes = env.get("NNODES") or "1"
    count = int(nnodes)
    if found is not None:
        head, pairs = found
    elif env.get("DRY_RUN", "0") == "1":
        head, pairs = "HEAD_NODE_ADDR", [(f"node{i}", f"node{i}") for i in range(count)]
    else:
        raise ConfigError(f"NNODES={nnodes} needs a Slurm allocation of {nnodes} nodes: "
                          f"bash scripts/common/submit.sh --nodes {nnodes} {experiment_dir}")
    nodes, hostnames = [p[0] for p in pairs[:count]], [p[1] for p in pairs[:count]]
    addr = f"{env.get('MULTINODE_HEAD_ADDR') or head}:{env.get('DIST_INIT_PORT') or '29500'}"
    record_args = ["--config", f"dist_init_addr={addr}", "--meta", f"nodes={nnodes}",
                   "--meta", f"gpus_per_node={env.get('GPUS_PER_NODE', '')}",
                   "--meta", f"node_names={','.join(nodes)}", "--meta", f"node_hostnames={','.join(hostnames)}"]
    srun = ["env", "-u", "SLURM_GRES", "-u", "SLURM_MEM", "-u", "SLURM_TIME", "-u", "SLURM_PARTITION",
            "srun", "--overlap", f"--nodes={nnodes}", f"--ntasks={nnodes}", "--ntasks-per-node=1",
            "--kill-on-bad-exit=1", f"--job-name=sskj-engine-{env.get('PHASE_NAME') or 'engine'}",
            "bash", rank_script, experiment_dir, spec, addr]
    return Launch(addr, nodes, hostnames, record_args, srun)
