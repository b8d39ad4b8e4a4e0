"""The team's workflow commands as typed on a clean clone, with the fake engine.

BENCHMARK_WORKFLOW.md's Quick Start (`bash experiments/p800/dsv4_p800_sglang/run_bench.sh`,
`bash experiments/h200/dsv4_h200_dspark/run_bench.sh`, `python3 .../parse_results.py
.../results/<run_id>`) and the results commands that follow a run (`sskj-results
parse/report/validate <run>`, `sskj-results compare ...`, `sskj-results import-legacy
raw_outputs/`). The clone is a copy of the repository's tracked scripts, platforms and
the experiment; the platform is auto-detected from the fake nvidia-smi / xpu-smi; the
engine is the fake (SGLang: tests/fakes/pymods, vLLM: tests/fakes/pymods_vllm, P800:
the fake docker runs the "container" command here). The environment only points at
the fakes and shrinks the grid (CONCURRENCIES, SHAPES), as a user may.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shellkit import FAKES, REPO, free_port, load_json, needs_results, port_listening

pytestmark = pytest.mark.shell

RUN_ID = "20260708-120000"


def typed(line: str, clone: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run a command line as a user types it, in the clone, by bash."""
    proc = subprocess.run(["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=timeout,
                          start_new_session=True)
    assert "Traceback" not in proc.stderr, f"{line}\n{proc.stderr}"
    return proc


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clean clone: the package, scripts/, platforms/ and the seed's two example experiments, no results."""
    repo = tmp_path / "clone"
    repo.mkdir()
    for part in ("scripts", "platforms", "sskj_results", "schema"):
        shutil.copytree(REPO / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    for exp in ("p800/dsv4_p800_sglang", "h200/dsv4_h200_dspark"):
        shutil.copytree(REPO / "experiments" / exp, repo / "experiments" / exp, ignore=shutil.ignore_patterns("results"))
    models = tmp_path / "models"
    for name in ("DeepSeek-V4-Flash", "DeepSeek-V4-Flash-DSpark"):
        (models / name).mkdir(parents=True)
        (models / name / "config.json").write_text("{}")
    return repo


def seed_env(base_env: dict[str, str], tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in base_env.items() if not k.startswith("SLURM_") and k not in ("NNODES", "TP", "DEVICES")}
    env.update(
        RUN_ID=RUN_ID,
        PORT=str(free_port()),
        MODEL_ROOT=str(tmp_path / "models"),
        CONCURRENCIES="1 2",
        SHAPES="16x8",
        MIN_PROMPTS="4",
        PROMPTS_PER_CONCURRENCY="2",
        WARMUP_REQUESTS="1",
        HEALTH_TIMEOUT_S="60",
        STOP_GRACE_S="5",
        MPLBACKEND="Agg",
        # the fake models have no tokenizer to make a round-trip set with (tests/shell/test_run.py makes one)
        PROMPT_METHOD="client-random-text",
        PROMPT_TEXT="none",  # nor a real-text set (the DSpark experiments ask for one)
    )
    env.update(extra)
    return env


def results_of(run: Path) -> dict:
    return load_json(run / "results.json")


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
@needs_results
def test_p800_quick_start_then_the_results_commands(clone: Path, tmp_path: Path, base_env, tag):
    # auto-detection: no NVIDIA driver (the fake nvidia-smi fails), a working xpu-smi
    env = seed_env(base_env, tmp_path, FAKE_GPU_NAME="", CONTAINER_PATCH_DIR=str(tmp_path / "in_container"))
    proc = typed("bash experiments/p800/dsv4_p800_sglang/run_bench.sh", clone, env)
    assert proc.returncode == 0, proc.stderr
    run = clone / "experiments/p800/dsv4_p800_sglang/results" / RUN_ID
    results = results_of(run)
    meta = results["metadata"]
    assert (meta["chip"], meta["engine"], meta["experiment"]) == ("kunlun_p800", "sglang", "dsv4_p800_sglang")
    assert results["config"]["server_args"].startswith("docker exec ")
    assert "-m sglang.launch_server" in results["config"]["server_args"]
    assert sorted((s["concurrency"], s["input_len"], s["output_len"]) for s in results["scenarios"]) == [(1, 16, 8), (2, 16, 8)]
    assert all(s["success"] > 0 and s["failed"] == 0 for s in results["scenarios"])
    raw = sorted(p.name for p in (run / "raw_outputs").glob("*.jsonl"))
    assert raw == ["kunlun_p800_sglang_0708_1_16_8.jsonl", "kunlun_p800_sglang_0708_2_16_8.jsonl"]
    assert (run / "report.md").is_file()
    assert not port_listening(int(env["PORT"]))

    # Quick Start: parse results (rewrites results.json and report.md from the raw outputs)
    measured = [s["latencies"] for s in results["scenarios"]]
    (run / "report.md").unlink()
    proc = typed("python3 experiments/p800/dsv4_p800_sglang/parse_results.py "
                 f"experiments/p800/dsv4_p800_sglang/results/{RUN_ID}", clone, env)
    assert proc.returncode == 0, proc.stderr
    assert (run / "report.md").is_file()
    assert [s["latencies"] for s in results_of(run)["scenarios"]] == measured  # same numbers from the same raw files

    rel = f"experiments/p800/dsv4_p800_sglang/results/{RUN_ID}"
    for line in (f"sskj-results parse {rel}", f"sskj-results report {rel}", f"sskj-results validate {rel}"):
        proc = typed(line, clone, env)
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
    assert [s["latencies"] for s in results_of(run)["scenarios"]] == measured

    # the seed's legacy import, as typed, on this run's raw outputs: one run, beside raw_outputs/
    proc = typed("cd " + rel + " && sskj-results import-legacy raw_outputs/", clone, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imported = run / "imported"
    (one,) = [p for p in imported.iterdir() if p.is_dir()]
    again = results_of(one)
    assert again["metadata"]["engine"] == "sglang"
    by_shape = {(s["concurrency"], s["input_len"], s["output_len"]): s for s in again["scenarios"]}
    for s in results["scenarios"]:
        twin = by_shape[(s["concurrency"], s["input_len"], s["output_len"])]
        assert twin["latencies"] == s["latencies"], "the import computes the run's own numbers"
    proc = typed(f"sskj-results validate {one}", clone, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # a second import replaces, adds nothing
    assert typed("cd " + rel + " && sskj-results import-legacy raw_outputs/", clone, env).returncode == 0
    assert [p for p in imported.iterdir() if p.is_dir()] == [one]


@pytest.mark.slow  # real runs of the loop with a fake engine (engine start, health, kills): 15-110 s; make test runs it
@needs_results
def test_h200_dspark_quick_start_then_compare(clone: Path, tmp_path: Path, base_env, tag):
    env = seed_env(base_env, tmp_path, CONCURRENCIES="1", FAKE_GPU_NAME="NVIDIA H200", DSPARK_PYTHON=sys.executable,
                   PYTHONPATH=f"{FAKES / 'pymods_vllm'}:{base_env['PYTHONPATH']}")
    proc = typed("bash experiments/h200/dsv4_h200_dspark/run_bench.sh", clone, env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    root = clone / "experiments/h200/dsv4_h200_dspark/results" / RUN_ID
    phases = [root / f"phase{i}_dspark_t{t}" for i, t in ((1, 5), (2, 3), (3, 1))]
    for phase, tokens in zip(phases, (5, 3, 1)):
        results = results_of(phase)
        assert (results["metadata"]["chip"], results["metadata"]["engine"]) == ("nvidia_h200", "vllm-dspark")
        assert results["config"]["spec_tokens"] == tokens
        assert f"--spec-tokens {tokens}" in results["config"]["server_args"]
        (scenario,) = results["scenarios"]
        assert (scenario["concurrency"], scenario["failed"]) == (1, 0)
        assert scenario["accept_length"] is not None  # speculative: from the engine's spec-decode counters
    assert (root / "comparison.md").is_file()  # the run loop's own comparison of the phases
    assert not port_listening(int(env["PORT"]))

    # parse_results.py of the multi-phase run, then the compare commands as typed
    rel = f"experiments/h200/dsv4_h200_dspark/results/{RUN_ID}"
    (root / "comparison.md").unlink()
    proc = typed(f"python3 experiments/h200/dsv4_h200_dspark/parse_results.py {rel}", clone, env)
    assert proc.returncode == 0, proc.stderr
    assert (root / "comparison.md").is_file() and all((p / "report.md").is_file() for p in phases)
    proc = typed(f"sskj-results validate {rel}", clone, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = typed(f"sskj-results compare {rel}", clone, env)  # the phases of a multi-phase run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    compared = load_json(root / "comparison.json")
    assert len(compared["runs"]) == 3
    a, b = (p.relative_to(clone) for p in phases[:2])
    proc = typed(f"sskj-results compare {a} {b} --baseline {a} --out comparison/ --html", clone, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (clone / "comparison" / "comparison.md").is_file() and (clone / "comparison" / "comparison.html").is_file()
    assert len(load_json(clone / "comparison" / "comparison.json")["runs"]) == 2
