"""Validity per metric: a check with a scope (bursty streaming: TPOT, ITL and what is derived from them) refuses only
those metrics' verdicts and marks only their values; reports agree with their own checks (docs/VALIDITY.md).

Built from real client outputs: the shared vLLM files (../shared/fixtures/raw beside the project), imported, and
the points' recorded streaming_granularity values judged against a lower max_bursty_share (`--validity`), or the
recorded check failed in results.json as a live run whose stream came in bursts records it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.analysis.grades import grade, mark
from sskj_results.cli import main
from sskj_results.contract.metrics import follows
from sskj_results.contract.models import Validity, ValidityCheck
from sskj_results.render.report import section_text

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "raw"
BURSTY = "--validity", "max_bursty_share=0.01"  # the real points' bursty shares (2 %, 5 %, 8 %) fail it
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"{FIXTURES}: the shared fixtures are beside the project")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fx") / "out"
    result = CliRunner().invoke(main, ["import-legacy", str(FIXTURES), "--out", str(out), "--chip", "cpu"])
    assert result.exit_code == 0, result.output
    (run,) = [p.parent for p in out.rglob("results.json") if "0705" in p.parent.name]
    return run


def two_runs(tmp_path: Path, run: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(run, a)
    shutil.copytree(run, b)
    return a, b


def fail_streaming(run: Path, names: tuple[str, ...] = ()) -> None:
    """Record a failed streaming_granularity check on the named points (all when none named), as a live run does
    when the engine streamed in bursts: the check, the block's ok and its unreliable metrics as judge() writes them."""
    path = run / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        if names and s["name"] not in names:
            continue
        for c in s["validity"]["checks"]:
            if c["name"] == "streaming_granularity":
                c.update(ok=False, value=0.75, message="6 of 8 successful requests got more than 1.5 output tokens "
                         "per streamed chunk (75.0%), above 25.0%")
        s["validity"]["ok"] = False
        s["validity"]["unreliable_metrics"] = ["tpot_ms", "itl_ms"]  # as files written before derived metrics
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_scope_follows_the_metrics_derived_from_it() -> None:
    # interactivity = 1000 / TPOT; goodput counts requests whose TPOT met the SLO; TTFT, E2E, throughput do not follow
    found = follows(["tpot_ms", "itl_ms"])
    assert set(found) == {"tpot_ms", "itl_ms", "interactivity", "slo_attainment", "request_goodput"}
    # the steady-state window's tokens are placed by each request's TTFT and E2E
    assert follows(["ttft_ms"]) == ("ttft_ms", "slo_attainment", "request_goodput", "prefill_tok_s",
                                    "steady_output_throughput")
    assert follows(["e2e_ms"]) == ("e2e_ms", "steady_output_throughput")


def test_bursty_streaming_refuses_tpot_verdicts_only_and_e2e_ttft_and_throughput_keep_theirs(
        tmp_path: Path, imported: Path) -> None:
    a, b = two_runs(tmp_path, imported)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", str(a), str(b), "--out", str(out), "--no-plots", *BURSTY])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    by_name = {s["name"]: s for s in doc["scenarios"]}
    bursty = by_name["c2_i128_o32"]  # 5 % of its requests bursty: above 1 %, its only failed check
    verdicts = {t["metric"]: t["verdict"] for t in bursty["tests"]}
    assert verdicts["tpot_ms"] == "not comparable (invalid: streaming_granularity)"
    for kept in ("ttft_ms", "e2e_ms", "prefill_tok_s"):  # the same run twice: a verdict, and no difference
        assert verdicts[kept] == "no significant difference", (kept, verdicts)
    reason = next(t["reason"] for t in bursty["tests"] if t["metric"] == "tpot_ms")
    assert reason.startswith("unreliable TPOT, ITL, In SLO, Goodput, Interactivity: baseline c2_i128_o32 failed "
                             "streaming_granularity")
    row = bursty["rows"][0]
    assert (row["validity_grade"], row["partial"], row["disqualifying"]) == ("partial", ["streaming_granularity"], [])
    # a point disqualified as a whole (42 % of its requests failed) refuses every verdict
    whole = {t["metric"]: t["verdict"] for t in by_name["c3_i8500_o8"]["tests"]}
    assert whole and all(v.startswith("not comparable (invalid: completeness") for v in whole.values()), whole
    md = (out / "comparison.md").read_text(encoding="utf-8")
    side = section_text(md, "side-by-side")
    line = next(x for x in side.splitlines() if x.startswith("| c2_i128_o32 |"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[9].endswith(" ⊘") and cells[10].endswith(" ⊘") and cells[11].endswith(" ⊘")  # TPOT mean/P95/P99
    assert not cells[7].endswith("⊘") and not cells[12].endswith("⊘")  # TTFT P95, E2E P99 stand
    assert cells[13] == "⊘" and cells[-1] == "◐ TPOT, ITL unreliable: streaming_granularity"
    assert "| Valid |" in side.splitlines()[2]
    validity = section_text(md, "validity")
    assert "**streaming_granularity** (6 with TPOT, ITL, In SLO, Goodput, Interactivity unreliable ◐; tests: " in validity


def test_strict_still_refuses_every_verdict_of_a_partly_unreliable_point(tmp_path: Path, imported: Path) -> None:
    a, b = two_runs(tmp_path, imported)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", str(a), str(b), "--out", str(out), "--no-plots", "--strict",
                                       *BURSTY])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    (bursty,) = [s for s in doc["scenarios"] if s["name"] == "c2_i128_o32"]
    assert all(t["verdict"].startswith("not comparable (invalid:") for t in bursty["tests"])


def test_a_recorded_failed_streaming_check_of_an_older_file_grades_the_metrics_not_the_point() -> None:
    block = Validity(ok=False, checks=[ValidityCheck(name="streaming_granularity", ok=False, value=0.5, threshold=0.25,
                                                     message="bursty"),
                                       ValidityCheck(name="completeness", ok=True, value=0.0, threshold=0.0,
                                                     message="ok")],
                     unreliable_metrics=["tpot_ms", "itl_ms"])
    assert grade(block) == "partial" and mark(block) == "◐ TPOT, ITL unreliable: streaming_granularity"
    worse = block.model_copy(update={"checks": [*block.checks, ValidityCheck(
        name="client_cpu", ok=False, value=0.95, threshold=0.9, message="busy")]})
    assert grade(worse) == "disqualified" and mark(worse) == "✖ client_cpu, streaming_granularity"


def test_report_md_agrees_with_its_checks_summary_slo_marks_values_and_valid_column(
        tmp_path: Path, imported: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(imported, run)
    fail_streaming(run)
    result = CliRunner().invoke(main, ["report", str(run), "--no-plots"])
    assert result.exit_code == 0, result.output
    md = (run / "report.md").read_text(encoding="utf-8")
    summary = section_text(md, "summary")
    # no ✅ on a phase whose every point is disqualified or has an unreliable TPOT
    assert "- Scenarios: 4 measured (0 ✅, 0 ⚠️, 0 ❌, 4 ⊘ not judged)" in summary
    assert "- Validity: 1 ✖ disqualified, 3 ◐ with unreliable metrics (section Validity)" in summary
    table = section_text(md, "results").splitlines()
    rows = [x for x in table if x.startswith("| c")]
    assert len(rows) == 4 and all("✅" not in x for x in rows)
    c2 = next(x for x in rows if x.startswith("| c2_i128_o32 |"))
    assert " ⊘ | " in c2 and c2.endswith("| ◐ TPOT, ITL unreliable: streaming_granularity |")
    notes = section_text(md, "notes")
    assert "⊘ after a value: a failed validity check makes that metric unreliable" in notes
    for section_id in ("metric:prefill_tok_s", "validity"):
        assert "Valid" in section_text(md, section_id), section_id
    chips = section_text(md, "per-accelerator")
    if chips:  # interactivity = 1000 / TPOT: marked, never shown as a plain figure from a bursty point
        line = next(x for x in chips.splitlines() if x.startswith("| c2_i128_o32 |"))
        assert "⊘" in line and "◐" in line


def test_report_html_marks_the_same_values_and_slo(tmp_path: Path, imported: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(imported, run)
    fail_streaming(run, ("c2_i128_o32",))
    result = CliRunner().invoke(main, ["report", str(run), "--no-plots", "--html"])
    assert result.exit_code == 0, result.output
    html = (run / "report.html").read_text(encoding="utf-8")
    start = html.index('<tr data-scenario="c2_i128_o32"')
    row = html[start:html.index("</tr>", start)]
    assert "⊘" in row and "✅" not in row and "◐ TPOT, ITL unreliable: streaming_granularity" in row


def bursty_block() -> dict:
    """A recorded validity block whose streaming_granularity failed (every other check passed)."""
    from .test_validity_views import ALL, check

    checks = [check(n, True, "fine") for n in ALL]
    checks.append({"name": "streaming_granularity", "ok": False, "value": 0.9, "threshold": 0.25,
                   "message": "bursty"})
    return {"ok": False, "checks": checks, "unreliable_metrics": ["tpot_ms", "itl_ms"]}


def test_the_speculative_section_never_calls_speedups_of_unreliable_tpot_within_the_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_validity_views import RUNS, compare, set_validity

    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    for run in ("sglang", "vllm", "vllm_ngram"):
        set_validity(tmp_path / "runs" / run, {}, default=bursty_block())
    text, doc = compare()
    spec = section_text(text, "speculative")
    tpot = [t for s in doc.scenarios for t in s.tests if t.metric == "tpot_ms"]
    assert tpot and all(t.verdict == "not comparable (invalid: streaming_granularity)" for t in tpot)
    assert "(its verdicts stand)" not in text and "TPOT is compared instead. But every TPOT verdict" in spec
    assert f"every TPOT verdict ({len(tpot)}) was refused too" in spec
    assert "0 of 0 beyond it; 5 not judged: their TPOT is unreliable or their point disqualified" in spec
    rows = [x for x in spec.splitlines() if x.startswith("| c")]
    assert len(rows) == 5 and all("✖ not judged: vllm (phase2_vllm_ngram)" in x and "x ⊘" in x for x in rows)
    assert all("| yes " not in x for x in rows)
    # E2E and TTFT keep their verdicts: identical shapes of different runs are tested
    e2e = [t for s in doc.scenarios for t in s.tests if t.metric == "e2e_ms"]
    assert e2e and not any(t.verdict.startswith("not comparable (invalid") for t in e2e)
    assert any(t.verdict in ("faster", "slower", "no significant difference") for t in e2e)


def test_the_report_lists_scenarios_in_the_comparisons_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_validity_views import RUNS, compare

    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    text, _ = compare()
    assert CliRunner().invoke(main, ["report", "sglang", "--no-plots"]).exit_code == 0
    report = Path("sglang/report.md").read_text(encoding="utf-8")

    def order(md: str, section_id: str) -> list[str]:
        names = [x.split(" | ")[0][2:].strip() for x in section_text(md, section_id).splitlines() if x.startswith("| c")]
        return list(dict.fromkeys(names))

    compared, reported = order(text, "side-by-side"), order(report, "results")
    assert len(set(compared) & set(reported)) >= 4
    assert [n for n in compared if n in reported] == [n for n in reported if n in compared]
    assert compared[:2] == ["c2_i128_o32", "c2_i256_o64_r1"] and compared[-1] == "c16_i128_o32"


def test_the_repetition_advice_asks_for_real_text_only_when_the_prompts_were_not(tmp_path: Path, imported: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(imported, run)

    def advice() -> str:
        assert CliRunner().invoke(main, ["report", str(run), "--no-plots"]).exit_code == 0
        validity = section_text((run / "report.md").read_text(encoding="utf-8"), "validity")
        return next(x for x in validity.splitlines() if x.startswith("- **repetitive_outputs**"))

    assert "real-text prompts (PROMPT_METHOD" in advice()  # the shared files' prompts: not recorded
    path = run / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        s["prompt_source"] = "text of " + "ab" * 32
    path.write_text(json.dumps(data), encoding="utf-8")
    found = advice()
    assert "real-text prompts" not in found and "the prompts were real text already: a real model" in found


def test_a_cpu_run_says_once_that_its_accelerator_count_is_unknown(tmp_path: Path, imported: Path) -> None:
    # a live CPU run records interactivity (1000 / TPOT mean) and no accelerator count, no power samples
    run = tmp_path / "run"
    shutil.copytree(imported, run)
    fail_streaming(run, ("c2_i128_o32",))
    path = run / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        s["interactivity"] = 1000 / s["latencies"]["tpot_ms"]["mean"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert CliRunner().invoke(main, ["report", str(run), "--no-plots"]).exit_code == 0
    chips = section_text((run / "report.md").read_text(encoding="utf-8"), "per-accelerator")
    assert ("The accelerator count is unknown for every scenario (no DEVICES, no tp x dp in the server command; a "
            "CPU run has none): OutTok/s/accel, TotTok/s/accel, J/OutTok, OutTok/kWh unknown, not 0.") in chips
    table = [x for x in chips.splitlines() if x.startswith("|")]
    assert [c.strip() for c in table[0].split("|")[1:-1]] == ["Scenario", "Interactivity", "Valid"]
    assert len(table) == 2 + 4 and not any("unknown" in x for x in table)
    c2 = next(x for x in table if x.startswith("| c2_i128_o32 "))
    assert "⊘" in c2 and "◐ TPOT, ITL unreliable: streaming_granularity" in c2  # 1000 / an unreliable TPOT
    c8 = next(x for x in table if x.startswith("| c8_i256_o64 "))
    assert "⊘" not in c8


def test_plots_cross_the_points_not_to_be_believed(tmp_path: Path, imported: Path) -> None:
    from sskj_results.analysis.rundata import load_run_data
    from sskj_results.analysis.slo import resolve_slo
    from sskj_results.render import plots
    from sskj_results.render.figures import DOUBTFUL_LABEL, curve_figures, shape_points

    run = tmp_path / "run"
    shutil.copytree(imported, run)
    fail_streaming(run, ("c2_i128_o32",))
    data = load_run_data(run)
    figures = {f["id"]: f for f in curve_figures([("vllm", shape_points(data))], resolve_slo("S2"), "t")}

    def crossed(fig: str) -> list[float]:
        return [x for t in figures[fig]["data"] if t.get("name") == DOUBTFUL_LABEL for x in t["x"]]

    # the bursty point's TPOT at concurrency 2; c3 is disqualified (42 % of its requests failed): every metric
    assert sorted(crossed("fig-tpot")) == [2.0, 3.0]
    assert len(crossed("fig-tput")) == 2  # interactivity is 1000 / TPOT
    assert crossed("fig-ttft") == [3.0]  # TTFT stands at c2
    points = {p.concurrency: p for c in plots.run_curves(data, "vllm") for p in c.points}
    assert "tpot_ms" in points[2].doubtful and "ttft_ms" not in points[2].doubtful
    assert points[3].doubtful == {"*"} and not points[8].doubtful
    drawn: list[list[float]] = []
    real = plots._mark_doubtful

    def spy(ax: object, handles: dict, pts: list) -> None:
        drawn.append([x for x, _ in pts])
        real(ax, handles, pts)

    plots._mark_doubtful = spy  # type: ignore[assignment]
    try:
        out = plots.latency_vs_concurrency(plots.run_curves(data, "vllm"), "tpot_mean_ms", 50.0, tmp_path / "t.png", "t")
    finally:
        plots._mark_doubtful = real  # type: ignore[assignment]
    assert out is not None and out.is_file()
    assert sorted(x for xs in drawn for x in xs) == [2, 3]


def test_history_marks_the_latest_values_and_series_a_failed_check_says_not_to_believe(
        tmp_path: Path, imported: Path) -> None:
    runs = []
    for day in (1, 2, 3):
        run = tmp_path / f"r{day}"
        shutil.copytree(imported, run)
        path = run / "results.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["metadata"].update(run_id=f"2026120{day}-000000", timestamp=f"2026-12-0{day}T00:00:00+00:00",
                                timestamp_precision="second")
        for s in data["scenarios"]:  # three nights: three raw files (one raw file imported twice is one run)
            s["source"]["sha256"] = str(day) * 64
        path.write_text(json.dumps(data), encoding="utf-8")
        runs.append(run)
    fail_streaming(runs[-1], ("c2_i128_o32",))  # the latest run's c2 point streamed in bursts
    out = tmp_path / "hist"
    result = CliRunner().invoke(main, ["history", *map(str, runs), "--out", str(out), "--html"])
    assert result.exit_code == 0, result.output
    md = (out / "history.md").read_text(encoding="utf-8")
    series = md[md.index("## Series"):]
    assert "⊘ after a value, and the Doubtful column" in series

    def row(shape: str, metric: str) -> list[str]:
        line = next(x for x in series.splitlines() if f"| {metric} " in x and shape in x)
        return [c.strip() for c in line.split("|")[1:-1]]

    tpot = row("c2 ", "tpot_ms_mean")
    assert tpot[7].endswith(" ⊘") and tpot[8] == "1 ⊘"  # Latest, Doubtful
    ttft = row("c2 ", "ttft_ms_p95")  # TTFT stands under bursts
    assert not ttft[7].endswith("⊘") and ttft[8] == "0"
    c3 = row("c3 ", "ttft_ms_p95")  # 42 % of its requests failed in every run: disqualified, every metric
    assert c3[7].endswith(" ⊘") and c3[8] == "3 ⊘"
    import re

    from sskj_results.render.packing import unpack

    html = (out / "history.html").read_text(encoding="utf-8")
    packed = re.search(r'<script type="application/octet-stream" id="sskj-history">(.*?)</script>', html, re.S)
    assert packed is not None
    data = json.loads(unpack(packed.group(1)))  # the page's compact figure data (render/history.py figure_data)
    kinds = {data["text"][m[3]] for f in data["figures"] for m in f["marks"]}
    assert "not to be believed" in kinds


def test_a_real_bursty_cpu_point_keeps_ttft_e2e_and_throughput_and_refuses_tpot(tmp_path: Path) -> None:
    """The CPU engine on a loaded 2-core machine, recorded by the run loop (tests/data/validity/README.md)."""
    from sskj_results.contract.io import load_run
    from sskj_results.ingest.parse_run import parse_run_dir

    from .test_validity import new_run

    data = Path(__file__).resolve().parent / "data" / "validity" / "c1_bursty"
    runs = []
    for name in ("a", "b"):
        run = new_run(tmp_path / name)
        shutil.copytree(data, run, dirs_exist_ok=True)
        assert not parse_run_dir(run).problems
        runs.append(run)
    (scenario,) = load_run(runs[0]).scenarios
    assert scenario.validity is not None
    failing = {c.name: c for c in scenario.validity.checks if c.ok is False}
    assert list(failing) == ["streaming_granularity"]
    assert failing["streaming_granularity"].message.startswith("14 of 16 successful requests got more than 1.5")
    assert grade(scenario.validity) == "partial"
    assert {"tpot_ms", "itl_ms", "interactivity", "request_goodput"} <= set(scenario.validity.unreliable_metrics)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", *map(str, runs), "--out", str(out), "--no-plots"])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    verdicts = {t["metric"]: t["verdict"] for s in doc["scenarios"] for t in s["tests"]}
    assert verdicts["tpot_ms"] == "not comparable (invalid: streaming_granularity)"
    assert verdicts["ttft_ms"] == verdicts["e2e_ms"] == "no significant difference"  # the same file twice
    assert CliRunner().invoke(main, ["report", str(runs[0]), "--no-plots"]).exit_code == 0
    md = (runs[0] / "report.md").read_text(encoding="utf-8")
    assert "(0 ✅, 0 ⚠️, 0 ❌, 1 ⊘ not judged)" in section_text(md, "summary")
    line = next(x for x in section_text(md, "results").splitlines() if x.startswith("| c1_i128_o64 |"))
    assert line.count(" ⊘ |") == 4 and "✅" not in line  # TPOT mean, P95, P99 and the SLO mark
