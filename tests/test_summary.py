"""The end-of-run summary (`sskj-results run-summary`) and STRICT=1."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.run.summary import summarize

from .test_streaming_validity import run_with


def two_phases(tmp_path: Path) -> tuple[Path, Path]:
    bursty, spec = tmp_path / "phase1_bursty", tmp_path / "phase2_ngram"
    run_with(tmp_path / "a", [16.0] * 8)  # every request in two chunks: TPOT/ITL unreliable
    shutil.move(tmp_path / "a" / "run", bursty)
    run_with(tmp_path / "b", [1.0] * 8, spec=("ngram", 3))  # speculative, no acceptance: qualified
    shutil.move(tmp_path / "b" / "run", spec)
    return bursty, spec


def test_the_summary_counts_points_names_their_checks_and_what_to_look_at(tmp_path: Path) -> None:
    bursty, spec = two_phases(tmp_path)
    found = summarize([bursty, spec])
    assert found.disqualified == 1
    assert found.lines == [
        "summary: 2 point(s) measured (phase1_bursty 1, phase2_ngram 1)",
        "  valid 0, qualified 1 (acceptance 1), partly unreliable 1 (streaming_granularity 1) (their other metrics "
        "stand), disqualified 0, unknown 0",
        "  phase1_bursty c2_i128_o32: ◐ TPOT, ITL unreliable: streaming_granularity",
        "  ⚠ phase2_ngram c2_i128_o32: acceptance",
        f"  look at: {bursty / 'report.md'}, {spec / 'report.md'} (Validity: each failed check, its message, how to "
        "change it)",
    ]


def test_strict_fails_on_a_partly_unreliable_point_not_on_a_qualified_one(tmp_path: Path) -> None:
    bursty, spec = two_phases(tmp_path)
    result = CliRunner().invoke(main, ["run-summary", str(bursty), str(spec), "--strict"])
    assert result.exit_code == 1 and result.output.endswith("error: STRICT=1: 1 disqualified or partly unreliable point(s)\n")
    assert CliRunner().invoke(main, ["run-summary", str(bursty), str(spec)]).exit_code == 0
    assert CliRunner().invoke(main, ["run-summary", str(spec), "--strict"]).exit_code == 0  # qualified: kept


def test_the_loops_summary_covers_each_phase_with_results_once_and_reads_strict(tmp_path: Path, monkeypatch) -> None:
    """run-summary --loop (bench::print_summary): a phase without results.json, an empty word and a repeat are left
    out; nothing is said without a run; STRICT=1 is --strict."""
    from sskj_results.run.summary import loop_dirs

    bursty, spec = two_phases(tmp_path)
    (tmp_path / "phase3_never").mkdir()
    given = [str(bursty), "", str(tmp_path / "phase3_never"), str(spec), str(bursty), str(tmp_path / "gone")]
    assert loop_dirs(given) == [bursty, spec]
    monkeypatch.setenv("STRICT", "1")
    result = CliRunner().invoke(main, ["run-summary", "--loop", "--", *given])
    assert result.exit_code == 1 and "summary: 2 point(s) measured (phase1_bursty 1, phase2_ngram 1)" in result.output
    monkeypatch.setenv("STRICT", "0")
    assert CliRunner().invoke(main, ["run-summary", "--loop", "--", *given]).exit_code == 0
    quiet = CliRunner().invoke(main, ["run-summary", "--loop", "--", "", str(tmp_path / "phase3_never")])
    assert (quiet.exit_code, quiet.output) == (0, "")
    missing = CliRunner().invoke(main, ["run-summary", str(tmp_path / "gone")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
