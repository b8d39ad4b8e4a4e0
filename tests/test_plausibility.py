"""Plausibility of speculative points: acceptance bound, repetitive outputs, the draft bound of a TPOT speedup,
ITL not comparable across speculative settings, and what the report shows (docs/VALIDITY.md, docs/METRICS.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.grades import mark
from sskj_results.analysis.compare import build_comparison
from sskj_results.analysis.grades import grade, regrade
from sskj_results.analysis.plausibility import (
    SAMPLE_BATCH, SAMPLE_BUDGET, SAMPLE_CHARS, acceptance_bound, draft_tokens_of, repeated_ngram_share, repetitive_outputs, sample_order,
    sequential_shares, synthetic_acceptance, wilson_interval,
)
from sskj_results.analysis.rundata import run_data
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Config, Latencies, Scenario, ValidityThresholds
from sskj_results.render.report import render_comparison, section_text
from tests.test_compare import S2, parse_seed_table, pct, results
from sskj_results.analysis.slo import slo_status

T = ValidityThresholds()
PROSE = ("The committee met on Tuesday to review the budget for the coming year. Several members asked why the "
         "maintenance costs had doubled since the last review, and the treasurer explained that two of the "
         "pumps had failed in the winter and were replaced at short notice. After a long discussion the "
         "committee agreed to set aside a reserve for repairs, and to ask for three quotes before any future "
         "purchase above a fixed amount.")


# --------------------------------------------------------------------------- repetition


def test_repeated_share_counts_4grams_that_repeat_an_earlier_one() -> None:
    assert repeated_ngram_share(PROSE) == 0.0
    loop = "the cat sat on the mat " * 10  # 60 words, 57 4-grams, 6 distinct
    assert repeated_ngram_share(loop) == pytest.approx(1 - 6 / 57)
    assert repeated_ngram_share("too short to judge at all") is None  # fewer than 8 4-grams
    assert repeated_ngram_share("猫" * 20) == pytest.approx(1 - 1 / 17)  # CJK characters are words of their own


def test_real_text_passes_and_a_few_repetitive_outputs_are_allowed() -> None:
    # 8 % of real outputs repeat more than half their 4-grams (public Qwen3.5-27B outputs): 2 of 25 passes
    texts = [PROSE] * 23 + ["again and again and again " * 8] * 2
    check = repetitive_outputs(texts, T)
    assert check.ok is True and check.value == pytest.approx(2 / 25)
    flagged = repetitive_outputs([PROSE] * 6 + ["again and again and again " * 8] * 4, T)
    assert flagged.ok is False and flagged.value == pytest.approx(0.4)
    assert "degenerate outputs" in flagged.message


def test_no_saved_texts_is_unknown_and_short_ones_count_as_not_repetitive() -> None:
    assert repetitive_outputs(None, T).ok is None
    short = repetitive_outputs(["x"] * 4, T)
    assert short.ok is True and short.value == 0.0 and "0 long enough to judge" in short.message
    # one long repetitive output among short ones: 1 of 5
    mixed = repetitive_outputs(["x"] * 4 + ["again and again and again " * 8], T)
    assert mixed.ok is True and mixed.value == pytest.approx(0.2)


def _fixture_check(fixtures: Path, name: str) -> list:
    path = fixtures / name
    text = path.read_text(encoding="utf-8")
    runs = [json.loads(line) for line in text.splitlines() if line.strip()] if name.endswith(".jsonl") else [json.loads(text)]
    return [repetitive_outputs(r["generated_texts"], T) for r in runs]


def test_what_the_check_says_about_the_tiny_random_models_outputs(shared_raw: Path) -> None:
    """The tiny random model repeats by construction: a fifth to a third of its 16-64 token outputs repeat more
    than half their 4-grams, against 8 % of a real model's. With the 25 % limit the check flags two of its four
    sglang runs (33 %, 35 %) and passes the others: 20 % of 32-token outputs, and 8-token outputs too short
    to judge but one; vllm bench serve's 32-token outputs repeat less (1 of 24)."""
    said = {name: [(c.ok, None if c.value is None else round(c.value, 3)) for c in _fixture_check(shared_raw, name)]
            for name in ("vllm_0705_2_128_32.jsonl", "vllm_0705_3_8500_8.jsonl", "vllm_0705_4_64_16.jsonl",
                         "vllm_0705_8_256_64.jsonl", "vllmbench_c8_128_32.json")}
    assert said == {
        "vllm_0705_2_128_32.jsonl": [(True, round(4 / 20, 3))],
        "vllm_0705_3_8500_8.jsonl": [(True, round(1 / 12, 3))],  # 8-token outputs: one long enough to judge
        "vllm_0705_4_64_16.jsonl": [(False, round(4 / 12, 3))],
        "vllm_0705_8_256_64.jsonl": [(False, round(17 / 48, 3))],
        "vllmbench_c8_128_32.json": [(True, round(1 / 24, 3))],
    }


def test_an_imported_run_whose_outputs_repeat_is_qualified(tmp_path: Path, shared_raw: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "vllm_0705_8_256_64.jsonl").write_bytes((shared_raw / "vllm_0705_8_256_64.jsonl").read_bytes())
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "o"), "--chip", "cpu",
                                       "--model", "tiny"])
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in (tmp_path / "o").iterdir() if p.is_dir()]
    (scenario,) = load_run(run_dir).scenarios
    assert scenario.validity is not None
    check = next(c for c in scenario.validity.checks if c.name == "repetitive_outputs")
    assert check.ok is False and check.value == pytest.approx(17 / 48)
    assert grade(scenario.validity) == "qualified"


# --------------------------------------------------------------------------- acceptance bound


def test_acceptance_length_within_one_and_one_plus_draft_tokens() -> None:
    assert acceptance_bound(3.36, 5, T).ok is True
    beyond = acceptance_bound(6.5, 5, T)
    assert beyond.ok is False and beyond.threshold == pytest.approx(6 * 1.02) and "outside [1, 1 + 5]" in beyond.message
    assert acceptance_bound(6.1, 5, T).ok is True  # within the 2 % counting excess
    assert acceptance_bound(0.9, 5, T).ok is False  # below 1 no step can be
    assert acceptance_bound(None, 5, T).ok is True  # nothing to bound
    unknown = acceptance_bound(3.0, None, T)
    assert unknown.ok is None and "unknown number of draft tokens" in unknown.message


def test_a_recorded_acceptance_bound_is_judged_again_with_another_excess() -> None:
    from sskj_results.analysis.plausibility import with_checks
    from sskj_results.contract.clientinfo import Acceptance

    scenario = _scenario("c2_i128_o32", 2, 128, 32, 5.0).model_copy(update={
        "acceptance": Acceptance(length=6.3, source="client_counters", weighting="token", scope="scenario",
                                 draft_length=5),
    })
    validity = with_checks(None, [acceptance_bound(6.3, 5, T)])
    assert validity.ok is False and grade(validity) == "disqualified"
    loose = regrade(validity, scenario, ValidityThresholds(max_accept_length_excess=0.06))
    assert loose is not None and loose.ok is True


def test_draft_tokens_per_engine_family() -> None:
    assert draft_tokens_of("vllm-dspark", 5) == 5
    assert draft_tokens_of("sglang", 4) == 3  # --speculative-num-draft-tokens counts the verified root token
    assert draft_tokens_of("unknown-engine", 5) is None and draft_tokens_of("vllm", None) is None


# --------------------------------------------------------------------------- compare: seed 002


def _scenario(name: str, conc: int, inp: int, out: int, tpot: float) -> Scenario:
    lat = Latencies(ttft_ms=pct(p95=100.0), tpot_ms=pct(mean=tpot), e2e_ms=pct(), itl_ms=pct())
    return Scenario(name=name, concurrency=conc, input_len=inp, output_len=out, duration_s=None, success=0, failed=0,
                    request_throughput=None, input_token_throughput=None, output_token_throughput=None,
                    total_token_throughput=None, accept_length=None, latencies=lat,
                    slo_status=slo_status(100.0, tpot, S2))


def seed_002_runs() -> list:
    """The seed-002 table as three runs: SGLang, vLLM and DSpark (vllm-dspark, --spec-tokens 5)."""
    _, rows = parse_seed_table()
    engines = {"sglang": "sglang", "vllm": "vllm", "dspark": "vllm-dspark"}
    by_engine: dict[str, list[Scenario]] = {}
    for r in rows:
        by_engine.setdefault(engines[r["backend"]], []).append(
            _scenario(r["name"], r["conc"], r["input"], r["output"], r["values"][4]))
    runs = []
    for eng, scenarios in by_engine.items():
        res = results(eng, scenarios)
        if eng == "vllm-dspark":
            res = res.model_copy(update={"config": Config(
                server_args="vllm serve /data/models/DeepSeek-V4-Flash --spec-method dspark --spec-model "
                            "/data/models/DeepSeek-V4-Flash-DSpark --spec-tokens 5",
                spec_method="dspark", spec_tokens=5)})
        runs.append(run_data(res, f"runs/{eng}"))
    return runs


def test_seed_002_flags_c2_i131072_o256_dspark_beyond_the_draft_bound_and_no_other_row() -> None:
    doc = build_comparison(seed_002_runs())
    bounds = {(s.name, b.run, b.plain): b for s in doc.scenarios for b in s.draft_bounds}
    assert len(bounds) == 21  # DSpark against vLLM at every shape; SGLang is another engine family
    assert all(b.plain == "vllm" and b.run == "vllm-dspark" for b in bounds.values())
    beyond = [name for (name, _, _), b in bounds.items() if not b.ok]
    assert beyond == ["c2_i131072_o256"]
    b = bounds[("c2_i131072_o256", "vllm-dspark", "vllm")]
    assert b.speedup == pytest.approx(7.08) and b.bound == 6.0 and b.draft_tokens == 5
    assert bounds[("c2_i131072_o1024", "vllm-dspark", "vllm")].speedup == pytest.approx(6.49 / 1.10)  # 5.9x: within
    text = render_comparison(doc)
    section = section_text(text, "speculative")
    assert "1 of 21 beyond it" in section
    rows = {cells[0]: cells[1:] for line in section.splitlines() if line.startswith("| c")
            for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert rows["c2_i131072_o256"] == ["vllm-dspark", "vllm", "7.08x", "6x", "**no: beyond**"]
    assert sum(cells[-1] == "yes" for cells in rows.values()) == 20
    assert "- c2_i131072_o256, vllm-dspark: TPOT 7.08x faster than vllm (plain decoding), beyond the draft bound " \
           "1 + 5 = 6x" in section


def test_a_speculative_vs_plain_compare_has_no_itl_verdict_and_says_why() -> None:
    runs = seed_002_runs()[1:]  # vLLM and DSpark
    doc = build_comparison(runs)
    assert doc.itl_not_comparable is not None
    assert "vllm: plain decoding; vllm-dspark: dspark, 5 speculative tokens" in doc.itl_not_comparable
    assert not any(t.metric == "itl_ms" for s in doc.scenarios for t in s.tests)
    assert any(t.metric == "tpot_ms" for s in doc.scenarios for t in s.tests)  # TPOT stays
    caveats = {s.name: t.reason for s in doc.scenarios for t in s.tests if t.metric == "tpot_ms"}
    assert "beyond the draft bound: 7.08x > 6x (docs/VALIDITY.md)" in (caveats["c2_i131072_o256"] or "")
    assert not any("draft bound" in (r or "") for name, r in caveats.items() if name != "c2_i131072_o256")
    section = section_text(render_comparison(doc), "speculative")
    assert "ITL is not comparable between these runs" in section and "TPOT is compared instead" in section


def test_plain_runs_have_no_speculative_section() -> None:
    runs = seed_002_runs()[:2]  # SGLang and vLLM
    doc = build_comparison(runs)
    assert doc.itl_not_comparable is None and not any(s.draft_bounds for s in doc.scenarios)
    assert section_text(render_comparison(doc), "speculative") == ""


# --------------------------------------------------------------------------- synthetic acceptance, report


def test_synthetic_acceptance_settings_are_found_in_the_server_command() -> None:
    assert synthetic_acceptance("env SGLANG_SIMULATE_ACC_LEN=3.2 python -m sglang.launch_server --model-path m") \
        == ["SGLANG_SIMULATE_ACC_LEN=3.2"]
    assert synthetic_acceptance("docker exec --env SGLANG_SIMULATE_ACC_LEN=2 c python3 -m sglang.launch_server") \
        == ["SGLANG_SIMULATE_ACC_LEN=2"]
    vllm = ("vllm serve m --speculative-config '{\"method\": \"dspark\", \"num_speculative_tokens\": 5, "
            "\"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": 3.51}'")
    assert synthetic_acceptance(vllm) == ["rejection_sample_method=synthetic", "synthetic_acceptance_length=3.51"]
    assert synthetic_acceptance("vllm serve m --spec-method dspark --spec-tokens 5") == []
    assert synthetic_acceptance(None) == []


def _vllm_spec_raw(rates: list[float]) -> dict:
    n = 8
    rng = np.random.default_rng(1)
    itls = [list(np.round(rng.uniform(0.01, 0.02, 31), 4)) for _ in range(n)]
    return {
        "backend": "vllm", "dataset_name": "random", "request_rate": "inf", "max_concurrency": 2, "num_prompts": n,
        "duration": 4.0, "completed": n, "failed": 0, "total_input_tokens": 128 * n, "total_output_tokens": 32 * n,
        "request_throughput": 2.0, "output_throughput": 64.0, "random_range_ratio": 0.0,
        "input_lens": [128] * n, "output_lens": [32] * n, "ttfts": [0.05] * n, "itls": itls,
        "generated_texts": [PROSE] * n, "errors": [""] * n,
        "mean_ttft_ms": 50.0, "median_ttft_ms": 50.0, "p99_ttft_ms": 50.0, "mean_tpot_ms": 15.0,
        "spec_decode_num_drafts": 100, "spec_decode_accepted_tokens": int(sum(rates) * 100),
        "spec_decode_draft_tokens": 100 * len(rates), "spec_decode_per_position_acceptance_rates": rates,
    }


def test_report_shows_per_position_rates_and_marks_synthetic_acceptance(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "vllm_dspark_c2_i128_o32.json").write_text(json.dumps(_vllm_spec_raw([0.8, 0.6, 0.45, 0.3, 0.2])))
    command = ("env SGLANG_SIMULATE_ACC_LEN=3 vllm serve tiny --spec-method dspark --spec-model d --spec-tokens 5")
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "o"), "--chip", "cpu",
                                       "--model", "tiny", "--engine", "vllm-dspark", "--server-args", command])
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in (tmp_path / "o").iterdir() if p.is_dir()]
    res = load_run(run_dir)
    assert (res.config.spec_method, res.config.spec_tokens) == ("dspark", 5)  # derived from --server-args
    (scenario,) = res.scenarios
    assert scenario.acceptance is not None and scenario.acceptance.reliable is False
    assert "SGLANG_SIMULATE_ACC_LEN=3" in (scenario.acceptance.note or "")
    assert scenario.accept_length == pytest.approx(1 + 2.35)
    bound = next(c for c in scenario.validity.checks if c.name == "acceptance_bound")
    assert bound.ok is True and bound.threshold == pytest.approx(6 * 32 / 31)  # 32-token outputs: n / (n - 1)
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    section = section_text(report, "speculative")
    assert "Synthetic acceptance" in section and "`SGLANG_SIMULATE_ACC_LEN=3`" in section
    assert "3.35 (synthetic)" in section
    # each row carries its point's Valid mark, as the acceptance table above it does
    assert f"| c2_i128_o32 |   0.800 |   0.600 |   0.450 |   0.300 |   0.200 | {mark(scenario.validity)}" in section
    assert mark(scenario.validity)  # a judged point has a mark
    assert "pos  1 | ################################ " in section  # the figure: 0.8 x 40 characters
    html = CliRunner().invoke(main, ["report", str(run_dir), "--html", "--no-plots"])
    assert html.exit_code == 0, html.output
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "Speculative decoding" in page and "pos  1 | ################################ " in page


# --------------------------------------------------------------------------- sampling temperature


def test_the_clients_temperature_with_extra_arguments_over_the_default() -> None:
    from sskj_results.catalog.clients import client_temperature

    assert client_temperature("vllm", "") == 0.0  # client_command passes --temperature 0
    assert client_temperature("vllm", "--temperature 0.6 --top-p 0.95") == 0.6
    assert client_temperature("vllm", "--temperature=1") == 1.0
    assert client_temperature("sglang", "") == 0.0  # its request bodies say 0.0
    assert client_temperature("sglang", "--extra-request-body '{\"temperature\": 1.0, \"top_p\": 0.9}'") == 1.0
    assert client_temperature("sglang", "--extra-request-body '{not json'") is None


def test_the_run_loops_client_record_carries_the_temperature_into_the_scenario(tmp_path: Path) -> None:
    from sskj_results.ingest.clientprint import recorded_fingerprint
    from sskj_results.run.client_info import write_client_info

    path = write_client_info(tmp_path, "c2_i128_o32", client="vllm", module="", impl="python", version="0.11",
                             seed="0", warmup_requests="0", extra="--temperature 0.7")
    record = json.loads(path.read_text())
    assert record["temperature"] == 0.7
    assert recorded_fingerprint(record).temperature == 0.7
    with pytest.raises(ValueError, match="temperature must be a number"):
        recorded_fingerprint({**record, "temperature": "hot"})


def test_parse_marks_points_of_a_phase_whose_environment_set_synthetic_acceptance(tmp_path: Path) -> None:
    from sskj_results.analysis.plausibility import acceptance_env
    from sskj_results.ingest.metadata import write_metadata
    from sskj_results.ingest.parse_run import parse_run_dir

    assert acceptance_env({"SGLANG_SIMULATE_ACC_LEN": "3", "PATH": "/bin"}) == "SGLANG_SIMULATE_ACC_LEN=3"
    assert acceptance_env({"SGLANG_SIMULATE_ACC_LEN": " "}) == ""
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "spec", "model": "tiny", "engine": "vllm-dspark", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve tiny --spec-method dspark --spec-tokens 5",
                    "acceptance_env": acceptance_env({"SGLANG_SIMULATE_ACC_LEN": "3"})}, detect=False)
    (run / "raw_outputs").mkdir()
    (run / "raw_outputs" / "c2_i128_o32.json").write_text(json.dumps(_vllm_spec_raw([0.9, 0.8, 0.7, 0.6, 0.5])))
    assert not parse_run_dir(run).problems
    (scenario,) = load_run(run).scenarios
    assert scenario.acceptance is not None and scenario.acceptance.reliable is False
    assert scenario.acceptance.note == ("synthetic acceptance: SGLANG_SIMULATE_ACC_LEN=3 (server command or "
                                        "environment) set it; it describes the setting, not the drafter")
    assert scenario.acceptance.draft_length == 5


def test_short_outputs_allow_the_prefill_token_in_the_count() -> None:
    # SGLang's completion tokens / verification calls: 16 tokens with k = 3 accepted in full are 1 + 15 decoded
    # in 4 calls (16 / 4 = 4 = 1 + k); with 13 tokens, 1 + 12 in 3 calls: 13 / 3 = 4.33, above 1 + k by 1 / 12
    assert acceptance_bound(13 / 3, 3, T, output_len=13).ok is True
    assert acceptance_bound(13 / 3, 3, T).ok is False
    assert acceptance_bound(4.5, 3, T, output_len=13).ok is False


def test_words_are_the_patterns_words() -> None:
    """words() splits at whitespace first and sends only pieces that are not plain ASCII letters and digits through
    the word pattern: the words are the pattern's own, on any text."""
    import random

    from sskj_results.analysis.plausibility import _WORD, words

    rnd = random.Random(46)
    alphabet = "ab_Z9 \t\n\r\x0b\x1c.,!?-'\"é模型ァ한\u3000\xa0\u2028·。，😀\u0660ⅫＡ"
    texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40))) for _ in range(5000)]
    texts += [PROSE, "plain ascii words only 42", "a_b c", "模型 推理 model", "x,y", ""]
    for text in texts:
        assert words(text) == _WORD.findall(text), text


def test_the_repetition_measure_reads_a_large_point_until_its_share_is_decided() -> None:
    """Its work per point is bounded (docs/VALIDITY.md): a point whose outputs total at most 32,768 characters is
    read whole; a larger one in a fixed order seeded by its count, 16 at a time, until the 95 % interval of the share
    is on one side of the limit. Far from the limit: 16 outputs; near it: more. The message says how many were read."""
    loop = "again and again and again " * 8

    def point(share: float, n: int = 1000) -> list[str]:  # repetitive outputs in a periodic order
        return [loop if i % 100 < share * 100 else f"{PROSE} {i}" for i in range(n)]

    assert sample_order(1000) == sample_order(1000) and sorted(sample_order(1000)) == list(range(1000))
    clean = repetitive_outputs(point(0.0), T)
    assert clean.ok is True and "0 of 16 saved outputs sampled from 1000 (enough to decide)" in clean.message
    bad = repetitive_outputs(point(0.90), T)
    assert bad.ok is False and "16 saved outputs sampled from 1000" in bad.message
    near = repetitive_outputs(point(0.32), T)  # 7 points above the limit: read until the interval clears 25 %
    read = int(near.message.split(" of ")[1].split(" saved")[0])
    assert 16 < read <= 1000 and near.ok is False
    low, high = wilson_interval(round(near.value * read), read)
    assert low > 0.25 or read == 1000
    order = sample_order(1000)  # the value is the share among the outputs read, in that order
    assert near.value == sum(1 for i in order[:read] if i % 100 < 32) / read
    assert sequential_shares(point(0.0), 0.25, 0.5)[0] == SAMPLE_BATCH == 16
    whole = point(0.30, 64)  # 64 outputs of some 430 characters: every one is read, whatever the first 16 say
    assert sum(len(t) for t in whole) <= SAMPLE_BUDGET == 32_768
    assert sequential_shares(whole, 0.25, 0.5)[0] == 64
    assert "of 64 saved outputs repeat" in repetitive_outputs(whole, T).message
    long_prose = [" ".join(f"word{i}_{k}" for k in range(300)) for i in range(64)]  # 64 outputs of 2,700 characters: a sample
    assert sequential_shares(long_prose, 0.25, 0.5)[0] == 16
    assert "0 of 16 saved outputs sampled from 64" in repetitive_outputs(long_prose, T).message
    assert sequential_shares(long_prose[:13], 0.25, 0.5)[0] == 13  # fewer than a batch: all of them
    long_loop = "x " * 10 + "again and again and again " * 20_000  # the tail is what is read, at most 64 KiB
    assert repetitive_outputs([long_loop], T).ok is False
    assert f"at most the last {SAMPLE_CHARS:,} characters of each" in repetitive_outputs([long_loop], T).message


def test_wilson_interval() -> None:
    low, high = wilson_interval(8, 32)
    assert low == pytest.approx(0.1325, abs=1e-3) and high == pytest.approx(0.4211, abs=1e-3)  # by hand: 0.2768 -+ 0.1443
    assert wilson_interval(0, 32)[0] == pytest.approx(0.0, abs=1e-12)
