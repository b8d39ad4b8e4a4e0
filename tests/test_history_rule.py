"""history's change-point rule, gate by gate and boundary by boundary (docs/HISTORY.md, The change-point rule).

Each test isolates one gate (the others switched off through the Rule where they would decide first) and asserts
what the gate decides, so that removing the gate or moving its boundary turns the test red.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.changepoint import last_apart, outlier_mask
from sskj_results.analysis.history import Rule, Run, Series, detect, history
from sskj_results.cli import main
from sskj_results.render.history import history_markdown

from .test_history import frame, run_rows


def series(values: Sequence[float], metric: str = "ttft_ms_p95",
           disqualified: Optional[Sequence[bool]] = None) -> Series:
    v = np.asarray(values, dtype=float)
    runs = [Run(f"/r{i}", f"r{i:02d}", None, "second", (f"v{i}",) + (None,) * 7, i) for i in range(v.size)]
    return Series((), (), metric, runs, v, v.copy(), np.arange(v.size + 1), np.arange(v.size),
                  disqualified=None if disqualified is None else np.asarray(disqualified, dtype=bool))


def found(values: Sequence[float], rule: Rule = Rule(), **kw: object) -> Series:
    s = series(values, **kw)  # type: ignore[arg-type]
    detect(s, rule)
    return s


def kinds(s: Series) -> list[tuple[int, str]]:
    return [(c.index, c.kind) for c in s.changes]


NIGHTS = [100.0, 101.5, 99.0, 100.8, 98.9, 100.3, 99.6, 101.1]  # +-1.5 %


# --------------------------------------------------------------------------- the case of issue 44


def nightly(outlier: int, seed: int) -> list[dict[str, object]]:
    """Ten nightly runs, +-3 % noise, run `outlier` +40 % TTFT, then +15 % TTFT from engine 0.5.22 (run 5) on."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(10):
        ttft = 200.0 * (1 + rng.uniform(-0.03, 0.03)) * (1.40 if i == outlier else 1.0) * (1.15 if i >= 5 else 1.0)
        rows += run_rows(i, f"0.5.{17 + i}", {(64, "ttft_ms_p95"): ttft})
    return rows


@pytest.mark.parametrize("outlier", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_step_after_a_single_bad_night_is_found_at_its_run_and_the_night_is_an_outlier(outlier: int,
                                                                                       seed: int) -> None:
    hist = history(frame(nightly(outlier, seed)), ["ttft_ms_p95"])
    (s,) = hist.series
    assert kinds(s) == [(5, "regression")]
    change = s.changes[0]
    assert ("engine_version", "0.5.21", "0.5.22") in change.differences
    assert 1.10 < change.ratio < 1.20 and change.p is not None and change.p < 0.05
    assert [o.index for o in s.outliers] == [outlier] and 1.30 < s.outliers[0].ratio < 1.50
    assert not s.used[outlier] and s.used.sum() == 9


def test_the_nightly_case_fails_the_nightly_job_naming_run_size_and_version(tmp_path: Path) -> None:
    table = tmp_path / "runs.parquet"
    frame(nightly(2, 7)).to_parquet(table)
    result = CliRunner().invoke(main, ["history", str(table), "--metric", "ttft_ms_p95", "--out", str(tmp_path / "h"),
                                       "--fail-on-regression"])
    assert result.exit_code == 1, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("regression:")]
    assert line.startswith("regression: ttft_ms_p95 +1")  # +1x.x %
    assert "at run 20260106-120000" in line and "engine version 0.5.21 → 0.5.22" in line
    assert result.output.splitlines()[-1] == "error: 1 regression(s) found (--fail-on-regression)"
    text = (tmp_path / "h" / "history.md").read_text()
    outliers = text.split("## Outliers")[1].split("##")[0]
    (row,) = [ln for ln in outliers.splitlines() if ln.startswith("| ttft_ms_p95 ")]
    assert "20260103-120000" in row and "| 0.5.19 " in row and "+4" in row  # +40 % over the runs before


# --------------------------------------------------------------------------- each gate


def test_outlier_gate_a_single_run_apart_is_set_aside_and_reported() -> None:
    # without the outlier set aside the +40 % run sits in the window before the step: 4 of 5 after below it
    values = [100.0, 101.0, 140.0, 99.5, 100.5, 115.0, 116.0, 114.5, 115.5, 116.5]
    s = found(values)
    assert kinds(s) == [(5, "regression")] and [o.index for o in s.outliers] == [2]
    kept = found(values, Rule(outlier_factor=1e9, min_change=1.0))  # nothing is an outlier above +100 %
    assert kept.outliers == []


def test_outlier_boundary_both_neighbourhoods_must_stand_apart() -> None:
    y = np.log([100.0, 100.0, 100.0, 120.0, 100.0, 100.0, 100.0])
    assert outlier_mask(y, 0.1).tolist() == [False, False, False, True, False, False, False]
    step = np.log([100.0, 100.0, 100.0, 120.0, 120.0, 120.0, 120.0])  # the first run of a step is no outlier
    assert not outlier_mask(step, 0.1).any()
    at_limit = np.log([100.0, 100.0, 100.0, 110.0, 100.0, 100.0, 100.0])
    limit = float(at_limit[3] - at_limit[2])  # exactly the distance to both neighbourhoods: not beyond it
    assert not outlier_mask(at_limit, limit).any() and outlier_mask(at_limit, np.nextafter(limit, 0))[3]


def test_two_bad_nights_are_two_outliers_three_are_no_single_run_outlier() -> None:
    assert [o.index for o in found(NIGHTS[:5] + [140.0, 141.0] + NIGHTS).outliers] == [5, 6]
    assert found(NIGHTS[:5] + [140.0, 141.0, 139.0] + NIGHTS).outliers == []


def test_last_run_gate_a_last_run_apart_is_not_confirmed_until_the_next_run() -> None:
    s = found(NIGHTS + [130.0])
    assert kinds(s) == [(8, "not confirmed")]
    assert s.changes[0].reason == "the last run only: a step or a single-run outlier, the next run tells"
    assert found(NIGHTS + [130.0, 100.5]).changes == []  # the next run came back: an outlier
    assert [o.index for o in found(NIGHTS + [130.0, 100.5]).outliers] == [8]
    assert last_apart(np.log([100.0, 100.0, 120.0, 120.0]), 0.1) is False  # two runs up: a step, not apart


def test_persistence_boundary_two_runs_after_are_enough_one_is_not() -> None:
    # 8 runs before and 2 after: the smallest reachable Mann-Whitney p is 2 / 45 < 0.05
    assert kinds(found(NIGHTS + [115.0, 116.0])) == [(8, "regression")]
    assert found(NIGHTS + [115.0, 116.0], Rule(persist=3)).changes == []


def test_min_before_boundary_two_runs_before_are_enough_for_a_candidate() -> None:
    values = [100.0, 101.0, 115.0, 116.0, 114.5, 115.5, 116.5, 115.2, 114.8, 115.9]
    assert kinds(found(values)) == [(2, "regression")]  # 2 vs 8 runs: the smallest reachable p is 2 / 45
    assert found(values, Rule(min_before=3)).changes == []


def test_significance_gate_a_shift_mann_whitney_does_not_confirm_is_not_a_change() -> None:
    # 4 runs either side, one after below one before: U = 15 of 16, p = 4 / 70 = 0.057
    values = [100.0, 101.0, 99.0, 103.0, 108.0, 102.0, 109.0, 107.5]
    s = found(values, Rule(noise_factor=0.0))
    assert kinds(s)[0] == (4, "not confirmed") and not s.confirmed
    assert s.changes[0].p == pytest.approx(4 / 70) and "not significant" in (s.changes[0].reason or "")
    assert kinds(found(values, Rule(noise_factor=0.0, alpha=0.06)))[0] == (4, "regression")


def test_significance_gate_samples_that_cannot_reach_alpha_are_not_a_change() -> None:
    s = found([100.0, 101.0, 99.5, 130.0, 131.0, 129.5], Rule(min_before=3))
    assert kinds(s) == [(3, "not confirmed")]  # 3 vs 3: the smallest reachable p is 0.1
    assert "smallest reachable p-value is 0.1" in (s.changes[0].reason or "")


def test_noise_gate_a_shift_within_the_noise_of_the_runs_either_side_is_no_candidate() -> None:
    values = [100.0, 110.0, 92.0, 106.0, 95.0, 104.0, 112.0, 101.0, 118.0, 104.0, 114.0, 107.0]
    s = found(values)
    assert s.changes == []
    loose = found(values, Rule(noise_factor=1.0))
    assert [c.index for c in loose.changes][:1] == [6]


def test_noise_is_estimated_without_the_step_it_is_judged_against() -> None:
    # a 10 % step in a quiet series: the consecutive differences' noise counts the step, the windows' noise not
    values = [100.0, 100.6, 99.5, 100.2, 99.8, 100.4, 110.3, 109.7, 110.5, 110.1, 109.6, 110.4]
    s = found(values, Rule(outlier_factor=1e9))
    assert kinds(s) == [(6, "regression")]


def test_size_gate_a_significant_shift_under_min_change_is_no_candidate() -> None:
    values = [100.0, 100.1, 99.9, 100.05, 99.95, 100.0, 103.0, 103.1, 102.9, 103.05, 102.95, 103.0]
    assert found(values).changes == []
    assert kinds(found(values, Rule(min_change=0.02))) == [(6, "regression")]


def test_after_median_gate_a_short_excursion_does_not_move_the_median_after() -> None:
    # three runs +20 % among eight after: the mean after moves +7 %, the median not
    values = [100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 120.0, 120.5, 119.5, 100.3, 99.7, 100.4, 99.6, 100.0]
    s = found(values, Rule(noise_factor=0.0))
    assert [c.index for c in s.changes if c.index == 6] == []


def test_localisation_the_change_is_at_the_boundary_where_t_peaks() -> None:
    values = NIGHTS[:6] + [v * 1.12 for v in NIGHTS]
    assert kinds(found(values)) == [(6, "regression")]


def test_directions_an_improvement_of_a_throughput_and_of_a_latency() -> None:
    up = NIGHTS[:6] + [v * 1.2 for v in NIGHTS]
    assert kinds(found(up, metric="output_token_throughput")) == [(6, "improvement")]
    assert kinds(found([v * 1.2 for v in NIGHTS[:6]] + NIGHTS)) == [(6, "improvement")]


def test_a_disqualified_point_is_shown_never_used() -> None:
    # a disqualified run at +60 % right before the step: not an outlier (never judged), not in any window
    values = NIGHTS[:6] + [160.0] + [v * 1.15 for v in NIGHTS[:6]]
    dq = [False] * 6 + [True] + [False] * 6
    s = found(values, disqualified=dq)
    assert kinds(s) == [(7, "regression")] and s.outliers == [] and s.used.tolist() == [not d for d in dq]
    assert s.changes[0].n_before == 6  # the window before holds the six qualified runs, not the disqualified one


def test_disqualified_repeats_leave_the_median_and_a_run_of_them_only_is_marked() -> None:
    rows = []
    for i in range(8):
        rows += run_rows(i, "a", {(64, "ttft_ms_p95"): 100.0 + i % 2}, repeats=2)
    rows[1]["ttft_ms_p95"], rows[1]["validity_failed"] = 900.0, "client_cpu"  # run 0, repeat 2: disqualified
    for r in (4, 5):  # run 2: both repeats disqualified (a point-wide check; bursts would leave TTFT believed)
        rows[r]["validity_failed"] = "client_cpu; prompts_per_slot"
    rows[6]["validity_failed"] = "prompts_per_slot"  # qualifying only: used
    rows[8].update(validity_failed="completeness", success=50, failed=50)  # half failed: disqualified
    rows[10].update(validity_failed="completeness", success=99, failed=1)  # 1 %: qualifying
    (s,) = history(frame(rows), ["ttft_ms_p95"]).series
    assert s.disqualified is not None and s.disqualified.tolist() == [False, False, True] + [False] * 5
    assert float(s.values[0]) == 100.0 and s.point(0).samples == (100.0,)  # 900 left out of run 0's median
    assert s.point(2).samples == (100.0, 100.4)  # shown with its own values
    assert s.point(4).samples == (100.4,) and s.point(5).samples == (101.0, pytest.approx(101.404))
    assert "## Outliers" in history_markdown(history(frame(rows), ["ttft_ms_p95"]))


def test_the_detection_benchmark_keeps_working(tmp_path: Path) -> None:
    """benchmarks/bench_history_detection.py on a few series (its figures, on 2,000, are in docs/HISTORY.md)."""
    import json
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "bench_history_detection.py"), "--series", "30",
                           "--json", str(tmp_path / "d.json")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    cases = json.loads((tmp_path / "d.json").read_text())["cases"]
    assert cases["step 10 % at run 6 of 12, uniform 3 %"]["found_at_its_run"] >= 0.9
    assert cases["noise, 12 runs, uniform 3 %"]["any_change"] <= 0.1


def test_the_page_marks_the_outlier_at_its_run() -> None:
    from sskj_results.render.history import figure_data

    data = figure_data(history(frame(nightly(3, 1)), ["ttft_ms_p95"]))  # compact: strings once, in data["text"]
    (fig,) = data["figures"]
    text = data["text"]
    assert [(m[1], text[m[3]]) for m in fig["marks"]] == [(5, "regression"), (3, "outlier")]
    assert text[fig["marks"][1][4]].startswith("outlier +4")


def test_noise_gate_never_below_the_repeats_within_run_noise() -> None:
    # run medians step +6 % with almost no run-to-run noise, but each run's three repeats spread +-10 %
    medians = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0, 106.0, 106.2, 105.8, 106.1, 105.9, 106.0]
    samples = np.array([[m * 0.9, m, m * 1.1] for m in medians]).ravel()
    runs = [Run(f"/r{i}", f"r{i:02d}", None, "second", (f"v{i}",) + (None,) * 7, i) for i in range(len(medians))]
    s = Series((), (), "ttft_ms_p95", runs, np.array(medians), samples, np.arange(0, 3 * len(medians) + 1, 3),
               np.arange(len(medians)))
    detect(s, Rule())
    assert s.changes == [] and s.noise is not None and s.noise > 0.09  # the repeats' noise, log(1.1) ~ 0.095
