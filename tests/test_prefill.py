"""Prefill rate: input tokens / TTFT per request, tok/s, higher is better (docs/METRICS.md, *Prefill rate*).

One hand-computed example runs through every place the prefill rate appears:
the computation, an imported raw run's results.json, validate, report.md and
report.html, the runs table, and a comparison with its verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.analysis.metrics import derived_values, prefill_rate
from sskj_results.analysis.rundata import load_run_data
from sskj_results.analysis.runtable import load_runs
from sskj_results.analysis.slo import resolve_slo
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.metrics import PER_REQUEST_COMPARED, and_words, metric
from sskj_results.render.report import render_comparison, render_report, section_text

from .conftest import RAW

S2 = resolve_slo("S2")
# Per request: success, input tokens, TTFT (s), output tokens -> prefill rate (tok/s) or why it has none
EXAMPLE = [
    (True, 1000, 0.5, 8, "2000 tok/s"),
    (True, 1000, 0.25, 8, "4000 tok/s"),
    (True, 1000, 2.0, 8, "500 tok/s"),
    (True, 1000, 1.0, 8, "1000 tok/s"),
    (False, 1000, 0.0, 0, "failed: none"),
    (True, 1000, 0.1, 0, "success with 0 output tokens: none"),
]
RATES = np.array([2000.0, 4000.0, 500.0, 1000.0])  # by hand: 1000 tokens over each TTFT
TOTAL = len(EXAMPLE)


def test_the_computation_on_the_hand_computed_example() -> None:
    columns = {
        "input_tokens": np.array([r[1] for r in EXAMPLE], dtype=float),
        "output_tokens": np.array([r[3] for r in EXAMPLE], dtype=float),
        "ttft_ms": np.array([r[2] * 1000 for r in EXAMPLE]),
    }
    ok = np.array([r[0] for r in EXAMPLE])
    successful = {k: v[ok] for k, v in columns.items()}
    assert prefill_rate(successful).tolist() == RATES.tolist()
    assert derived_values(metric("prefill_tok_s").derive or "", successful).tolist() == RATES.tolist()
    unknown = dict(successful, input_tokens=np.array([np.nan, 1000.0, 1000.0, np.nan, 1000.0]))
    assert prefill_rate(unknown).tolist() == [4000.0, 500.0]  # an unknown input length leaves its request out
    zero = dict(successful, ttft_ms=np.array([0.0, 250.0, np.nan, 1000.0, 100.0]))
    assert prefill_rate(zero).tolist() == [4000.0, 1000.0]  # no rate without a positive, known TTFT
    assert metric("prefill_tok_s").higher_is_better and metric("prefill_tok_s").origin == "sskj"


def _raw_run(path: Path, scale: float = 1.0) -> None:
    """A vllm bench serve result with the example's per-request arrays; TTFTs times scale."""
    base = json.loads((RAW / "vllmbench_c8_128_32.json").read_text())
    data: dict[str, Any] = {k: v for k, v in base.items() if not k.endswith("_ms")}
    ok = [r[0] for r in EXAMPLE]
    data.update(
        num_prompts=TOTAL, max_concurrency=8, duration=4.0, completed=sum(ok), failed=TOTAL - sum(ok),
        input_lens=[r[1] for r in EXAMPLE], output_lens=[r[3] for r in EXAMPLE],
        ttfts=[r[2] * scale for r in EXAMPLE], itls=[[0.01] * (r[3] - 1) if r[3] > 1 else [] for r in EXAMPLE],
        latencies=[r[2] * scale + 0.01 * max(r[3] - 1, 0) for r in EXAMPLE],
        errors=["" if r[0] else "Bad Request" for r in EXAMPLE], generated_texts=["x"] * TOTAL,
        start_times=[float(i) for i in range(TOTAL)], request_throughput=sum(ok) / 4.0,
    )
    data.pop("queue_times", None)
    path.write_text(json.dumps(data))


def _import(tmp_path: Path, name: str, scale: float = 1.0, summary_only: bool = True) -> Path:
    raw = tmp_path / f"raw_{name}"
    raw.mkdir()
    _raw_run(raw / "vllmbench_c8_1000_8.json", scale)
    if summary_only:
        summary = {k: v for k, v in json.loads((raw / "vllmbench_c8_1000_8.json").read_text()).items()
                   if k not in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "errors",
                                "generated_texts", "start_times")}
        summary.update(mean_ttft_ms=100.0, p99_ttft_ms=200.0, mean_tpot_ms=10.0, max_concurrency=16)
        (raw / "vllmbench_c16_1000_8.json").write_text(json.dumps(summary))
    return import_legacy(raw, tmp_path / f"out_{name}", name)


def import_legacy(raw: Path, out: Path, engine: str) -> Path:
    """The one run directory `import-legacy` makes of a raw directory (chip cpu, model m)."""
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(out), "--chip", "cpu",
                                       "--engine", engine, "--model", "m"])
    assert result.exit_code == 0, result.output
    (run,) = sorted(out.iterdir())
    return run


@pytest.fixture()
def imported(tmp_path: Path) -> Path:
    return _import(tmp_path, "vllm")


def test_results_json_records_the_distribution(imported: Path) -> None:
    by_conc = {s.concurrency: s for s in load_run(imported).scenarios}
    rate = by_conc[8].prefill_tok_s
    assert rate is not None and rate.count == 4
    assert rate.mean == pytest.approx(float(np.mean(RATES)))
    assert rate.p50 == pytest.approx(float(np.percentile(RATES, 50)))  # 1500 tok/s
    assert rate.p99 == pytest.approx(float(np.percentile(RATES, 99)))
    assert rate.std == pytest.approx(float(np.std(RATES)))
    assert by_conc[16].prefill_tok_s is None  # no per-request data: unknown, never 0
    assert CliRunner().invoke(main, ["validate", str(imported)]).exit_code == 0


def test_report_and_html_show_the_section(imported: Path) -> None:
    run = load_run_data(imported)
    text = render_report(run, S2, False)
    section = section_text(text, "metric:prefill_tok_s")
    assert section.startswith("## Prefill rate\n") and "Higher is better." in section
    assert "|   Requests |   Mean (tok/s) |   P50 (tok/s) |   P90 (tok/s) |   P99 (tok/s) |" in section
    names = {s.concurrency: s.name for s in run.results.scenarios}
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:5]]
            for line in section.splitlines() if line.startswith("| c")}
    assert rows == {names[8]: ["4", "1875.00", "1500.00"], names[16]: ["-", "-", "-"]}
    result = CliRunner().invoke(main, ["report", str(imported), "--no-plots", "--html"])
    assert result.exit_code == 0, result.output
    page = (imported / "report.html").read_text(encoding="utf-8")
    assert '<section id="prefill-rate"><h2>' in page and "1875.00" in page


def test_a_run_parsed_before_the_metric_gets_it_from_its_raw_requests(imported: Path) -> None:
    data = json.loads((imported / "results.json").read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        s.pop("prefill_tok_s")
    (imported / "results.json").write_text(json.dumps(data), encoding="utf-8")
    text = render_report(load_run_data(imported), S2, False)
    rows = [[c.strip() for c in line.split("|")[2:5]] for line in section_text(text, "metric:prefill_tok_s").splitlines()
            if line.startswith("| c8_")]
    assert rows == [["4", "1875.00", "1500.00"]]


def test_runs_table_has_the_columns(imported: Path) -> None:
    frame = load_runs(imported).set_index("concurrency")
    assert str(frame["prefill_tok_s_mean"].dtype) == "Float64"
    assert frame.loc[8, "prefill_tok_s_p50"] == pytest.approx(1500.0)
    assert frame.loc[8, "prefill_tok_s_count"] == 4
    assert frame["prefill_tok_s_mean"].isna().to_dict() == {8: False, 16: True}


def test_compare_gives_a_verdict_higher_is_better(tmp_path: Path) -> None:
    # 200 requests a side: the example's rates, the candidate's TTFTs twice as long (half the rate)
    global EXAMPLE, TOTAL
    saved = EXAMPLE, TOTAL
    rng = np.random.default_rng(0)
    EXAMPLE = [(True, 1000, float(t), 8, "") for t in rng.uniform(0.2, 0.4, 200)]
    TOTAL = len(EXAMPLE)
    try:
        fast, slow = _import(tmp_path, "sglang", 1.0, False), _import(tmp_path, "vllm", 2.0, False)
    finally:
        EXAMPLE, TOTAL = saved
    runs = [load_run_data(fast), load_run_data(slow)]
    doc = build_comparison(runs, CompareOptions(plots=False))
    (test,) = [t for t in doc.scenarios[0].tests if t.metric == "prefill_tok_s"]
    assert test.test == "mann-whitney-u" and test.verdict == "slower"
    assert test.ratio == pytest.approx(0.5) and test.n_baseline == test.n_candidate == 200
    (ttft,) = [t for t in doc.scenarios[0].tests if t.metric == "ttft_ms"]
    assert ttft.verdict == "slower" and ttft.ratio == pytest.approx(2.0)
    (back,) = [t for t in build_comparison(runs[::-1], CompareOptions(plots=False)).scenarios[0].tests
               if t.metric == "prefill_tok_s"]
    assert back.verdict == "faster"
    md = render_comparison(doc)
    verdict_lines = [line for line in md.splitlines() if "Prefill median (tok/s)" in line]
    assert len(verdict_lines) == 1 and "**slower**" in verdict_lines[0]
    # the tested metrics in the registry's reading order, named as the registry names them
    tested = {t.metric for t in doc.scenarios[0].tests}
    words = and_words([metric(n).words for n in PER_REQUEST_COMPARED if n in tested])
    assert "prefill rate" in words and f"per-request {words} of successful requests" in md
    assert "for the prefill rate (higher is better) a ratio above 1 is faster" in md
    section = section_text(md, "metric:prefill_tok_s")
    assert [line.split("|")[2].strip() for line in section.splitlines() if line.startswith("| c8")] == ["sglang", "vllm"]
