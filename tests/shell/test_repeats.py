"""REPEATS=N with the fake engine: every scenario N times, round by round, each repeat its own raw file; a
comparison across repeats finds no difference between identical engines and finds a planted 20 % slowdown."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from shellkit import SSKJ_RESULTS, free_port, load_json, needs_results, run_script

pytestmark = [pytest.mark.shell, needs_results]

# delays long beside the machine's jitter (a loaded machine adds several ms to a request now and then)
FAST = "--ttft-ms 150 --latency-ms 40"
SLOW = "--ttft-ms 180 --latency-ms 48"  # the same engine 20 % slower (TPOT still within the S2 SLO: goodput > 0)
CONFIG = """\
MODEL_PATH="fake-model"
PROMPT_METHOD="client-random-text"
CONCURRENCIES="1 2"
SHAPES="16x4"
MIN_PROMPTS="8"
PROMPTS_PER_CONCURRENCY="4"
WARMUP_REQUESTS="1"
STOP_GRACE_S="5"
HEALTH_TIMEOUT_S="30"
REPEATS="4"
"""


def compare(root: Path, base: str, other: str, out: str) -> dict:
    assert SSKJ_RESULTS is not None
    done = subprocess.run([SSKJ_RESULTS, "compare", str(root / base), str(root / other), "--out", str(root / out),
                           "--no-plots"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((root / out / "comparison.json").read_text(encoding="utf-8"))


@pytest.mark.slow  # three phases of the loop with a fake engine, 24 scenarios: 1-3 minutes (3 on a loaded machine)
def test_repeats_compare_identical_engines_equal_and_find_a_planted_slowdown(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases=f'a:vllm b:vllm "slow:vllm:FAKE_SERVER_ARGS={SLOW}"', config=CONFIG)
    env = dict(base_env, PLATFORM="cpu", PORT=str(free_port()), RUN_ID="20250102-030405",
               RESULT_ROOT=str(tmp_path / "results" / "run"), FAKE_SERVER_ARGS=FAST)
    proc = run_script(exp / "run_bench.sh", env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    root = Path(env["RESULT_ROOT"])
    # round r of the grid before round r + 1, each repeat its own raw file, named as results.json's repeats
    calls = [line.split()[:2] for line in (tmp_path / "client_calls.log").read_text().splitlines()]
    assert calls[:8] == [["1", "16"], ["2", "16"]] * 4
    results = load_json(root / "phase1_a" / "results.json")
    stems = sorted(p.name for p in (root / "phase1_a" / "raw_outputs").iterdir())
    assert stems == sorted(f"cpu_vllm_0102_{c}_16_4{'' if r == 1 else f'_r{r}'}.jsonl" for c in (1, 2)
                           for r in range(1, 5))
    named = {(s["name"], s["repeat"], s["source"]["file"]) for s in results["scenarios"]}
    assert named == {(f"c{c}_i16_o4" + ("" if r == 1 else f"_r{r}"), r,
                      f"raw_outputs/cpu_vllm_0102_{c}_16_4{'' if r == 1 else f'_r{r}'}.jsonl")
                     for c in (1, 2) for r in range(1, 5)}

    same = compare(root, "phase1_a", "phase2_b", "same")
    assert same["settings"]["run_to_run"] == "tested"
    tests = [t for s in same["scenarios"] for t in s["tests"]]
    assert tests and {t["test"] for t in tests} <= {"moderated-t", "moderated-t-repeat-trimmed-means"}
    assert {(t["n_baseline"], t["n_candidate"]) for t in tests} == {(4, 4)}
    assert {t["verdict"] for t in tests} == {"no significant difference"}, [
        (t["metric"], t["ratio"], t["p_value"]) for t in tests if t["verdict"] != "no significant difference"]
    md = (root / "same" / "comparison.md").read_text(encoding="utf-8")
    assert "The verdicts test the difference against run-to-run variation" in md

    slow = compare(root, "phase1_a", "phase3_slow", "slow")
    found = [(s["name"], t["metric"], t["verdict"], t["ratio"], t["p_value"]) for s in slow["scenarios"]
             for t in s["tests"]]
    # E2E in every scenario, TTFT and TPOT somewhere (Holm over the whole family costs power), nothing faster
    assert {v for _, m, v, _, _ in found if m == "e2e_ms"} == {"slower"}, found
    for metric in ("ttft_ms", "tpot_ms"):
        assert "slower" in {v for _, m, v, _, _ in found if m == metric}, found
    assert "faster" not in {v for _, _, v, _, _ in found}, found
    for _, metric, _, ratio, _ in found:
        if metric in ("ttft_ms", "tpot_ms", "e2e_ms"):
            assert 1.1 < ratio < 1.35, found


def test_a_dry_run_lists_every_repeat_round_by_round(tmp_path, base_env, make_experiment, tag):
    exp = make_experiment(phases="vllm")
    env = dict(base_env, PLATFORM="cpu", PORT=str(free_port()), RUN_ID="20250102-030405",
               RESULT_ROOT=str(tmp_path / "results" / "run"), DRY_RUN="1", REPEATS="2")
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    shown = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("# scenario ")]
    assert shown == [
        "# scenario c1_i16_o8 (4 prompts, repeat 1 of 2: cpu_vllm_0102_1_16_8)",
        "# scenario c2_i16_o8 (4 prompts, repeat 1 of 2: cpu_vllm_0102_2_16_8)",
        "# scenario c1_i16_o8 (4 prompts, repeat 2 of 2: cpu_vllm_0102_1_16_8_r2)",
        "# scenario c2_i16_o8 (4 prompts, repeat 2 of 2: cpu_vllm_0102_2_16_8_r2)",
    ]
    bad = run_script(exp / "run_bench.sh", dict(env, REPEATS="0"))
    assert bad.returncode != 0 and "REPEATS must be at least 1" in bad.stderr
