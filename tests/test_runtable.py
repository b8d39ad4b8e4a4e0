"""The runs table (`load_runs`) and `sskj-results collect`: columns, values from results.json, paths, cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

import sskj_results
from sskj_results.cli import main
from sskj_results.contract.errors import ResultsError
from sskj_results.contract.models import Results
from sskj_results.analysis.runtable import COLUMNS, UNPLACED_FIELDS, columns_markdown, load_runs

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "tests" / "data" / "compare" / "runs"
NAMES = ("sglang", "vllm", "vllm_ngram")

# The stable part of the table: names and dtypes people's notebooks rely on.
PINNED = {
    "run_dir": "string", "results_file": "string", "experiment": "string", "run_id": "string", "phase": "string",
    "timestamp": "string", "model": "string", "engine": "string", "engine_version": "string", "chip": "string",
    "accelerator": "string", "hardware": "string", "client": "string", "client_version": "string",
    "git_commit": "string", "tp": "Int64", "kv_cache_dtype": "string", "spec_method": "string",
    "spec_tokens": "Int64", "slo_tier": "string", "slo_ttft_p95_ms": "Float64", "slo_tpot_mean_ms": "Float64",
    "scenario": "string", "concurrency": "Int64", "request_rate": "Float64", "input_len": "Int64",
    "output_len": "Int64", "repeat": "Int64", "success": "Int64", "failed": "Int64", "duration_s": "Float64",
    "request_throughput": "Float64", "output_token_throughput": "Float64", "total_token_throughput": "Float64",
    "accept_length": "Float64", "slo_attainment": "Float64", "request_goodput": "Float64",
    **{f"{m}_{s}": "Float64" for m in ("ttft_ms", "tpot_ms", "e2e_ms", "itl_ms")
       for s in ("mean", "p50", "p90", "p95", "p99", "std")},
    **{f"{m}_count": "Int64" for m in ("ttft_ms", "tpot_ms", "e2e_ms", "itl_ms")},
    **{f"prefill_tok_s_{s}": "Float64" for s in ("mean", "p50", "p90", "p95", "p99", "std")},
    "prefill_tok_s_count": "Int64",
    "steady_output_throughput": "Float64", "steady_output_throughput_window_start_s": "Float64",
    "steady_output_throughput_window_length_s": "Float64", "steady_output_throughput_window_share": "Float64",
    "slo_ttft_p95_ok": "boolean", "slo_tpot_mean_ok": "boolean", "slo_mark": "string",
    "notes": "string", "reconstructed": "string", "source_file": "string", "source_line": "Int64",
    "validity_ok": "boolean", "validity_failed": "string", "devices": "string",
    "accelerators": "Int64", "output_throughput_per_accel": "Float64", "total_throughput_per_accel": "Float64",
    "interactivity": "Float64", "energy_j": "Float64", "joules_per_output_token": "Float64",
    "output_tokens_per_kwh": "Float64", "cost_per_million_output_tokens": "Float64", "power_valid": "boolean",
    "power_reason": "string", "power_sampler": "string", "price_per_accel_hour": "Float64",
    "streaming": "boolean", "streaming_source": "string",
}


MISSING = object()


def at(data: Any, path: str) -> Any:
    """The value at a dotted JSON path: None under a null object, MISSING when a key is absent."""
    for key in path.split("."):
        if data is None:
            return None
        if key not in data:
            return MISSING
        data = data[key]
    return data


def cell(value: Any) -> Any:
    return None if value is pd.NA or value is None else value


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A results tree: two single-phase runs and one run with two phases."""
    root = tmp_path / "tree"
    shutil.copytree(RUNS / "sglang", root / "exp_a" / "results" / "20260707-100011")
    shutil.copytree(RUNS / "vllm", root / "exp_a" / "results" / "20260707-100022" / "phase1_vllm")
    shutil.copytree(RUNS / "vllm_ngram", root / "exp_a" / "results" / "20260707-100022" / "phase2_vllm_ngram")
    (root / "exp_a" / "results" / "20260707-100011" / "raw_outputs").mkdir()
    (root / "exp_a" / "results" / "20260707-100011" / "raw_outputs" / "results.json").write_text("not a run")
    return root


def test_columns_are_pinned_and_documented():
    dtypes = {c.name: c.dtype for c in COLUMNS}
    assert len(dtypes) == len(COLUMNS), "duplicate column names"
    for name, dtype in PINNED.items():
        assert dtypes.get(name) == dtype, f"column {name}: {dtypes.get(name)} (pinned {dtype})"
    assert [c.name for c in COLUMNS][:4] == ["run_dir", "results_file", "experiment", "run_id"]
    doc = (ROOT / "docs" / "RUNS_TABLE.md").read_text(encoding="utf-8")
    table = doc[doc.index("| column | dtype |"):]
    assert table == columns_markdown(), (
        "docs/RUNS_TABLE.md's column table differs from the models; regenerate it with\n"
        "  .venv/bin/python -c 'from sskj_results.analysis.runtable import columns_markdown as c; print(c(), end=\"\")'"
        " and put it at the end of docs/RUNS_TABLE.md")


def test_every_model_field_is_a_column_or_deliberately_left_out():
    assert UNPLACED_FIELDS == [], f"fields of no known shape: {UNPLACED_FIELDS}; give them a rule in runtable.py"


def test_frame_equals_the_results_json_values(tree):
    df = load_runs([tree])
    files = sorted(tree.rglob("results.json"))
    files = [f for f in files if "raw_outputs" not in f.parts]
    expected_rows = 0
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        # keys the file leaves out take the model's default (e.g. raw_requests_capped: false)
        full = Results.model_validate(data).model_dump(mode="json")
        rows = df[df.results_file == str(file)]
        assert len(rows) == len(data["scenarios"]), file  # repeats included
        expected_rows += len(data["scenarios"])
        for i, ((_, row), scenario) in enumerate(zip(rows.iterrows(), data["scenarios"])):
            for col in COLUMNS:
                if col.path == "(file system)":
                    continue
                if col.path.startswith("scenarios[]."):
                    value = at(scenario, col.path[len("scenarios[]."):])
                    if value is MISSING:
                        value = at(full["scenarios"][i], col.path[len("scenarios[]."):])
                else:
                    value = at(data, col.path)
                    if value is MISSING:
                        value = at(full, col.path)
                if isinstance(value, dict):  # mappings are `key=value; ...`, lists `a; b` (null when empty)
                    value = "; ".join(f"{k}={v}" for k, v in value.items()) or None
                elif isinstance(value, list):
                    value = "; ".join(value) or None
                assert cell(row[col.name]) == value, f"{file} {scenario['name']} {col.name}"
            assert row.run_dir == str(file.parent)
            assert row.ttft_ms_p95 == scenario["latencies"]["ttft_ms"]["p95"]
            assert row.slo_mark == scenario["slo_status"]["overall"]
            assert row.concurrency == scenario["concurrency"]
            assert row.experiment == data["metadata"]["experiment"]
    assert len(df) == expected_rows == 23
    assert list(df.dtypes.astype(str)) == [c.dtype for c in COLUMNS]


def test_missing_values_are_null_not_zero(tree):
    df = load_runs(tree)
    sg = df[df.engine == "sglang"]
    assert sg.spec_method.isna().all() and sg.accept_length.isna().all()
    assert sg.phase.isna().all()
    ngram = df[df.spec_method == "ngram"]
    assert len(ngram) == 7 and ngram.phase.notna().all()


def test_joined_lists_and_mappings(tmp_path):
    data = json.loads((RUNS / "vllm" / "results.json").read_text(encoding="utf-8"))
    data["scenarios"][0]["notes"] = ["input length inferred", "not streamed"]
    data["scenarios"][0]["reconstructed"] = {"latencies.e2e_ms.p90": "per_request", "accept_length": "derived"}
    data["scenarios"][1]["notes"] = []
    data["scenarios"][1]["reconstructed"] = {}
    (tmp_path / "results.json").write_text(json.dumps(data), encoding="utf-8")
    df = load_runs(tmp_path)
    assert df.notes[0] == "input length inferred; not streamed"
    assert df.reconstructed[0] == "latencies.e2e_ms.p90=per_request; accept_length=derived"
    assert df.notes[1] is pd.NA and df.reconstructed[1] is pd.NA


@pytest.mark.parametrize("given", ["run_dir", "results_file", "phase_parent", "experiment_dir"])
def test_every_kind_of_path(tree, given):
    run = tree / "exp_a" / "results" / "20260707-100022"
    paths = {
        "run_dir": [run / "phase1_vllm"],
        "results_file": [run / "phase1_vllm" / "results.json"],
        "phase_parent": [run],
        "experiment_dir": [tree / "exp_a"],
    }[given]
    df = load_runs(paths)
    expected = {"run_dir": 8, "results_file": 8, "phase_parent": 15, "experiment_dir": 23}[given]
    assert len(df) == expected
    if given == "phase_parent":
        assert list(dict.fromkeys(df.phase)) == ["phase1_vllm", "phase2_vllm_ngram"]


def test_a_file_reached_twice_counts_once(tree):
    df = load_runs([tree, tree / "exp_a" / "results" / "20260707-100011"])
    assert len(df) == 23


def test_package_exports_load_runs_lazily():
    assert sskj_results.load_runs is load_runs


def test_invalid_run_raises_naming_the_file_unless_skipped(tree):
    bad = tree / "exp_a" / "results" / "20260707-100011" / "results.json"
    data = json.loads(bad.read_text(encoding="utf-8"))
    data["scenarios"][2]["concurrency"] = "many"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ResultsError) as err:
        load_runs(tree)
    assert str(err.value).startswith(f"{bad}: scenarios[2].concurrency: ")
    assert len(load_runs(tree, skip_invalid=True)) == 15


def test_missing_path_and_empty_directory(tmp_path):
    with pytest.raises(ResultsError, match="no such file or directory"):
        load_runs(tmp_path / "nope")
    with pytest.raises(ResultsError, match="no results.json here or below"):
        load_runs(tmp_path)


# --------------------------------------------------------------------------- sskj-results collect


def collect(*args: str) -> Any:
    return CliRunner().invoke(main, ["collect", *args], catch_exceptions=False)


def test_collect_parquet_keeps_dtypes_and_values(tree, tmp_path):
    out = tmp_path / "runs.parquet"
    result = collect(str(tree), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"wrote {out}: 23 row(s) from 3 run(s)\n"
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(back, load_runs(tree))


def test_collect_csv_for_spreadsheets(tree, tmp_path):
    out = tmp_path / "runs.csv"
    assert collect(str(tree), "--out", str(out)).exit_code == 0
    back = pd.read_csv(out)
    assert list(back.columns) == [c.name for c in COLUMNS]
    assert len(back) == 23
    df = load_runs(tree)
    assert back.ttft_ms_p95.tolist() == pytest.approx(df.ttft_ms_p95.astype(float).tolist(), nan_ok=True)


def test_collect_skips_and_lists_invalid_runs(tree, tmp_path):
    bad = tree / "exp_a" / "results" / "20260707-100011" / "results.json"
    bad.write_text('{"metadata": ', encoding="utf-8")
    out = tmp_path / "runs.parquet"
    result = collect(str(tree), "--out", str(out))
    assert result.exit_code == 0
    assert result.stderr == f"skipped: {bad}:1:14: invalid JSON: Expecting value\n"
    assert result.stdout == f"wrote {out}: 15 row(s) from 2 run(s); 1 invalid run(s) skipped\n"
    assert len(pd.read_parquet(out)) == 15


def test_collect_with_nothing_valid_fails_and_writes_nothing(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text("[]", encoding="utf-8")
    out = tmp_path / "runs.parquet"
    result = CliRunner().invoke(main, ["collect", str(run), "--out", str(out)])
    assert result.exit_code == 1
    assert result.stderr == (f"error: no valid run to collect (1 invalid): {run / 'results.json'}: $: "
                             "Input should be a valid dictionary or instance of Results\n")
    assert not out.exists()


def test_collect_refuses_an_unknown_format(tree, tmp_path):
    result = CliRunner().invoke(main, ["collect", str(tree), "--out", str(tmp_path / "runs.xlsx")])
    assert result.exit_code == 2
    assert "give a file name ending in .parquet (pandas, pyarrow) or .csv (spreadsheets)" in result.stderr


def test_recollect_reads_only_changed_files(tree, tmp_path):
    out = tmp_path / "runs.parquet"
    assert collect(str(tree), "--out", str(out)).exit_code == 0
    first = pd.read_parquet(out)
    again = collect(str(tree), "--out", str(out))
    assert again.stdout == f"wrote {out}: 23 row(s) from 3 run(s) (3 unchanged, from the cache)\n"
    pd.testing.assert_frame_equal(pd.read_parquet(out), first)

    # change one run: its rows are read again, the others come from the cache, the order is kept
    changed = tree / "exp_a" / "results" / "20260707-100022" / "phase1_vllm" / "results.json"
    data = json.loads(changed.read_text(encoding="utf-8"))
    data["scenarios"][0]["output_token_throughput"] = 12345.5
    changed.write_text(json.dumps(data, indent=2), encoding="utf-8")
    st = changed.stat()
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    third = collect(str(tree), "--out", str(out))
    assert third.stdout == f"wrote {out}: 23 row(s) from 3 run(s) (2 unchanged, from the cache)\n"
    df = pd.read_parquet(out)
    pd.testing.assert_frame_equal(df, load_runs(tree))
    assert df.output_token_throughput.tolist().count(12345.5) == 1

    # remove a run: its rows go
    shutil.rmtree(tree / "exp_a" / "results" / "20260707-100011")
    fourth = collect(str(tree), "--out", str(out))
    assert fourth.stdout == f"wrote {out}: 15 row(s) from 2 run(s) (2 unchanged, from the cache)\n"
    pd.testing.assert_frame_equal(pd.read_parquet(out), load_runs(tree))


def test_a_broken_cache_is_rebuilt(tree, tmp_path):
    out = tmp_path / "runs.parquet"
    assert collect(str(tree), "--out", str(out)).exit_code == 0
    cache = tmp_path / ".runs.parquet.cache.parquet"
    assert cache.is_file()
    cache.write_bytes(b"PAR1 garbage")
    result = collect(str(tree), "--out", str(out))
    assert result.stdout == f"wrote {out}: 23 row(s) from 3 run(s)\n"
    pd.testing.assert_frame_equal(pd.read_parquet(out), load_runs(tree))


def test_no_cache_reads_everything_and_writes_no_cache(tree, tmp_path):
    out = tmp_path / "runs.parquet"
    assert collect(str(tree), "--out", str(out), "--no-cache").exit_code == 0
    assert not (tmp_path / ".runs.parquet.cache.parquet").exists()


def test_collect_benchmark_runs_at_tiny_scale(tmp_path):
    figures = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_collect.py"), "--runs", "3", "--scenarios", "2",
         "--requests", "2", "--rounds", "1", "--work", str(tmp_path / "work"), "--json", str(figures)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "collect / floor" in proc.stdout
    data = json.loads(figures.read_text(encoding="utf-8"))
    assert data["dataset"]["runs"] == 3 and data["dataset"]["scenarios"] == 2
    for phase in ("floor", "collect", "recollect", "csv"):
        assert data["median_s"][phase] > 0
    table = pd.read_parquet(tmp_path / "work" / "runs.parquet")
    assert len(table) == 6 and sorted(set(table.concurrency)) == [1, 2]
