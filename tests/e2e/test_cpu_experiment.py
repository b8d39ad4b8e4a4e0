"""End to end: the README's main command as a newcomer runs it, with a real vLLM CPU engine and the real
sglang.bench_serving.

A clean clone (tests/clone.py: `git clone`, with the working tree's uncommitted changes laid over it), no
.venv, no `make venv`, no venv or sskj-results on PATH: `bash experiments/cpu/tiny_vllm_ngram/run_bench.sh`
creates the clone's .venv (`pip install -e .`), builds the tiny model in the clone and runs a reduced grid
(3 concurrencies x 1 shape, 2 phases). The engine and client environments are the one thing shared:
SSKJ_ENVS_DIR, else this checkout's envs/ (installed by the first run, a few minutes, reused after: they are
not what a newcomer's clone lacks, and CI must not install vLLM twice).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sskj_results.contract.io import load_run
from sskj_results.ingest.rawio import loads_lenient
from tests.clone import REPO, clean_clone, newcomer_env

pytestmark = pytest.mark.e2e

MAIN = Path("experiments") / "cpu" / "tiny_vllm_ngram" / "run_bench.sh"
PORT = 18731


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clean_clone(tmp_path_factory.mktemp("newcomer") / "sskj")


@pytest.fixture(scope="module")
def cpu_run(clone: Path) -> Path:
    assert not _listening(PORT), f"port {PORT} is busy before the run"
    assert not (clone / ".venv").exists()
    root = clone.parent / "results" / "run"
    env = newcomer_env(dict(
        RESULT_ROOT=str(root), RUN_ID="20261130-000000", PORT=str(PORT),
        CONCURRENCIES="1 2 4", SHAPES="128x32", MIN_PROMPTS="8", PROMPTS_PER_CONCURRENCY="2", REPEATS="1",
        SSKJ_ENVS_DIR=os.environ.get("SSKJ_ENVS_DIR") or str(REPO / "envs"),
    ))
    env.pop("SSKJ_MODELS_DIR", None)  # the tiny model is built in the clone, as a newcomer's is
    proc = subprocess.run(["bash", str(MAIN)], cwd=clone, env=env, capture_output=True, text=True, timeout=2400)
    log = root.parent / "run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, \
        f"main command failed ({proc.returncode}); tail:\n{(proc.stdout + proc.stderr)[-4000:]}"
    assert f"comparison: {root}/comparison.md" in proc.stderr
    return root


def test_the_newcomers_run_made_its_own_venv_and_model(clone: Path, cpu_run: Path) -> None:
    """The script found no sskj-results, created the clone's .venv with `pip install -e .` and ran from it."""
    log = (cpu_run.parent / "run.log").read_text()
    assert f"creating {clone}/.venv" in log
    assert (clone / ".venv" / "bin" / "sskj-results").is_file()
    assert (clone / "models" / "tiny-llama" / "config.json").is_file()


def test_every_results_json_validates(cpu_run: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "sskj_results", "validate", str(cpu_run)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": valid (") == 3  # the run-set index and its two phases
    index = json.loads((cpu_run / "results.json").read_text())
    assert index["kind"] == "run-set"
    assert [p["dir"] for p in index["phases"]] == ["phase1_vllm_baseline", "phase2_vllm_ngram"]


def test_phases_measured_with_real_accept_length(cpu_run: Path) -> None:
    base = load_run(cpu_run / "phase1_vllm_baseline")
    spec = load_run(cpu_run / "phase2_vllm_ngram")
    for run in (base, spec):
        assert len(run.scenarios) >= 3
        assert all(s.success > 0 and s.failed == 0 for s in run.scenarios)
        assert run.metadata.engine == "vllm-cpu" and run.metadata.chip == "cpu"
        assert run.config.server_args and "vllm.entrypoints.openai.api_server" in run.config.server_args
    assert all(s.accept_length is None for s in base.scenarios)
    assert all(s.accept_length is not None and s.accept_length > 1 for s in spec.scenarios)
    assert spec.config.spec_method == "ngram" and base.config.spec_method is None
    assert "--speculative-config" in spec.config.server_args


def test_ttft_p99_equals_the_clients_own(cpu_run: Path) -> None:
    for phase in ("phase1_vllm_baseline", "phase2_vllm_ngram"):
        run_dir = cpu_run / phase
        for scenario in load_run(run_dir).scenarios:
            raw = (run_dir / scenario.source.file).read_bytes().splitlines()[scenario.source.line - 1]
            client = loads_lenient(raw)
            assert scenario.latencies.ttft_ms.p99 == client["p99_ttft_ms"]
            assert scenario.latencies.e2e_ms.mean == client["mean_e2e_latency_ms"]


def test_reports_comparison_and_plots_exist(cpu_run: Path) -> None:
    for phase in ("phase1_vllm_baseline", "phase2_vllm_ngram"):
        assert (cpu_run / phase / "report.md").is_file()
        assert list((cpu_run / phase / "plots").glob("*.png"))
        page = (cpu_run / phase / "report.html").read_text(encoding="utf-8")
        assert page.count("<tr data-scenario=") == 3  # concurrencies 1, 2, 4
    assert (cpu_run / "comparison.md").read_text().count("| c") >= 6
    page = (cpu_run / "comparison.html").read_text(encoding="utf-8")
    assert page.count("<tr data-scenario=") == 6 and 'id="fig-cdf"' in page
    comparison = json.loads((cpu_run / "comparison.json").read_text())
    assert {t["metric"] for s in comparison["scenarios"] for t in s["tests"]} >= {"ttft_ms", "tpot_ms", "e2e_ms"}
    assert len(list(cpu_run.glob("*.png"))) >= 3


def test_nothing_left_running(cpu_run: Path) -> None:
    assert not _listening(PORT)
    assert _processes_mentioning(str(cpu_run)) == []
    assert _processes_mentioning(f"--port {PORT}") == []


def test_validity_of_the_real_points(cpu_run: Path) -> None:
    """8 prompts at concurrency 4 never reach steady state; the engine's own token counters are read."""
    for phase in ("phase1_vllm_baseline", "phase2_vllm_ngram"):
        for scenario in load_run(cpu_run / phase).scenarios:
            assert scenario.validity is not None
            checks = {c.name: c for c in scenario.validity.checks}
            assert checks["prompts_per_slot"].ok is (scenario.num_prompts / scenario.concurrency >= 4)
            assert checks["achieved_concurrency"].value is not None
            assert checks["output_token_parity"].ok is True and checks["completeness"].ok is True
            # server_metrics/ were read, and the server saw the prompt lengths the client reports: the
            # round-trip set made before the engine started reads back token for token (random-ids text did not)
            assert scenario.prompt_method == "round-trip-set"
            # both phases on the same real text (PROMPT_TEXT=shakespeare): the ngram phase's acceptance too
            assert scenario.prompt_source is not None and scenario.prompt_source.startswith("text of ")
            parity = checks["prompt_token_parity"]
            assert parity.ok is True and parity.value is not None and abs(parity.value) <= 0.001, parity.message
        c4 = next(s for s in load_run(cpu_run / phase).scenarios if s.concurrency == 4)
        assert c4.validity is not None and c4.validity.ok is False and "prompts_per_slot" in c4.validity.failing
