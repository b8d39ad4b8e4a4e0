"""history: series per setup over time, the change-point rule, history.md, --fail-on-regression."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.history import Rule, history, metric_direction, order_key
from sskj_results.analysis.runtable import COLUMNS, to_frame
from sskj_results.cli import main
from sskj_results.contract.errors import UsageError
from sskj_results.render.history import failure_lines, history_markdown


def frame(rows: list[dict[str, Any]]):
    return to_frame({c.name: [r.get(c.name) for r in rows] for c in COLUMNS})


def run_rows(i: int, version: str, values: dict[tuple[int, str], float], *, stamp: Optional[str] = None,
             precision: str = "second", repeats: int = 1, engine: str = "sglang",
             image: Optional[str] = None) -> list[dict[str, Any]]:
    """One run: a row per (concurrency, metric value) shape and repeat."""
    day = datetime(2026, 1, 1, 12, tzinfo=timezone.utc) + timedelta(days=i)
    base = {"results_file": f"/runs/{engine}/r{i:03d}/results.json", "run_dir": f"/runs/{engine}/r{i:03d}",
            "run_id": day.strftime("%Y%m%d-%H%M%S"), "timestamp": stamp or day.isoformat(),
            "timestamp_precision": precision, "experiment": "e", "model": "M", "chip": "NVIDIA H200",
            "engine": engine, "tp": 8, "engine_version": version, "image": image or f"img:{version}"}
    rows = []
    shapes = sorted({c for c, _ in values})
    for conc in shapes:
        for r in range(repeats):
            row = dict(base, concurrency=conc, input_len=1024, output_len=256, repeat=r + 1,
                       scenario=f"c{conc}_i1024_o256" + (f"_r{r + 1}" if r else ""))
            for (c, metric), v in values.items():
                if c == conc:
                    row[metric] = v * (1 + 0.004 * r)
            rows.append(row)
    return rows


def planted(n: int = 16, step_at: int = 9, outlier: int = 4, seed: int = 7, repeats: int = 1):
    """TTFT P95 at c64 steps +15 % at run `step_at` (engine version 0.5.1 from there on); run `outlier` is one
    +45 % outlier; everything else is a few percent of noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        version = "0.5.0" if i < step_at else "0.5.1"
        noise = lambda: 1 + rng.uniform(-0.03, 0.03)  # noqa: E731
        ttft = 200.0 * noise() * (1.15 if i >= step_at else 1.0) * (1.45 if i == outlier else 1.0)
        rows += run_rows(i, version, {(64, "ttft_ms_p95"): ttft, (64, "tpot_ms_mean"): 20.0 * noise(),
                                      (64, "output_token_throughput"): 3000.0 * noise(),
                                      (8, "ttft_ms_p95"): 50.0 * noise(), (8, "output_token_throughput"): 900 * noise()},
                         repeats=repeats)
    return frame(rows)


@pytest.mark.parametrize("seed", [1, 7, 11, 23])
def test_planted_step_is_found_at_its_run_with_the_version_named(seed: int) -> None:
    hist = history(planted(seed=seed))
    changes = [(s, c) for s in hist.series for c in s.changes]
    assert [(s.metric, s.shape[2], c.index, c.kind) for s, c in changes] == [("ttft_ms_p95", 64, 9, "regression")]
    series, change = changes[0]
    assert series.points[change.index].run_id == "20260110-120000"
    assert ("engine_version", "0.5.0", "0.5.1") in change.differences
    assert ("image", "img:0.5.0", "img:0.5.1") in change.differences
    assert 1.08 < change.ratio < 1.22 and change.ci_low is not None and change.ci_low > 1.0
    assert change.p is not None and change.p < 0.05
    lines = failure_lines(hist)
    assert len(lines) == 1 and "ttft_ms_p95 +" in lines[0] and "engine version 0.5.0 → 0.5.1" in lines[0]


def test_repeats_count_as_samples_and_the_step_is_still_found() -> None:
    hist = history(planted(repeats=3))
    found = [(s.metric, s.shape[2], c.index, c.kind) for s in hist.series for c in s.changes]
    assert found == [("ttft_ms_p95", 64, 9, "regression")]
    change = next(c for s in hist.series for c in s.changes)
    assert change.n_before >= 3 * 2 and change.n_after >= 3 * 2


def test_noise_and_one_outlier_alone_are_no_change() -> None:
    hist = history(planted(step_at=99))
    assert [c for s in hist.series for c in s.changes] == []
    assert "No step change found." in history_markdown(hist)


def test_a_last_outlier_run_is_no_change_and_an_improvement_is_not_a_regression() -> None:
    rows, rng = [], np.random.default_rng(5)
    for i in range(14):
        tput = 1000.0 * rng.uniform(0.98, 1.02) * (1.3 if i >= 6 else 1.0) * (0.5 if i == 13 else 1.0)
        rows += run_rows(i, "a" if i < 6 else "b", {(64, "output_token_throughput"): tput})
    hist = history(frame(rows), ["output_token_throughput"])
    (series,) = hist.series
    assert [(c.index, c.kind) for c in series.changes] == [(6, "improvement"), (13, "not confirmed")]
    assert series.changes[1].reason == "the last run only: a step or a single-run outlier, the next run tells"
    assert series.outliers == [] and failure_lines(hist) == []


def test_too_few_runs_after_a_step_is_not_confirmed_insufficient_samples() -> None:
    rows = []
    for i in range(5):
        rows += run_rows(i, "a" if i < 2 else "b", {(64, "ttft_ms_p95"): 100.0 * (1.01 if i % 2 else 1) * (1.5 if i >= 2 else 1)})
    hist = history(frame(rows), ["ttft_ms_p95"])
    (series,) = hist.series
    assert [c.kind for c in series.changes] == ["not confirmed"]
    assert "smallest reachable p-value" in (series.changes[0].reason or "")
    assert failure_lines(hist) == []


def test_setups_are_apart_and_one_run_setups_have_no_change() -> None:
    rows = run_rows(0, "1", {(64, "ttft_ms_p95"): 100.0}, engine="vllm")
    for i in range(4):
        rows += run_rows(i + 1, "1", {(64, "ttft_ms_p95"): 300.0 + i})
    hist = history(frame(rows), ["ttft_ms_p95"])
    assert sorted((s.setup_value("engine"), len(s.points)) for s in hist.series) == [("sglang", 4), ("vllm", 1)]
    assert all(not s.changes for s in hist.series)


def test_order_by_time_as_far_as_known() -> None:
    rows = (run_rows(1, "late", {(64, "ttft_ms_p95"): 1.0}, stamp="2026-05-01T08:00:00+08:00")
            + run_rows(2, "early", {(64, "ttft_ms_p95"): 1.0}, stamp="2026-04-30T23:00:00+00:00")
            + run_rows(3, "day", {(64, "ttft_ms_p95"): 1.0}, stamp="2026-04-30", precision="day")
            + run_rows(4, "noyear", {(64, "ttft_ms_p95"): 1.0}, stamp="--12-31", precision="month-day")
            + run_rows(5, "nodate", {(64, "ttft_ms_p95"): 1.0}, stamp="", precision=None))
    rows[-1]["timestamp"] = None
    (series,) = history(frame(rows), ["ttft_ms_p95"]).series
    # 2026-05-01T08:00+08:00 is 2026-05-01T00:00Z: after 2026-04-30T23:00Z
    assert [p.get("engine_version") for p in series.points] == ["noyear", "day", "early", "late", "nodate"]
    assert [p.order_note is not None for p in series.points] == [True, True, False, False, True]
    assert order_key("--03-04", "month-day", "x", "y")[1] == "month-day"


def test_directions_and_unknown_metrics() -> None:
    assert metric_direction("ttft_ms_p95") == "lower" and metric_direction("output_token_throughput") == "higher"
    with pytest.raises(UsageError, match="not a metric history follows"):
        history(planted(), ["success"])
    with pytest.raises(UsageError, match="alpha"):
        Rule(alpha=0)


def test_cli_fail_on_regression_on_a_collected_table(tmp_path: Path) -> None:
    table = tmp_path / "runs.parquet"
    planted().to_parquet(table)
    result = CliRunner().invoke(main, ["history", str(table), "--out", str(tmp_path / "h"), "--fail-on-regression"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"wrote {tmp_path / 'h' / 'history.md'}: 16 run(s), 5 series, 1 regression(s)")
    assert [ln for ln in lines if ln.startswith("regression: ttft_ms_p95")] == [lines[1]]
    assert lines[-1] == "error: 1 regression(s) found (--fail-on-regression)"
    text = (tmp_path / "h" / "history.md").read_text()
    assert "| regression | ttft_ms_p95 |" in text and "engine version 0.5.0 → 0.5.1" in text


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "runs.csv"
    bad.write_text("a,b\n1,2\n")
    result = CliRunner().invoke(main, ["history", str(bad), "--out", str(tmp_path / "h")])
    assert result.exit_code == 1
    assert result.output == (f"error: {bad}: no results_file/scenario columns: not a table written by `sskj-results "
                             "collect`; give run directories or collect them again\n")
    result = CliRunner().invoke(main, ["history", str(tmp_path / "nothing"), "--out", str(tmp_path / "h")])
    assert result.exit_code == 1 and result.output.count("\n") == 1 and "no such file or directory" in result.output
    result = CliRunner().invoke(main, ["history", str(bad), "--metric", "scenario"])
    assert result.exit_code != 0 and "\n" == result.output[-1] and result.output.count("\n") == 1


def test_imported_public_corpora_no_crash_and_no_change_on_one_run_setups(tmp_path: Path, shared_raw: Path) -> None:
    runs = tmp_path / "runs"
    result = CliRunner().invoke(main, ["import-legacy", str(shared_raw), "--out", str(runs)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["history", str(runs), "--out", str(tmp_path / "h"), "--html",
                                       "--fail-on-regression"])
    assert result.exit_code == 0, result.output
    from sskj_results.analysis.runtable import load_runs

    hist = history(load_runs([runs]))
    assert hist.series
    assert all(not s.changes for s in hist.series if len(s.points) == 1)
    assert (tmp_path / "h" / "history.html").stat().st_size > 1_000_000


def test_the_page_draws_at_most_max_drawn_points_a_line_and_marks_changes_at_their_run() -> None:
    from sskj_results.render.history import MAX_DRAWN, figure_data

    rows, rng = [], np.random.default_rng(3)
    for i in range(500):
        rows += run_rows(i, "a" if i < 300 else "b",
                         {(64, "ttft_ms_p95"): 100.0 * rng.uniform(0.98, 1.02) * (1.2 if i >= 300 else 1.0),
                          (1, "ttft_ms_p95"): 5.0 * rng.uniform(0.98, 1.02)})
    hist = history(frame(rows), ["ttft_ms_p95"])
    data = figure_data(hist)
    (fig,) = data["figures"]
    assert fig["n"] == 500 and [len(line["x"]) for line in fig["lines"]] == [MAX_DRAWN, MAX_DRAWN]
    assert [line["n"] for line in fig["lines"]] == [500, 500]
    c64 = fig["lines"][1]
    ys = np.asarray(c64["y"]) / 10.0 ** -c64["e"]  # as assets/history.js reads them
    assert c64["e"] == -2 and ys.tolist() == [float(f"{y:.4g}") for y in ys]  # 4 significant digits, exact
    # each drawn point is the median of its group, at its middle run: before the step ~100, after ~120
    assert all(95 < y < 105 for x, y in zip(c64["x"], ys) if x < 295)
    assert all(114 < y < 126 for x, y in zip(c64["x"], ys) if x > 305)
    text = data["text"]
    assert [(m[1], text[m[3]]) for m in fig["marks"]] == [(300, "regression")]
    assert fig["ticks"] == [[0, 300], ["a", "b"]] and fig["ylog"] is not None  # 5 ms beside 100 ms: a log axis
    # the hover text of exactly the drawn runs, each once: run 300 (the change) says its version
    shown, rows = fig["hover"]
    assert shown == sorted({x for line in fig["lines"] for x in line["x"]} | {300})
    assert len(data["runs"]["id"]) == len(shown) and text[data["runs"]["version"][rows[shown.index(300)]]] == "b"
    assert text[data["runs"]["id"][rows[shown.index(300)]]] == hist.series[0].runs[300].run_id


def test_a_bad_timestamp_in_a_table_is_one_line(tmp_path: Path) -> None:
    table = frame(run_rows(0, "a", {(64, "ttft_ms_p95"): 1.0}, stamp="2026-13-01T00:00:00+00:00"))
    table.to_parquet(tmp_path / "t.parquet")
    result = CliRunner().invoke(main, ["history", str(tmp_path / "t.parquet"), "--out", str(tmp_path / "h")])
    assert result.exit_code == 1
    assert result.output == ("error: /runs/sglang/r000/results.json: timestamp '2026-13-01T00:00:00+00:00' is not "
                             "an ISO-8601 time, date or --MM-DD; correct it (or collect the table again)\n")
    assert not (tmp_path / "h").exists()


def test_collected_csv_and_parquet_give_the_history_of_the_run_directories(tmp_path: Path, shared_raw: Path) -> None:
    from sskj_results.contract.escape import csv_text, csv_text_read

    assert csv_text_read(csv_text("--07-05")) == "--07-05" and csv_text_read("'x") == "'x"
    runs = tmp_path / "runs"
    assert CliRunner().invoke(main, ["import-legacy", str(shared_raw), "--out", str(runs)]).exit_code == 0
    texts = []
    for source in ("runs", "t.csv", "t.parquet"):
        if source != "runs":
            done = CliRunner().invoke(main, ["collect", str(runs), "--out", str(tmp_path / source), "--no-cache"])
            assert done.exit_code == 0, done.output
        out = tmp_path / f"h_{source}"
        done = CliRunner().invoke(main, ["history", str(tmp_path / source), "--out", str(out)])
        assert done.exit_code == 0, done.output
        texts.append((out / "history.md").read_text())
    assert "--07-05" in texts[0] and "'--07-05" not in texts[1]
    assert texts[0] == texts[1] == texts[2]


def test_a_metric_no_run_recorded_gives_no_series_and_says_so(tmp_path: Path) -> None:
    table = tmp_path / "t.parquet"
    planted(n=4).to_parquet(table)
    result = CliRunner().invoke(main, ["history", str(table), "--metric", "itl_ms_p99_9", "--metric", "ttft_ms_p95",
                                       "--out", str(tmp_path / "h"), "--html"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"wrote {tmp_path / 'h' / 'history.md'}, {tmp_path / 'h' / 'history.html'}: "
                                    "4 run(s), 2 series, 0 regression(s)")
    text = (tmp_path / "h" / "history.md").read_text()
    assert "metrics: itl_ms_p99_9, ttft_ms_p95" in text and "| itl_ms_p99_9 |" not in text
    assert "- Recorded by no run (unknown, no series): itl_ms_p99_9." in text


def test_the_benchmark_keeps_working(tmp_path: Path) -> None:
    """benchmarks/bench_history.py at a tiny size (no time asserted: docs/PERFORMANCE.md has the figures)."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_history.py"), "--runs", "30",
                           "--scenarios", "2", "--setups", "1", "--json", str(tmp_path / "b.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["rows"] == 60 and result["html_bytes"] > 1_000_000 and "30 run(s), 6 series" in result["summary"]
