"""Hostile input, second round (issue 27, items 6, 8 and 9): the same run twice, every bad file named,
a writer stopped by a signal, names too long for the file system, a same-size replacement, linked runs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sskj_results.contract.io import load_run
from sskj_results.contract.names import MAX_SEGMENT, path_segment
from sskj_results.ingest.metadata import write_metadata

from .conftest import RAW
from .test_hostile import CHIP, GOOD, another_run, import_dir, imported, invoke

LINE = (RAW / GOOD).read_bytes().splitlines()[0]


def names(out: Path) -> list[str]:
    return [s.name for run in sorted(out.iterdir()) for s in load_run(run).scenarios]


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(".*"))


# ---------------------------------------------------------------- item 6: the same run twice

def test_a_line_written_twice_is_counted_once(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / GOOD).write_bytes(LINE + b"\n" + LINE + b"\n")  # `cat a >> a`
    result = import_dir(raw, tmp_path / "out", "--model", "m")
    assert result.exit_code == 0, result.output
    assert (f"warning: {GOOD}:2: the same run as line 1 (every value equal: written twice, as `cat a >> a` does); "
            "counted once, from line 1\n") in result.stderr
    assert names(tmp_path / "out") == ["c4_i64_o16"]


def test_a_copy_under_another_name_is_counted_once(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / GOOD)
    shutil.copy(RAW / GOOD, raw / "vllm_0705_4_64_16_copy.jsonl")
    sha = hashlib.sha256((RAW / GOOD).read_bytes()).hexdigest()
    result = import_dir(raw, tmp_path / "out", "--model", "m")
    assert result.exit_code == 0, result.output
    assert (f"warning: vllm_0705_4_64_16_copy.jsonl: the same bytes as {GOOD} (sha256 {sha[:12]}…): the same run(s) "
            f"under a second name; counted once, from {GOOD}\n") in result.stderr
    assert names(tmp_path / "out") == ["c4_i64_o16"]
    assert imported(tmp_path / "out") == [GOOD]


def test_two_measurements_of_one_shape_stay_two_repeats(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / GOOD).write_bytes(LINE + b"\n" + another_run(LINE) + b"\n")
    result = import_dir(raw, tmp_path / "out", "--model", "m")
    assert result.exit_code == 0, result.output
    assert "the same run" not in result.output
    assert names(tmp_path / "out") == ["c4_i64_o16", "c4_i64_o16_r2"]


def parse_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    return run


def test_parse_counts_a_repeated_line_and_a_copy_once(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    (run / "raw_outputs" / "a.jsonl").write_bytes(LINE + b"\n" + LINE + b"\n")
    shutil.copy(run / "raw_outputs" / "a.jsonl", run / "raw_outputs" / "b.jsonl")
    sha = hashlib.sha256((run / "raw_outputs" / "a.jsonl").read_bytes()).hexdigest()
    result = invoke("parse", str(run))
    assert result.exit_code == 0, result.output
    assert ("warning: raw_outputs/a.jsonl:2: the same run as line 1 (every value equal: written twice, as "
            "`cat a >> a` does); counted once, from line 1\n") in result.stderr
    assert (f"warning: raw_outputs/b.jsonl: the same bytes as raw_outputs/a.jsonl (sha256 {sha[:12]}…): the same "
            "run(s) under a second name; counted once, from raw_outputs/a.jsonl\n") in result.stderr
    results = load_run(run)
    assert [s.name for s in results.scenarios] == ["c4_i64_o16"]
    assert [(r.file, r.runs) for r in results.raw_files] == [("raw_outputs/a.jsonl", 1), ("raw_outputs/b.jsonl", 0)]


# ---------------------------------------------------------------- item 8: every bad file named

def test_good_files_beside_bad_ones_are_imported_and_each_bad_one_named(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / GOOD)
    (raw / "vllm_0705_8_64_16\nx.jsonl").write_text('{"x" 1}\n')  # a newline in the name
    (raw / "bad_pretty.json").write_text('{"a": 1,\n "b": }\n')
    shutil.copy(RAW / GOOD, raw / ".vllm_0705_2_64_16.jsonl")  # hidden: named as not read
    pretty = json.dumps(json.loads(another_run(LINE)), indent=2).replace("\n", "\r\n")
    (raw / "vllm_0705_4_64_16_pretty.json").write_bytes(pretty.encode())  # pretty-printed, CRLF
    result = import_dir(raw, tmp_path / "out", "--model", "m")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    err = result.stderr
    assert f"skipped: {raw}/'vllm_0705_8_64_16\\nx.jsonl':1:6: not valid JSON (unexpected character, expected ':' after key)\n" \
        in err  # the name escaped and quoted, on one line
    assert f"skipped: {raw}/bad_pretty.json:2:7: not valid JSON (Expecting value)\n" in err
    assert "warning: .vllm_0705_2_64_16.jsonl: hidden, not read\n" in err
    assert err.endswith("error: 2 raw run(s) not imported (listed above); the rest were imported\n")
    assert imported(tmp_path / "out") == [GOOD, "vllm_0705_4_64_16_pretty.json"]


def test_a_json_syntax_error_on_a_line_gives_its_column(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / GOOD).write_bytes(LINE + b'\n{"duration": Infinity, "completed": ]}\n')
    result = import_dir(raw, tmp_path / "out", "--model", "m")
    assert result.exit_code == 1
    assert f"skipped: {raw}/{GOOD}:2:37: not valid JSON" in result.stderr  # the `]`, past the patched Infinity


_DIE = """
import os, signal, sys, time
real = getattr(os, {call!r})
def dying(src, dst, *rest, **kw):
    if os.path.basename(str(dst)) == {target!r}:
        os.kill(os.getpid(), signal.{sig})
        time.sleep(10)  # the signal arrives here, while the new file waits beside the old one
    return real(src, dst, *rest, **kw)
setattr(os, {call!r}, dying)
from sskj_results.cli import main
main({args!r}, prog_name="sskj-results")
"""


def _default_signals() -> None:
    """The child's SIGINT as a terminal gives it: a suite started with SIGINT ignored (nohup, `trap '' INT`)
    would hand it on, and Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stopped(call: str, target: str, sig: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    code = _DIE.format(call=call, target=target, sig=sig, args=args)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=_default_signals)


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_while_parse_writes_removes_its_temporaries(tmp_path: Path, sig: str, code: int) -> None:
    run = parse_run(tmp_path)
    shutil.copy(RAW / GOOD, run / "raw_outputs" / GOOD)
    before = (run / "results.json").read_bytes()
    done = stopped("replace", "results.json", sig, ["parse", str(run)])
    assert done.returncode == code, done.stderr
    assert done.stderr == (f"error: interrupted ({sig}): nothing half-written, its temporary files removed; "
                           "what was complete before is kept\n")
    assert (run / "results.json").read_bytes() == before
    assert hidden(run) == []


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_while_import_writes_removes_its_temporaries(tmp_path: Path, sig: str, code: int) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / GOOD)
    out = tmp_path / "out"
    done = stopped("rename", "cpu_vllm_0705", sig, ["import-legacy", str(raw), "--out", str(out), *CHIP])
    assert done.returncode == code, done.stderr
    assert done.stderr.endswith(f"error: interrupted ({sig}): nothing half-written, its temporary files removed; "
                                "what was complete before is kept\n")
    assert list(out.iterdir()) == []  # neither the run directory nor its `.cpu_vllm_0705.….tmp`


# ---------------------------------------------------------------- item 9: names, quick check, links

def test_path_segment_shortens_with_a_hash() -> None:
    a, b = "x" * 300 + "_c4", "x" * 300 + "_c8"
    assert len(path_segment(a)) == MAX_SEGMENT and path_segment(a) != path_segment(b)
    assert path_segment(a) == "x" * (MAX_SEGMENT - 11) + "-" + hashlib.sha256(a.encode()).hexdigest()[:10]
    assert path_segment("c4_i64_o16") == "c4_i64_o16"
    assert path_segment("a/b c") == "a_b_c" and path_segment("..") == "scenario"


def test_300_character_scenario_names_reach_compare_and_report(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / GOOD)
    fmt = "x" * 300 + "_c{concurrency}_i{input_len}_o{output_len}"
    runs = []
    for chip in ("cpu", "cpu2"):
        result = invoke("import-legacy", str(raw), "--out", str(tmp_path / chip), "--chip", chip, "--model", "m",
                        "--name-format", fmt)
        assert result.exit_code == 0, result.output
        runs.append(str(next((tmp_path / chip).iterdir())))
    result = invoke("compare", *runs, "--out", str(tmp_path / "cmp"))
    assert result.exit_code == 0, result.output
    cdf = [p.name for p in (tmp_path / "cmp").iterdir() if p.name.startswith("cdf_")]
    assert cdf == [f"cdf_{path_segment(fmt.format(concurrency=4, input_len=64, output_len=16))}.png"]
    assert invoke("report", "--html", runs[0]).exit_code == 0


def test_quick_check_sees_a_same_size_cp_p_replacement(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    data: dict[str, Any] = json.loads(LINE)
    file = run / "raw_outputs" / GOOD
    file.write_text(json.dumps({**data, "duration": 1.5}) + "\n")
    assert invoke("parse", str(run)).exit_code == 0
    replacement = tmp_path / GOOD
    replacement.write_text(json.dumps({**data, "duration": 2.5}) + "\n")  # the same size
    st = file.stat()
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    shutil.copy2(replacement, file)  # `cp -p`: size and mtime as recorded, other content
    assert (file.stat().st_size, file.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    result = invoke("parse", str(run))
    assert result.exit_code == 0, result.output
    assert "(1 raw file(s) read, 0 unchanged)" in result.output
    assert [s.duration_s for s in load_run(run).scenarios] == [2.5]
    assert "(0 raw file(s) read, 1 unchanged)" in invoke("parse", str(run)).output  # and quick again after


def test_collect_follows_linked_run_directories_without_looping(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / GOOD, raw / GOOD)
    assert import_dir(raw, tmp_path / "runs").exit_code == 0
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "latest").symlink_to(next((tmp_path / "runs").iterdir()))
    (tree / "loop").symlink_to(tree)  # a cycle
    result = invoke("collect", str(tree), "--out", str(tmp_path / "t.csv"))
    assert result.exit_code == 0, result.output
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert len(rows) == 2 and "c4_i64_o16" in rows[1]


@pytest.mark.parametrize("delay", [0.5, 1.5, 2.5])
def test_sigterm_from_outside_at_any_moment_leaves_no_temporary(tmp_path: Path, delay: float) -> None:
    """A real `kill` at some moment of an import (starting, reading, writing or done): the command either
    finished (0), says it was interrupted (143) or had not begun; never a temporary left, never a half-written run."""
    import time

    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("vllm_0705_2_128_32.jsonl", "vllm_0705_3_8500_8.jsonl", GOOD, "vllm_0705_8_256_64.jsonl"):
        shutil.copy(RAW / name, raw / name)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "sskj_results", "import-legacy", str(raw), "--out", str(out), *CHIP],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    # -15: killed before the command began (Python still loading modules: nothing written yet) or after it
    # ended (its runs complete): either way no temporary and every run directory whole, as checked below
    assert proc.returncode in (0, 143, -signal.SIGTERM), err
    if proc.returncode == 143:
        assert err.endswith("error: interrupted (SIGTERM): nothing half-written, its temporary files removed; "
                            "what was complete before is kept\n")
    assert not out.exists() or hidden(out) == [p for p in hidden(out) if p == ".sskj-import.json"]
    for run in out.iterdir() if out.exists() else []:
        load_run(run)  # every run directory there is complete
