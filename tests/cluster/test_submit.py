"""submit.sh against a real local Slurm: fake engines, real sbatch, real dependency."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from slurmkit import SUBMIT, LocalSlurm

FAKE_PORTS = {"exp_a": 0, "exp_b": 0}


def submit(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SUBMIT), *args], env=env, capture_output=True, text=True, timeout=timeout)


def job_lines(stdout: str) -> list[list[str]]:
    return [line.split("\t") for line in stdout.splitlines() if line.strip()]


def test_two_experiments_and_the_comparison_job(slurm: LocalSlurm, job_env, fake_experiment, tmp_path: Path):
    from shellkit import free_port

    exps = []
    for name in ("exp_a", "exp_b"):
        config = f'MODEL_PATH="fake-model"\nCONCURRENCIES="1 2"\nSHAPES="16x8"\nMIN_PROMPTS="4"\n' \
                 f'PROMPTS_PER_CONCURRENCY="2"\nWARMUP_REQUESTS="1"\nSTOP_GRACE_S="5"\nHEALTH_TIMEOUT_S="30"\n' \
                 f'PORT="{free_port()}"\n'
        exps.append(fake_experiment(name, config=config))
    root = tmp_path / "shared"
    proc = submit(job_env, *map(str, exps), "--platform", "cpu", "--run-id", "20261201-010203",
                  "--results-root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = job_lines(proc.stdout)
    assert [line[1] for line in lines] == ["exp_a", "exp_b", "comparison"]
    assert all(re.fullmatch(r"\d+", line[0]) for line in lines)
    assert [line[2] for line in lines] == [str(root / "exp_a" / "20261201-010203"), str(root / "exp_b" / "20261201-010203"),
                                           str(root / "comparison_20261201-010203")]
    compare_job = slurm.job_state(lines[2][0])
    assert f"afterany:{lines[0][0]}" in compare_job.get("Dependency", "") or compare_job.get("JobState") != "PENDING"

    for job_id, name, run_dir in lines:
        info = slurm.wait_job(job_id, 180)
        log = Path(run_dir) / f"slurm-{job_id}.log"
        assert info["JobState"] == "COMPLETED", f"{name}: {info}\n{log.read_text() if log.exists() else ''}"
        assert log.is_file()
    for _, name, run_dir in lines[:2]:
        results = json.loads((Path(run_dir) / "results.json").read_text())
        assert results["metadata"]["run_id"] == "20261201-010203"
        assert {s["concurrency"] for s in results["scenarios"]} == {1, 2}
        assert (Path(run_dir) / "slurm_jobs.tsv").read_text().split("\t")[1] == name
    valid = subprocess.run([sys.executable, "-m", "sskj_results", "validate", str(root / "exp_a" / "20261201-010203"),
                            str(root / "exp_b" / "20261201-010203")], capture_output=True, text=True)
    assert valid.returncode == 0, valid.stdout
    comparison = root / "comparison_20261201-010203"
    assert (comparison / "comparison.md").is_file()
    compared = json.loads((comparison / "comparison.json").read_text())
    assert len(compared["runs"]) == 2
    assert "comparison:" in next(comparison.glob("slurm-*.log")).read_text()
