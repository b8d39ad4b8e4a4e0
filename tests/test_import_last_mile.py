"""Issue 36's import items, each run as the user ran it (`sskj-results import-legacy`, `parse`, `reparse`):
failures from sglang's default file names, numbers that cannot be, files lost or unnamed beside bad ones,
HARDWARE=auto, raw paths that outlive the import's directory, a folder's date, the license declaration."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.ingest.filenames import NameHints, folder_dated, name_hints, prompts_in_name
from sskj_results.ingest.metadata import write_metadata

from .test_import_field import sglang_summary as summary
from .test_import_forms import imported, run_import, sglang_run, vllm_summary, write

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "tests" / "data" / "raw"


def by_file(out: Path) -> dict[str, Any]:
    return {Path(s.source.file).name: s for s in imported(out) if s.source}


# ---------------------------------------------------------------- 1. failures from sglang's default names


def test_default_names_give_failed_and_seed_000_names_stay_concurrency(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    # sglang.bench_serving's default name for sharegpt: {backend}_{MMDD}_{num_prompts}_sharegpt
    write(raw / "sglang_0707_1000_sharegpt.jsonl", summary(completed=996, max_concurrency=64, dataset_name="sharegpt"))
    # renamed prefixes before {MMDD}_{N}_{in}_{out}: a chip, a label of the user's; N is the prompt count
    write(raw / "h200_sglang_0707_200_32_4.jsonl", summary(completed=200, max_concurrency=16))
    write(raw / "dsv4_sglang_0708_100_32_4.jsonl", summary(completed=97, max_concurrency=8))
    # seed 000's convention: N is the run's own --max-concurrency, whatever completed is
    write(raw / "sglang_0709_32_32_4.jsonl", summary(completed=320, max_concurrency=32))
    write(raw / "sglang_0710_512_32_4.jsonl", summary(completed=512, max_concurrency=512))
    result = run_import(raw, tmp_path / "out", "--chip", "h200", "--model", "m")
    assert result.exit_code == 0, result.output
    got = by_file(tmp_path / "out")
    share = got["sglang_0707_1000_sharegpt.jsonl"]
    assert (share.success, share.failed, share.num_prompts, share.concurrency) == (996, 4, 1000, 64)
    assert any(n.startswith("failed = 1000 - 996 = 4, derived from the file name") and "states the prompt count" in n
               for n in share.notes), share.notes
    chip = got["h200_sglang_0707_200_32_4.jsonl"]
    assert (chip.success, chip.failed, chip.num_prompts, chip.concurrency) == (200, 0, 200, 16)
    assert any("records max_concurrency 16, so the name's 200" in n for n in chip.notes), chip.notes
    label = got["dsv4_sglang_0708_100_32_4.jsonl"]
    assert (label.failed, label.num_prompts, label.concurrency) == (3, 100, 8)
    for name, concurrency in (("sglang_0709_32_32_4.jsonl", 32), ("sglang_0710_512_32_4.jsonl", 512)):
        team = got[name]
        assert (team.concurrency, team.failed, team.num_prompts) == (concurrency, None, None), name
        assert any("failed count unknown" in n for n in team.notes)


def test_the_rule_decides_from_the_run_itself() -> None:
    legacy = name_hints("sglang_0707_64_512_256")
    assert legacy.convention == "legacy" and legacy.concurrency == 64
    assert prompts_in_name(legacy, 60, 8) is not None and prompts_in_name(legacy, 60, 8)[0] == 64  # type: ignore[index]
    assert prompts_in_name(legacy, 64, 64) is None  # the run's own cap: the team's convention
    assert prompts_in_name(legacy, 65, None) is None  # fewer than completed: not the prompts sent
    assert prompts_in_name(name_hints("sglang_0707_1000_sharegpt"), 1001, 8) is None
    assert prompts_in_name(NameHints(), 8, None) is None


# ---------------------------------------------------------------- 2. numbers that cannot be


def test_fewer_output_tokens_than_streamed_chunks_is_flagged(tmp_path: Path) -> None:
    run = sglang_run(n=8, out_len=16)
    run["output_lens"][3] = 1  # beside 15 gaps in itls[3]
    write(tmp_path / "raw" / "sglang_0707_2_32_16.jsonl", run)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--model", "m")
    assert result.exit_code == 0, result.output
    assert ("warning: sglang_0707_2_32_16.jsonl:1: impossible value: output_lens[3] = 1 beside 15 gaps in itls[3]: "
            "a request that streamed 16 chunks has at least 16 output tokens") in result.output
    (s,) = imported(tmp_path / "out")
    assert any(n.startswith("impossible value: output_lens[3] = 1") for n in s.notes)
    consistent = sglang_run(n=8, out_len=16)
    write(tmp_path / "raw2" / "sglang_0707_2_32_16.jsonl", consistent)
    clean = run_import(tmp_path / "raw2", tmp_path / "out2", "--chip", "h200", "--model", "m")
    assert clean.exit_code == 0 and "impossible value" not in clean.output


def test_zero_duration_is_flagged_and_recorded_unknown(tmp_path: Path) -> None:
    write(tmp_path / "raw" / "sglang_0707_2_32_4.jsonl", sglang_run(n=8, duration=0, request_throughput=None,
                                                                     input_throughput=None, output_throughput=None))
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--model", "m")
    assert result.exit_code == 0, result.output
    assert "warning: sglang_0707_2_32_4.jsonl:1: impossible value: duration: 0 s for a run that completed requests" \
        in result.output
    (s,) = imported(tmp_path / "out")
    assert s.duration_s is None  # unknown, never 0
    assert s.request_throughput is None and "request_throughput" not in s.reconstructed  # nothing divided by 0


def test_validate_warns_of_a_zero_duration_an_older_import_recorded(tmp_path: Path) -> None:
    write(tmp_path / "raw" / "sglang_0707_2_32_4.jsonl", sglang_run(n=8))
    assert run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--model", "m").exit_code == 0
    (run_dir,) = (p for p in (tmp_path / "out").iterdir() if p.is_dir())
    data = json.loads((run_dir / "results.json").read_text())
    data["scenarios"][0]["duration_s"] = 0
    (run_dir / "results.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["validate", str(run_dir)])
    assert ("scenarios[0].duration_s: warning: 0 s for 8 successful requests cannot be (a run takes time); parse or "
            "import-legacy the raw file again") in result.output, result.output


def test_negative_throughputs_are_refused_naming_the_key(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "neg.json", vllm_summary(request_throughput=-1.5, output_throughput=-3.0))
    write(raw / "vllm_0705_4_64_16.jsonl", *(RAW / "vllm_0705_4_64_16.jsonl").read_text().splitlines())
    write(raw / "negstat.json", vllm_summary(mean_ttft_ms=-2.0))
    result = run_import(raw, tmp_path / "out", "--chip", "h200", "--model", "m")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert (f"skipped: {raw}/neg.json:1: request_throughput: -1.5 is negative, and a throughput cannot be: the file is "
            "damaged or was edited; correct it or remove the key (an absent key is unknown), or measure the run "
            "again") in lines
    assert any(line.startswith(f"skipped: {raw}/negstat.json:1: mean_ttft_ms: -2 is negative, and a latency statistic")
               for line in lines), lines
    assert "ValidationError" not in result.output and "validation error" not in result.output
    assert set(by_file(tmp_path / "out")) == {"vllm_0705_4_64_16.jsonl"}  # the good neighbour is imported


def test_a_value_results_json_cannot_hold_is_named_by_its_field_not_pydantics_summary() -> None:
    from pydantic import ValidationError

    from sskj_results.contract.models import RawFile
    from sskj_results.ingest.scenario import unexpected

    with pytest.raises(ValidationError) as info:
        RawFile(file="x", sha256="0" * 64, size=-1, runs=1)
    said = unexpected(info.value)
    assert said.startswith("size: Input should be greater than or equal to 0: the run's value cannot be recorded")
    assert "validation error" not in said


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "sglang", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "python -m sglang.launch_server --model m"}, detect=False)
    return run


def test_parse_warns_of_impossible_values_in_the_run_loops_raw_outputs(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    bad = sglang_run(n=8, out_len=16)
    bad["output_lens"][0] = 2
    write(run / "raw_outputs" / "cpu_sglang_0707_2_32_16.jsonl", bad)
    result = CliRunner().invoke(main, ["parse", str(run)])
    assert result.exit_code == 0, result.output
    assert ("warning: raw_outputs/cpu_sglang_0707_2_32_16.jsonl:1: impossible value: output_lens[0] = 2 beside 15 "
            "gaps in itls[0]") in result.output


# ---------------------------------------------------------------- 3. no good run lost, every bad file named


def test_good_runs_beside_damaged_ones_and_odd_names_are_all_kept_or_named(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    lines = [(RAW / n).read_text().splitlines()[0] for n in ("vllm_0705_2_128_32.jsonl", "vllm_0705_4_64_16.jsonl",
                                                              "vllm_0705_8_256_64.jsonl")]
    pretty = json.dumps(json.loads(lines[0]), indent=2).replace("\n", "\r\n")
    raw.mkdir()
    # a pretty-printed run with CRLF ends, cut short, then two good JSON Lines records
    (raw / "mixed.jsonl").write_bytes((pretty[:3000] + "\r\n" + lines[1] + "\r\n" + lines[2] + "\r\n").encode())
    # a whole pretty-printed CRLF run: imported
    (raw / "pretty_crlf.json").write_bytes(pretty.encode())
    # bad files whose names hold a newline, bytes that are not UTF-8, non-ASCII letters
    odd = ["new\nline.jsonl", os.fsdecode(b"bad\xff\xfe.jsonl"), "uni-é-名.jsonl"]
    for name in odd:
        (raw / name).write_bytes(lines[1][:120].encode() + b"\n")
    result = run_import(raw, tmp_path / "out", "--chip", "cpu", "--model", "m")
    assert result.exit_code == 1
    got = sorted((Path(s.source.file).name, s.source.line) for s in imported(tmp_path / "out"))
    assert got == [("mixed.jsonl", 131), ("mixed.jsonl", 132), ("pretty_crlf.json", 1)], got
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped:")]
    assert f"skipped: {raw}/mixed.jsonl:1: not valid JSON (the object is not closed before line 131)" in skipped
    for name in odd:
        shown = repr(name) if not name.isprintable() or "\udcff" in name else name
        assert any(re.search(re.escape(shown) + r":1:\d+: not valid JSON", line) for line in skipped), (shown, skipped)
    assert all(line.isprintable() for line in result.output.splitlines())


def test_a_pretty_printed_run_after_json_lines_is_one_run_not_hundreds_of_bad_lines(tmp_path: Path) -> None:
    lines = [(RAW / n).read_text().splitlines()[0] for n in ("vllm_0705_2_128_32.jsonl", "vllm_0705_4_64_16.jsonl",
                                                              "vllm_0705_8_256_64.jsonl")]
    pretty = json.dumps(json.loads(lines[0]), indent=2)
    raw = tmp_path / "raw"
    raw.mkdir()
    # `cat a.jsonl b.json c.jsonl`, and a stray `{` line before a good record
    other = (RAW / "vllm_0705_3_8500_8.jsonl").read_text().splitlines()[0]
    (raw / "cat.jsonl").write_text("\n".join([lines[1], pretty, lines[2], "{", other]) + "\n")
    result = run_import(raw, tmp_path / "out", "--chip", "cpu", "--model", "m")
    assert result.exit_code == 1
    end = 2 + pretty.count("\n")
    got = sorted(s.source.line for s in imported(tmp_path / "out"))
    assert got == [1, 2, end + 1, end + 3], got
    skipped = [line for line in result.output.splitlines() if line.startswith("skipped:")]
    assert skipped == [f"skipped: {raw}/cat.jsonl:{end + 2}: not valid JSON (the object is not closed before line "
                       f"{end + 3})"], skipped


# ---------------------------------------------------------------- 4. what a new user hit


def test_platform_with_hardware_auto_records_unknown_hardware(tmp_path: Path) -> None:
    write(tmp_path / "raw" / "vllm_0705_4_64_16.jsonl", *(RAW / "vllm_0705_4_64_16.jsonl").read_text().splitlines())
    result = run_import(tmp_path / "raw", tmp_path / "out", "--platform", "cpu", "--model", "m")
    assert result.exit_code == 0, result.output
    assert "warning: platform cpu: HARDWARE=auto describes the machine a run runs on" in result.output
    (run_dir,) = (p for p in (tmp_path / "out").iterdir() if p.is_dir())
    meta = load_run(run_dir).metadata
    assert (meta.chip, meta.accelerator, meta.hardware) == ("cpu", "CPU", None)
    given = run_import(tmp_path / "raw", tmp_path / "out2", "--platform", "cpu", "--model", "m", "--hardware", "2x EPYC")
    assert given.exit_code == 0 and "HARDWARE=auto" not in given.output
    (run_dir,) = (p for p in (tmp_path / "out2").iterdir() if p.is_dir())
    assert load_run(run_dir).metadata.hardware == "2x EPYC"


def test_reparse_finds_raw_files_imported_from_a_relative_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    write(work / "raw" / "vllm_0705_4_64_16.jsonl", *(RAW / "vllm_0705_4_64_16.jsonl").read_text().splitlines())
    monkeypatch.chdir(work)
    result = CliRunner().invoke(main, ["import-legacy", "raw", "--out", "imported", "--chip", "cpu", "--model", "m"])
    assert result.exit_code == 0, result.output
    (run_dir,) = (p for p in (work / "imported").iterdir() if p.is_dir())
    results = load_run(run_dir)
    assert results.raw_files[0].file == str(work / "raw" / "vllm_0705_4_64_16.jsonl")
    assert all(Path(s.source.file).is_absolute() for s in results.scenarios if s.source)
    monkeypatch.chdir(tmp_path)
    again = CliRunner().invoke(main, ["reparse", str(run_dir), "--no-plots"])
    assert again.exit_code == 0, again.output
    assert "raw files missing" not in again.output


def test_a_folders_date_gives_mmdd_names_their_year(tmp_path: Path) -> None:
    raw = tmp_path / "dsv4_backend_comparison_20260707" / "raw_outputs"
    write(raw / "sglang_0707_32_32_4.jsonl", summary(completed=320, max_concurrency=32))
    result = run_import(raw, tmp_path / "out", "--chip", "h200", "--model", "m")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.timestamp, s.timestamp_precision, s.timestamp_source) == ("2026-07-07", "day", "file name")
    assert "run date 2026-07-07: the file name's month and day, in the year of its folder " \
        "dsv4_backend_comparison_20260707 (the name holds no year)" in s.notes
    (run_dir,) = (p for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert run_dir.name.endswith("_20260707")


def test_folder_dates_only_date_names_near_them() -> None:
    hints = name_hints("sglang_0102_32_32_4")
    # New Year: 0102 beside a folder of 20261231 is 2027-01-02
    assert folder_dated(hints, Path("/d/bench_20261231/x.jsonl")).when.year == 2027  # type: ignore[union-attr]
    # months away from the folder's date: the year stays unknown
    assert folder_dated(hints, Path("/d/bench_20260707/x.jsonl")).when is None
    # a date in the name wins; a folder without a date changes nothing
    assert folder_dated(name_hints("sglang_0707_32_32_4"), Path("/d/plain/x.jsonl")).when is None
    assert folder_dated(name_hints("run_2026-03-24"), Path("/d/bench_20260707/x.jsonl")).when.month == 3  # type: ignore[union-attr]


# ---------------------------------------------------------------- 5. the license declaration


def test_license_is_an_spdx_string_for_setuptools_77() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"  # a TOML table stops working in February 2027
    requires = project["build-system"]["requires"]
    assert "setuptools>=77" in requires  # the first setuptools that reads an SPDX expression
