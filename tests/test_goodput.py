"""Goodput: the share and rate of requests that met the SLO one by one (docs/METRICS.md, *Goodput*).

One hand-computed example runs through every place goodput appears: the
metric functions, an imported raw run's results.json, report.md, the runs
table, and a comparison of repeated runs (higher is better).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.analysis.metrics import good_requests, goodput_rate, slo_attainment
from sskj_results.analysis.rundata import load_run_data, run_data
from sskj_results.analysis.runtable import load_runs
from sskj_results.analysis.slo import resolve_slo
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.render.report import render_comparison, render_report, section_text

from .conftest import RAW
from .test_compare import latencies, results, scenario

S2 = resolve_slo("S2")  # TTFT < 3000 ms, TPOT < 50 ms, per request here

# The example, S2, duration 4 s. Per request: success, TTFT (s), output tokens, E2E (s) -> TPOT, good?
EXAMPLE = [
    (True, 1.0, 11, 1.4, "tpot 40 ms: good"),
    (True, 3.0, 11, 3.3, "TTFT 3000 ms is not below 3000: miss (vLLM, GuideLLM, AIPerf count it)"),
    (True, 0.5, 11, 1.1, "tpot 60 ms: miss"),
    (True, 2.0, 1, 2.0, "one output token, no TPOT: judged on TTFT alone, good"),
    (False, 0.0, 0, 0.0, "failed: miss"),
    (True, 0.1, 0, 0.1, "success with 0 output tokens: miss"),
    (True, 0.2, 5, 0.24, "tpot 10 ms: good"),
    (True, 2.5, 3, 2.9, "tpot 200 ms: miss"),
]
GOOD, TOTAL, DURATION = 3, 8, 4.0  # good requests: 1, 4, 7


def example_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    success = np.array([r[0] and r[2] > 0 for r in EXAMPLE])  # what enters statistics: 0-token successes do not
    ttft = np.array([r[1] for r in EXAMPLE])
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.array([(r[3] - r[1]) / (r[2] - 1) if r[2] > 1 else np.nan for r in EXAMPLE])
    return success, ttft, tpot


def test_metric_functions_on_the_hand_computed_example() -> None:
    success, ttft, tpot = example_arrays()
    assert good_requests(success, ttft, tpot, S2.ttft_p95_ms, S2.tpot_mean_ms) == GOOD
    assert slo_attainment(success, ttft, tpot, S2.ttft_p95_ms, S2.tpot_mean_ms) == 0.375
    assert goodput_rate(GOOD, DURATION) == 0.75
    # looser limits let the boundary request (TTFT exactly 3000 ms) and the 60 ms one in
    assert good_requests(success, ttft, tpot, 3000.001, 61.0) == 5


def test_unknown_is_none_never_zero() -> None:
    empty = np.zeros(0)
    assert slo_attainment(empty.astype(bool), empty, empty, 3000.0, 50.0) is None
    assert goodput_rate(None, 4.0) is None
    assert goodput_rate(3, None) is None
    assert goodput_rate(3, 0.0) is None
    assert goodput_rate(0, 4.0) == 0.0  # measured: nothing was good


def _raw_run(path: Path) -> None:
    """A vllm bench serve result with the example's per-request arrays (statistics left to sskj)."""
    base = json.loads((RAW / "vllmbench_c8_128_32.json").read_text())
    data: dict[str, Any] = {k: v for k, v in base.items() if not k.endswith("_ms")}
    ok = [r[0] for r in EXAMPLE]
    data.update(
        num_prompts=TOTAL, max_concurrency=8, duration=DURATION, completed=sum(ok), failed=TOTAL - sum(ok),
        input_lens=[128] * TOTAL, output_lens=[r[2] for r in EXAMPLE], ttfts=[r[1] for r in EXAMPLE],
        itls=[[(r[3] - r[1]) / (r[2] - 1)] * (r[2] - 1) if r[2] > 1 else [] for r in EXAMPLE],
        latencies=[r[3] for r in EXAMPLE], errors=["" if r[0] else "Bad Request" for r in EXAMPLE],
        generated_texts=["x"] * TOTAL, start_times=[float(i) for i in range(TOTAL)], request_goodput=None,
        request_throughput=sum(ok) / DURATION,
    )
    data.pop("queue_times", None)
    path.write_text(json.dumps(data))


@pytest.fixture()
def imported(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    _raw_run(raw / "vllmbench_c8_128_32.json")
    summary = {k: v for k, v in json.loads((raw / "vllmbench_c8_128_32.json").read_text()).items()
               if k not in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "errors", "generated_texts",
                            "start_times")}
    summary.update(mean_ttft_ms=100.0, p99_ttft_ms=200.0, mean_tpot_ms=10.0, max_concurrency=16)
    (raw / "vllmbench_c16_128_32.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "out"), "--chip", "cpu",
                                       "--accelerator", "CPU", "--hardware", "2x CPU core", "--engine", "vllm"])
    assert result.exit_code == 0, result.output
    (run,) = sorted((tmp_path / "out").iterdir())
    return run


def test_results_json_records_share_and_rate(imported: Path) -> None:
    by_conc = {s.concurrency: s for s in load_run(imported).scenarios}
    measured, summary_only = by_conc[8], by_conc[16]
    assert measured.success == 7 and measured.failed == 1 and measured.duration_s == DURATION
    assert measured.slo_attainment == 0.375
    assert measured.request_goodput == 0.75
    assert summary_only.slo_attainment is None and summary_only.request_goodput is None  # not 0
    saved = json.loads((imported / "results.json").read_text())
    assert {s["request_goodput"] for s in saved["scenarios"]} == {0.75, None}


def test_report_shows_the_goodput_section(imported: Path) -> None:
    run = load_run_data(imported)
    text = render_report(run, S2, False)
    section = section_text(text, "goodput")
    assert section
    assert "TTFT below 3000 ms and TPOT below 50 ms (S2)" in section
    assert "|   In SLO (%) |   Goodput (req/s) |   Req/s |" in section
    names = {s.concurrency: s.name for s in run.results.scenarios}
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:5]]
            for line in section.splitlines() if line.startswith("| c")}
    assert rows == {names[8]: ["37.5", "0.75", "1.75"], names[16]: ["-", "-", "1.75"]}
    # judged against another SLO than the run recorded: not recomputed, so no value to show
    assert "## Goodput" not in render_report(run, resolve_slo("S1"), True)


def test_runs_table_has_the_goodput_column(imported: Path) -> None:
    frame = load_runs(imported).set_index("concurrency")
    assert str(frame["request_goodput"].dtype) == "Float64"
    assert frame.loc[8, "request_goodput"] == 0.75 and frame.loc[8, "slo_attainment"] == 0.375
    assert frame["request_goodput"].isna().to_dict() == {8: False, 16: True}


def _repeats(engine: str, goodputs: list[float], seed: int):
    scens = []
    for i, value in enumerate(goodputs):
        s = scenario(4, 100, 50, repeat=i + 1, ttft=latencies(10, 100, seed + i), tpot=latencies(10, 10, seed + 10 + i))
        scens.append(s.model_copy(update={"request_goodput": value, "slo_attainment": value / 10.0,
                                          "request_throughput": 10.0}))
    return results(engine, scens)


def test_compare_tests_goodput_across_repeats_higher_is_better() -> None:
    base = run_data(_repeats("a", [5.0, 5.1, 4.9], 0), "a")
    better = run_data(_repeats("b", [8.0, 8.1, 7.9], 100), "b")
    doc = build_comparison([base, better], CompareOptions(plots=False))
    (test,) = [t for t in doc.scenarios[0].tests if t.metric == "request_goodput"]
    assert test.test == "moderated-t" and test.verdict == "faster"
    assert test.ratio == pytest.approx(8.0 / 5.0, rel=1e-3)  # geometric means of the repeats
    assert test.baseline_value == pytest.approx(5.0, rel=1e-3) and test.candidate_value == pytest.approx(8.0, rel=1e-3)
    assert [r.request_goodput for r in doc.scenarios[0].rows] == [5.0, 5.1, 4.9, 8.0, 8.1, 7.9]
    worse = build_comparison([better, base], CompareOptions(plots=False))
    (test,) = [t for t in worse.scenarios[0].tests if t.metric == "request_goodput"]
    assert test.verdict == "slower"
    md = render_comparison(doc)
    assert "Goodput mean (req/s)" in md and "on output throughput and goodput, with the repeat as the unit" in md
    rows = [[c.strip() for c in line.split("|")[1:6]] for line in section_text(md, "goodput").splitlines()
            if line.startswith("| c4_")]
    assert rows[3] == ["c4_i100_o50_r1", "b", "80.0", "8.00", "10.00"] and len(rows) == 6


def test_compare_without_goodput_adds_no_test_and_recomputed_slo_hides_it() -> None:
    plain = [run_data(results(e, [scenario(4, 100, 50, repeat=i + 1, ttft=latencies(10, 100, i),
                                           tpot=latencies(10, 10, 10 + i)) for i in range(3)]), e) for e in "ab"]
    doc = build_comparison(plain, CompareOptions(plots=False))
    assert {t.metric for t in doc.scenarios[0].tests} == {"ttft_ms", "tpot_ms", "e2e_ms", "output_token_throughput"}
    assert "## Goodput" not in render_comparison(doc)
    runs = [run_data(_repeats("a", [5.0, 5.1, 4.9], 0), "a"), run_data(_repeats("b", [8.0, 8.1, 7.9], 100), "b")]
    doc = build_comparison(runs, CompareOptions(plots=False, slo=resolve_slo("S1")))
    assert {r.request_goodput for r in doc.scenarios[0].rows} == {None}  # judged against S2, not S1
    assert "request_goodput" not in {t.metric for t in doc.scenarios[0].tests}
    # the candidate recorded another SLO than the reference (the baseline's): its goodput is unknown
    other = _repeats("b", [8.0, 8.1, 7.9], 100).model_copy(update={"slo": resolve_slo("S1")})
    doc = build_comparison([runs[0], run_data(other, "b")], CompareOptions(plots=False))
    (test,) = [t for t in doc.scenarios[0].tests if t.metric == "request_goodput"]
    assert test.verdict == "insufficient samples" and (test.n_baseline, test.n_candidate) == (3, 0)
