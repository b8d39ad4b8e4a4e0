"""A requeued job (`scontrol requeue`, as preemption with --requeue does) resumes its run directory."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from shellkit import free_port, port_listening, wait_no_tagged
from slurmkit import SUBMIT, LocalSlurm


def job_log(run_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(run_dir.glob("slurm-*.log")))


def test_requeued_job_resumes_the_same_run(slurm: LocalSlurm, job_env, fake_experiment, tmp_path: Path, tag: str):
    port = free_port()
    config = (f'MODEL_PATH="fake-model"\nPORT="{port}"\nCONCURRENCIES="1 2 4"\nSHAPES="16x64"\nMIN_PROMPTS="4"\n'
              'PROMPTS_PER_CONCURRENCY="2"\nWARMUP_REQUESTS="1"\nSTOP_GRACE_S="5"\nHEALTH_TIMEOUT_S="60"\n')
    exp = fake_experiment("requeue_me", config=config)
    clients = tmp_path / "client_calls.log"
    env = dict(job_env, FAKE_SERVER_ARGS="--latency-ms 40", FAKE_CLIENT_LOG=str(clients))
    root = tmp_path / "shared"
    proc = subprocess.run(["bash", str(SUBMIT), str(exp), "--platform", "cpu", "--run-id", "20261201-040000",
                           "--results-root", str(root)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (job_id, _, run_dir_text), (compare_id, _, _) = (line.split("\t") for line in proc.stdout.splitlines())
    run_dir = Path(run_dir_text)

    raw_dir = run_dir / "raw_outputs"

    def first_recorded() -> bool:
        """The first scenario's raw file is written and its record is in results.json (the loop parses a scenario
        right after its client ends: a requeue between the two re-measures it, by design, and finds nothing done)."""
        try:
            data = json.loads((run_dir / "results.json").read_text())
        except (OSError, ValueError):
            return False
        return bool(list(raw_dir.glob("*_1_16_64.jsonl"))) and any(
            s.get("concurrency") == 1 for s in data.get("scenarios", []))

    deadline = time.monotonic() + 180
    while not first_recorded():
        assert time.monotonic() < deadline, f"first scenario never finished\n{job_log(run_dir)}"
        assert slurm.job_state(job_id).get("JobState") in ("PENDING", "RUNNING"), job_log(run_dir)
        time.sleep(0.5)
    first = next(raw_dir.glob("*_1_16_64.jsonl"))
    before = first.stat()
    requeue = subprocess.run(["scontrol", "requeue", job_id], env=env, capture_output=True, text=True, timeout=30)
    assert requeue.returncode == 0, requeue.stderr
    # The requeued job waits for its begin time (Slurm holds it back a little); let it start now.
    deadline = time.monotonic() + 60
    while slurm.job_state(job_id).get("JobState") not in ("PENDING", "RUNNING", "COMPLETED"):
        assert time.monotonic() < deadline, slurm.job_state(job_id)
        time.sleep(0.5)
    # Only once the first start's processes are gone (its SIGTERM handler stops the engine): a start forced
    # while they still run can fail at launch on a loaded machine, before the job script runs at all.
    wait_no_tagged(tag, timeout=60)
    subprocess.run(["scontrol", "update", f"JobId={job_id}", "StartTime=now"], env=env, capture_output=True,
                   timeout=30)

    info = slurm.wait_job(job_id, 300)
    assert info["JobState"] == "COMPLETED", f"{info}\n{job_log(run_dir)}"
    assert info["Restarts"] == "1"
    assert slurm.wait_job(compare_id, 120)["JobState"] == "COMPLETED"  # afterany waited for the requeued run

    log = (run_dir / f"slurm-{job_id}.log").read_text(errors="replace")  # one log, appended by both starts
    assert f"job {job_id} (restart 0)" in log and f"job {job_id} (restart 1)" in log
    assert log.index("(restart 0)") < log.index("(restart 1)")
    assert "scenario c1_i16_o64 already done; skipping" in log[log.index("(restart 1)"):]
    assert first.stat().st_mtime_ns == before.st_mtime_ns and first.stat().st_ino == before.st_ino
    assert [p.name for p in root.iterdir() if p.name != "comparison_20261201-040000"] == ["requeue_me"]
    assert [p.name for p in (root / "requeue_me").iterdir()] == ["20261201-040000"]  # the same run directory

    results = json.loads((run_dir / "results.json").read_text())
    assert results["metadata"]["run_id"] == "20261201-040000"
    assert sorted(s["concurrency"] for s in results["scenarios"]) == [1, 2, 4]  # each once
    assert all(s["failed"] == 0 for s in results["scenarios"])
    runs = [line.split()[0] for line in clients.read_text().splitlines() if line.split()[2] == "64"]
    assert runs.count("1") == 1, f"the finished scenario ran again: {runs}"
    assert not port_listening(port)
