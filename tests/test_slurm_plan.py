"""Slurm submission plans (sskj_results.run.slurm) and submit.sh --dry-run: no cluster needed."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sskj_results.contract.errors import ConfigError, UsageError
from sskj_results.run.slurm import SLURM_KEYS, plan_submission, platform_for

REPO = Path(__file__).resolve().parents[1]
SUBMIT = REPO / "scripts" / "common" / "submit.sh"
H200 = REPO / "experiments" / "h200" / "dsv4_h200_sglang_vs_vllm"
P800 = REPO / "experiments" / "p800" / "dsv4_p800_sglang"
CPU = REPO / "experiments" / "cpu" / "tiny_vllm_ngram"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in SLURM_KEYS and not k.startswith(("SLURM_", "SSKJ_", "PLATFORM", "RUN_ID"))}
    env["SSKJ_RESULTS_BIN"] = str(Path(sys.executable).parent / "sskj-results")
    env.update(extra)
    return env


def dry_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SUBMIT), *args, "--dry-run"], env=env or clean_env(),
                          capture_output=True, text=True, timeout=120)


def test_platform_comes_from_the_experiment_directory() -> None:
    assert platform_for(H200, REPO) == "nvidia_h200"
    assert platform_for(P800, REPO) == "kunlun_p800"
    assert platform_for(CPU, REPO) == "cpu"


def test_h200_and_p800_dry_run_show_the_platform_resources(tmp_path: Path) -> None:
    proc = dry_run(str(H200), str(P800), "--run-id", "20261201-000000", "--results-root", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    lines = [shlex.split(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 3
    h200, p800, compare = lines
    assert h200[0] == p800[0] == compare[0] == "sbatch"
    assert {"--partition=gpu", "--gpus-per-node=8", "--time=12:00:00", "--exclusive", "--nodes=1",
            "--requeue"} <= set(h200)
    assert {"--partition=p800", "--gres=xpu:8", "--time=12:00:00", "--exclusive"} <= set(p800)
    assert not any(a.startswith("--gpus-per-node") for a in p800)
    run_dir = tmp_path / "r" / "dsv4_h200_sglang_vs_vllm" / "20261201-000000"
    assert f"--output={run_dir}/slurm-%j.log" in h200
    assert h200[-6:] == ["run", str(H200), "20261201-000000", str(run_dir), "nvidia_h200", "1"]
    assert p800[-2:] == ["kunlun_p800", "1"]
    assert "--dependency=afterany:JOBID_1:JOBID_2" in compare
    assert compare[-4:-2] == ["compare", str(tmp_path / "r" / "comparison_20261201-000000")]
    assert not (tmp_path / "r").exists(), "a dry run creates nothing"


def test_command_line_and_environment_override_the_platform() -> None:
    proc = dry_run(str(H200), "--partition", "debug", "--time", "1:00:00", "--nodes", "2", "--run-id", "x1",
                   env=clean_env(SLURM_GRES="gpu:h200:8", SLURM_EXTRA_ARGS="--constraint=ib --exclusive"))
    assert proc.returncode == 0, proc.stderr
    h200 = shlex.split(proc.stdout.splitlines()[0])
    assert {"--partition=debug", "--time=1:00:00", "--nodes=2", "--gres=gpu:h200:8", "--constraint=ib"} <= set(h200)
    assert not any(a.startswith("--gpus-per-node") for a in h200), "SLURM_GRES replaces GPUS_PER_NODE"
    assert h200[-1] == "2"


def test_dry_run_submits_nothing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "sbatch_called"
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ntouch {marker}\necho 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    env = clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}")
    proc = dry_run(str(CPU), "--run-id", "r1", "--results-root", str(tmp_path / "r"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "--cpus-per-task=2" in proc.stdout
    assert not marker.exists() and not (tmp_path / "r").exists()
    real = subprocess.run(["bash", str(SUBMIT), str(CPU), "--run-id", "r1", "--results-root", str(tmp_path / "r")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert real.returncode == 0, real.stderr
    assert marker.exists()
    assert real.stdout.splitlines()[0].split("\t") == ["1", "tiny_vllm_ngram", str(tmp_path / "r" / "tiny_vllm_ngram" / "r1")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time", "soon"], "is not a Slurm time"),
        (["--platform", "nope"], "unknown platform 'nope'"),
        (["--nodes", "0"], "--nodes must be at least 1"),
        (["--bogus"], "unknown option --bogus"),
    ],
)
def test_bad_options_are_one_clear_line(args: list[str], message: str) -> None:
    proc = dry_run(str(H200), *args)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_an_experiment_outside_a_platform_directory_needs_platform(tmp_path: Path) -> None:
    exp = tmp_path / "somewhere" / "exp"
    exp.mkdir(parents=True)
    (exp / "run_bench.sh").write_text("")
    with pytest.raises(ConfigError, match="give --platform"):
        plan_submission([exp], repo_root=REPO, run_id="r", environ={})
    plan = plan_submission([exp], repo_root=REPO, run_id="r", platform="cpu", environ={})
    assert plan.jobs[0].platform == "cpu" and plan.jobs[0].run_dir == exp.resolve() / "results" / "r"


def test_nnodes_of_the_experiment_sets_the_nodes(tmp_path: Path) -> None:
    exp = tmp_path / "cpu" / "exp"
    exp.mkdir(parents=True)
    (exp / "run_bench.sh").write_text("")
    (exp / "config.env").write_text('NNODES="2"\nSLURM_TIME="30"\n')
    job = plan_submission([exp], repo_root=REPO, run_id="r", environ={}).jobs[0]
    assert job.nodes == 2 and "--nodes=2" in job.argv and "--time=30" in job.argv
    assert job.argv[-1] == "2"
    with pytest.raises(UsageError, match="also that of"):
        plan_submission([exp, exp], repo_root=REPO, run_id="r", environ={})
