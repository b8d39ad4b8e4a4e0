"""`sskj-results compare`: matching, verdicts, comparison.json, the seed-002 table, the CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Optional

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.analysis.rundata import natural_key
from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.contract.comparison_models import ComparisonDoc
from sskj_results.analysis.rundata import RequestSamples, RunData, run_data, run_labels
from sskj_results.contract.models import (
    Config, Latencies, Metadata, Percentiles, RawRequest, Results, Scenario, SloSpec,
)
from sskj_results.render.report import (
    SLO_NOTES, TABLE_ALIGN, TABLE_HEADER, render_comparison, results_table, section_text, sections,
)
from sskj_results.analysis.slo import overall_mark, resolve_slo, slo_status

DATA = Path(__file__).parent / "data" / "compare"
RUNS = DATA / "runs"
SEED_TABLE = DATA / "seed002_table.md"
GOLDEN = DATA / "expected_comparison.md"
S2 = resolve_slo("S2")
REGENERATE = "SSKJ_UPDATE_GOLDEN"


# --------------------------------------------------------------------------- builders


def pct(mean=None, p50=None, p90=None, p95=None, p99=None) -> Percentiles:
    return Percentiles(mean=mean, p50=p50, p90=p90, p95=p95, p99=p99)


def scenario(
    concurrency: int,
    input_len: int,
    output_len: int,
    *,
    name: Optional[str] = None,
    ttft: Optional[np.ndarray] = None,
    tpot: Optional[np.ndarray] = None,
    throughput: Optional[float] = 100.0,
    repeat: Optional[int] = None,
    request_rate: Optional[float] = None,
    spec: SloSpec = S2,
) -> Scenario:
    """A scenario whose aggregates are computed from the per-request arrays (when given)."""
    raw = []
    lat = Latencies(e2e_ms=pct(), ttft_ms=pct(), tpot_ms=pct(), itl_ms=pct())
    if ttft is not None and tpot is not None:
        e2e = ttft + tpot * (output_len - 1)
        raw = [RawRequest(request_id=str(i), ttft_ms=float(a), tpot_ms=float(b), e2e_ms=float(c), success=True)
               for i, (a, b, c) in enumerate(zip(ttft, tpot, e2e))]

        def stats_of(x: np.ndarray) -> Percentiles:
            return pct(float(x.mean()), *(float(np.percentile(x, q)) for q in (50, 90, 95, 99)))

        lat = Latencies(e2e_ms=stats_of(e2e), ttft_ms=stats_of(ttft), tpot_ms=stats_of(tpot), itl_ms=stats_of(tpot))
    default = f"c{concurrency}_i{input_len}_o{output_len}" + (f"_r{repeat}" if repeat else "")
    return Scenario(
        name=name or default, concurrency=concurrency, input_len=input_len, output_len=output_len, duration_s=10.0,
        success=len(raw), failed=0, request_throughput=1.0, input_token_throughput=None,
        output_token_throughput=throughput, total_token_throughput=None, accept_length=None, latencies=lat,
        slo_status=slo_status(lat.ttft_ms.p95, lat.tpot_ms.mean, spec), raw_requests=raw, repeat=repeat,
        request_rate=request_rate,
    )


def results(engine: str, scenarios: list[Scenario], *, chip: str = "NVIDIA H200", phase: Optional[str] = None,
            model: str = "/data/models/DeepSeek-V4-Flash", slo: Optional[SloSpec] = S2,
            hardware: str = "8x NVIDIA H200 143GB") -> Results:
    meta = Metadata(experiment="exp", run_id="20260707-000000", timestamp="2026-07-07T00:00:00+08:00", model=model,
                    engine=engine, backend=engine, chip=chip, hardware=hardware, phase=phase)
    return Results(metadata=meta, config=Config(server_args=f"{engine} serve"), scenarios=scenarios, slo=slo)


def latencies(n: int, median: float, seed: int) -> np.ndarray:
    return np.round(median * np.random.default_rng(seed).lognormal(0.0, 0.2, n), 3)


def write_run(path: Path, res: Results) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.json").write_text(res.model_dump_json(indent=1), encoding="utf-8")
    return path


@pytest.fixture
def runs_dir(tmp_path, monkeypatch) -> Path:
    """The committed runs, copied; the working directory is their parent (paths in outputs stay short)."""
    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    return tmp_path / "runs"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --------------------------------------------------------------------------- golden


def test_golden_comparison_md(runs_dir):
    result = invoke("compare", "sglang", "vllm", "vllm_ngram", "--out", "out", "--no-plots")
    assert result.exit_code == 0, result.output
    assert result.stdout == "wrote out/comparison.md and out/comparison.json\n"
    actual = (runs_dir / "out" / "comparison.md").read_text(encoding="utf-8")
    if os.environ.get(REGENERATE) == "1":
        GOLDEN.write_text(actual, encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8")
    if actual != expected:
        a, e = actual.splitlines(), expected.splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, e)) if x != y), min(len(a), len(e)))
        pytest.fail(
            f"comparison.md differs from tests/data/compare/{GOLDEN.name} at line {first + 1}:\n  expected: {e[first] if first < len(e) else '<end>'}\n"
            f"  actual:   {a[first] if first < len(a) else '<end>'}\n"
            f"If the change is intended, regenerate it deliberately with\n"
            f"  {REGENERATE}=1 .venv/bin/python -m pytest tests/test_compare.py -k golden\n"
            f"and review `git diff tests/data/compare/expected_comparison.md` before committing.",
            pytrace=False,
        )


def test_golden_layout_follows_seed_002(runs_dir):
    text = GOLDEN.read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0].startswith("# ")
    shown = [s for s in sections("comparison") if section_text(text, s.id)]
    assert [h for h in headings[1:] if h.startswith("## ")] == [f"## {s.title}" for s in shown]
    assert [s.id for s in shown][:3] == ["summary", "side-by-side", "notes"] and "verdicts" in [s.id for s in shown]
    lines = text.splitlines()
    start = lines.index("## Side-by-side results") + 2
    # the seed's columns, then the Accept len column a comparison with a speculative run adds, then Valid
    assert lines[start] == TABLE_HEADER + " Accept len | Valid |"
    assert lines[start + 1] == TABLE_ALIGN + "---:|---|"
    assert TABLE_ALIGN == "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    notes = lines.index("## Notes")
    assert lines[notes + 2: notes + 4] == list(SLO_NOTES)


# --------------------------------------------------------------------------- comparison.json


def test_comparison_json_shape_and_verdicts(runs_dir):
    result = invoke("compare", "sglang", "vllm", "vllm_ngram", "--out", "out", "--no-plots")
    assert result.exit_code == 0, result.output
    data = json.loads((runs_dir / "out" / "comparison.json").read_text(encoding="utf-8"))
    doc = ComparisonDoc.model_validate(data)
    assert data["baseline"] == "sglang"
    assert [r["label"] for r in data["runs"]] == ["sglang", "vllm (phase1_vllm)", "vllm (phase2_vllm_ngram)"]
    assert [s["name"] for s in data["scenarios"]] == sorted((s["name"] for s in data["scenarios"]), key=natural_key)
    first = data["scenarios"][0]
    assert set(first) == {"name", "concurrency", "input_len", "output_len", "rows", "tests", "draft_bounds"}
    assert {"run", "engine", "chip", "slo_status", "ttft_p95_ms", "tpot_mean_ms", "e2e_p99_ms"} <= set(first["rows"][0])
    assert {"run", "metric", "verdict", "p_value", "ratio", "ci_low", "ci_high"} <= set(first["tests"][0])

    def test_of(scen: str, run: str, metric: str):
        (sc,) = [s for s in doc.scenarios if s.name == scen]
        (t,) = [t for t in sc.tests if t.run == run and t.metric == metric]
        return t

    ngram, vllm = "vllm (phase2_vllm_ngram)", "vllm (phase1_vllm)"
    assert test_of("c2_i128_o32", ngram, "tpot_ms").verdict == "faster"        # TPOT 40 % lower
    assert test_of("c2_i128_o32", ngram, "ttft_ms").verdict == "no significant difference"
    assert test_of("c8_i128_o32", vllm, "ttft_ms").verdict == "slower"         # TTFT 60 % higher
    assert test_of("c4_i64_o16", vllm, "ttft_ms").verdict == "insufficient samples"  # 3 requests per side
    nc = test_of("c16_i128_o32", ngram, "e2e_ms")
    assert (nc.verdict, nc.reason, nc.p_value) == ("not comparable", "no per-request data in the candidate", None)
    welch = test_of("c2_i256_o64", ngram, "output_token_throughput")
    assert (welch.test, welch.verdict, welch.n_baseline, welch.n_candidate) == ("moderated-t", "faster", 3, 3)
    assert test_of("c2_i256_o64", vllm, "output_token_throughput").verdict == "no significant difference"
    assert [(u.run, u.scenario, u.missing_in) for u in doc.unmatched] == [
        ("sglang", "c32_i128_o32", [ngram]), (vllm, "c32_i128_o32", [ngram])]
    assert doc.unmatched[0].skipped == {ngram: "server died: CUDA out of memory"}
    # the Holm family counts hypotheses: a prefill-rate test with its TTFT test's p-value (Mann-Whitney ranks
    # input / TTFT in the reverse order of TTFT) is the same one
    tested = [t for s in doc.scenarios for t in s.tests if t.p_raw is not None]
    twins = [(s.name, t.run) for s in doc.scenarios for t in s.tests if t.metric == "prefill_tok_s"
             and t.p_raw is not None and t.p_raw == pytest.approx(test_of(s.name, t.run, "ttft_ms").p_raw, rel=1e-9)]
    assert twins and doc.settings.family_size == len(tested) - len(twins)
    for name, run in twins:
        assert test_of(name, run, "prefill_tok_s").p_value == test_of(name, run, "ttft_ms").p_value
    for s in doc.scenarios:
        for t in s.tests:
            if t.verdict in ("faster", "slower"):
                assert t.p_value < 0.05 and abs(t.ratio - 1) > 0.05
            if t.p_value is not None:
                assert t.p_value >= t.p_raw


def test_min_change_and_alpha_options(runs_dir):
    result = invoke("compare", "sglang", "vllm_ngram", "--out", "strict", "--no-plots", "--min-change", "0.9")
    assert result.exit_code == 0, result.output
    doc = ComparisonDoc.model_validate_json((runs_dir / "strict" / "comparison.json").read_text())
    assert not [t for s in doc.scenarios for t in s.tests if t.verdict in ("faster", "slower")]
    assert doc.settings.min_change == 0.9


def test_outputs_are_written_atomically(runs_dir):
    assert invoke("compare", "sglang", "vllm", "--out", "o", "--no-plots").exit_code == 0
    assert sorted(p.name for p in (runs_dir / "o").iterdir()) == ["comparison.json", "comparison.md"]


# --------------------------------------------------------------------------- the seed-002 table


def parse_seed_table() -> tuple[list[str], list[dict]]:
    lines = SEED_TABLE.read_text(encoding="utf-8").splitlines()
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        name, backend, conc, inp, out, *numbers, mark = cells
        rows.append({"name": name, "backend": backend, "conc": int(conc), "input": int(inp), "output": int(out),
                     "values": [float(v) for v in numbers], "mark": mark})
    return lines, rows


def seed_runs() -> list[RunData]:
    _, rows = parse_seed_table()
    by_backend: dict[str, list[Scenario]] = {}
    for r in rows:
        rps, otps, ttft95, ttft99, tpot_mean, tpot95, tpot99, e2e99 = r["values"]
        lat = Latencies(ttft_ms=pct(p95=ttft95, p99=ttft99), tpot_ms=pct(mean=tpot_mean, p95=tpot95, p99=tpot99),
                        e2e_ms=pct(p99=e2e99), itl_ms=pct())
        by_backend.setdefault(r["backend"], []).append(Scenario(
            name=r["name"], concurrency=r["conc"], input_len=r["input"], output_len=r["output"], duration_s=None,
            success=0, failed=0, request_throughput=rps, input_token_throughput=None, output_token_throughput=otps,
            total_token_throughput=None, accept_length=None, latencies=lat,
            slo_status=slo_status(ttft95, tpot_mean, S2),
        ))
    models = {"dspark": "/data/models/DeepSeek-V4-Flash-DSpark"}
    return [run_data(results(b, sc, model=models.get(b, "/data/models/DeepSeek-V4-Flash")), f"runs/{b}")
            for b, sc in by_backend.items()]


def test_seed_002_table_has_63_rows():
    lines, rows = parse_seed_table()
    assert len(rows) == 63
    assert lines[0] == TABLE_HEADER and lines[1] == TABLE_ALIGN
    assert [r["backend"] for r in rows[:3]] == ["sglang", "vllm", "dspark"]


def test_seed_002_renders_back_identically():
    lines, rows = parse_seed_table()
    doc = build_comparison(seed_runs(), CompareOptions(plots=False))
    table = results_table([r for s in doc.scenarios for r in s.rows])
    # identical rows, identical marks, in report.md's reading order (c2 before c10; the seed sorted names as text,
    # the runs of a scenario in the seed's order); then the Valid column (blank: the seed recorded no validity)
    ordered = sorted(lines[2:], key=lambda line: natural_key(line.split(" | ")[0][2:]))
    assert table == [lines[0] + " Valid |", lines[1] + "---|"] + [line + "  |" for line in ordered]
    marks = {(r["name"], r["backend"]): r["mark"] for r in rows}
    assert [r.slo_status.overall for s in doc.scenarios for r in s.rows] == [
        marks[(r.scenario, r.run)] for s in doc.scenarios for r in s.rows]
    assert [s.name for s in doc.scenarios][:4] == ["c2_i131072_o256", "c2_i131072_o1024", "c2_i131072_o4096",
                                                   "c2_i262144_o256"]
    md = render_comparison(doc)
    assert "\n".join(table) in md
    assert "- dspark model: `/data/models/DeepSeek-V4-Flash-DSpark`" in md
    assert "- Hardware: 8x NVIDIA H200 143GB" in md
    assert "- SLO reference: TTFT P95 < 3000.0ms, TPOT mean < 50.0ms (S2)" in md


def test_seed_002_marks_follow_the_rule_on_every_row():
    _, rows = parse_seed_table()
    for r in rows:
        ttft95, tpot_mean = r["values"][2], r["values"][4]
        assert r["mark"] == overall_mark(ttft95 < 3000.0, tpot_mean < 50.0), r
    doc = build_comparison(seed_runs(), CompareOptions(plots=False))
    for s in doc.scenarios:
        for row in s.rows:
            expected = overall_mark(row.ttft_p95_ms < 3000.0, row.tpot_mean_ms < 50.0)
            assert row.slo_status.overall == expected


def test_slo_tier_override_recomputes_every_mark():
    s1 = resolve_slo("S1")
    doc = build_comparison(seed_runs(), CompareOptions(plots=False, slo=s1))
    assert doc.slo == s1
    marks = []
    for s in doc.scenarios:
        for row in s.rows:
            expected = overall_mark(row.ttft_p95_ms < 1000.0, row.tpot_mean_ms < 25.0)
            assert row.slo_status.overall == expected
            marks.append(row.slo_status.overall)
    assert marks != [r["mark"] for r in parse_seed_table()[1]]
    assert all(info.slo_recomputed for info in doc.runs)
    assert "- SLO reference: TTFT P95 < 1000.0ms, TPOT mean < 25.0ms (S1)" in render_comparison(doc)


def test_recorded_marks_are_used_when_the_slo_matches():
    res = results("a", [scenario(2, 10, 10, throughput=1.0)])
    res.scenarios[0].latencies.ttft_ms.p95 = 10.0
    res.scenarios[0].latencies.tpot_ms.mean = 10.0
    # slo_status stays as recorded (❔, nothing was measured) because the run's recorded SLO is the reference
    doc = build_comparison([run_data(res, "a"), run_data(results("b", [scenario(2, 10, 10)]), "b")],
                           CompareOptions(plots=False))
    assert doc.scenarios[0].rows[0].slo_status.overall == "❔"
    other = results("b", [scenario(2, 10, 10)], slo=None)
    doc = build_comparison([run_data(res, "a"), run_data(other, "b")], CompareOptions(plots=False))
    assert [i.slo_recomputed for i in doc.runs] == [False, True]
    assert "`b` (recorded: none)" in render_comparison(doc)


# --------------------------------------------------------------------------- matching and labels


def test_runs_of_different_chips_and_models_are_compared_and_flagged():
    a = results("sglang", [scenario(2, 10, 10, ttft=latencies(30, 100, 1), tpot=latencies(30, 10, 2))])
    b = results("sglang", [scenario(2, 10, 10, ttft=latencies(30, 100, 3), tpot=latencies(30, 10, 4))],
                chip="Kunlun P800", model="/data/models/Other", hardware="8x Kunlun P800")
    doc = build_comparison([run_data(a, "h200"), run_data(b, "p800")], CompareOptions(plots=False))
    assert [i.label for i in doc.runs] == ["sglang @ NVIDIA H200", "sglang @ Kunlun P800"]
    md = render_comparison(doc)
    assert "| c2_i10_o10 | sglang @ Kunlun P800 | 2 | 10 | 10 |" in md
    assert "- Different chips: NVIDIA H200, Kunlun P800; a difference mixes engine and hardware." in md
    assert "- Different models:" in md
    assert "- sglang @ Kunlun P800 model: `/data/models/Other`" in md
    assert "- Hardware: 8x NVIDIA H200 143GB (sglang @ NVIDIA H200); 8x Kunlun P800 (sglang @ Kunlun P800)" in md
    # the chip is what is compared; the model is not, so the title says the configurations differ
    assert doc.title == "sglang @ NVIDIA H200 vs sglang @ Kunlun P800 (configurations differ)"
    assert doc.compared == ["chip"]
    assert {d.setting: d.expected for d in doc.config_differences} == {"chip": True, "model": False,
                                                                      "metadata.hardware": True}


def test_same_engine_labels_are_disambiguated():
    def rd(path: str, phase: Optional[str]) -> RunData:
        return run_data(results("vllm", [scenario(2, 10, 10)], phase=phase), path)

    assert run_labels([rd("a", "phase1_vllm"), rd("b", "phase2_vllm_ngram")]) == [
        "vllm (phase1_vllm)", "vllm (phase2_vllm_ngram)"]
    assert run_labels([rd("x/base", None), rd("x/ngram", None)]) == ["vllm (base)", "vllm (ngram)"]
    # never a path (the Runs table gives it): the run id, else a number
    assert run_labels([rd("x/run/results.json", None), rd("y/run", None)]) == ["vllm #1", "vllm #2"]
    a, b = rd("/long/experiments/cpu/e/results/1/phase1_vllm", "vllm"), rd("/other/results/2/phase1_vllm", "vllm")
    b = RunData(path=b.path, results=b.results.model_copy(update={"metadata": b.results.metadata.model_copy(
        update={"run_id": "20260102-030405"})}), samples=b.samples)
    labels = run_labels([a, b])
    assert labels == [f"vllm ({a.results.metadata.run_id})", "vllm (20260102-030405)"]
    assert labels[0] != labels[1] and "/" not in "".join(labels)
    assert run_labels([run_data(results("sglang", []), "a"), rd("b", None)]) == ["sglang", "vllm"]


def test_scenarios_match_by_shape_not_name():
    a = results("a", [scenario(8, 1000, 256, name="chat_short", ttft=latencies(20, 100, 1), tpot=latencies(20, 10, 2))])
    b = results("b", [scenario(8, 1000, 256, ttft=latencies(20, 100, 3), tpot=latencies(20, 10, 4))])
    doc = build_comparison([run_data(a, "a"), run_data(b, "b")], CompareOptions(plots=False))
    assert [s.name for s in doc.scenarios] == ["c8_i1000_o256"]
    assert [r.scenario for r in doc.scenarios[0].rows] == ["chat_short", "c8_i1000_o256"]
    assert doc.unmatched == []


def test_different_parameters_are_not_comparable():
    a = results("a", [scenario(2, 10, 10, ttft=latencies(30, 100, 1), tpot=latencies(30, 10, 2))])
    b = results("b", [scenario(2, 10, 10, ttft=latencies(30, 50, 3), tpot=latencies(30, 5, 4), request_rate=4.0)])
    doc = build_comparison([run_data(a, "a"), run_data(b, "b")], CompareOptions(plots=False))
    tests = doc.scenarios[0].tests
    assert [t.verdict for t in tests] == ["not comparable"] * 3
    assert tests[0].reason == "request rate differs: inf vs 4 req/s"
    assert doc.settings.family_size == 0


def test_baseline_option_reorders_and_adds(runs_dir):
    result = invoke("compare", "sglang", "vllm", "--baseline", "vllm", "--out", "o", "--no-plots")
    assert result.exit_code == 0, result.output
    doc = ComparisonDoc.model_validate_json((runs_dir / "o" / "comparison.json").read_text())
    assert doc.baseline == "vllm" and [i.path for i in doc.runs] == ["vllm", "sglang"]
    result = invoke("compare", "sglang", "--baseline", "vllm_ngram", "--out", "o2", "--no-plots")
    assert result.exit_code == 0, result.output
    doc = ComparisonDoc.model_validate_json((runs_dir / "o2" / "comparison.json").read_text())
    assert [i.path for i in doc.runs] == ["vllm_ngram", "sglang"]


def test_repeated_runs_test_across_repeats_on_output_throughput():
    def rep(engine: str, values: list[float], seed: int) -> Results:
        return results(engine, [scenario(4, 100, 50, repeat=i + 1, throughput=v, ttft=latencies(10, 100, seed + i),
                                          tpot=latencies(10, 10, seed + 10 + i)) for i, v in enumerate(values)])

    base = rep("a", [1000.0, 1010.0, 995.0], 0)
    faster = rep("b", [1500.0, 1490.0, 1510.0], 100)
    doc = build_comparison([run_data(base, "a"), run_data(faster, "b")], CompareOptions(plots=False))
    (sc,) = doc.scenarios
    assert sc.name == "c4_i100_o50"
    assert [r.scenario for r in sc.rows] == ["c4_i100_o50_r1", "c4_i100_o50_r2", "c4_i100_o50_r3"] * 2
    (welch,) = [t for t in sc.tests if t.metric == "output_token_throughput"]
    assert welch.test == "moderated-t" and welch.verdict == "faster"
    geomean = lambda v: float(np.exp(np.mean(np.log(v))))  # noqa: E731
    assert welch.ratio == pytest.approx(geomean([1500.0, 1490.0, 1510.0]) / geomean([1000.0, 1010.0, 995.0]))
    assert welch.ci_low < welch.ratio < welch.ci_high
    # the repeat is the unit of the per-request metrics too: one trimmed log mean per repeat, the pooled t-test across them
    others = [t for t in sc.tests if t.metric != "output_token_throughput"]
    assert {(t.test, t.n_baseline, t.n_candidate) for t in others} == {("moderated-t-repeat-trimmed-means", 3, 3)}
    assert doc.settings.run_to_run == "tested"
    single = results("c", [scenario(4, 100, 50, throughput=1200.0, ttft=latencies(30, 100, 7), tpot=latencies(30, 10, 8))])
    doc = build_comparison([run_data(base, "a"), run_data(single, "c")], CompareOptions(plots=False))
    (welch,) = [t for t in doc.scenarios[0].tests if t.metric == "output_token_throughput"]
    assert welch.verdict == "insufficient samples"
    assert "OutTok/s mean" in render_comparison(doc)


def test_null_values_render_as_dash():
    a = results("a", [scenario(2, 10, 10, throughput=None)])
    doc = build_comparison([run_data(a, "a"), run_data(results("b", [scenario(2, 10, 10)]), "b")],
                           CompareOptions(plots=False))
    md = render_comparison(doc)
    assert "| c2_i10_o10 | a | 2 | 10 | 10 | 1.00 | - | - | - | - | - | - | - | ❔ |" in md  # not measured
    assert "- `-` marks a value the run did not record." in md


def test_compare_handles_large_per_request_samples():
    rng = np.random.default_rng(0)

    def big(engine: str, shift: float) -> RunData:
        scen = [scenario(c, 1000, 256) for c in range(1, 31)]
        samples = [RequestSamples(values={"ttft_ms": rng.lognormal(5, 0.3, 5000) * shift,
                                          "tpot_ms": rng.lognormal(3, 0.2, 5000),
                                          "e2e_ms": rng.lognormal(8, 0.2, 5000)}, recorded=5000) for _ in scen]
        return RunData(path=engine, results=results(engine, scen), samples=samples)

    runs = [big("a", 1.0), big("b", 1.1), big("c", 0.9)]
    doc = build_comparison(runs, CompareOptions(plots=False))
    tests = [t for s in doc.scenarios for t in s.tests]
    assert len(tests) == 30 * 2 * 3
    verdicts = {(t.run, t.metric) for t in tests}
    assert len(verdicts) == 6
    by = lambda run, metric: {t.verdict for t in tests if t.run == run and t.metric == metric}  # noqa: E731
    assert by("b", "ttft_ms") == {"slower"}
    assert by("c", "ttft_ms") == {"faster"}
    assert by("b", "tpot_ms") == {"no significant difference"}


# --------------------------------------------------------------------------- CLI errors


def test_cli_missing_run_dir(runs_dir):
    result = CliRunner().invoke(main, ["compare", "sglang", "nope", "--out", "o"])
    assert result.exit_code == 1
    assert result.stderr == "error: nope: no such run directory\n"
    assert result.stdout == ""
    assert not (runs_dir / "o").exists()


def test_cli_invalid_results_json_is_one_line(runs_dir):
    bad = runs_dir / "bad"
    shutil.copytree(runs_dir / "vllm", bad)
    data = json.loads((bad / "results.json").read_text(encoding="utf-8"))
    data["scenarios"][1]["concurrency"] = 0
    (bad / "results.json").write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["compare", "sglang", "bad", "--out", "o"])
    assert result.exit_code == 1
    assert result.stderr == "error: bad/results.json: scenarios[1].concurrency: Input should be greater than or equal to 1\n"
    assert "Traceback" not in result.output
    (bad / "results.json").write_text("{not json", encoding="utf-8")
    result = CliRunner().invoke(main, ["compare", "sglang", "bad", "--out", "o"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: bad/results.json:1:2: invalid JSON: ")
    assert result.stderr.count("\n") == 1


def test_cli_usage_errors_exit_2(runs_dir):
    result = CliRunner().invoke(main, ["compare", "sglang"])
    assert result.exit_code == 2
    assert result.stderr == "error: compare needs at least two runs (a baseline and one to compare with it)\n"
    result = CliRunner().invoke(main, ["compare", "sglang", "./sglang/"])
    assert result.exit_code == 2
    assert result.stderr == "error: sglang: given twice; each run can appear once\n"
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "--alpha", "1.5"])
    assert result.exit_code == 2
    assert result.stderr == "error: --alpha 1.5: must be between 0 and 1 (exclusive), e.g. 0.05\n"
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "--cdf", "some"])
    assert result.exit_code == 2
    assert "'some': give `all` or a number >= 0" in result.stderr
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "--slo-tier", "S9"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: unknown SLO tier 'S9'")


def test_cli_unwritable_out_dir(runs_dir):
    (runs_dir / "afile").write_text("x", encoding="utf-8")
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "--out", "afile/sub", "--no-plots"])
    assert result.exit_code == 1
    assert result.stderr == "error: afile/sub: cannot write: Not a directory; choose another --out\n"


# --------------------------------------------------------------------------- acceptance in the tables


def test_accept_length_and_its_source_in_every_results_table_and_unknown_when_not_recorded(tmp_path):
    from sskj_results.contract.clientinfo import Acceptance
    from sskj_results.render.html import render_comparison_html
    from sskj_results.render.report import render_report

    base = results("vllm", [scenario(1, 100, 50, ttft=latencies(20, 100, 1), tpot=latencies(20, 10, 2)),
                            scenario(4, 100, 50, ttft=latencies(20, 100, 3), tpot=latencies(20, 10, 4))])
    spec = results("vllm", [scenario(1, 100, 50, ttft=latencies(20, 100, 5), tpot=latencies(20, 7, 6)),
                            scenario(4, 100, 50, ttft=latencies(20, 100, 7), tpot=latencies(20, 7, 8))], phase="ngram")
    spec.config.spec_method, spec.config.spec_tokens = "ngram", 3
    first = spec.scenarios[0]
    first.accept_length = 2.07
    first.acceptance = Acceptance(length=2.07, source="server_metrics", weighting="token", scope="scenario",
                                  draft_length=3)  # the c4 point recorded none
    runs = [run_data(base, "base"), run_data(spec, "ngram")]
    doc = build_comparison(runs, CompareOptions(plots=False))
    md = render_comparison(doc)
    table = section_text(md, "side-by-side").splitlines()
    assert table[2] == TABLE_HEADER + " Accept len | Valid |"
    cells = {line.split(" | ")[0][2:] + "/" + line.split(" | ")[1]: line.split(" | ")[-2] for line in table[4:6]}
    ngram = [line for line in table if "ngram" in line]
    assert [line.split(" | ")[-2] for line in ngram] == ["2.07 (/metrics)", "unknown ✖"]  # never 0
    assert all(line.endswith(" - |  |") for line in table[4:] if line.startswith("|") and "ngram" not in line), cells
    notes = section_text(md, "notes")
    assert ("- `/metrics`: the server's /metrics counters before and after the scenario; token-weighted, over this "
            "scenario only.") in notes
    assert "- `unknown ✖`: the run decodes speculatively but recorded no acceptance for c4_i100_o50 (vllm (ngram))" in notes
    html_page = render_comparison_html(doc, runs, md)
    assert "<th class=\"left\">Accept len</th>" in html_page and "2.07 (/metrics)" in html_page
    assert html_page.count("unknown ✖</td>") == 1
    # the speculative run's own report.md: the column before Valid
    report = render_report(runs[1], S2, False)
    results_lines = section_text(report, "results").splitlines()
    assert results_lines[2].endswith(" | SLO | Accept len | Valid |")
    assert " | 2.07 (/metrics) | " in results_lines[4] and " | unknown ✖ | " in results_lines[5]
    # a run without speculative decoding keeps the seed's table
    assert section_text(render_report(runs[0], S2, False), "results").splitlines()[2] == TABLE_HEADER + " Valid |"


def test_without_repeats_comparison_md_says_the_verdicts_ignore_run_to_run_variation():
    base = results("a", [scenario(4, 100, 50, ttft=latencies(30, 100, 1), tpot=latencies(30, 10, 2))])
    other = results("b", [scenario(4, 100, 50, ttft=latencies(30, 100, 3), tpot=latencies(30, 10, 4))])
    doc = build_comparison([run_data(base, "a"), run_data(other, "b")], CompareOptions(plots=False))
    assert doc.settings.run_to_run == "ignored"
    assert {t.test for t in doc.scenarios[0].tests} == {"mann-whitney-u"}
    verdicts = section_text(render_comparison(doc), "verdicts")
    assert ("⚠️ No scenario was repeated: a per-request test treats the requests of one run as independent samples, "
            "so its verdict ignores run-to-run variation (a rerun can flip it).") in verdicts
    assert " 30/30 |" in verdicts and "repeats |" not in verdicts  # n counts requests, not repeats
