"""SLO tiers, verdict marks, and the SLO search."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import load_run, save_run
from sskj_results.contract.models import Results
from sskj_results.analysis.slo import TIERS, describe, overall_mark, resolve_slo, slo_status
from sskj_results.analysis.slo_search import decide

from .conftest import SEED

DOCS = Path(__file__).resolve().parent.parent / "docs" / "SLO_STANDARDS.md"


def test_marks_follow_the_rule() -> None:
    assert overall_mark(True, True) == "✅"
    assert overall_mark(True, False) == overall_mark(False, True) == "⚠️"
    assert overall_mark(False, False) == "❌"


def test_s2_is_the_seed_rule_and_strict() -> None:
    s2 = resolve_slo("s2")
    assert (s2.tier, s2.ttft_p95_ms, s2.tpot_mean_ms) == ("S2", 3000.0, 50.0)
    assert slo_status(2999.99, 49.99, s2).overall == "✅"
    assert slo_status(3000.0, 49.0, s2).overall == "⚠️"  # at the threshold is not below it
    assert slo_status(None, None, s2).overall == "❔"  # not measured: unknown, not failed
    assert describe(s2) == "S2: TTFT P95 < 3000.0ms, TPOT mean < 50.0ms"


def test_explicit_thresholds_and_override() -> None:
    assert resolve_slo(None, 100, 10).tier is None
    mixed = resolve_slo("S1", None, 40)
    assert (mixed.tier, mixed.ttft_p95_ms, mixed.tpot_mean_ms) == (None, TIERS["S1"].ttft_p95_ms, 40)


def test_docs_table_matches_code() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for tier in TIERS.values():
        row = re.search(rf"^\| {tier.name} \| {tier.title} \| < ([\d.]+) \| < ([\d.]+) \|", text, re.M)
        assert row, f"docs/SLO_STANDARDS.md has no row for {tier.name}"
        assert (float(row.group(1)), float(row.group(2))) == (tier.ttft_p95_ms, tier.tpot_mean_ms)


def _with_scenarios(passing: dict[int, bool]) -> Results:
    base = load_run(SEED)
    template = base.scenarios[0]
    scenarios = []
    for c, ok in passing.items():
        s = template.model_copy(deep=True)
        s.name, s.concurrency, s.input_len, s.output_len = f"c{c}", c, 128, 64
        s.slo_status = slo_status(100.0 if ok else 9000.0, 10.0, resolve_slo())
        scenarios.append(s)
    return base.model_copy(update={"scenarios": scenarios})


def _run_search(capacity: int, lo: int = 1, hi: int = 1024) -> tuple[list[int], int | None]:
    measured: dict[int, bool] = {}
    order = []
    for _ in range(50):
        d = decide(_with_scenarios(measured), 128, 64, lo, hi)
        if d.next_concurrency is None:
            return order, d.search.best_concurrency
        order.append(d.next_concurrency)
        measured[d.next_concurrency] = d.next_concurrency <= capacity
    raise AssertionError("search did not converge")


def test_search_doubles_then_bisects() -> None:
    order, best = _run_search(capacity=48)
    assert order[:7] == [1, 2, 4, 8, 16, 32, 64]
    assert order[7:] == [48, 56, 52]
    assert best == 48


def test_search_edges() -> None:
    assert _run_search(capacity=0) == ([1], None)
    order, best = _run_search(capacity=5000, hi=100)
    assert order[-1] == 100 and best == 100


def test_slo_next_cli_records_search(tmp_path: Path) -> None:
    run = tmp_path / "run"
    save_run(_with_scenarios({1: True, 2: True, 4: False}), run)
    result = CliRunner().invoke(main, ["slo-next", str(run), "--input-len", "128", "--output-len", "64"])
    assert result.exit_code == 0
    assert result.stdout == "3\n"
    search = load_run(run).slo_search[0]
    assert [s.concurrency for s in search.steps] == [1, 2, 4] and not search.finished and search.best_concurrency == 2
    save_run(_with_scenarios({1: True, 2: True, 3: False, 4: False}), run)
    result = CliRunner().invoke(main, ["slo-next", str(run), "--input-len", "128", "--output-len", "64"])
    assert result.exit_code == 0 and result.stdout == ""
    assert load_run(run).slo_search[0].finished is True


def test_slo_next_bad_bounds(tmp_path: Path) -> None:
    save_run(load_run(SEED), tmp_path)
    result = CliRunner().invoke(main, ["slo-next", str(tmp_path), "--input-len", "1", "--output-len", "1",
                                       "--min-concurrency", "8", "--max-concurrency", "4"])
    assert result.exit_code == 2
    assert result.output == "error: need 1 <= --min-concurrency <= --max-concurrency, got 8 and 4\n"
