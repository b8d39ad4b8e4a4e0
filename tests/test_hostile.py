"""Hostile input: no traceback, no hang, and a bad file never costs a good one."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sskj_results.ingest import rawio, scenario as scenario_mod
from sskj_results.contract import io as sio
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.ingest.resume import raw_output_needs_measuring
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.sidecars import accept_length_between, prometheus_counters

from .conftest import RAW

GOOD = "vllm_0705_4_64_16.jsonl"  # a small real sglang.bench_serving line with per-request arrays
CHIP = ["--chip", "cpu", "--accelerator", "CPU", "--hardware", "2x CPU core"]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def import_dir(raw: Path, out: Path, *extra: str) -> Any:
    return invoke("import-legacy", str(raw), "--out", str(out), *CHIP, *extra)


def assert_clean(result: Any) -> None:
    """No traceback, an error is one line per message, exit code 0/1/2."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert "internal error" not in result.stderr
    assert result.exit_code in (0, 1, 2)


def good_line() -> dict[str, Any]:
    return dict(rawio.loads_lenient((RAW / GOOD).read_bytes().splitlines()[0]))


def write_line(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return path


def another_run(line: bytes, k: int = 1) -> bytes:
    """The run of `line` measured again: the same shape, other numbers (a line repeated byte for byte
    is the same run written twice, counted once)."""
    data = rawio.loads_lenient(line)
    data["duration"] += k * 1e-3
    data["ttfts"] = [t + k * 1e-6 for t in data["ttfts"]]
    return json.dumps(data).encode()


def raw_with_good(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / GOOD)
    return raw


def imported(out: Path) -> list[str]:
    return sorted(s.source.file.rsplit("/", 1)[-1] for run in out.iterdir() for s in load_run(run).scenarios
                  if s.source is not None)


# ---------------------------------------------------------------- 1. per-file / per-line isolation

def test_unexpected_exception_in_one_file_costs_that_file_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = raw_with_good(tmp_path)
    (raw / "vllm_0705_5_64_16.jsonl").write_bytes(another_run((RAW / GOOD).read_bytes()) + b"\n")
    real = scenario_mod.read_run

    def exploding(data: dict[str, Any], line: int, hints: Any = None, *rest: Any) -> Any:
        if hints is not None and hints.concurrency == 5:
            raise KeyError("surprise")
        return real(data, line, hints, *rest)

    monkeypatch.setattr(scenario_mod, "read_run", exploding)
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert f"skipped: {raw}/vllm_0705_5_64_16.jsonl:1: could not be read (KeyError: 'surprise'); skipped\n" in result.stderr
    assert result.stderr.endswith("error: 1 raw run(s) not imported (listed above); the rest were imported\n")
    written = [line for line in result.stdout.splitlines() if line.startswith("wrote ")]
    assert len(written) == 1 and imported(tmp_path / "out") == [GOOD]


def test_one_bad_line_among_good_lines(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    line = (RAW / GOOD).read_bytes().splitlines()[0]
    (raw / "vllm_0705_4_64_16.jsonl").write_bytes(line + b"\n" + line[: len(line) // 2] + b"\n" + another_run(line) + b"\n")
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert f"skipped: {raw}/vllm_0705_4_64_16.jsonl:2:3309: not valid JSON" in result.stderr  # line:column
    assert len(load_run(next((tmp_path / "out").iterdir())).scenarios) == 2


# ---------------------------------------------------------------- 2. no crash on any input

def deep(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize("payload", [
    '{"completed": 3, "x": ' + deep(5000) + "}",
    '{"completed": 3, "request_rate": Infinity, "x": ' + deep(5000, "NaN") + "}",
    deep(100000),
])
def test_deep_nesting_in_a_raw_line(tmp_path: Path, payload: str) -> None:
    raw = raw_with_good(tmp_path)
    (raw / "vllm_0705_5_64_16.jsonl").write_text(payload + "\n", encoding="utf-8")
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert f"{raw}/vllm_0705_5_64_16.jsonl:1: " in result.stderr
    assert imported(tmp_path / "out") == [GOOD]


@pytest.mark.parametrize("key,literal", [
    ("input_lens", str(2**64 + 1)), ("input_lens", "1" + "0" * 400), ("output_lens", str(2**63)),
    ("ttfts", "9" * 5000), ("duration", "1" + "0" * 400), ("max_concurrency", str(10**30)),
    ("completed", str(2**70)), ("random_input_len", str(10**20)), ("ttfts", "1e400"), ("duration", "-1e999"),
], ids=lambda v: v if len(v) < 30 else f"{len(v)}digits")
def test_huge_numbers_are_refused_per_line(tmp_path: Path, key: str, literal: str) -> None:
    raw = raw_with_good(tmp_path)
    data = good_line()
    if isinstance(data[key], list):
        data[key][0] = "@@BIG@@"
    else:
        data[key] = "@@BIG@@"
    bad = raw / "vllm_0705_5_64_16.jsonl"
    bad.write_text(json.dumps(data).replace('"@@BIG@@"', literal) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = import_dir(raw, out)
    assert_clean(result)
    for run in out.iterdir():  # whatever was written reads back
        assert load_run(run).scenarios
        assert invoke("validate", str(run / "results.json")).exit_code == 0
    assert GOOD in imported(out)


def test_input_lens_above_2_63_is_refused_at_import(tmp_path: Path) -> None:
    raw = raw_with_good(tmp_path)
    data = good_line()
    data["input_lens"][0] = 2**63 + 5
    write_line(raw / "vllm_0705_5_64_16.jsonl", data)
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert (f"skipped: {raw}/vllm_0705_5_64_16.jsonl:1: input_lens: a token count of 2^63 or more is not a real count"
            in result.stderr)
    assert imported(tmp_path / "out") == [GOOD]


def test_lone_surrogates_do_not_break_writing(tmp_path: Path) -> None:
    raw = raw_with_good(tmp_path)
    data = good_line()
    data["errors"][0] = "bad \udc80 text"
    data["backend"] = "x\ud800y"
    text = json.dumps(data)  # ensure_ascii: \udc80 escapes, as a client could write them
    (raw / "vllm_0705_5_64_16.jsonl").write_text(text + "\n", encoding="ascii")
    (raw / "vllm_0705_6_64_16.jsonl").write_bytes(
        (RAW / GOOD).read_bytes().replace(b'"backend": "vllm"', b'"backend": "v\xff\xfe"', 1))
    out = tmp_path / "out"
    result = import_dir(raw, out)
    assert_clean(result)
    run = next(out.iterdir())
    body = (run / "results.json").read_bytes()
    body.decode("utf-8")  # valid UTF-8
    results = load_run(run)
    assert any(r.error == "bad \udc80 text" for s in results.scenarios for r in s.raw_requests)
    assert invoke("report", str(run), "--no-plots").exit_code == 0


def test_nan_in_prometheus_counters() -> None:
    before = "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_accepted_tokens_total NaN\n"
    after = "vllm:spec_decode_num_drafts_total 20\nvllm:spec_decode_num_accepted_tokens_total NaN\n"
    assert "vllm:spec_decode_num_accepted_tokens_total" not in prometheus_counters(after)
    assert accept_length_between(before, after) is None
    after = "vllm:spec_decode_num_drafts_total NaN\nvllm:spec_decode_num_accepted_tokens_total 5\n"
    assert accept_length_between(before, after) is None
    assert accept_length_between("", "vllm:spec_decode_num_drafts_total +Inf\n"
                                     "vllm:spec_decode_num_accepted_tokens_total 1e308\n") is None


def test_nan_in_server_metrics_through_parse(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    metrics = run / "server_metrics"
    metrics.mkdir()
    stem = Path(GOOD).stem
    (metrics / f"{stem}.before.prom").write_text("vllm:spec_decode_num_drafts_total NaN\n"
                                                 "vllm:spec_decode_num_accepted_tokens_total 0\n")
    (metrics / f"{stem}.after.prom").write_text("vllm:spec_decode_num_drafts_total NaN\n"
                                                "vllm:spec_decode_num_accepted_tokens_total NaN\n")
    result = invoke("parse", str(run))
    assert_clean(result)
    assert result.exit_code == 0
    assert load_run(run).scenarios[0].accept_length is None


@pytest.mark.parametrize("command", ["report", "compare", "parse", "import-legacy"])
@pytest.mark.parametrize("option", ["--slo-ttft-p95-ms", "--slo-tpot-mean-ms"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-5", "1e999", "abc"])
def test_slo_options_must_be_positive_finite(tmp_path: Path, command: str, option: str, value: str) -> None:
    run = parse_run(tmp_path)
    before = (run / "results.json").read_bytes()
    args = {"report": ["report", str(run)], "compare": ["compare", str(run), str(run)], "parse": ["parse", str(run)],
            "import-legacy": ["import-legacy", str(RAW), "--out", str(tmp_path / "o"), *CHIP]}[command]
    result = invoke(*args, f"{option}={value}")
    assert_clean(result)
    assert result.exit_code == 2
    assert result.stderr == f"error: {option} {value}: must be a finite number > 0, e.g. " \
                            f"{'2000' if 'ttft' in option else '50'}\n"
    assert (run / "results.json").read_bytes() == before


@pytest.mark.parametrize("option,value,wanted", [
    ("--alpha", "nan", "between 0 and 1 (exclusive), e.g. 0.05"), ("--alpha", "0", "between 0 and 1 (exclusive), e.g. 0.05"),
    ("--alpha", "inf", "between 0 and 1 (exclusive), e.g. 0.05"), ("--alpha", "-1", "between 0 and 1 (exclusive), e.g. 0.05"),
    ("--min-change", "nan", "a finite number > 0, e.g. 0.05 for 5 %"), ("--min-change", "inf", "a finite number > 0, e.g. 0.05 for 5 %"),
    ("--min-change", "0", "a finite number > 0, e.g. 0.05 for 5 %"), ("--min-change", "-0.1", "a finite number > 0, e.g. 0.05 for 5 %"),
])
def test_compare_options_must_be_positive_finite(tmp_path: Path, option: str, value: str, wanted: str) -> None:
    run = parse_run(tmp_path)
    result = invoke("compare", str(run), str(run), "--out", str(tmp_path / "c"), option, value)
    assert_clean(result)
    assert result.exit_code == 2
    assert result.stderr == f"error: {option} {value}: must be {wanted}\n"
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_slo_next_resolution_must_be_finite(tmp_path: Path, value: str) -> None:
    run = parse_run(tmp_path)
    result = invoke("slo-next", str(run), "--input-len", "64", "--output-len", "16", "--resolution", value)
    assert result.exit_code == 2
    assert result.stderr == f"error: --resolution {value}: must be a finite number >= 0, e.g. 0.1\n"


def test_file_names_with_control_characters_stay_on_one_line(tmp_path: Path) -> None:
    raw = raw_with_good(tmp_path)
    (raw / "bad\nname\x1b[31m.jsonl").write_text("{not json\n", encoding="utf-8")
    (raw / "notes\r.txt").write_text("x", encoding="utf-8")
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert f"skipped: {raw}/'bad\\nname\\x1b[31m.jsonl':1:2: not valid JSON (unexpected character); " \
           "the last line looks truncated — was the client killed mid-write?" not in lines  # not a truncation
    assert any(line.startswith(f"skipped: {raw}/'bad\\nname\\x1b[31m.jsonl':1:2: not valid JSON") for line in lines)
    assert f"warning: 'notes\\r.txt': not a raw output (*.jsonl or *.json), not read" in lines
    assert all(ch.isprintable() for line in lines for ch in line)
    assert imported(tmp_path / "out") == [GOOD]


def test_results_json_readers_survive_deep_nesting_and_huge_numbers(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    good = json.loads((run / "results.json").read_text())
    cases = {
        "deep": json.dumps(good)[:-1] + ', "x": ' + deep(20000) + "}",
        "deep_nan": json.dumps(good)[:-1] + ', "x": ' + deep(20000, "NaN") + "}",
        "bigint": json.dumps(good).replace('"success": ', '"success": ' + "9" * 30 + "0 * ", 1).replace(" * ", "", 1),
        "hugeint": json.dumps(good).replace('"success": ', '"success": ' + "9" * 5000, 1),
        "overflow": json.dumps(good).replace('"duration_s": ', '"duration_s": 1e999, "x": ', 1),
    }
    for name, text in cases.items():
        target = tmp_path / name
        shutil.copytree(run, target)
        (target / "results.json").write_text(text, encoding="utf-8")
        before = (target / "results.json").read_bytes()
        for args in (["validate", str(target)], ["report", str(target), "--no-plots"],
                     ["compare", str(run), str(target), "--out", str(tmp_path / f"c_{name}"), "--no-plots"]):
            result = invoke(*args)
            assert_clean(result)
            assert result.exit_code == 1, (name, args, result.output)
            assert str(target / "results.json") in result.output, (name, args, result.output)
        assert (target / "results.json").read_bytes() == before
        # parse rebuilds a damaged results.json from raw_outputs/, the damaged file kept aside byte for byte
        result = invoke("parse", str(target))
        assert_clean(result)
        assert result.exit_code == 0 and str(target / "results.json") in result.output, (name, result.output)
        kept = list(target.glob("results.json.damaged-*"))
        assert len(kept) == 1 and kept[0].read_bytes() == before, (name, kept)


def test_extreme_values_reach_the_plots(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    data = json.loads((run / "results.json").read_text())
    sc = data["scenarios"][0]
    sc["request_throughput"] = 1.7e308
    sc["output_token_throughput"] = 5e-324
    sc["latencies"]["ttft_ms"].update(mean=1e308, p50=1e308, p90=1.5e308, p95=1.7e308, p99=1.79e308)
    for r in sc["raw_requests"]:
        r["ttft_ms"] = 1.7e308
        r["e2e_ms"] = 5e-324
    (run / "results.json").write_text(json.dumps(data))
    result = invoke("report", str(run))
    assert_clean(result)
    assert result.exit_code == 0, result.output
    result = invoke("compare", str(run), str(RUNS / "vllm"), "--out", str(tmp_path / "c"))
    assert_clean(result)


RUNS = Path(__file__).resolve().parent / "data" / "compare" / "runs"


# ---------------------------------------------------------------- 3. special files, sizes, case

def specials(raw: Path) -> dict[str, str]:
    """Special files named like raw outputs, and the reason each is refused."""
    os.mkfifo(raw / "vllm_0705_5_64_16.jsonl")
    sock = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(raw)  # a relative name: a socket's path is limited to 107 bytes, temporary paths can be longer
    try:
        sock.bind("vllm_0705_6_64_16.jsonl")
    finally:
        os.chdir(here)
        sock.close()
    (raw / "vllm_0705_7_64_16.jsonl").symlink_to("/dev/zero")
    (raw / "vllm_0705_9_64_16.jsonl").symlink_to(raw / "nowhere")
    (raw / "vllm_0705_10_64_16.jsonl").symlink_to(raw / "vllm_0705_10_64_16.jsonl")
    (raw / "vllm_0705_11_64_16.jsonl").mkdir()
    return {
        "vllm_0705_5_64_16.jsonl": "cannot read: a FIFO (named pipe), not a regular file; refused without reading it",
        "vllm_0705_6_64_16.jsonl": "cannot read: not a regular file (a socket or a device without a reader); refused",
        "vllm_0705_7_64_16.jsonl": "cannot read: a character device, not a regular file; refused without reading it",
        "vllm_0705_9_64_16.jsonl": "cannot read: no such file (a broken symbolic link?)",
        "vllm_0705_10_64_16.jsonl": "cannot read: symbolic link loop; refused",
        "vllm_0705_11_64_16.jsonl": "cannot read: a directory, not a regular file; refused without reading it",
    }


def test_special_files_are_refused_not_read(tmp_path: Path) -> None:
    raw = raw_with_good(tmp_path)
    expected = specials(raw)
    del expected["vllm_0705_11_64_16.jsonl"]  # import-legacy walks sub-directories, whatever their name
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    for name, reason in expected.items():
        assert f"skipped: {raw}/{name}: {reason}\n" in result.stderr
    assert imported(tmp_path / "out") == [GOOD]


def test_special_files_in_a_run_directory(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    expected = specials(run / "raw_outputs")
    result = invoke("parse", str(run))
    assert_clean(result)
    assert result.exit_code == 1
    for name, reason in expected.items():
        assert f"skipped: {run}/raw_outputs/{name}: {reason}\n" in result.stderr
    assert len(load_run(run).scenarios) == 1


@pytest.mark.parametrize("make", ["fifo", "dev", "dir", "loop"])
def test_results_json_that_is_a_special_file(tmp_path: Path, make: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    target = run / "results.json"
    if make == "fifo":
        os.mkfifo(target)
    elif make == "dev":
        target.symlink_to("/dev/zero")
    elif make == "dir":
        target.mkdir()
    else:
        target.symlink_to(target)
    for args in (["validate", str(target)], ["report", str(run), "--no-plots"],
                 ["compare", str(run), str(RUNS / "vllm"), "--out", str(tmp_path / "c")], ["parse", str(run)]):
        result = invoke(*args)
        assert_clean(result)
        assert result.exit_code in (1, 2), (args, result.output)


def test_size_limits_are_checked_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = raw_with_good(tmp_path)
    big = raw / "vllm_0705_5_64_16.jsonl"
    shutil.copy(RAW / "vllm_0705_8_256_64.jsonl", big)
    monkeypatch.setitem(sio.SIZE_LIMITS, "raw output", 50000)
    result = import_dir(raw, tmp_path / "out")
    assert result.exit_code == 1
    assert (f"skipped: {raw}/vllm_0705_5_64_16.jsonl: cannot read: {big.stat().st_size} bytes, more than the "
            "50000 bytes limit of a raw output; refused without reading it (see docs/INPUT_LIMITS.md)\n") in result.stderr
    assert imported(tmp_path / "out") == [GOOD]
    monkeypatch.setitem(sio.SIZE_LIMITS, "results.json", 100)
    run = next((tmp_path / "out").iterdir())
    result = invoke("validate", str(run))
    assert result.exit_code == 1
    assert "more than the 100 bytes limit of a results.json" in result.stdout


def test_upper_case_extensions_and_ignored_entries(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / "vllm_0705_4_64_16.JSONL")
    shutil.copy(RAW / "vllmbench_c8_128_32.json", raw / "vllmbench_c8_128_32.Json")
    (raw / "notes.txt").write_text("hello")
    (raw / "old").mkdir()
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 0, result.output
    assert "warning: notes.txt: not a raw output (*.jsonl or *.json), not read\n" in result.stderr
    assert "old" not in result.stderr  # walked: it holds nothing
    assert imported(tmp_path / "out") == ["vllm_0705_4_64_16.JSONL", "vllmbench_c8_128_32.Json"]


# ---------------------------------------------------------------- 4. unreadable files

def test_permission_denied_is_a_per_file_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = raw_with_good(tmp_path)
    locked = raw / "vllm_0705_5_64_16.jsonl"
    shutil.copy(RAW / GOOD, locked)
    real_open = os.open

    def guarded(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path) == str(locked):  # root reads anything: simulate a file of another user
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(rawio.os, "open", guarded)
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert f"skipped: {raw}/vllm_0705_5_64_16.jsonl: cannot read: permission denied\n" in result.stderr
    assert imported(tmp_path / "out") == [GOOD]


# ---------------------------------------------------------------- 5. parse never forgets a measured scenario

def parse_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    shutil.copy(RAW / GOOD, run / "raw_outputs" / GOOD)
    result = invoke("parse", str(run))
    assert result.exit_code == 0, result.output
    return run


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete", "fifo", "unreadable"])
def test_parse_keeps_a_scenario_whose_raw_file_is_damaged(tmp_path: Path, damage: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    run = parse_run(tmp_path)
    raw = run / "raw_outputs" / GOOD
    recorded = load_run(run).scenarios[0]
    assert raw_output_needs_measuring(run, GOOD) is None
    if damage == "truncate":
        raw.write_bytes(raw.read_bytes()[:1000])
    elif damage == "garbage":
        raw.write_bytes(b"\x00\xff" * 100)
    elif damage == "delete":
        raw.unlink()
    elif damage == "fifo":
        raw.unlink()
        os.mkfifo(raw)
    else:
        real_open = os.open
        monkeypatch.setattr(rawio.os, "open", lambda p, f, *a, **k: (_ for _ in ()).throw(
            PermissionError(errno.EACCES, "Permission denied", str(p))) if str(p) == str(raw) else real_open(p, f, *a, **k))
        os.utime(raw, ns=(1, 1))  # changed stamp: parse must look at the content
    result = invoke("parse", str(run))
    assert_clean(result)
    assert f"warning: raw_outputs/{GOOD}: " in result.stderr
    assert "kept its 1 recorded scenario(s) and marked it damaged (the next RESUME measures it again)" in result.stderr
    after = load_run(run)
    assert [s.name for s in after.scenarios] == [recorded.name]
    assert after.scenarios[0].latencies == recorded.latencies
    damaged = [rf for rf in after.raw_files if rf.file == f"raw_outputs/{GOOD}"]
    assert damaged and damaged[0].damaged
    assert raw_output_needs_measuring(run, GOOD) is not None
    # measured again: the scenario is read from the new file and the mark goes away
    monkeypatch.undo()
    if raw.exists() or raw.is_symlink():
        raw.unlink()
    shutil.copy(RAW / GOOD, raw)
    result = invoke("parse", str(run))
    assert result.exit_code == 0, result.output
    assert not any(rf.damaged for rf in load_run(run).raw_files)
    assert raw_output_needs_measuring(run, GOOD) is None


def test_needs_measuring_rules(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    assert raw_output_needs_measuring(run, "vllm_0705_9_64_16.jsonl") == "missing"
    (run / "raw_outputs" / "empty.jsonl").write_bytes(b"")
    assert raw_output_needs_measuring(run, "empty.jsonl") == "empty"
    line = (RAW / GOOD).read_bytes()
    (run / "raw_outputs" / "cut.jsonl").write_bytes(line + line[:500])  # killed mid-write, not parsed yet
    assert raw_output_needs_measuring(run, "cut.jsonl", ).startswith("line 2: not valid JSON")
    (run / "raw_outputs" / "fresh.jsonl").write_bytes(line)
    assert raw_output_needs_measuring(run, "fresh.jsonl") is None
    os.mkfifo(run / "raw_outputs" / "pipe.jsonl")
    assert raw_output_needs_measuring(run, "pipe.jsonl").startswith("cannot read: a FIFO")


# ---------------------------------------------------------------- 6. never write what cannot be read back

def test_save_run_refuses_what_load_run_would_reject(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    before = (run / "results.json").read_bytes()
    results = load_run(run)
    bad = results.model_copy(deep=True)
    bad.scenarios[0].raw_requests[0].input_tokens = -3  # as model_construct lets through
    with pytest.raises(sio.ResultsError, match=r"results.json: scenarios\[0\]\.raw_requests\[0\]\.input_tokens: "
                                               r"Input should be greater than or equal to 0; not written"):
        sio.save_run(bad, run)
    bad = results.model_copy(deep=True)
    bad.scenarios[0].success = 2**64
    with pytest.raises(sio.ResultsError, match=r"scenarios\[0\]\.success: integer of 65 bits is outside the 64-bit range"):
        sio.save_run(bad, run)
    bad = results.model_copy(deep=True)
    bad.scenarios[0].accept_length = float("nan")
    with pytest.raises(sio.ResultsError, match=r"scenarios\[0\]\.accept_length: number out of range"):
        sio.save_run(bad, run)
    assert (run / "results.json").read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == ["raw_outputs", "results.json"]


# ---------------------------------------------------------------- 7. write errors name the target

def test_disk_full_names_the_target_and_says_disk_full(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = parse_run(tmp_path)
    before = (run / "results.json").read_bytes()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sio.os, "fsync", full)
    (run / "raw_outputs" / GOOD).touch()
    os.utime(run / "raw_outputs" / GOOD, ns=(5, 5))
    result = invoke("parse", str(run), "--slo-tier", "S1")
    assert result.exit_code == 1
    assert result.stderr == (f"error: {run}/results.json: no space left on device (disk full); "
                             "free some space and run the command again\n")
    assert (run / "results.json").read_bytes() == before
    assert sorted(p.name for p in run.iterdir()) == ["raw_outputs", "results.json"]  # no temp file left


# ---------------------------------------------------------------- 8. output files readable by the team

def test_outputs_get_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        out = tmp_path / "out"
        assert import_dir(raw_with_good(tmp_path), out).exit_code == 0
        run = next(out.iterdir())
        assert invoke("report", str(run)).exit_code == 0
        assert invoke("compare", str(run), str(RUNS / "vllm"), "--out", str(tmp_path / "cmp")).exit_code == 0
        files = [p for p in [*run.rglob("*"), *(tmp_path / "cmp").rglob("*")] if p.is_file()]
        assert {p.name for p in files} >= {"results.json", "report.md", "README.md", "comparison.md", "comparison.json"}
        assert any(p.suffix == ".png" for p in files)
        for p in files:
            assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
        assert stat.S_IMODE(run.stat().st_mode) == 0o755
        os.umask(0o027)
        assert invoke("parse", str(parse_run(tmp_path / "second"))).exit_code == 0
        assert stat.S_IMODE((tmp_path / "second" / "run" / "results.json").stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_lone_surrogates_in_results_json_reach_report_compare_and_plots(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUNS / "vllm", run)
    data = json.loads((run / "results.json").read_text())
    data["metadata"]["engine"] = "vllm\udc80"
    data["metadata"]["description"] = "x\ud800y"
    data["scenarios"][0]["name"] = "c1\udfff"
    (run / "results.json").write_text(json.dumps(data))
    for args in (["report", str(run)], ["compare", str(run), str(RUNS / "sglang"), "--out", str(tmp_path / "c")],
                 ["validate", "--format", "json", str(run)]):
        result = invoke(*args)
        assert_clean(result)
        assert result.exit_code in (0, 1), result.output
    assert "vllm\\udc80" in (run / "report.md").read_text(encoding="utf-8")
    json.loads((tmp_path / "c" / "comparison.json").read_text(encoding="utf-8"))
    assert any((run / "plots").iterdir())


def test_a_cut_first_line_costs_that_line_only(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    line = (RAW / GOOD).read_bytes().splitlines()[0]
    (raw / GOOD).write_bytes(line[:3000] + b"\n" + line + b"\n" + another_run(line) + b"\n")
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert f"skipped: {raw}/{GOOD}:1:3001: not valid JSON" in result.stderr
    assert len(load_run(next((tmp_path / "out").iterdir())).scenarios) == 2


def test_a_first_line_with_bytes_after_its_object_costs_that_line_only(tmp_path: Path) -> None:
    # a whole object followed by more bytes on the first line: a damaged JSON Lines record, not the
    # start of one pretty-printed document; the good lines after it are imported
    raw = tmp_path / "raw"
    raw.mkdir()
    line = (RAW / GOOD).read_bytes().splitlines()[0]
    (raw / GOOD).write_bytes(line[:-1] + b'}, "max_concurrency": "\\udc80"\n' + line + b"\n" + another_run(line) + b"\n"
                           + another_run(line, 2))
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 1
    assert f"skipped: {raw}/{GOOD}:1:6615: not valid JSON" in result.stderr
    assert len(load_run(next((tmp_path / "out").iterdir())).scenarios) == 3


def test_directories_named_like_raw_files_are_listed(tmp_path: Path) -> None:
    raw = raw_with_good(tmp_path)
    (raw / "x.jsonl").mkdir()
    (raw / "y.JSON").mkdir()
    (raw / "y.JSON" / "vllm_0705_5_64_16.jsonl").write_bytes(another_run((RAW / GOOD).read_bytes()) + b"\n")
    os.mkfifo(raw / "pipe.txt")
    result = import_dir(raw, tmp_path / "out")
    assert_clean(result)
    assert result.exit_code == 0, result.output
    assert ("warning: x.jsonl: a directory named like a raw output, not a file: not read as one (empty)\n"
            in result.stderr)
    assert ("warning: y.JSON: a directory named like a raw output, not a file: not read as one "
            "(the raw files inside it are read)\n" in result.stderr)
    assert "warning: pipe.txt: not a raw output (*.jsonl or *.json), not read\n" in result.stderr
    assert imported(tmp_path / "out") == [GOOD, "vllm_0705_5_64_16.jsonl"]


_REASONS = {"fifo": "FIFO (named pipe)", "dev": "a character device", "dir": "directory", "loop": "symbolic link loop",
            "huge": "limit of a", "unreadable": "permission denied"}


def _user_commands(tmp_path: Path, run: Path, file: Path) -> list[list[str]]:
    raw = raw_with_good(tmp_path)
    return [
        ["validate", str(run)], ["validate", str(file)], ["report", str(run), "--no-plots"],
        ["compare", str(run), str(RUNS / "vllm"), "--out", str(tmp_path / "c"), "--no-plots"], ["parse", str(run)],
        ["reparse", str(run)], ["collect", str(run), "--out", str(tmp_path / "t.csv")], ["runset", str(run)],
        ["metadata", str(run), "--meta", "experiment=x", "--no-detect"],
        ["slo-next", str(run), "--input-len", "128", "--output-len", "32"], ["env", str(file)],
        ["import-legacy", str(raw), "--out", str(tmp_path / "out"), "--platform", str(file)],
    ]


@pytest.mark.parametrize("kind", sorted(_REASONS))
def test_every_command_refuses_a_special_user_path(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A results.json or config file that is a FIFO, a device, a directory, a link loop, too big or
    unreadable: every command that opens it says so in one line naming it — no hang, no traceback."""
    run = tmp_path / "run"
    shutil.copytree(RUNS / "vllm", run)
    file = run / "results.json"
    file.unlink()
    before = None
    if kind == "fifo":
        os.mkfifo(file)
    elif kind == "dev":
        file.symlink_to("/dev/zero")
    elif kind == "dir":
        file.mkdir()
    elif kind == "loop":
        file.symlink_to(file)
    else:
        shutil.copy(RUNS / "vllm" / "results.json", file)
        before = file.read_bytes()
        if kind == "huge":
            for what in ("results.json", "config file", "text file"):
                monkeypatch.setitem(sio.SIZE_LIMITS, what, 100)
        else:
            real_open = os.open

            def guarded(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
                if os.path.abspath(path) == str(file):  # root reads anything: a file of another user
                    raise PermissionError(errno.EACCES, "Permission denied", str(path))
                return real_open(path, flags, *args, **kwargs)

            monkeypatch.setattr(sio.os, "open", guarded)
    for args in _user_commands(tmp_path, run, file):
        result = invoke(*args)
        assert_clean(result)
        assert result.exit_code in (1, 2), (args, result.output)
        if result.exit_code == 2:  # click refused the path itself (a directory or link loop where a file is due)
            assert kind in ("dir", "loop"), (args, result.output)
            continue
        # the file is named (collect, which searches a directory for files, names the directory it searched)
        lines = [line for line in result.stderr.splitlines() + result.stdout.splitlines() if str(run) in line]
        assert lines, (args, result.output)
        assert any(_REASONS[kind] in line or "no results.json here or below" in line for line in lines), \
            (args, result.output)
        if before is not None:
            assert file.read_bytes() == before, args
