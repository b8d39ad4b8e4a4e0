"""The comparison job of a Slurm submission (`sskj-results slurm-compare`, runset.job_runs)."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.runset import job_runs

RUNS = Path(__file__).resolve().parent / "data" / "compare" / "runs"


def test_job_runs_expand_phases_and_name_the_empty(tmp_path: Path) -> None:
    multi, single, empty = tmp_path / "multi", tmp_path / "single", tmp_path / "empty"
    shutil.copytree(RUNS / "vllm", multi / "phase2_vllm")
    shutil.copytree(RUNS / "sglang", multi / "phase1_sglang")
    shutil.copytree(RUNS / "vllm_ngram", single)
    empty.mkdir()
    assert job_runs([multi, single, empty]) == ([multi / "phase1_sglang", multi / "phase2_vllm", single], [empty])


def test_validates_and_compares_every_run(tmp_path: Path) -> None:
    job_a, job_b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(RUNS / "sglang", job_a)
    shutil.copytree(RUNS / "vllm", job_b)
    for job in (job_a, job_b):  # a finished job has its report
        assert CliRunner().invoke(main, ["report", str(job), "--no-plots"]).exit_code == 0
    result = CliRunner().invoke(main, ["slurm-compare", str(tmp_path / "out"), str(job_a), str(job_b)])
    assert result.exit_code == 0, result.output
    assert "validating 2 run(s)" in result.output
    assert (tmp_path / "out" / "comparison.json").is_file()


def test_a_job_that_recorded_nothing_fails_the_job(tmp_path: Path) -> None:
    job_a, job_b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(RUNS / "sglang", job_a)
    job_b.mkdir()
    result = CliRunner().invoke(main, ["slurm-compare", str(tmp_path / "out"), str(job_a), str(job_b)])
    assert result.exit_code == 1
    assert f"{job_b}: no results.json" in result.output and "nothing to compare" in result.output
    result = CliRunner().invoke(main, ["slurm-compare", str(tmp_path / "out"), str(job_b)])
    assert result.exit_code == 1 and "no run to compare" in result.output
