"""The CPU experiment through Slurm with the real vLLM engine and the real client (reduced grid).

submit.sh sends experiments/cpu/tiny_vllm_ngram as one job (2 CPUs, as
platforms/cpu.env asks) and the dependent comparison job; on a fresh machine
the job first installs envs/ and builds the tiny model, as the e2e test does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shellkit import free_port, port_listening, tagged_pids
from slurmkit import REPO, SUBMIT, LocalSlurm
from sskj_results.contract.io import load_run

pytestmark = pytest.mark.e2e

CPU_EXPERIMENT = REPO / "experiments" / "cpu" / "tiny_vllm_ngram"
RUN_ID = "20261201-040000"


def test_cpu_experiment_completes_through_slurm(slurm: LocalSlurm, tmp_path: Path, tag: str):
    port = free_port()
    env = {k: v for k, v in slurm.env.items()
           if not k.startswith(("SSKJ_", "PLATFORM", "RESUME", "DRY_RUN", "FAKE_", "NNODES", "SLURM_"))
           and k not in ("PORT", "RUN_ID", "RESULT_ROOT", "PYTHONPATH", "ENGINE_PYTHON", "CLIENT_PYTHON")}
    env.update(SLURM_CONF=slurm.env["SLURM_CONF"], SSKJ_TEST_TAG=tag, PORT=str(port),
               CONCURRENCIES="1 2", SHAPES="128x32", MIN_PROMPTS="8", PROMPTS_PER_CONCURRENCY="2", REPEATS="1",
               SSKJ_RESULTS_BIN=str(Path(sys.executable).parent / "sskj-results"))
    root = tmp_path / "shared"
    proc = subprocess.run(["bash", str(SUBMIT), str(CPU_EXPERIMENT), "--run-id", RUN_ID, "--results-root", str(root)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (job, name, run_dir), (compare_job, _, compare_dir) = (line.split("\t") for line in proc.stdout.splitlines())
    assert name == "tiny_vllm_ngram" and run_dir == str(root / "tiny_vllm_ngram" / RUN_ID)
    assert slurm.job_state(job)["NumCPUs"] == "2"

    info = slurm.wait_job(job, 1500)
    logs = "\n".join(p.read_text(errors="replace")[-4000:] for p in Path(run_dir).glob("slurm-*.log"))
    assert info["JobState"] == "COMPLETED", f"{info}\n{logs}"
    info = slurm.wait_job(compare_job, 300)
    assert info["JobState"] == "COMPLETED", "\n".join(p.read_text() for p in Path(compare_dir).glob("slurm-*.log"))

    run = Path(run_dir)
    valid = subprocess.run([sys.executable, "-m", "sskj_results", "validate", str(run)], capture_output=True, text=True)
    assert valid.returncode == 0, valid.stdout
    for phase_dir in ("phase1_vllm_baseline", "phase2_vllm_ngram"):
        assert f"{phase_dir}/results.json: valid (0 errors" in valid.stdout, valid.stdout
    base, spec = load_run(run / "phase1_vllm_baseline"), load_run(run / "phase2_vllm_ngram")
    for phase in (base, spec):
        assert sorted(s.concurrency for s in phase.scenarios) == [1, 2]
        assert all(s.success > 0 and s.failed == 0 for s in phase.scenarios)
        assert phase.metadata.run_id == RUN_ID and phase.metadata.engine == "vllm-cpu"
        assert "vllm.entrypoints.openai.api_server" in (phase.config.server_args or "")
        assert phase.metadata.nodes is None, "a one-node run records no node list"
    assert all(s.accept_length is not None and s.accept_length > 1 for s in spec.scenarios)

    comparison = json.loads((Path(compare_dir) / "comparison.json").read_text())
    assert len(comparison["runs"]) == 2
    assert (Path(compare_dir) / "comparison.md").read_text().count("| c") >= 2
    assert (run / "comparison.md").is_file(), "the experiment's own phase comparison"
    assert not port_listening(port)
    assert tagged_pids(tag) == []
