"""Steady-state output throughput: output tokens per second over the window in which every concurrency slot is
busy (docs/METRICS.md, *Steady-state throughput*).

One hand-computed example runs through every place the figure appears: the computation, an imported raw run's
results.json (with its window and the requests' send times), validate, report.md and report.html, the runs table
and `collect`, a run parsed before the metric existed, and a comparison with its verdict.

The example, in units of Q = 0.25 s, two concurrency slots, four requests (send, TTFT, E2E, output tokens):

    r0: sent 0, first token 1, ends 5, 5 tokens -> tokens at 1 2 3 4 5
    r1: sent 1, first token 2, ends 4, 3 tokens -> tokens at 2 3 4
    r2: sent 4, first token 5, ends 8, 4 tokens -> tokens at 5 6 7 8
    r3: sent 5, first token 6, ends 7, 2 tokens -> tokens at 6 7

The second request sent (r1, at 1) fills the last slot; the last one is sent at 5; the first request to finish
after that is r3 (at 7): the window is [1, 7), 6 Q = 1.5 s of the run's 8 Q (first sent to last finished): 75%.
Tokens in it: r0 1..5 (5), r1 2..4 (3), r2 5 and 6 (2), r3 6 (1; the one at 7 is not in [1, 7)) = 11 tokens,
11 / 1.5 s = 7.333 tok/s; the client's whole-run rate is 14 tokens / 2 s = 7 tok/s.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.analysis.history import metric_direction
from sskj_results.analysis.metrics import fixed_slots, steady_output_throughput, window_value
from sskj_results.analysis.rundata import load_run_data, run_data
from sskj_results.analysis.runtable import load_runs
from sskj_results.analysis.slo import resolve_slo
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.metrics import metric
from sskj_results.contract.models import Window
from sskj_results.render.report import render_comparison, render_report, section_text

from .conftest import RAW
from .test_compare import results, scenario
from .test_prefill import import_legacy

S2 = resolve_slo("S2")
Q = 0.25
SENT, TTFT, E2E, TOKENS = [0, 1, 4, 5], [1, 1, 1, 1], [5, 3, 4, 2], [5, 3, 4, 2]
VALUE, START, LENGTH, SHARE = 11 / (6 * Q), 1 * Q, 6 * Q, 6 / 8
NAME = "steady_output_throughput"


def columns(**changed: Any) -> dict[str, np.ndarray]:
    base = {"start_ms": np.array(SENT) * Q * 1000, "ttft_ms": np.array(TTFT) * Q * 1000,
            "e2e_ms": np.array(E2E) * Q * 1000, "output_tokens": np.array(TOKENS, dtype=float)}
    return {**base, **{k: np.asarray(v, dtype=float) for k, v in changed.items()}}


def test_the_computation_on_the_hand_computed_example() -> None:
    found = steady_output_throughput(columns(), 2)
    assert found is not None
    assert (found.value, found.start_s, found.length_s, found.share) == (VALUE, START, LENGTH, SHARE)
    assert window_value(metric(NAME).derive or "", columns(), 2) == found
    # one slot: busy from the first send to the first finish after the last send (r3 at 7): [0, 7), the same 11
    one = steady_output_throughput(columns(), 1)
    assert one is not None and (one.start_s, one.length_s, one.share) == (0.0, 7 * Q, 7 / 8) and one.value == 11 / (7 * Q)


@pytest.mark.parametrize("why, cols, slots", [
    ("no fixed number of slots (a request rate)", columns(), None),
    ("fewer requests than slots: never all busy", columns(), 5),
    ("a request's send time unknown", columns(start_ms=[0, np.nan, 1000, 1250]), 2),
    ("a request's latency unknown", columns(e2e_ms=[1250, 750, np.nan, 500]), 2),
    ("a TTFT unknown (not streamed)", columns(ttft_ms=[np.nan] * 4), 2),
    ("no request finishes after the last one is sent: no window", columns(e2e_ms=[0, 0, 0, 0]), 2),
])
def test_unknown_never_zero(why: str, cols: dict[str, np.ndarray], slots: Any) -> None:
    assert steady_output_throughput(cols, slots) is None, why


def test_slots_are_the_concurrency_of_a_closed_loop_only() -> None:
    assert fixed_slots(8, None) == 8 and fixed_slots(8, float("inf")) == 8
    assert fixed_slots(8, 4.0) is None and fixed_slots(None, None) is None and fixed_slots(0, None) is None


def _raw_run(path: Path, scale: float = 1.0) -> None:
    """A vllm bench serve result with the example's per-request arrays (its own clock: sent from 1000 s on); every
    time times `scale`."""
    base = json.loads((RAW / "vllmbench_c8_128_32.json").read_text())
    data: dict[str, Any] = {k: v for k, v in base.items() if not k.endswith("_ms")}
    q = Q * scale
    data.update(
        num_prompts=4, max_concurrency=2, duration=8 * q, completed=4, failed=0, total_output_tokens=sum(TOKENS),
        input_lens=[128] * 4, output_lens=TOKENS, ttfts=[t * q for t in TTFT],
        itls=[[(e - t) * q / (n - 1)] * (n - 1) for t, e, n in zip(TTFT, E2E, TOKENS)],
        latencies=[e * q for e in E2E], start_times=[1000.0 + s * q for s in SENT], errors=[""] * 4,
        generated_texts=["x"] * 4, request_throughput=4 / (8 * q), output_throughput=sum(TOKENS) / (8 * q),
    )
    data.pop("queue_times", None)
    path.write_text(json.dumps(data))


def _import(tmp_path: Path, name: str = "vllm") -> Path:
    raw = tmp_path / f"raw_{name}"
    raw.mkdir()
    _raw_run(raw / "vllmbench_c2_128_5.json")
    # an sglang.bench_serving line: per-request arrays, no send times
    (raw / "vllm_0705_4_64_16.jsonl").write_text((RAW / "vllm_0705_4_64_16.jsonl").read_text())
    return import_legacy(raw, tmp_path / f"out_{name}", name)


@pytest.fixture()
def imported(tmp_path: Path) -> Path:
    return _import(tmp_path)


def test_results_json_records_the_value_its_window_and_the_send_times(imported: Path) -> None:
    by_conc = {s.concurrency: s for s in load_run(imported).scenarios}
    example = by_conc[2]
    assert example.steady_output_throughput == pytest.approx(VALUE)
    assert example.steady_output_throughput_window == Window(start_s=START, length_s=LENGTH, share=SHARE)
    assert example.output_token_throughput == pytest.approx(7.0)  # the client's whole-run rate, as it wrote it
    assert [r.start_ms for r in example.raw_requests] == [s * Q * 1000 for s in SENT]
    other = by_conc[4]  # no send times in the file: unknown, never 0
    assert other.raw_requests and all(r.start_ms is None for r in other.raw_requests)
    assert other.steady_output_throughput is None and other.steady_output_throughput_window is None
    assert CliRunner().invoke(main, ["validate", str(imported)]).exit_code == 0


def _rows(text: str) -> dict[str, list[str]]:
    section = section_text(text, f"metric:{NAME}")
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:5]]
            for line in section.splitlines() if line.startswith("| c")}


def test_report_and_html_show_the_section(imported: Path) -> None:
    run = load_run_data(imported)
    text = render_report(run, S2, False)
    section = section_text(text, f"metric:{NAME}")
    assert section.startswith("## Steady-state throughput\n") and "Higher is better." in section
    assert "|   Steady OutTok/s (tok/s) |   Window (s) |   Share of run (%) |" in section
    names = {s.concurrency: s.name for s in run.results.scenarios}
    assert _rows(text) == {names[2]: ["7.33", "1.500", "75.0"], names[4]: ["-", "-", "-"]}
    result = CliRunner().invoke(main, ["report", str(imported), "--no-plots", "--html"])
    assert result.exit_code == 0, result.output
    page = (imported / "report.html").read_text(encoding="utf-8")
    assert '<section id="steady-state-throughput"><h2>' in page and "7.33" in page and "75.0" in page


def test_a_run_parsed_before_the_metric(imported: Path) -> None:
    data = json.loads((imported / "results.json").read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        s.pop(NAME), s.pop(f"{NAME}_window")
    (imported / "results.json").write_text(json.dumps(data), encoding="utf-8")
    # its raw_requests recorded the send times: computed from them, with the scenario's concurrency
    assert list(_rows(render_report(load_run_data(imported), S2, False)).values()) == [
        ["7.33", "1.500", "75.0"], ["-", "-", "-"]]
    # parsed before the send times were recorded: unknown, no section at all (never a row of zeros)
    for s in data["scenarios"]:
        for r in s["raw_requests"]:
            r.pop("start_ms")
    (imported / "results.json").write_text(json.dumps(data), encoding="utf-8")
    text = render_report(load_run_data(imported), S2, False)
    assert "## Steady-state throughput" not in text


def test_runs_table_and_collect_have_the_columns(imported: Path, tmp_path: Path) -> None:
    frame = load_runs(imported).set_index("concurrency")
    assert str(frame[NAME].dtype) == "Float64"
    assert frame.loc[2, NAME] == pytest.approx(VALUE)
    assert frame.loc[2, f"{NAME}_window_length_s"] == pytest.approx(LENGTH)
    assert frame.loc[2, f"{NAME}_window_share"] == pytest.approx(SHARE)
    assert frame[NAME].isna().to_dict() == {2: False, 4: True}
    out = tmp_path / "table.csv"
    result = CliRunner().invoke(main, ["collect", str(imported), "--out", str(out)])
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8", newline="") as f:
        shares = sorted(row[f"{NAME}_window_share"] for row in csv.DictReader(f))
    assert shares == ["", "0.75"]
    assert metric_direction(NAME) == "higher"  # history follows its column, higher is better


def test_compare_gives_a_verdict_across_repeats_higher_is_better() -> None:
    def rep(engine: str, values: list[float]) -> Any:
        window = Window(start_s=START, length_s=LENGTH, share=SHARE)
        return results(engine, [scenario(2, 128, 5, repeat=i + 1, throughput=7.0).model_copy(
            update={NAME: v, f"{NAME}_window": window}) for i, v in enumerate(values)])

    base = rep("a", [VALUE, VALUE * 1.01, VALUE * 0.99])
    faster = rep("b", [2 * VALUE, 2 * VALUE * 1.01, 2 * VALUE * 0.99])
    doc = build_comparison([run_data(base, "a"), run_data(faster, "b")], CompareOptions(plots=False))
    (test,) = [t for t in doc.scenarios[0].tests if t.metric == NAME]
    assert test.test == "moderated-t" and test.verdict == "faster" and test.ratio == pytest.approx(2.0)
    assert (test.n_baseline, test.n_candidate) == (3, 3)
    (back,) = [t for t in build_comparison([run_data(faster, "b"), run_data(base, "a")],
                                           CompareOptions(plots=False)).scenarios[0].tests if t.metric == NAME]
    assert back.verdict == "slower"
    md = render_comparison(doc)
    verdict_lines = [line for line in md.splitlines() if metric(NAME).label in line]
    assert len(verdict_lines) == 1 and "**faster**" in verdict_lines[0]
    assert f"and each repeat's output throughput and {metric(NAME).words}, is one sample" in md
    section = section_text(md, f"metric:{NAME}")
    assert [[c.strip() for c in line.split("|")[2:6]] for line in section.splitlines() if line.startswith("| c2")] == [
        ["a", "7.33", "1.500", "75.0"], ["a", "7.41", "1.500", "75.0"], ["a", "7.26", "1.500", "75.0"],
        ["b", "14.67", "1.500", "75.0"], ["b", "14.81", "1.500", "75.0"], ["b", "14.52", "1.500", "75.0"]]


@pytest.mark.parametrize("start_times, recorded", [
    ([1000.0, None, 1001.0, 1001.25], [0.0, None, 1000.0, 1250.0]),  # a null: that request's send time unknown
    ([1000.0, "x", 1001.0, 1001.25], [0.0, None, 1000.0, 1250.0]),  # no number: unknown too
    ([1000.0, 1000.25], [None] * 4),  # another length than the requests': not read
    ("1000", [None] * 4),  # not a list: not read
])
def test_send_times_the_file_cannot_give_are_unknown_and_the_run_is_imported(
        tmp_path: Path, start_times: Any, recorded: list[Any]) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    _raw_run(raw / "vllmbench_c2_128_5.json")
    data = json.loads((raw / "vllmbench_c2_128_5.json").read_text())
    data["start_times"] = start_times
    (raw / "vllmbench_c2_128_5.json").write_text(json.dumps(data))
    (scenario_,) = load_run(import_legacy(raw, tmp_path / "out", "vllm")).scenarios
    assert [r.start_ms for r in scenario_.raw_requests] == recorded
    assert scenario_.steady_output_throughput is None and scenario_.steady_output_throughput_window is None
    assert scenario_.output_token_throughput == pytest.approx(7.0)  # the rest of the run as before
