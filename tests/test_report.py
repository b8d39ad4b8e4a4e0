"""`sskj-results report`: report.md regenerated from results.json alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.render.publish import REPORT_MD, ReportOptions, write_report
from sskj_results.render.report import (
    REPORT_TABLE_ALIGN, REPORT_TABLE_HEADER, SLO_NOTES, TABLE_ALIGN, TABLE_HEADER, section_text,
)
from sskj_results.analysis.rundata import natural_key
from sskj_results.analysis.slo import overall_mark
from sskj_results.analysis.validate import validate_path

RUNS = Path(__file__).parent / "data" / "compare" / "runs"


@pytest.fixture
def run_dir(tmp_path, monkeypatch) -> Path:
    shutil.copytree(RUNS / "vllm", tmp_path / "vllm")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "vllm"


def report_text(run: Path, *args: str) -> str:
    result = CliRunner().invoke(main, ["report", str(run), "--no-plots", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return (run / REPORT_MD).read_text(encoding="utf-8")


def table_rows(text: str, valid: bool = False) -> list[list[str]]:
    """The Results table's rows: the seed-002 columns, and the Valid column with valid=True."""
    lines = text.splitlines()
    start = lines.index(REPORT_TABLE_HEADER)
    assert lines[start] == TABLE_HEADER + " Valid |"
    assert lines[start + 1] == TABLE_ALIGN + "---|" == REPORT_TABLE_ALIGN
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append(cells if valid else cells[:-1])
    return rows


def test_cli_prints_where_it_wrote(run_dir):
    result = CliRunner().invoke(main, ["report", "vllm", "--no-plots"])
    assert result.exit_code == 0
    assert result.stdout == "wrote vllm/report.md\n"


def test_summary_block(run_dir):
    text = report_text(run_dir)
    lines = text.splitlines()
    assert lines[0] == "# dsv4_h200_sglang_vs_vllm: vllm on 8x NVIDIA H200 143GB (run 20260707-100022)"
    summary = section_text(text, "summary").split("\n")[2:-1]
    assert summary == [
        "- Experiment: `dsv4_h200_sglang_vs_vllm` (run `20260707-100022`, 2026-07-07T13:26:41+08:00)",
        "- Model: `/data/models/DeepSeek-V4-Flash`",
        "- Engine: vllm",
        "- Phase: phase1_vllm",
        "- Chip: NVIDIA H200",
        "- Hardware: 8x NVIDIA H200 143GB",
        "- Benchmark client: `sglang.bench_serving` 0.5.4",
        "- Server command: `python -m vllm serve /data/models/DeepSeek-V4-Flash --tensor-parallel-size 8 --port 30000`",
        "- Git commit: `0123456789abcdef0123456789abcdef01234567`",
        "- SLO reference: TTFT P95 < 3000.0ms, TPOT mean < 50.0ms (S2)",
        "- Scenarios: 8 measured (7 ✅, 1 ⚠️, 0 ❌), 0 skipped, 1 with failed requests",
    ]


def test_table_has_seed_columns_sorted_rows_and_rule_marks(run_dir):
    text = report_text(run_dir)
    rows = table_rows(text)
    data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    names = [r[0] for r in rows]
    # numbers in names sort as numbers (c2 before c16), not as text
    assert names == sorted((s["name"] for s in data["scenarios"]), key=natural_key)
    assert names.index("c2_i128_o32") < names.index("c16_i128_o32")
    by_name = {s["name"]: s for s in data["scenarios"]}
    for r in rows:
        s = by_name[r[0]]
        assert r[1] == "vllm"
        assert r[2:5] == [str(s["concurrency"]), str(s["input_len"]), str(s["output_len"])]
        assert r[7] == f"{s['latencies']['ttft_ms']['p95']:.2f}"
        assert r[9] == f"{s['latencies']['tpot_ms']['mean']:.2f}"
        assert r[-1] == overall_mark(float(r[7]) < 3000.0, float(r[9]) < 50.0)
    assert "| c32_i128_o32 | vllm | 32 | 128 | 32 | 6.94 | 222.22 | 4112.24 | 4465.05 | 49.46 | 64.07 | 64.42 | 5751.65 | ⚠️ |" in text
    notes = text.splitlines()[text.splitlines().index("## Notes") + 2:][:2]
    assert notes == list(SLO_NOTES)


def test_warnings_list_reconstructed_skipped_and_failed(tmp_path, monkeypatch):
    shutil.copytree(RUNS / "vllm", tmp_path / "vllm")
    shutil.copytree(RUNS / "vllm_ngram", tmp_path / "ngram")
    monkeypatch.chdir(tmp_path)
    text = report_text(Path("vllm"))
    assert "### Reconstructed values" in text
    assert "| c8_i128_o32 | ttft_plus_itls | latencies.e2e_ms.p90 |" in text
    assert "### Failed requests" in text
    assert "| c8_i128_o32 |        2 |         42 | Bad Request   |" in text
    assert "### Skipped scenarios" not in text
    text = report_text(Path("ngram"))
    assert "### Skipped scenarios" in text
    assert "| c32_i128_o32 |     32 |     128 |       32 | server died: CUDA out of memory |" in text
    assert "- Speculative decoding: `ngram`, 4 speculative tokens" in text


def test_no_warnings_says_so(run_dir):
    data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        s["reconstructed"] = {}
        s["raw_requests"] = [r for r in s["raw_requests"] if r["success"]]
        s["failed"] = 0
    (run_dir / "results.json").write_text(json.dumps(data), encoding="utf-8")
    text = report_text(run_dir)
    assert "## Warnings\n\nNone: every value is the client's own, no scenario was skipped, no request failed." in text


def test_provenance_section_satisfies_the_checklist(run_dir):
    assert not (run_dir / "README.md").exists()
    text = report_text(run_dir)
    assert "## Provenance" in text
    assert "| phase          | phase1_vllm                                            |" in text
    assert "```text\npython -m vllm serve /data/models/DeepSeek-V4-Flash --tensor-parallel-size 8 --port 30000\n```" in text
    assert "### Source files" in text and "raw_outputs/h200_vllm_0707_8_128_32.jsonl" in text
    assert "### Raw files imported" in text
    (report,) = validate_path(run_dir)
    assert report.valid, [p.line() for p in report.problems]
    assert not [p for p in report.problems if "provenance" in p.message or "report" in p.message]


def test_report_is_regenerated_from_results_json_alone(run_dir):
    first = report_text(run_dir)
    (run_dir / REPORT_MD).write_text("stale", encoding="utf-8")
    assert report_text(run_dir) == first


def test_slo_tier_override_recomputes_marks(run_dir):
    text = report_text(run_dir, "--slo-tier", "S1")
    assert "- SLO reference: TTFT P95 < 1000.0ms, TPOT mean < 25.0ms (S1); recorded: " in text
    for r in table_rows(text):
        assert r[-1] == overall_mark(float(r[7]) < 1000.0, float(r[9]) < 25.0)
    assert any(r[-1] != "✅" for r in table_rows(text))


def test_run_without_recorded_slo_uses_the_default_tier(run_dir):
    data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    data["slo"] = None
    data["config"].pop("server_args")
    data["config"]["phase1_server_args"] = "vllm serve a"
    data["config"]["phase2_server_args"] = "vllm serve a --speculative-config '{\"method\": \"ngram\"}'"
    (run_dir / "results.json").write_text(json.dumps(data), encoding="utf-8")
    text = report_text(run_dir)
    assert ("- SLO reference: TTFT P95 < 3000.0ms, TPOT mean < 50.0ms (S2); results.json records no SLO, "
            "marks computed against this one") in text
    assert "- Server command (phase1): `vllm serve a`" in text
    assert "- Server command (phase2): `vllm serve a --speculative-config '{\"method\": \"ngram\"}'`" in text


def test_plots_are_embedded(run_dir):
    result = CliRunner().invoke(main, ["report", "vllm", "--cdf", "1"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "wrote vllm/report.md and 4 plot(s) in vllm/plots\n"
    text = (run_dir / REPORT_MD).read_text(encoding="utf-8")
    names = ["throughput_vs_interactivity.png", "ttft_p95_vs_concurrency.png", "tpot_mean_vs_concurrency.png",
             "cdf_i64_o16.png"]
    for name in names:
        assert f"](plots/{name})" in text
        assert (run_dir / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert text.index("## Plots") < text.index("## Provenance")


def test_report_accepts_a_results_json_path(run_dir):
    out = write_report(run_dir / "results.json", ReportOptions(plots=False))
    assert out.markdown == run_dir / REPORT_MD and out.plots == []


# --------------------------------------------------------------------------- CLI errors


def test_cli_missing_run_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["report", "nope"])
    assert result.exit_code == 1
    assert result.stderr == "error: nope: no such run directory\n"


def test_cli_run_dir_without_results_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["report", "empty"])
    assert result.exit_code == 1
    assert result.stderr == ("error: empty: no results.json here nor one level down; give a run directory (one "
                             "holding results.json), a folder of them, or a results.json\n")


def test_cli_invalid_results_json(run_dir):
    data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    data["scenarios"][0]["latencies"]["ttft_ms"]["p95"] = "fast"
    (run_dir / "results.json").write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "vllm"])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: vllm/results.json: scenarios[0].latencies.ttft_ms.p95: Input should be a valid number, "
        "unable to parse string as a number\n")
    assert "Traceback" not in result.output
    assert not (run_dir / REPORT_MD).exists()


def test_cli_bad_cdf_is_a_usage_error(run_dir):
    result = CliRunner().invoke(main, ["report", "vllm", "--cdf", "-1"])
    assert result.exit_code == 2
    assert "'-1': give `all` or a number >= 0" in result.stderr


def test_pipe_tables_keep_their_layout() -> None:
    """Every column as wide as its widest cell and at least its header + 2; cells stripped and escaped; a right
    column right-aligned, its header too; with no row, every header left-aligned."""
    from sskj_results.render.mdtable import github_table

    assert github_table(["Name", "N", "Note"], [["a", "10", " spaced "], ["longer name", 5, "x|y"],
                                               ["`c|d`", None, "<b>"]], ["left", "right"]) == [
        "| Name        |    N | Note   |",
        "|-------------|------|--------|",
        "| a           |   10 | spaced |",
        "| longer name |    5 | x\\|y   |",
        "| `c\\|d`      | None | \\<b>   |",
    ]
    assert github_table(["Scenario", "N"], [], ["left", "right"]) == ["| Scenario   | N   |", "|------------|-----|"]


def test_plots_section_says_which_latency_cdfs_are_not_drawn_and_why(tmp_path):
    run = tmp_path / "vllm_ngram"
    shutil.copytree(RUNS / "vllm_ngram", run)
    result = CliRunner().invoke(main, ["report", str(run), "--cdf", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    plots = section_text((run / REPORT_MD).read_text(encoding="utf-8"), "plots")
    # three shapes have per-request latencies: the first by (input, output) is drawn, the other two named
    assert "![TTFT and TPOT CDFs, i64_o16](plots/cdf_i64_o16.png)" in plots
    assert ("Latency CDFs: 1 of 3 shapes with per-request data (the first 1 in order; "
            "`sskj-results report ... --cdf all` draws every one); not drawn: i128_o32, i256_o64.") in plots
    # c16 recorded no per-request data: no CDF line can show it
    assert "No latency CDF (no per-request data): c16_i128_o32." in plots
    result = CliRunner().invoke(main, ["report", str(run), "--cdf", "all"], catch_exceptions=False)
    plots = section_text((run / REPORT_MD).read_text(encoding="utf-8"), "plots")
    assert "Latency CDFs:" not in plots and "No latency CDF (no per-request data): c16_i128_o32." in plots


def test_each_server_command_is_shown_once_and_reconstructed_values_are_provenance(run_dir):
    data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    command = data["config"]["server_args"]
    data["config"]["phase1_server_args"] = command  # the run loop records the phase's command under both keys
    data["scenarios"][0]["reconstructed"] = {"latencies.ttft_ms.p95": "per_request"}
    (run_dir / "results.json").write_text(json.dumps(data), encoding="utf-8")
    text = report_text(run_dir)
    assert text.count(command) == 2  # the Summary's line and the Provenance's exact record
    assert "- Server command (phase1)" not in text
    assert "Reconstructed values" not in section_text(text, "warnings")
    assert "### Reconstructed values" in section_text(text, "provenance")
