"""Graded validity: qualified (⚠) verdicts stand, disqualified (✖) points are refused, --strict refuses both,
refusals say how to change them, preflight warns before the run (docs/VALIDITY.md, docs/COMPARE.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.render.report import section_text
from sskj_results.analysis.validity import CHECK_ORDER
from sskj_results.contract.metrics import PER_REQUEST_COMPARED
from sskj_results.analysis.grades import PlannedScenario, env_items, grade, planned_problems, regrade
from sskj_results.analysis.validity import CHECK_ORDER, parse_thresholds
from sskj_results.cli import main
from sskj_results.contract.comparison_models import ComparisonDoc
from sskj_results.contract.envfile import parse_env_file
from sskj_results.contract.errors import UsageError
from sskj_results.contract.io import load_run
from sskj_results.ingest.metadata import write_metadata
from sskj_results.contract.models import ValidityThresholds
from sskj_results.run.plan import PromptsRule, load_grid

REPO = Path(__file__).resolve().parents[1]
LONG_CONTEXT = REPO / "experiments" / "h200" / "dsv4_h200_long_context"
LATENCY = ("ttft_ms", "tpot_ms", "e2e_ms")
# tests per matched scenario: every per-request metric of the registry (no shape is repeated here); the sweep's
# prefill rate follows its TTFT (the same input lengths), so every metric of a scenario gets the same verdict
N = len(PER_REQUEST_COMPARED)


def raw_run(concurrency: int, input_len: int, output_len: int, scale: float, seed: int,
            failed: tuple[int, ...] = (), short: int = 0) -> dict[str, Any]:
    """One sglang.bench_serving run with --output-details: 2 prompts per slot, latencies of one seed times scale."""
    prompts = 2 * concurrency
    rng = np.random.default_rng(seed)
    ttft = rng.uniform(0.2, 0.4, prompts) * scale
    tpot = rng.uniform(0.02, 0.03, prompts) * scale
    lens = [output_len - 10 if i < short else output_len for i in range(prompts)]
    ok = [i not in failed for i in range(prompts)]
    e2e = [t + p * (n - 1) for t, p, n in zip(ttft, tpot, lens)]
    duration = sum(e for e, good in zip(e2e, ok) if good) / concurrency  # the slots were kept busy
    out_tokens = sum(n for n, good in zip(lens, ok) if good)
    return {
        "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": concurrency,
        "random_input_len": input_len, "random_output_len": output_len, "random_range_ratio": 1.0,
        "num_prompts": prompts, "duration": duration, "completed": sum(ok),
        "total_input_tokens": input_len * sum(ok), "total_output_tokens": out_tokens,
        "request_throughput": sum(ok) / duration, "input_throughput": input_len * sum(ok) / duration,
        "output_throughput": out_tokens / duration,
        "input_lens": [input_len] * prompts, "output_lens": [n if good else 0 for n, good in zip(lens, ok)],
        "ttfts": [float(t) if good else 0.0 for t, good in zip(ttft, ok)],
        "itls": [[float(p)] * (n - 1) if good else [] for p, n, good in zip(tpot, lens, ok)],
        "generated_texts": ["x"] * prompts, "errors": ["" if good else "Bad Request" for good in ok],
    }


# (concurrency, input, output): vLLM's latency scale against SGLang's, failed request indices per engine,
# short outputs of vLLM
SWEEP: dict[tuple[int, int, int], dict[str, Any]] = {
    (16, 512, 256): {"scale": 1.4, "failed": {"vllm": (5,)}},  # vLLM clearly slower; one failure of 32
    (32, 512, 256): {"scale": 1.0, "failed": {"sglang": (7,)}},  # the same latencies
    (16, 4000, 512): {"scale": 0.7, "failed": {}},  # vLLM clearly faster
    (32, 1000, 256): {"scale": 1.0, "failed": {}, "short": 8},  # vLLM's outputs cut short: a broken measurement
}
EXPECTED = {"c16_i512_o256": "slower", "c32_i512_o256": "no significant difference", "c16_i4000_o512": "faster"}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seed-000-shaped legacy sweep ({backend}_0707_{c}_{in}_{out}.jsonl) of two engines, imported."""
    root = tmp_path_factory.mktemp("sweep")
    raw = root / "raw_outputs"
    raw.mkdir()
    for (c, i, o), spec in SWEEP.items():
        for engine, scale in (("sglang", 1.0), ("vllm", spec["scale"])):
            run = raw_run(c, i, o, scale, seed=c + i + o, failed=spec["failed"].get(engine, ()),
                          short=spec.get("short", 0) if engine == "vllm" else 0)
            (raw / f"{engine}_0707_{c}_{i}_{o}.jsonl").write_text(json.dumps(run) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(root / "imported"), "--chip", "h200",
                                       "--model", "dsv4"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return root / "imported"


def run_dirs(imported: Path) -> tuple[Path, Path]:
    dirs = sorted(p for p in imported.iterdir() if p.is_dir())
    by_engine = {load_run(d).metadata.engine: d for d in dirs}
    return by_engine["sglang"], by_engine["vllm"]


def compare(imported: Path, out: Path, *args: str) -> tuple[str, ComparisonDoc]:
    base, cand = run_dirs(imported)
    result = CliRunner().invoke(main, ["compare", str(base), str(cand), "--out", str(out), "--no-plots", *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = ComparisonDoc.model_validate_json((out / "comparison.json").read_text(encoding="utf-8"))
    return (out / "comparison.md").read_text(encoding="utf-8"), doc


def verdicts_of(doc: ComparisonDoc) -> dict[str, dict[str, Any]]:
    return {s.name: {t.metric: t for t in s.tests} for s in doc.scenarios}


def test_import_grades_the_points(sweep: Path) -> None:
    base, cand = run_dirs(sweep)
    grades = {s.name: grade(s.validity) for s in load_run(cand).scenarios}
    assert grades == {"c16_i512_o256": "qualified", "c32_i512_o256": "qualified", "c16_i4000_o512": "qualified",
                      "c32_i1000_o256": "disqualified"}
    failing = {s.name: s.validity.failing for s in load_run(cand).scenarios if s.validity}
    assert failing["c16_i512_o256"] == ["prompts_per_slot", "completeness"]  # 1 of 32 failed: 3.1 % <= 5 %
    assert failing["c32_i1000_o256"] == ["prompts_per_slot", "output_length"]


def test_default_compare_gives_the_verdicts_each_qualified_with_its_reason(sweep: Path, tmp_path: Path) -> None:
    text, doc = compare(sweep, tmp_path / "out")
    found = verdicts_of(doc)
    for name, verdict in EXPECTED.items():
        assert {m: t.verdict for m, t in found[name].items()} == {m: verdict for m in PER_REQUEST_COMPARED}, name
        for metric in LATENCY:
            test = found[name][metric]
            assert "prompts_per_slot" in test.qualified and test.qualification is not None
            assert "prompts_per_slot (both sides: baseline " + name + "; this run " + name + ")" in test.qualification
    assert found["c16_i512_o256"]["ttft_ms"].qualified == ["prompts_per_slot", "completeness"]
    assert "completeness (this run c16_i512_o256)" in (found["c16_i512_o256"]["ttft_ms"].qualification or "")
    assert "completeness (baseline c32_i512_o256)" in (found["c32_i512_o256"]["ttft_ms"].qualification or "")
    # outputs cut short on one side: still refused
    assert {t.verdict for t in found["c32_i1000_o256"].values()} == {"not comparable (invalid: prompts_per_slot, output_length)"}
    # only the verdicts that occur: no "0 not comparable" beside "4 not comparable (invalid: ...)"
    assert f"Verdicts: {N} faster, {N} slower, {N} no significant difference, " \
           f"{N} not comparable (invalid: prompts_per_slot, output_length) ({4 * N} tests; {3 * N} qualified ⚠, see " \
           "Validity)." in text
    verdict_rows = [line for line in text.splitlines() if line.startswith("| c16_i512_o256 ") and "TTFT" in line]
    assert len(verdict_rows) == 1 and "**slower**" in verdict_rows[0] and "⚠ prompts_per_slot, completeness" in verdict_rows[0]
    # the rows of comparison.json carry the grades
    rows = {(r.scenario, r.run): r for s in doc.scenarios for r in s.rows}
    short = next(r for (name, run), r in rows.items() if name == "c32_i1000_o256" and run != doc.baseline)
    assert short.validity_grade == "disqualified" and short.disqualifying == ["output_length"]
    assert short.qualifying == ["prompts_per_slot"]


def test_comparison_says_how_to_change_each_refusal_and_qualification(sweep: Path, tmp_path: Path) -> None:
    text, _ = compare(sweep, tmp_path / "out")
    validity = section_text(text, "validity").split("\n")
    how = validity[validity.index("### How to change it"):]
    assert how[2] == (
        f"- **prompts_per_slot** (8 qualified ⚠; tests: 0 refused, {3 * N} qualified): `--validity min_prompts_per_slot=2` "
        "(compare, parse, import-legacy) or `VALIDITY_MIN_PROMPTS_PER_SLOT=\"2\"` in the experiment's config.env makes "
        "them pass; a better measurement: send ≥ 4 prompts per slot (≥ 64 at concurrency 16, ≥ 128 at concurrency 32): "
        "send more prompts: PROMPTS_PER_CONCURRENCY / MIN_PROMPTS in config.env, or a fourth column of scenarios.tsv.")
    assert how[3].startswith(f"- **output_length** (1 disqualified ✖; tests: {N} refused, 0 qualified): "
                             "`--validity max_short_output_share=0.125` (compare, parse, import-legacy) or "
                             "`VALIDITY_MAX_SHORT_OUTPUT_SHARE=\"0.125\"`")
    assert "make the client ignore EOS" in how[3]
    assert how[4].startswith(f"- **completeness** (2 qualified ⚠; tests: 0 refused, {2 * N} qualified): "
                             "`--validity max_failed_share=0.0313`")
    assert "- `sskj-results compare --strict` refuses qualified points too (for CI gates)." in how


def test_strict_refuses_the_qualified_verdicts(sweep: Path, tmp_path: Path) -> None:
    text, doc = compare(sweep, tmp_path / "out", "--strict")
    assert doc.settings.strict is True
    assert f"- **prompts_per_slot** (8 qualified ⚠; tests: {4 * N} refused, 0 qualified): " in text
    assert "- This comparison ran with `--strict`: qualified points were refused too; without it their verdicts " \
           "stand, with the qualification beside them." in text
    found = verdicts_of(doc)
    assert {t.verdict for t in found["c16_i512_o256"].values()} == {"not comparable (invalid: prompts_per_slot, completeness)"}
    assert {t.verdict for t in found["c32_i512_o256"].values()} == {"not comparable (invalid: prompts_per_slot, completeness)"}
    assert {t.verdict for t in found["c16_i4000_o512"].values()} == {"not comparable (invalid: prompts_per_slot)"}
    assert all(not t.qualified and t.p_value is None for s in found.values() for t in s.values())


def test_compare_validity_moves_the_threshold(sweep: Path, tmp_path: Path) -> None:
    _, doc = compare(sweep, tmp_path / "out", "--validity", "min_prompts_per_slot=2")
    found = verdicts_of(doc)
    assert {t.verdict for t in found["c16_i4000_o512"].values()} == {"faster"}
    assert all(not t.qualified for t in found["c16_i4000_o512"].values())  # now every check passes or is unknown
    assert found["c16_i512_o256"]["ttft_ms"].qualified == ["completeness"]
    # cut-short outputs are refused whatever the workload's thresholds
    assert {t.verdict for t in found["c32_i1000_o256"].values()} == {"not comparable (invalid: output_length)"}
    row = next(r for r in doc.scenarios[0].rows)
    check = next(c for c in row.validity.checks if c.name == "prompts_per_slot") if row.validity else None
    assert check is not None and check.ok is True and "judged again with min_prompts_per_slot=2: passes" in check.message


def test_a_burst_against_a_steady_load_is_refused(sweep: Path, tmp_path: Path) -> None:
    """A prompts_per_slot breach on one side only is no comparison: refused, not qualified."""
    imported = tmp_path / "imported"
    shutil.copytree(sweep, imported)
    base, _ = run_dirs(imported)
    scenario = load_run(base).scenarios[0]
    assert scenario.validity is not None
    judged = regrade(scenario.validity, scenario, ValidityThresholds(min_prompts_per_slot=1))
    assert judged is not None and judged.failing == [c for c in scenario.validity.failing if c != "prompts_per_slot"]
    data = json.loads((base / "results.json").read_text(encoding="utf-8"))
    for s in data["scenarios"]:  # the baseline as if measured with enough prompts
        for c in s["validity"]["checks"]:
            if c["name"] == "prompts_per_slot":
                c.update(ok=True, threshold=2.0)
        s["validity"]["ok"] = False if any(c["ok"] is False for c in s["validity"]["checks"]) else None
    (base / "results.json").write_text(json.dumps(data), encoding="utf-8")
    _, doc = compare(imported, tmp_path / "out")
    test = verdicts_of(doc)["c16_i4000_o512"]["ttft_ms"]
    assert test.verdict == "not comparable (invalid: prompts_per_slot)"
    assert "this run c16_i4000_o512 failed prompts_per_slot and baseline did not" in (test.reason or "")
    text = (tmp_path / "out" / "comparison.md").read_text(encoding="utf-8")
    assert f"- **prompts_per_slot** (4 qualified ⚠; tests: {3 * N} refused, 0 qualified): " in text


def test_summary_only_runs_say_once_that_validity_is_unknown(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for engine in ("sglang", "vllm"):
        run = raw_run(16, 512, 256, 1.0, seed=1)
        for key in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
            run.pop(key)
        run.update(mean_ttft_ms=300.0, median_ttft_ms=300.0, p99_ttft_ms=400.0, mean_tpot_ms=25.0,
                   median_tpot_ms=25.0, p99_tpot_ms=30.0, mean_e2e_latency_ms=6700.0, median_e2e_latency_ms=6700.0)
        run.pop("num_prompts")
        (raw / f"{engine}_0707_16_512_256.jsonl").write_text(json.dumps(run) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "imp"), "--chip", "h200"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text, _ = compare(tmp_path / "imp", tmp_path / "out")
    validity = section_text(text, "validity").split("\n")
    assert validity[2] == ("Validity is unknown for every point (2 judged): the checks' inputs were not recorded, so no "
                           "point is marked and no verdict is refused or qualified. Why, per check:")
    assert not any(line.startswith("| ") for line in validity)
    assert len([line for line in validity if line.startswith("- ")]) <= len(CHECK_ORDER)  # one line per reason, not per point


# --------------------------------------------------------------------------- thresholds


def test_thresholds_from_config_env_keys() -> None:
    assert env_items({"VALIDITY_MIN_PROMPTS_PER_SLOT": "2", "PATH": "/bin", "VALIDITY_MAX_FAILED_SHARE": ""}) == \
        ["min_prompts_per_slot=2"]
    with pytest.raises(UsageError, match="VALIDITY_MIN_PROMPT: not a validity threshold; use one of "
                                         "VALIDITY_MIN_PROMPTS_PER_SLOT, "):
        env_items({"VALIDITY_MIN_PROMPT": "2"})
    with pytest.raises(UsageError, match=r"^VALIDITY_MAX_FAILED_SHARE='1 %': not a number"):
        env_items({"VALIDITY_MAX_FAILED_SHARE": "1 %"})
    t = parse_thresholds(env_items({"VALIDITY_MAX_QUALIFIED_FAILED_SHARE": "0.2"}))
    assert t is not None and t.max_qualified_failed_share == 0.2


def test_parse_takes_config_env_thresholds_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "grades", "model": "tiny", "engine": "sglang", "chip": "h200", "run_id": "r1"},
                   {"server_args": "sglang serve"}, detect=False)
    (run / "raw_outputs").mkdir()
    (run / "raw_outputs" / "h200_sglang_0707_16_512_256.jsonl").write_text(
        json.dumps(raw_run(16, 512, 256, 1.0, seed=3)) + "\n", encoding="utf-8")
    monkeypatch.setenv("VALIDITY_MIN_PROMPTS_PER_SLOT", "2")  # as the shell exports config.env's keys
    result = CliRunner().invoke(main, ["parse", str(run)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    results = load_run(run)
    assert results.validity_thresholds is not None and results.validity_thresholds.min_prompts_per_slot == 2
    (scenario,) = results.scenarios
    assert scenario.validity is not None and "prompts_per_slot" not in scenario.validity.failing


# --------------------------------------------------------------------------- before the run


def test_preflight_warns_about_one_prompt_per_slot(tmp_path: Path) -> None:
    grid = tmp_path / "scenarios.tsv"
    grid.write_text("# c in out\n8 1024 128\n64 1024 128\n1 1024 128\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["preflight", "--warn-only", "--scenarios", str(grid),
                                       "--prompts-per-concurrency", "1", "--min-prompts", "4"])
    assert result.exit_code == 0, result.output
    warnings = [line.split("] preflight: ", 1)[1] for line in result.output.splitlines() if "validity:" in line]
    assert warnings == [
        "validity: c8_i1024_o128: 8 prompts for concurrency 8 = 1.00 per slot, below min_prompts_per_slot 4: every "
        "point will be qualified (⚠ prompts_per_slot); send ≥ 32 prompts (PROMPTS_PER_CONCURRENCY=4, or a fourth "
        "column of scenarios.tsv), or set VALIDITY_MIN_PROMPTS_PER_SLOT=\"1\" in config.env with a comment why",
        "validity: c64_i1024_o128: 64 prompts for concurrency 64 = 1.00 per slot, below min_prompts_per_slot 4: every "
        "point will be qualified (⚠ prompts_per_slot); send ≥ 256 prompts (PROMPTS_PER_CONCURRENCY=4, or a fourth "
        "column of scenarios.tsv), or set VALIDITY_MIN_PROMPTS_PER_SLOT=\"1\" in config.env with a comment why",
    ]  # c1 has 4 prompts (MIN_PROMPTS): 4 per slot


def test_preflight_stops_a_run_on_a_mistyped_config_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VALIDITY_MIN_PROMPTS", "2")
    result = CliRunner().invoke(main, ["preflight"])
    assert result.exit_code == 1
    assert "[ERROR] preflight: VALIDITY_MIN_PROMPTS: not a validity threshold; use one of" in result.output
    assert result.output.rstrip().endswith("(docs/VALIDITY.md): fix or remove that key in the experiment's config.env")
    assert CliRunner().invoke(main, ["preflight", "--warn-only"]).exit_code == 0  # DRY_RUN: a warning


def test_planned_problems_is_empty_when_every_scenario_passes() -> None:
    assert planned_problems([PlannedScenario("c4_i1_o1", 4, 16)]) == []
    assert planned_problems([PlannedScenario("c4_i1_o1", 4, 8)], ValidityThresholds(min_prompts_per_slot=2)) == []


def config_env(directory: Path) -> dict[str, str]:
    return dict(parse_env_file(directory / "config.env", {"MODEL_ROOT": "/models"}, set(), set()).assignments)


@pytest.mark.parametrize("directory", sorted(p.parent for p in REPO.glob("experiments/*/*/config.env")),
                         ids=lambda p: p.name)
def test_every_shipped_experiment_satisfies_its_validity_rules(directory: Path) -> None:
    """A shipped experiment's planned grid passes its rules, or its config.env sets the thresholds (with a comment)."""
    env = config_env(directory)
    thresholds = parse_thresholds(env_items(env))
    rule = PromptsRule(int(env["NUM_PROMPTS"]) if env.get("NUM_PROMPTS") else None,
                       int(env.get("PROMPTS_PER_CONCURRENCY") or 4), int(env.get("MIN_PROMPTS") or 8))
    for name in ("scenarios.tsv", "scenarios_full.tsv"):
        if name != "scenarios.tsv" and not (directory / name).is_file():
            continue
        grid = load_grid(directory / name, env.get("CONCURRENCIES"), env.get("SHAPES"))
        planned = [PlannedScenario(r.name, r.concurrency, rule.prompts(r)) for r in grid]
        assert planned_problems(planned, thresholds) == [], (directory, name)
    if thresholds is not None:
        text = (directory / "config.env").read_text(encoding="utf-8")
        before = text.split("VALIDITY_", 1)[0].rstrip("\n").splitlines()
        assert before and before[-1].startswith("#"), "a threshold set in config.env says why in a comment above it"


def test_the_long_context_matrix_without_its_threshold_would_be_warned_about() -> None:
    env = config_env(LONG_CONTEXT)
    assert env["VALIDITY_MIN_PROMPTS_PER_SLOT"] == "2"
    rule = PromptsRule(None, int(env["PROMPTS_PER_CONCURRENCY"]), int(env["MIN_PROMPTS"]))
    planned = [PlannedScenario(r.name, r.concurrency, rule.prompts(r)) for r in load_grid(LONG_CONTEXT / "scenarios.tsv", None, None)]
    problems = planned_problems(planned)
    assert len(problems) == 15 and len(planned) == 21  # 15 of its 21 points would be qualified
    assert problems[0].startswith("c25_i65536_o256: 50 prompts for concurrency 25 = 2.00 per slot, below "
                                  "min_prompts_per_slot 4") and "send ≥ 100 prompts" in problems[0]


def test_the_html_page_shows_the_qualification_beside_the_verdict(sweep: Path, tmp_path: Path) -> None:
    """About 5 s: the page inlines plotly.js (compressed once per process)."""
    _, doc = compare(sweep, tmp_path / "out", "--html")
    page = (tmp_path / "out" / "comparison.html").read_text(encoding="utf-8")
    verdicts = page[page.index('<section id="statistical-verdicts">'):]
    verdicts = verdicts[:verdicts.index("</section>")]
    assert "Qualified</th>" in verdicts and "⚠ prompts_per_slot, completeness</td>" in verdicts
    validity = page[page.index('<section id="validity">'):]
    assert "How to change it" in validity[:validity.index("</section>")]
