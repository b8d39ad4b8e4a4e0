"""experiments/<platform>/<name>/parse_results.py: the seed's Quick Start command, as typed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "tests" / "data" / "raw"
TOOL = Path(sys.executable).parent / "sskj-results"
EXPERIMENTS = sorted(p.parent for p in (ROOT / "experiments").glob("*/*/run_bench.sh"))


def test_every_experiment_and_the_template_have_the_same_thin_parse_results():
    template = (ROOT / "experiments" / "TEMPLATE" / "parse_results.py").read_text(encoding="utf-8")
    assert "exec_sskj_results(\"reparse\"" in template
    assert EXPERIMENTS, "no experiments found"
    for exp in EXPERIMENTS:
        file = exp / "parse_results.py"
        assert file.is_file(), f"{file.relative_to(ROOT)} is missing; copy experiments/TEMPLATE/parse_results.py"
        assert file.read_text(encoding="utf-8") == template, f"{file.relative_to(ROOT)} differs from the template"
        assert os.access(file, os.X_OK)


def _sskj(*args: str) -> None:
    subprocess.run([str(TOOL), *args], check=True, capture_output=True, text=True)


def _phase(run_dir: Path, phase: str, raw: list[str], spec: dict[str, str]) -> None:
    (run_dir / "raw_outputs").mkdir(parents=True)
    for name in raw:
        shutil.copy(RAW / name, run_dir / "raw_outputs" / name)
    args = ["metadata", str(run_dir), "--no-detect", "--meta", "experiment=dsv4_p800_sglang",
            "--meta", "run_id=20260708-120000", "--meta", "model=/data/models/DeepSeek-V4-Flash",
            "--meta", "engine=vllm", "--meta", "chip=cpu", "--meta", f"phase={phase}",
            # the engine settings of config come from the server command (sskj_results/catalog/engines.py)
            "--config", "server_args=vllm serve /data/models/DeepSeek-V4-Flash --port 30000"
            + "".join(f" --{key.replace('_', '-')} {value}" for key, value in spec.items())]
    _sskj(*args)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The parts of a clean clone that the entry point uses (the package comes from the test's venv)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "experiments" / "p800" / "dsv4_p800_sglang", repo / "experiments/p800/dsv4_p800_sglang",
                    ignore=shutil.ignore_patterns("results"))
    (repo / "scripts" / "common").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "common" / "sskj_tool.py", repo / "scripts" / "common")
    return repo


def _run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SSKJ_RESULTS_BIN": str(TOOL)}
    return subprocess.run(["python3", "experiments/p800/dsv4_p800_sglang/parse_results.py", *args], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=300)


def test_quick_start_parse_results_of_one_run(clone: Path):
    run = clone / "experiments/p800/dsv4_p800_sglang/results/20260708-120000"
    _phase(run, "", ["vllm_0705_2_128_32.jsonl", "vllm_0705_4_64_16.jsonl"], {})
    proc = _run(clone, "experiments/p800/dsv4_p800_sglang/results/20260708-120000", "--no-plots")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("experiments/p800/dsv4_p800_sglang/results/20260708-120000/results.json: 2 scenario(s); "
                           "wrote experiments/p800/dsv4_p800_sglang/results/20260708-120000/report.md and "
                           "experiments/p800/dsv4_p800_sglang/results/20260708-120000/report.html\n")
    data = json.loads((run / "results.json").read_text())
    assert sorted((s["concurrency"], s["input_len"]) for s in data["scenarios"]) == [(2, 128), (4, 64)]
    assert "c2_i128_o32" in (run / "report.md").read_text()
    assert "c2_i128_o32" in (run / "report.html").read_text()  # the page is rewritten with the Markdown
    (run / "report.html").unlink()
    quiet = _run(clone, "experiments/p800/dsv4_p800_sglang/results/20260708-120000", "--no-plots", "--no-html")
    assert quiet.returncode == 0, quiet.stderr
    assert "report.html" not in quiet.stdout and not (run / "report.html").exists()


def test_quick_start_parse_results_of_a_run_set(clone: Path):
    root = clone / "experiments/p800/dsv4_p800_sglang/results/20260708-120000"
    _phase(root / "phase1_vllm", "phase1_vllm", ["vllm_0705_2_128_32.jsonl"], {})
    _phase(root / "phase2_vllm_fp8", "phase2_vllm_fp8", ["vllm_0705_2_128_32.jsonl"], {"kv_cache_dtype": "fp8"})
    proc = _run(clone, "experiments/p800/dsv4_p800_sglang/results/20260708-120000", "--no-plots")
    assert proc.returncode == 0, proc.stderr
    rel = "experiments/p800/dsv4_p800_sglang/results/20260708-120000"
    assert proc.stdout.splitlines() == [
        f"{rel}/phase1_vllm/results.json: 1 scenario(s); wrote {rel}/phase1_vllm/report.md and "
        f"{rel}/phase1_vllm/report.html",
        f"{rel}/phase2_vllm_fp8/results.json: 1 scenario(s); wrote {rel}/phase2_vllm_fp8/report.md and "
        f"{rel}/phase2_vllm_fp8/report.html",
        f"wrote {rel}/results.json (run set)",
        f"wrote {rel}/comparison.md, {rel}/comparison.json and {rel}/comparison.html",
    ]
    assert "kv_cache_dtype" in (root / "comparison.html").read_text()
    index = json.loads((root / "results.json").read_text())
    assert index["kind"] == "run-set" and [p["dir"] for p in index["phases"]] == ["phase1_vllm", "phase2_vllm_fp8"]
    comparison = (root / "comparison.md").read_text()
    assert "| config.kv_cache_dtype | - " in comparison.replace("  ", " ").replace("  ", " ")
    # idempotent: a second run changes nothing
    before = {p: p.read_bytes() for p in root.rglob("*.json")}
    assert _run(clone, rel, "--no-plots").returncode == 0
    assert {p: p.read_bytes() for p in root.rglob("*.json")} == before


def test_parse_results_keeps_results_when_raw_outputs_are_not_there(clone: Path):
    run = clone / "experiments/p800/dsv4_p800_sglang/results/20260708-120000"
    _phase(run, "", ["vllm_0705_2_128_32.jsonl"], {})
    assert _run(clone, str(run), "--no-plots").returncode == 0
    before = (run / "results.json").read_bytes()
    shutil.rmtree(run / "raw_outputs")  # a clone: raw outputs are not committed
    proc = _run(clone, str(run), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    assert "raw files missing (raw_outputs/vllm_0705_2_128_32.jsonl); results.json kept as it is" in proc.stderr
    assert (run / "results.json").read_bytes() == before


def test_parse_results_usage_error_is_one_line(clone: Path):
    proc = _run(clone, "experiments/p800/dsv4_p800_sglang/results/nope")
    assert proc.returncode == 2
    assert proc.stderr == "error: experiments/p800/dsv4_p800_sglang/results/nope: no such run directory\n"
