"""Engines across two Slurm nodes: a fake SGLang whose rank 0 serves only after rank 1 joined at the dist-init address."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from shellkit import COMMON, free_port, port_listening, wait_no_tagged
from slurmkit import SUBMIT, LocalSlurm

START_SGLANG = """\
#!/usr/bin/env bash
# Test experiment: SGLang's shared command builder; the engine is
# tests/fakes/pymods/sglang/launch_server.py (PYTHONPATH).
set -euo pipefail
EXPERIMENT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
source {lib}

build_server_cmd() {{
  bench::server_cmd
}}

main() {{
  bench::server_main "${{EXPERIMENT_DIR}}" build_server_cmd "$@"
}}

main "$@"
"""


def config(port: int, dist_port: int, concurrencies: str = "1 2", shape: str = "16x8") -> str:
    return (f'MODEL_PATH="fake-model"\nTP="1"\nNNODES="2"\nDIST_INIT_PORT="{dist_port}"\nPORT="{port}"\n'
            f'CONCURRENCIES="{concurrencies}"\nSHAPES="{shape}"\nMIN_PROMPTS="4"\nPROMPTS_PER_CONCURRENCY="2"\n'
            'WARMUP_REQUESTS="1"\nSTOP_GRACE_S="5"\nHEALTH_TIMEOUT_S="60"\n')


def submit(env: dict[str, str], exp: Path, root: Path, run_id: str) -> tuple[str, Path, str]:
    """Submit one experiment; return its job id, its run directory and the id of the comparison job."""
    proc = subprocess.run(["bash", str(SUBMIT), str(exp), "--platform", "cpu", "--run-id", run_id,
                           "--results-root", str(root)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (job_id, name, run_dir), (compare_id, compare_name, _) = (line.split("\t") for line in proc.stdout.splitlines())
    assert name == exp.name and compare_name == "comparison"
    return job_id, Path(run_dir), compare_id


def job_log(run_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(run_dir.glob("slurm-*.log")))


def test_two_node_engine_wiring_and_teardown(slurm: LocalSlurm, job_env, fake_experiment, tmp_path: Path, tag: str):
    port, dist_port = free_port(), free_port()
    lib = COMMON / "adaptive_bench_lib.sh"
    exp = fake_experiment("mn_sglang", phases="sglang", config=config(port, dist_port),
                          start_server=START_SGLANG.format(lib=lib))
    job_id, run_dir, compare_id = submit(job_env, exp, tmp_path / "shared", "20261201-020000")
    info = slurm.wait_job(job_id, 240)
    assert info["JobState"] == "COMPLETED", f"{info}\n{job_log(run_dir)}"
    assert info["NumNodes"] == "2"
    # One run: the comparison job validates it and has nothing to compare.
    assert slurm.wait_job(compare_id, 120)["JobState"] == "COMPLETED"

    results = json.loads((run_dir / "results.json").read_text())
    meta, cfg = results["metadata"], results["config"]
    assert meta["nodes"] == 2 and meta["node_names"] == ["n1", "n2"]
    assert len(meta["node_hostnames"]) == 2
    addr = f"127.0.0.1:{dist_port}"  # NodeAddr of the head node n1
    assert cfg["dist_init_addr"] == addr
    for rank in (0, 1):
        line = cfg[f"rank{rank}_server_args"]
        assert f"--nnodes 2 --node-rank {rank} --dist-init-addr {addr}" in line
        assert "-m sglang.launch_server" in line
    assert "srun --overlap --nodes=2" in cfg["server_args"]
    assert {s["concurrency"] for s in results["scenarios"]} == {1, 2}
    assert all(s["failed"] == 0 for s in results["scenarios"])

    server_log = "\n".join(p.read_text() for p in (run_dir / "logs").glob("sglang_*.log"))
    assert "[fake-sglang rank 1 on n2] joined rank 0 at " + addr in server_log
    assert "[fake-sglang rank 0 on n1] rank 1 joined" in server_log
    assert server_log.index("rank 1 joined") < server_log.index("serving the API")
    assert not port_listening(port) and not port_listening(dist_port)
    assert wait_no_tagged(tag, 20) == [], "a process of the job outlived it"


def test_scancel_leaves_no_engine_and_resume_continues(slurm: LocalSlurm, job_env, fake_experiment, tmp_path: Path,
                                                       tag: str):
    port, dist_port = free_port(), free_port()
    lib = COMMON / "adaptive_bench_lib.sh"
    exp = fake_experiment("mn_cancel", phases="sglang", config=config(port, dist_port, "1 2 4", "16x64"),
                          start_server=START_SGLANG.format(lib=lib))
    env = dict(job_env, FAKE_SERVER_ARGS="--latency-ms 40")
    root = tmp_path / "shared"
    job_id, run_dir, compare_id = submit(env, exp, root, "20261201-030000")
    raw_dir = run_dir / "raw_outputs"
    deadline = time.monotonic() + 180
    while not list(raw_dir.glob("*_1_16_64.jsonl")):
        assert time.monotonic() < deadline, f"first scenario never finished\n{job_log(run_dir)}"
        assert slurm.job_state(job_id).get("JobState") in ("PENDING", "RUNNING"), job_log(run_dir)
        time.sleep(0.5)
    first = next(raw_dir.glob("*_1_16_64.jsonl"))
    first_stat = first.stat()
    subprocess.run(["scancel", job_id], env=env, check=True, timeout=30)
    info = slurm.wait_job(job_id, 120)
    assert info["JobState"] == "CANCELLED"
    slurm.wait_job(compare_id, 120)  # afterany: it runs once the cancelled job ended (and finds it invalid)
    assert wait_no_tagged(tag, 30) == [], "an engine rank, srun or the client outlived scancel"
    assert not port_listening(port) and not port_listening(dist_port)
    assert not list(raw_dir.glob("*_4_16_64.jsonl")), "the job was cancelled before the last scenario"

    job2, run_dir2, compare2 = submit(env, exp, root, "20261201-030000")
    assert run_dir2 == run_dir
    info = slurm.wait_job(job2, 240)
    assert info["JobState"] == "COMPLETED", job_log(run_dir)
    assert slurm.wait_job(compare2, 120)["JobState"] == "COMPLETED"
    log = job_log(run_dir)
    assert "scenario c1_i16_o64 already done; skipping" in log
    assert first.stat().st_mtime_ns == first_stat.st_mtime_ns and first.stat().st_ino == first_stat.st_ino
    results = json.loads((run_dir / "results.json").read_text())
    assert sorted(s["concurrency"] for s in results["scenarios"]) == [1, 2, 4]
    assert (run_dir / f"slurm-{job_id}.log").is_file() and (run_dir / f"slurm-{job2}.log").is_file()
