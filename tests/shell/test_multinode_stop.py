"""Stopping a multi-node engine on a Docker platform: each rank's server runs inside its node's container
(`docker exec`), which stopping the srun does not reach; lib::stop_server stops the tagged processes of every
node (by srun), as on every stop: the end of a phase, a signal, and the restart after an out-of-memory failure
(bench::run_grid -> bench::stop_phase_server -> lib::stop_server)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from shellkit import bash_lib

pytestmark = pytest.mark.shell

# A stand-in for srun: logs its arguments, runs the command once per node (every "node" is this machine).
FAKE_SRUN = """#!/usr/bin/env bash
printf '%q ' "$@" >>"${FAKE_SRUN_LOG}"
printf '\\n' >>"${FAKE_SRUN_LOG}"
nodes=1
while [[ "$1" == --* ]]; do
  [[ "$1" == --nodes=* ]] && nodes="${1#--nodes=}"
  shift
done
rc=0
for ((i = 0; i < nodes; i++)); do SLURM_NODEID="$i" "$@" || rc=$?; done
exit "$rc"
"""


@pytest.fixture()
def rank_server(tmp_path, base_env):
    """A "rank 1 server inside the container": tagged, and no child of the orchestrator's server process."""
    tag = f"sskj-test-{os.getpid()}-{tmp_path.name[-8:]}"
    proc = subprocess.Popen(["env", f"SSKJ_SERVER_TAG={tag}", "sleep", "60"], start_new_session=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "srun").chmod(0o755)
    env = dict(base_env, PATH=f"{bin_dir}:{base_env['PATH']}", FAKE_SRUN_LOG=str(tmp_path / "srun.log"),
               STOP_GRACE_S="5")
    yield tag, proc, env
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("nodes", ["2", "1"])
def test_stop_reaches_the_servers_in_every_nodes_container(tmp_path, rank_server, nodes: str) -> None:
    tag, proc, env = rank_server
    needle = f"SSKJ_SERVER_TAG={tag}".encode()
    deadline = time.monotonic() + 30
    # env has exec'ed sleep: its program (the first word; `env ... sleep 60` holds "sleep" as an argument too)
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"sleep") \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert needle in Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0") and proc.poll() is None
    done = bash_lib(f"LIB_SERVER_PID='' LIB_SERVER_CONTAINER=c1 LIB_SERVER_TAG={tag} LIB_SERVER_NODES={nodes}\n"
                    "lib::stop_server", env)
    assert done.returncode == 0, done.stderr
    assert proc.wait(timeout=5) == -15  # TERM, from inside the "container"
    srun = (tmp_path / "srun.log").read_text().splitlines() if nodes == "2" else []
    calls = (tmp_path / "docker_calls.log").read_text()
    assert f"sskj-stop {tag} TERM" in calls
    if nodes == "2":
        # TERM on every node, then the check that none is left
        assert len(srun) >= 2 and all(line.startswith("--overlap --nodes=2 --ntasks=2 --ntasks-per-node=1 "
                                                      "--job-name=sskj-stop docker exec c1 sh -c ") for line in srun)
        assert srun[0].endswith(f"sskj-stop {tag} TERM ") and srun[1].endswith(f"sskj-stop {tag} 0 ")
    else:
        assert not (tmp_path / "srun.log").exists()  # one node: no srun
