"""The nodes of a Slurm allocation (sskj_results/run/allocation.py)."""

from __future__ import annotations

from typing import Optional

import pytest

from sskj_results.run.allocation import allocation
from sskj_results.contract.errors import ConfigError

# scontrol prints NodeHostName; the field is matched without regard to case
NODES = {"n1": "NodeName=n1 Arch=x86_64 NodeAddr=10.0.0.1 NodeHostname=host-a Version=23",
         "n2": "NodeName=n2 NodeAddr=10.0.0.2 NodeHostName=host-b"}


def scontrol(argv: list[str]) -> Optional[str]:
    if argv[:3] == ["scontrol", "show", "hostnames"]:
        return "n1\nn2\nn3\n" if argv[3] == "n[1-3]" else None
    return NODES.get(argv[-1], "NodeName=x") + "\n"


def test_head_address_and_host_names_of_the_first_nodes() -> None:
    assert allocation(2, "n[1-3]", scontrol) == ("10.0.0.1", [("n1", "host-a"), ("n2", "host-b")])
    # a node scontrol says nothing about keeps its name
    assert allocation(3, "n[1-3]", scontrol) == ("10.0.0.1", [("n1", "host-a"), ("n2", "host-b"), ("n3", "n3")])


def test_outside_an_allocation_nothing_and_too_few_nodes_an_error() -> None:
    assert allocation(2, "", scontrol) is None
    assert allocation(2, "broken", scontrol) is None
    with pytest.raises(ConfigError, match=r"NNODES=4 but the allocation has 3 node\(s\) \(n\[1-3\]\); submit with --nodes 4"):
        allocation(4, "n[1-3]", scontrol)


def test_the_launch_runs_every_rank_by_srun_with_the_heads_address() -> None:
    from sskj_results.run.allocation import launch

    env = {"NNODES": "2", "GPUS_PER_NODE": "8", "PHASE_NAME": "sglang", "DIST_INIT_PORT": "29777"}
    found = ("10.0.0.5", [("gpu-a", "gpu-a.cluster"), ("gpu-b", "gpu-b.cluster")])
    planned = launch(env, found, "/exp", "sglang", "/repo/scripts/common/multinode_rank.sh")
    assert (planned.addr, planned.nodes, planned.hostnames) == ("10.0.0.5:29777", ["gpu-a", "gpu-b"],
                                                                ["gpu-a.cluster", "gpu-b.cluster"])
    assert planned.record_args == ["--config", "dist_init_addr=10.0.0.5:29777", "--meta", "nodes=2",
                                   "--meta", "gpus_per_node=8", "--meta", "node_names=gpu-a,gpu-b",
                                   "--meta", "node_hostnames=gpu-a.cluster,gpu-b.cluster"]
    # platform keys named SLURM_* would be read by srun as its own options
    assert planned.srun == ["env", "-u", "SLURM_GRES", "-u", "SLURM_MEM", "-u", "SLURM_TIME", "-u", "SLURM_PARTITION",
                            "srun", "--overlap", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
                            "--job-name=sskj-engine-sglang", "bash", "/repo/scripts/common/multinode_rank.sh", "/exp",
                            "sglang", "10.0.0.5:29777"]
    given = launch(dict(env, MULTINODE_HEAD_ADDR="192.168.1.1", DIST_INIT_PORT=""), found, "/exp", "s", "/r.sh")
    assert given.addr == "192.168.1.1:29500"


def test_outside_an_allocation_only_a_dry_run_launches_with_placeholders() -> None:
    from sskj_results.run.allocation import launch

    dry = launch({"NNODES": "3", "DRY_RUN": "1"}, None, "/exp", "vllm", "/r.sh")
    assert (dry.addr, dry.nodes, dry.hostnames) == ("HEAD_NODE_ADDR:29500", ["node0", "node1", "node2"],
                                                    ["node0", "node1", "node2"])
    assert dry.srun[dry.srun.index("--kill-on-bad-exit=1") + 1] == "--job-name=sskj-engine-engine"
    with pytest.raises(ConfigError, match=r"^NNODES=2 needs a Slurm allocation of 2 nodes: "
                                          r"bash scripts/common/submit.sh --nodes 2 /exp$"):
        launch({"NNODES": "2"}, None, "/exp", "vllm", "/r.sh")
