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
