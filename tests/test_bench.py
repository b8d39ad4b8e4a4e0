"""The import benchmark runs end to end (tiny scale, one round) and writes its figures.

A guard against rot, not a timing test: no speed is asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
PHASES = ("floor", "import", "compare", "reparse", "compare_plots")


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def test_make_raw_is_deterministic_and_shaped_like_the_seed_inventory(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from make_raw import GRID, file_name, write_all
    finally:
        sys.path.remove(str(BENCH))
    first = write_all(tmp_path / "a", scale=0.01)
    second = write_all(tmp_path / "b", scale=0.01)
    assert len(first) == 45
    assert sorted(p.name for p in first) == sorted(file_name(*row) for row in GRID)
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second))
    line = first[0].read_bytes()
    assert b'"request_rate": Infinity' in line and line.endswith(b"}\n") and line.count(b"\n") == 1


@pytest.mark.slow  # bench_import.py end to end (raw files made, imported, timed): about 10 s
def test_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_import.py"), "--scale", "0.01", "--rounds", "1",
         "--work", str(tmp_path / "work"), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "import / floor" in proc.stdout
    figures = json.loads(out.read_text(encoding="utf-8"))
    for key in ("date", "machine", "scale", "rounds", "dataset", "median_s", "median_cpu_s", "module_imports_s",
                "peak_rss_mb", "ratios", "help_s", "samples"):
        assert key in figures, key
    assert figures["rounds"] == 1 and figures["scale"] == 0.01
    assert figures["dataset"]["files"] == 45 and _positive(figures["dataset"]["bytes"])
    for phase in PHASES:
        assert _positive(figures["median_s"][phase]), phase
        assert _positive(figures["peak_rss_mb"][phase]), phase
        assert len(figures["samples"][phase]) == 1
    for ratio in ("import_over_floor", "compare_over_floor", "reparse_over_floor", "import_rss_over_floor_rss"):
        assert _positive(figures["ratios"][ratio]), ratio
    assert _positive(figures["help_s"])
    machine = figures["machine"]
    assert _positive(machine["nproc"]) and machine["python"] and machine["numpy"] and machine["orjson"]


@pytest.mark.slow  # four child processes, each importing the package and the renderers: 10-30 s
def test_scale_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_scale.py"), "--files", "12", "--per-shape", "4", "--small", "3",
         "--work", str(tmp_path / "work"), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert (figures["files"], figures["shapes"], figures["small"]) == (12, 3, 3)
    for phase in ("import_1", "import_small", "import_all", "report_html"):
        assert _positive(figures["phases"][phase]["seconds"]) and _positive(figures["phases"][phase]["cpu_s"]), phase
    assert _positive(figures["phases"]["report_html"]["page_bytes"])
    for clock in ("seconds", "cpu_s"):
        assert set(figures["linear"][clock]) == {"per_file_s", "fixed_s", "import_over_linear",
                                                 "import_over_files_x_import_1"}
    assert "report --html" in proc.stdout and "target <= 30 s" in proc.stdout
    raw = sorted(p.name for p in (tmp_path / "work" / "raw").iterdir())
    assert raw[:2] == ["sglang_0707_1_128_16.jsonl", "sglang_0707_1_192_16.jsonl"] and len(raw) == 12


def _record_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        import record
    finally:
        sys.path.remove(str(BENCH))
    return record


def test_the_speed_record_names_a_ratio_over_budget_or_clearly_worse_than_before(tmp_path: Path) -> None:
    """`make bench` (benchmarks/record.py): a 30 % slower import than the recent median is named, as is a ratio
    over its budget; the ordinary spread of a shared machine is not. Judged on ratios, never on seconds."""
    record = _record_module()
    previous = [{"ratios": {"import_over_floor_cpu": v, "compare_over_floor": 0.5}} for v in (1.10, 1.2, 1.05, 1.15)]
    assert record.judge({"import_over_floor_cpu": 1.2, "compare_over_floor": 0.55}, previous) == []
    slower = record.judge({"import_over_floor_cpu": 1.125 * 1.3, "compare_over_floor": 0.5}, previous)
    assert slower == ["import_over_floor_cpu 1.463 is 1.30x the median of its last 4 recorded values (1.125): "
                      "clearly worse"]
    over = record.judge({"compare_over_floor": 1.6}, previous)
    assert over[0] == "compare_over_floor 1.600 is over its budget of 1.5" and "clearly worse" in over[1]
    assert record.judge({"new_ratio": 9.0}, previous) == []  # no budget, no history: nothing to judge against
    # the window: only the last 5 entries count
    old_fast = [{"ratios": {"import_over_floor_cpu": 0.5}}] * 10 + [{"ratios": {"import_over_floor_cpu": 1.2}}] * 5
    assert record.judge({"import_over_floor_cpu": 1.3}, old_fast) == []
    bad = tmp_path / "record.jsonl"
    bad.write_text('{"ratios": {}}\nnot json\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"record.jsonl:2: not a JSON line"):
        record.read_record(bad)


def test_the_speed_record_judges_the_pages_sizes_and_load_ratios() -> None:
    """The pages' entries of the record (bench_pages.py): history.html of 10,000 runs over its 2 MB is named, as is
    a page load 30 % slower, over the reference page, than the recent median; the ordinary spread is not, and
    the pages' ratios are run by `make bench`."""
    record = _record_module()
    assert "pages" in record.BENCHES and record.BUDGETS["history_html_mb"] == 2.0
    previous = [{"ratios": {"history_html_mb": 1.9, "report_usable_over_reference": v}} for v in (3.0, 3.4, 2.8)]
    assert record.judge({"history_html_mb": 1.95, "report_usable_over_reference": 3.5}, previous) == []
    named = record.judge({"history_html_mb": 2.01, "report_usable_over_reference": 3.0 * 1.3}, previous)
    assert named == ["history_html_mb 2.010 is over its budget of 2.0",
                     "report_usable_over_reference 3.900 is 1.30x the median of its last 3 recorded values (3.000): "
                     "clearly worse"]
    assert record.judge({"report_usable_over_reference": 12.5}, [])[0].endswith("over its budget of 12.0")


@pytest.mark.slow  # pages built at a tiny scale and opened in headless Chromium: 30-90 s
def test_pages_benchmark_builds_the_pages_and_times_them_in_chromium(tmp_path: Path) -> None:
    if not (Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    out = tmp_path / "pages.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_pages.py"), "--scenarios", "12", "--runs", "30",
                           "--rounds", "1", "--work", str(tmp_path / "work"), "--screenshots", str(tmp_path / "shots"),
                           "--json", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert set(figures["ratios"]) == {f"{p}_{k}" for p in ("report", "comparison", "history")
                                      for k in ("html_mb", "usable_over_reference")}
    assert all(_positive(v) for v in figures["ratios"].values())
    assert all(_positive(v) for v in figures["browser"]["usable_ms"].values())
    shots = sorted(p.name for p in (tmp_path / "shots").iterdir())
    assert shots == sorted(f"{p}_{w}_{part}.png" for p in ("report", "comparison", "history") for w in (900, 1400)
                           for part in ("top", "figures"))
    assert "history" in proc.stdout and "reference" in proc.stdout
