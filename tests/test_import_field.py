"""Field import: unknown counts stay unknown, dates are never invented, one server per run directory, versions
read from every key the clients write, sweep summaries deduplicated element by element, and no secret in any file
an import writes. Every raw file is built here, in the form the clients write it."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sskj_results.analysis.runtable import load_runs
from sskj_results.analysis.validity import completeness, Evidence, DEFAULT_THRESHOLDS
from sskj_results.cli import main
from sskj_results.contract.io import load_run, save_run
from sskj_results.contract.models import Results

from .conftest import SEED
from .test_import_forms import assert_client_stats, imported, run_import, sglang_run, vllm_summary, write

DETAILS = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors")


def sglang_summary(**extra: Any) -> dict[str, Any]:
    """A sglang.bench_serving line without --output-details: statistics and `completed` only."""
    run = sglang_run(n=8)
    for key in DETAILS:
        run.pop(key)
    run.update(extra)
    return run


def dirs(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.is_dir())


# ---------------------------------------------------------------- 1. unknown failures are null, never 0


def test_only_completed_gives_failed_null_shown_as_unknown(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    # the team's convention: the name's 2 is the run's own max_concurrency, so it is no prompt count
    write(raw / "sglang_0707_2_32_4.jsonl", sglang_summary(max_concurrency=2))
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out").iterdir()
    data = json.loads((run_dir / "results.json").read_text())
    assert data["schema_version"] == 2
    (s,) = load_run(run_dir).scenarios
    assert (s.success, s.failed, s.num_prompts, s.concurrency) == (8, None, None, 2)
    assert any("failed count unknown" in n and "null, not 0" in n for n in s.notes)
    assert s.validity is not None
    check = next(c for c in s.validity.checks if c.name == "completeness")
    assert check.ok is None and "failed count unknown" in check.message
    report = (run_dir / "report.md").read_text()
    assert "0 with failed requests, 1 with an unknown failure count" in report
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in report.splitlines() if line.startswith("| c2_i32_o4")]
    assert any(r[:3] == ["c2_i32_o4", "?", "?"] and r[3].startswith("failed count unknown") for r in rows), rows
    assert "0 failed request(s) in 0 scenario(s); 1 scenario(s) with an unknown failure count (?), not counted as 0." in report
    table = load_runs(tmp_path / "out")
    assert table["failed"].isna().tolist() == [True]  # <NA> in the runs table, not 0


def test_completeness_is_unknown_without_a_failure_count() -> None:
    ev = Evidence(concurrency=2, output_len=4, success=8, failed=None, num_prompts=None, rate_limited=False,
                  duration_s=1.0, latencies_s=None, output_lens=None, fixed_length=None)
    check = completeness(ev, DEFAULT_THRESHOLDS)
    assert (check.ok, check.value) == (None, None)
    known = completeness(Evidence(concurrency=2, output_len=4, success=8, failed=0, num_prompts=8, rate_limited=False,
                                  duration_s=1.0, latencies_s=None, output_lens=None, fixed_length=None),
                         DEFAULT_THRESHOLDS)
    assert known.ok is True


def test_version_1_files_still_load_and_stay_version_1(tmp_path: Path) -> None:
    run = load_run(SEED)
    assert run.schema_version == 1
    data = json.loads(save_run(run, tmp_path).read_text())
    assert data["schema_version"] == 1
    assert "timestamp_precision" not in data["metadata"] and "timestamp_source" not in data["scenarios"][0]
    # a version-1 run that comes to hold an unknown count is written as version 2
    run.scenarios[0].failed = None
    data = json.loads(save_run(run, tmp_path).read_text())
    assert data["schema_version"] == 2 and data["scenarios"][0]["failed"] is None
    assert load_run(tmp_path).scenarios[0].failed is None


# ---------------------------------------------------------------- 2. sglang's default file name


def test_default_name_number_is_the_prompt_count_when_the_run_has_none(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    # a run with --max-concurrency 4 whose name holds num_prompts 20: 19 completed, so 1 failed
    write(raw / "sglang_0427_20_32768_256.jsonl",
          sglang_summary(completed=19, max_concurrency=4, random_input_len=32768, random_output_len=256))
    # a layout from before --max-concurrency existed: no max_concurrency key at all
    old = sglang_summary(completed=996, random_input_len=1024, random_output_len=128)
    del old["max_concurrency"]
    write(raw / "sglang_1015_1000_1024_128.jsonl", old)
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    by_file = {Path(s.source.file).name: s for s in imported(tmp_path / "out") if s.source}
    new = by_file["sglang_0427_20_32768_256.jsonl"]
    assert (new.success, new.failed, new.num_prompts, new.concurrency) == (19, 1, 20, 4)
    assert any("failed = 20 - 19 = 1, derived from the file name" in n for n in new.notes)
    legacy = by_file["sglang_1015_1000_1024_128.jsonl"]
    assert (legacy.success, legacy.failed, legacy.num_prompts) == (996, 4, 1000)
    assert legacy.concurrency is None and legacy.request_rate is None  # unlimited, not 1000
    assert legacy.name == "rinf_i1024_o128"
    assert any("predates --max-concurrency" in n and "not a concurrency" in n for n in legacy.notes)


def test_name_number_below_completed_is_no_prompt_count(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "sglang_0707_4_32_4.jsonl", sglang_summary(max_concurrency=None))  # 8 completed > 4
    assert run_import(raw, tmp_path / "out", "--chip", "h200").exit_code == 0
    (s,) = imported(tmp_path / "out")
    assert (s.failed, s.concurrency) == (None, 4)


# ---------------------------------------------------------------- 3. one server per run directory


def test_framework_key_outranks_backend_and_splits_run_directories(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    runs = [vllm_summary(seed=i, random_input_len=64, random_output_len=8) for i in range(4)]
    for run in runs[2:]:
        run["framework"] = "sgl"  # vLLM's benchmark_serving.py --metadata framework=sgl: an SGLang server
    write(raw / "results.jsonl", *runs)
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    names = dirs(tmp_path / "out")
    assert [n.rsplit("_", 1)[0] for n in names] == ["nvidia_h200_sglang", "nvidia_h200_vllm"]
    for name in names:
        scenarios = load_run(tmp_path / "out" / name).scenarios
        assert [s.name for s in scenarios] == ["c4_i64_o8", "c4_i64_o8_r2"]  # each server's own two repeats
        assert {s.request_format for s in scenarios} == {"vllm"}
    assert load_run(tmp_path / "out" / names[0]).metadata.engine == "sglang"


def test_server_info_names_an_sglang_server_behind_a_vllm_named_file(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "vllm_0707_2_32_4.jsonl", sglang_run(backend="vllm", server_info={"version": "0.5.9", "tp_size": 8}))
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    assert [n.rsplit("_", 1)[0] for n in dirs(tmp_path / "out")] == ["nvidia_h200_sglang"]
    assert "the run names its server sglang (`server_info (sglang's /get_server_info)`) but the file name says vllm" \
        in result.output


# ---------------------------------------------------------------- 4. dates with precision and source


def test_dates_are_never_taken_from_the_file_system(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    undated = vllm_summary(random_input_len=64, random_output_len=8)
    del undated["date"]
    write(raw / "bench.json", undated)
    write(raw / "a" / "bench_2026-03-24_11-23-55.json", {**undated, "duration": 12.6})  # another measurement
    write(raw / "b" / "sglang_1015_2_32_4.jsonl", sglang_run())
    result = run_import(raw, tmp_path / "out", "--chip", "h200", "--engine", "vllm", "--model", "m")
    assert result.exit_code == 0, result.output
    by_file = {Path(s.source.file).name: s for s in imported(tmp_path / "out") if s.source}
    none = by_file["bench.json"]
    assert (none.timestamp, none.timestamp_precision, none.timestamp_source) == (None, None, None)
    assert any("recorded as null, not the file's modification time" in n for n in none.notes)
    named = by_file["bench_2026-03-24_11-23-55.json"]
    assert named.timestamp is not None and (named.timestamp_precision, named.timestamp_source) == ("second", "file name")
    assert datetime.fromisoformat(named.timestamp).replace(tzinfo=None) == datetime(2026, 3, 24, 11, 23, 55)
    mmdd = by_file["sglang_1015_2_32_4.jsonl"]
    assert (mmdd.timestamp, mmdd.timestamp_precision, mmdd.timestamp_source) == ("--10-15", "month-day", "file name")
    # the run directory starts at its earliest fully dated run; the ids say no more than is known
    (run_dir,) = (tmp_path / "out").iterdir()
    meta = load_run(run_dir).metadata
    assert run_dir.name == "nvidia_h200_vllm_20260324-112355"
    assert (meta.timestamp, meta.timestamp_precision, meta.timestamp_source) == (named.timestamp, "second", "file name")


def test_an_undated_run_directory_says_unknown(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    undated = vllm_summary(random_input_len=64, random_output_len=8)
    del undated["date"]
    write(raw / "bench.json", undated)
    assert run_import(raw, tmp_path / "out", "--chip", "h200").exit_code == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    assert run_dir.name == "nvidia_h200_vllm_undated"
    results = load_run(run_dir)
    assert results.metadata.timestamp is None and results.schema_version == 2
    report = (run_dir / "report.md").read_text()
    assert "(run `undated`, unknown)" in report
    assert re.search(r"^\| timestamp +\| unknown +\|", report, re.M)
    assert "the runs started at an unknown time" in (run_dir / "README.md").read_text()


def test_a_date_without_time_has_day_precision(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "bench.json", vllm_summary(date="20250312", random_input_len=64, random_output_len=8))
    assert run_import(raw, tmp_path / "out", "--chip", "h200").exit_code == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    (s,) = load_run(run_dir).scenarios
    assert (s.timestamp, s.timestamp_precision, s.timestamp_source) == ("2025-03-12", "day", "run")
    assert run_dir.name == "nvidia_h200_vllm_20250312"
    assert "2025-03-12 (date only)" in (run_dir / "report.md").read_text()


@pytest.mark.parametrize("value,precision", [("--10-15", None), ("2026-03-24", "second"), ("2026-03-24T11:23:55+00:00", "day")])
def test_a_timestamp_must_have_the_form_of_its_precision(seed_dict: dict[str, Any], value: str, precision: Any) -> None:
    seed_dict["metadata"]["timestamp"] = value
    seed_dict["metadata"]["timestamp_precision"] = precision
    with pytest.raises(ValueError, match="timestamp"):
        Results.model_validate(seed_dict)


# ---------------------------------------------------------------- 5. versions


def test_versions_from_every_key_the_clients_write(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "one" / "sglang_0707_2_32_4.jsonl", sglang_run(server_info={"version": "0.5.8.post1"}))
    write(raw / "pd" / "sglang_0707_2_32_4.jsonl",
          sglang_run(server_info={"prefill": [{"version": "0.5.5.post3"}], "decode": [{"version": "0.5.6"}]}))
    write(raw / "vllm" / "vllm_0707_2_32_4.json",
          vllm_summary(random_input_len=32, random_output_len=4, max_concurrency=2,
                       server_config={"vllm_version": "0.18.0"}, client_version="0.18.0rc1"))
    found = {}
    for sub in ("one", "pd", "vllm"):
        out = tmp_path / f"out_{sub}"
        result = run_import(raw / sub, out, "--chip", "h200")
        assert result.exit_code == 0, result.output
        (run_dir,) = out.iterdir()
        meta = load_run(run_dir).metadata
        found[sub] = (meta.engine_version, meta.client_version)
    assert found == {
        "one": ("0.5.8.post1", None),  # the server's version, not the client's
        "pd": ("0.5.5.post3 (prefill) / 0.5.6 (decode)", None),
        "vllm": ("0.18.0", "0.18.0rc1"),
    }
    (s,) = imported(tmp_path / "out_pd")
    assert "engine version 0.5.5.post3 (prefill) / 0.5.6 (decode) from the run's `server_info.version`" in s.notes


# ---------------------------------------------------------------- 6. sweep summaries, element by element


def test_sweep_summary_element_without_its_run_file_is_imported(tmp_path: Path) -> None:
    comb = tmp_path / "raw" / "20250101_120000" / "SERVE--BENCH-max_concurrency=4"
    runs = [vllm_summary(seed=i, max_concurrency=4, random_input_len=256, random_output_len=32, run_number=i)
            for i in range(3)]
    for i, run in enumerate(runs[:2]):  # run=2.json is missing: only the summary has that run
        write(comb / f"run={i}.json", json.dumps(run, indent=4))
    write(comb / "summary.json", json.dumps([dict(r, sweep_param="x") for r in runs], indent=4))
    label = "20250101_120000/SERVE--BENCH-max_concurrency=4/summary.json"
    dry = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--dry-run")
    assert dry.exit_code == 0, dry.output
    plan = [re.sub(r":\d+\[", ":[", line) for line in dry.output.splitlines()]  # pretty-printed: each element's line
    assert f"skip {label}:[0]: sweep summary element repeats run=0.json beside it (imported once, from run=0.json)" in plan
    assert f"skip {label}:[1]: sweep summary element repeats run=1.json beside it (imported once, from run=1.json)" in plan
    assert any(line.startswith(f"import {label}:[2]: ") for line in plan)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    assert re.search(rf"{re.escape(label)}: 1 sweep summary element\(s\) with no run=N.json beside them \(\d+\[2\]\): "
                     "imported from the summary", result.output)
    scenarios = imported(tmp_path / "out")
    assert len(scenarios) == 3
    by_file = sorted((Path(s.source.file).name, s) for s in scenarios if s.source)
    assert [name for name, _ in by_file] == ["run=0.json", "run=1.json", "summary.json"]
    assert_client_stats(by_file[2][1], runs[2])


# ---------------------------------------------------------------- 7. one redaction for every written file

# each form docs/PLATFORMS.md lists, with its own secret
SECRET_FORMS = {
    "S1apikeyeq": "--api-key=S1apikeyeq",
    "S2apikeysp": "--api-key S2apikeysp",
    "S3password": "-password S3password",
    "S4enveq": "--env=HF_TOKEN=S4enveq",
    "S5envsp": "--env HF_TOKEN=S5envsp",
    "S6dashe": "-e OPENAI_API_KEY=S6dashe",
    "S7assign": "HF_TOKEN=S7assign",
    "S8bearer": "-H 'Authorization: Bearer S8bearer'",
    "S9user": "-u admin:S9user",
    "S10url": "https://admin:S10url@models.example/m",
    "S11query": "https://models.example/m?api_key=S11query",
    "S12json": "--hf-overrides '{\"hf_token\": \"S12json\"}'",
}


def test_no_written_file_of_an_import_holds_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = tmp_path / "raw"
    failing = sglang_run(n=8)
    failing["errors"] = [""] * 7 + ["401 for https://admin:S13err@api.example/v1 (Authorization: Bearer S14err)"]
    write(raw / "sglang_0707_2_32_4.jsonl", failing)
    write(raw / "sglang_0707_4_32_4.jsonl", sglang_run(n=8, max_concurrency=4, errors=[""] * 8,
                                                       model="https://admin:S15model@hub.example/m"))
    server_args = "vllm serve m " + " ".join(SECRET_FORMS.values())
    argv = ["import-legacy", str(raw), "--out", str(tmp_path / "out"), "--chip", "h200", "--server-args", server_args]
    monkeypatch.setattr("sys.argv", ["sskj-results", *argv])  # the command line the provenance README quotes
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    run_dirs = list((tmp_path / "out").iterdir())
    for run_dir in run_dirs:
        report = CliRunner().invoke(main, ["report", str(run_dir), "--html", "--no-plots"])
        assert report.exit_code == 0, report.output
    assert CliRunner().invoke(main, ["collect", str(tmp_path / "out"), "--out", str(tmp_path / "out" / "runs.csv")]).exit_code == 0
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert {"results.json", "report.md", "report.html", "README.md", "runs.csv"} <= names
    secrets = [*SECRET_FORMS, "S13err", "S14err", "S15model"]
    leaks = [(p.name, s) for p in written for s in secrets if s.encode() in p.read_bytes()]
    assert leaks == []
    readme = (run_dirs[0] / "README.md").read_text()
    assert "--api-key <redacted>" in readme and "--api-key=<redacted>" in readme
    assert [s for s in secrets if s in result.output] == []


def test_the_workflow_records_where_a_run_time_came_from(tmp_path: Path) -> None:
    from sskj_results.ingest.metadata import write_metadata

    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu"}, {"server_args": "vllm serve m"},
                   detect=False)
    meta = load_run(run).metadata
    assert (meta.timestamp_precision, meta.timestamp_source) == ("second", "clock")
    assert meta.timestamp is not None and datetime.fromisoformat(meta.timestamp).tzinfo is not None
    write_metadata(run, {"timestamp": "--10-15"}, {}, detect=False)
    meta = load_run(run).metadata
    assert (meta.timestamp, meta.timestamp_precision, meta.timestamp_source) == ("--10-15", "month-day", "given")
