"""Nothing lost, everything named (issue 47): the unit of import is the line, and every file of a raw
directory is either imported or named.

Built from the real client outputs in the shared fixtures (../shared/fixtures/raw beside the repository):
each file holds one good line and one bad one, each directory good files beside bad ones. Checked for
`import-legacy` and for `parse` (a run directory whose raw file was parsed before and now holds other lines).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import display_name, load_run
from sskj_results.ingest.metadata import write_metadata

SHARED = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "raw"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="the shared raw fixtures (../shared) are not beside the repository")
CHIP = ["--chip", "cpu", "--model", "m"]
NAME = "vllm_0705_2_128_32.jsonl"  # the file every mutation is written to: its name says c2, 128, 32


def fixture_line(name: str) -> bytes:
    return (SHARED / name).read_bytes().splitlines()[0]


def good_a() -> bytes:  # sglang.bench_serving 0.5.4, concurrency 2, every request succeeded
    return fixture_line("vllm_0705_2_128_32.jsonl")


def good_b() -> bytes:  # the same client, concurrency 8
    return fixture_line("vllm_0705_8_256_64.jsonl")


def good_c() -> bytes:  # sglang.bench_serving 0.4.10.post2, concurrency 4
    return fixture_line("vllm_0705_4_64_16.jsonl")


# ---------------------------------------------------------------- the mutations that cost a good line

def _replace(line: bytes, pattern: str, repl: Callable[[re.Match[str]], str]) -> bytes:
    text = line.decode("utf-8")
    changed, n = re.subn(pattern, repl, text, count=1)
    assert n == 1, pattern
    return changed.encode("utf-8", errors="surrogatepass")


def nested_twenty_deep(line: bytes) -> bytes:
    return _replace(line, r'"completed": (\d+)', lambda m: f'"completed": {"[" * 20}{m.group(1)}{"]" * 20}')


def array_one_short(line: bytes) -> bytes:
    data = json.loads(line.decode("utf-8").replace("Infinity", "1e999"))
    ttfts = json.dumps(data["ttfts"][:-1])
    return _replace(line, r'"ttfts": \[[^\]]*\]', lambda m: f'"ttfts": {ttfts}')


def lone_surrogate_value(line: bytes) -> bytes:
    # a count replaced by a string holding a lone surrogate, escaped as Python's json writes it
    return _replace(line, r'"completed": (\d+)', lambda m: '"completed": "\\udc80"')


def lone_surrogate_text(line: bytes) -> bytes:
    # a saved output holding a lone surrogate, as bytes (a writer with errors="surrogatepass"): Python's json reads it
    return _replace(line, r'"generated_texts": \["', lambda m: m.group(0) + "\udc80")


def nan_in_errors(line: bytes) -> bytes:
    return _replace(line, r'"errors": \[""', lambda m: '"errors": [NaN')


# (mutation, refused: the line is not imported; else what the warning about it says)
MUTATIONS: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "nested twenty levels deep": (nested_twenty_deep, "refused: completed: expected a number, got list"),
    "an array one element short": (array_one_short, "refused: per-request arrays have different lengths"),
    "a lone surrogate (a count)": (lone_surrogate_value, "refused: completed: "),
    "a lone surrogate (a saved text)": (lone_surrogate_text, "imported"),
    "a NaN token in errors": (nan_in_errors, "imported: errors: 1 of "),
}


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and "internal error" not in result.stderr
    for line in result.output.splitlines():
        assert line.isprintable(), line  # one message, one line
    return result


def sources(out: Path) -> set[tuple[str, int]]:
    """(file name, line) of every imported scenario under a directory of run directories (or of one run)."""
    runs = [out] if (out / "results.json").is_file() else [p for p in out.iterdir() if not p.name.startswith(".")]
    return {(Path(s.source.file).name, s.source.line) for run in runs for s in load_run(run).scenarios
            if s.source is not None}


def named(stderr: str, name: str, line: int) -> list[str]:
    """The messages naming `name` at `line` (`name:line:` or `name:line:column:`), escaped as printed."""
    shown = display_name(name)
    return [m for m in stderr.splitlines() if re.search(rf"(^|[ /]){re.escape(shown)}:{line}:", m)]


def assert_line_outcome(result: Any, out: Path, name: str, line: int, expected: str) -> None:
    """The bad line is refused with a `skipped:` line naming it and why, or imported and named in a warning."""
    messages = named(result.stderr, name, line)
    if expected.startswith("refused: "):
        assert (name, line) not in sources(out)
        assert [m for m in messages if m.startswith("skipped: ") and expected[len("refused: "):] in m], result.stderr
    else:
        assert (name, line) in sources(out), result.stderr
        said = expected[len("imported: "):] if expected.startswith("imported: ") else ""
        assert not said or [m for m in messages if said in m], result.stderr


# ---------------------------------------------------------------- one good line, one bad line

def two_lines(mutation: str, bad_first: bool) -> tuple[bytes, int, int]:
    """A file of a good line and a bad one (the mutation of another real run): (bytes, good line, bad line)."""
    lines = [good_a(), MUTATIONS[mutation][0](good_b())]
    if bad_first:
        lines.reverse()
    return b"\n".join(lines) + b"\n", (2 if bad_first else 1), (1 if bad_first else 2)


def check_import(tmp_path: Path, mutation: str, bad_first: bool) -> None:
    expected = MUTATIONS[mutation][1]
    data, good, bad = two_lines(mutation, bad_first)
    raw = tmp_path / "import" / "raw"
    raw.mkdir(parents=True)
    (raw / NAME).write_bytes(data)
    out = tmp_path / "import" / "out"
    result = invoke("import-legacy", str(raw), "--out", str(out), *CHIP)
    assert (NAME, good) in sources(out), result.stderr
    assert_line_outcome(result, out, NAME, bad, expected)
    assert result.exit_code == (1 if expected.startswith("refused") else 0), result.output


def parsed_run(root: Path, first: bytes) -> Path:
    """A run directory whose raw file was parsed before, holding `first` then."""
    run = root / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    (run / "raw_outputs" / NAME).write_bytes(first + b"\n")
    result = invoke("parse", str(run))
    assert result.exit_code == 0, result.output
    return run


def check_parse(tmp_path: Path, mutation: str, bad_first: bool) -> None:
    expected = MUTATIONS[mutation][1]
    run = parsed_run(tmp_path / "parse", good_c())  # an earlier measurement under the same name (line 1)
    data, good, bad = two_lines(mutation, bad_first)
    (run / "raw_outputs" / NAME).write_bytes(data)  # measured again: a good run and a bad one
    result = invoke("parse", str(run))
    assert (NAME, good) in sources(run), result.stderr  # the new good line counts
    messages = named(result.stderr, f"raw_outputs/{NAME}", bad)
    if expected.startswith("refused: "):
        assert [m for m in messages if expected[len("refused: "):] in m], result.stderr
        if bad == 1:  # the scenario recorded from that line is kept (parse never forgets), and said so
            assert [m for m in messages if m.startswith("warning: ") and m.endswith("kept the scenario recorded from "
                                                                                   "this line")], result.stderr
            assert sources(run) == {(NAME, 1), (NAME, 2)}
            assert next(rf for rf in load_run(run).raw_files if rf.file == f"raw_outputs/{NAME}").damaged
        else:  # nothing was recorded from it: a bad line like any other
            assert [m for m in messages if m.startswith("skipped: ")], result.stderr
            assert result.exit_code == 1
            assert sources(run) == {(NAME, 1)}
    else:
        assert (NAME, bad) in sources(run), result.stderr
        assert result.exit_code == 0, result.output


def check_damaged_copy(tmp_path: Path, mutation: str) -> None:
    """The same run twice, the first copy damaged: the good line is imported, whatever the copy holds."""
    mutate, expected = MUTATIONS[mutation]
    raw = tmp_path / "copy" / "raw"
    raw.mkdir(parents=True)
    (raw / NAME).write_bytes(mutate(good_a()) + b"\n" + good_a() + b"\n")
    out = tmp_path / "copy" / "out"
    result = invoke("import-legacy", str(raw), "--out", str(out), *CHIP)
    assert (NAME, 2) in sources(out), result.stderr
    if expected.startswith("refused"):
        assert [m for m in named(result.stderr, NAME, 1) if m.startswith("skipped: ")], result.stderr
    else:  # both imported (two repeats), the near-copy said by its line
        assert (NAME, 1) in sources(out)
        assert [m for m in named(result.stderr, NAME, 2) if "the same measurement as line 1" in m], result.stderr


@pytest.mark.parametrize("bad_first", [False, True], ids=["good-bad", "bad-good"])
@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_good_line_beside_a_bad_one_is_imported_and_the_bad_one_named(tmp_path: Path, mutation: str,
                                                                        bad_first: bool) -> None:
    """import-legacy of the file; parse of it where an earlier measurement of the same name was parsed
    before; a damaged copy of the good line written before it."""
    check_import(tmp_path, mutation, bad_first)
    check_parse(tmp_path, mutation, bad_first)
    check_damaged_copy(tmp_path, mutation)


# ---------------------------------------------------------------- a directory: good files beside bad ones

def build_directory(raw: Path) -> dict[str, Any]:
    """Good and bad files side by side; returns what must be imported and what must be named."""
    raw.mkdir(parents=True)
    cut = good_b()[:5000]  # a client killed mid-write
    files: dict[str, bytes] = {
        "vllm_0705_2_128_32.jsonl": good_a() + b"\n",
        "vllm_0705_8_256_64.jsonl": cut,
        ".vllm_0705_4_64_16.jsonl": good_c() + b"\n",  # hidden: an editor's or rsync's partial copy
        "vllm_0705_4_64_16.jsonl~": good_c() + b"\n",  # an editor's backup
        ".vllm_0705_4_64_16.jsonl.swp": b"b0VIM 9.0\x00\x00",  # vim's swap file
        "vllm_0705_4_64_16.jsonl.bak": good_c() + b"\n",
        "new\nline_0705_4_64_16.jsonl": good_c() + b"\n" + cut,
        "crlf_0705_2_128_32.jsonl": (good_a() + b"\n" + nested_twenty_deep(good_b()) + b"\n").replace(b"\n", b"\r\n"),
        "cr_0705_2_128_32.jsonl": good_a() + b"\r" + array_one_short(good_b()) + b"\r",  # classic Mac OS line ends
        "bom_0705_4_64_16.jsonl": b"\xef\xbb\xbf" + good_c() + b"\n" + nan_in_errors(good_a()) + b"\n",
        "latin1_0705_4_64_16.jsonl": good_c() + b"\n" + good_b().replace(b'"backend": "vllm"', b'"backend": "vllm\xe9"'),
        "utf16_0705_4_64_16.jsonl": good_c().decode("utf-8").encode("utf-16"),  # PowerShell's `>`
        "notes.txt": b"measured on node 3\n",
    }
    for name, data in files.items():
        (raw / name).write_bytes(data)
    return {
        "imported": {("vllm_0705_2_128_32.jsonl", 1), ("new\nline_0705_4_64_16.jsonl", 1), ("crlf_0705_2_128_32.jsonl", 1),
                     ("cr_0705_2_128_32.jsonl", 1), ("bom_0705_4_64_16.jsonl", 1), ("bom_0705_4_64_16.jsonl", 2),
                     ("latin1_0705_4_64_16.jsonl", 1), ("utf16_0705_4_64_16.jsonl", 1)},
        "bad lines": {("vllm_0705_8_256_64.jsonl", 1): "looks truncated",
                      ("new\nline_0705_4_64_16.jsonl", 2): "looks truncated",
                      ("crlf_0705_2_128_32.jsonl", 2): "completed: expected a number, got list",
                      ("cr_0705_2_128_32.jsonl", 2): "per-request arrays have different lengths",
                      ("latin1_0705_4_64_16.jsonl", 2): "not UTF-8 text (byte 0xe9)"},
        "left out": {".vllm_0705_4_64_16.jsonl": "hidden, not read",
                     "vllm_0705_4_64_16.jsonl~": "backup copy (the name ends in ~), not read",
                     ".vllm_0705_4_64_16.jsonl.swp": "editor swap file, not read",
                     "vllm_0705_4_64_16.jsonl.bak": "backup copy (the name ends in .bak), not read",
                     "notes.txt": "not a raw output (*.jsonl or *.json), not read"},
        "warned": {("cr_0705_2_128_32.jsonl", "lines end in CR only (classic Mac OS): read with CR as the line end"),
                   ("utf16_0705_4_64_16.jsonl", "UTF-16 text, not UTF-8: read as UTF-16")},
    }


def check_directory(result: Any, imported: set[tuple[str, int]], expect: dict[str, Any], prefix: str, raw: Path) -> None:
    assert imported == expect["imported"], result.stderr
    lines = result.stderr.splitlines()
    for (name, line), why in expect["bad lines"].items():
        said = [m for m in named(result.stderr, prefix + name, line) if m.startswith("skipped: ") and why in m]
        assert len(said) == 1, (name, line, result.stderr)
    for name, why in expect["left out"].items():
        assert f"warning: {display_name(prefix + name)}: {why}" in lines, (name, result.stderr)
    for name, said in expect["warned"]:
        assert [m for m in lines if m.startswith(f"warning: {prefix}{name}: {said}")], (name, result.stderr)
    # every regular file: imported, or named in a message
    for name in os.listdir(raw):
        assert any(n == name for n, _ in imported) or display_name(prefix + name) in result.stderr, name
    assert result.exit_code == 1
    assert lines[-1].startswith(f"error: {len(expect['bad lines'])} raw run(s) not imported (listed above); ")


def test_import_a_directory_of_good_and_bad_files(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    expect = build_directory(raw)
    result = invoke("import-legacy", str(raw), "--out", str(tmp_path / "out"), *CHIP)
    check_directory(result, sources(tmp_path / "out"), expect, "", raw)
    assert result.stderr.endswith("the rest were imported\n")
    assert "warning: bom_0705_4_64_16.jsonl:2: errors: 1 of 20 entries are null" in result.stderr  # imported, said
    assert f"skipped: {raw}/'new\\nline_0705_4_64_16.jsonl':2:" in result.stderr  # quoted and escaped: one line


def test_parse_a_run_directory_of_good_and_bad_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    expect = build_directory(run / "raw_outputs")
    result = invoke("parse", str(run))
    check_directory(result, sources(run), expect, "raw_outputs/", run / "raw_outputs")


def test_a_utf16_file_is_read_and_a_utf16_or_nul_damaged_line_costs_that_line_only(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / NAME).write_bytes((good_a() + b"\n").decode("utf-8").encode("utf-16-le"))  # no byte-order mark
    mixed, nul = "vllm_0705_8_256_64.jsonl", "vllm_0705_4_64_16.jsonl"
    (raw / mixed).write_bytes(good_c().decode("utf-8").encode("utf-16") + b"\n" + good_b() + b"\n")  # one UTF-16 line
    (raw / nul).write_bytes(b"\x00" + good_b() + b"\n" + good_c() + b"\n")  # a NUL byte: damage, not UTF-16
    result = invoke("import-legacy", str(raw), "--out", str(tmp_path / "out"), *CHIP)
    assert f"warning: {NAME}: UTF-16 text, not UTF-8: read as UTF-16\n" in result.stderr
    assert sources(tmp_path / "out") == {(NAME, 1), (mixed, 2), (nul, 2)}
    assert [m for m in named(result.stderr, mixed, 1) if m.startswith("skipped: ")], result.stderr
    assert [m for m in named(result.stderr, nul, 1) if m.startswith("skipped: ")], result.stderr
    assert result.exit_code == 1


def test_mixed_line_ends_cost_no_good_line(tmp_path: Path) -> None:
    """Runs joined by a CR in a file of LF line ends, and a pretty-printed run with CR-only line ends."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / NAME).write_bytes(good_a() + b"\r" + good_b() + b"\n" + array_one_short(good_c()) + b"\n" + good_c() + b"\n")
    pretty = json.dumps(json.loads(good_c().decode("utf-8")), indent=2).encode("utf-8").replace(b"\n", b"\r")
    (raw / "vllm_0705_4_64_16.json").write_bytes(pretty + b"\r")
    result = invoke("import-legacy", str(raw), "--out", str(tmp_path / "out"), *CHIP)
    assert sources(tmp_path / "out") == {(NAME, 1), (NAME, 2), (NAME, 4), ("vllm_0705_4_64_16.json", 1)}, result.stderr
    assert [m for m in named(result.stderr, NAME, 3) if m.startswith("skipped: ") and "different lengths" in m]
    assert result.exit_code == 1


def test_a_copy_damaged_where_the_import_does_not_read_does_not_replace_its_good_line(tmp_path: Path) -> None:
    """vllm bench serve's `start_times` is not read: a copy one element short there is still not the same run."""
    good = fixture_line("vllmbench_c8_128_32.json")
    data = json.loads(good.decode("utf-8"))
    short = json.dumps(data["start_times"][:-1])
    copy = _replace(good, r'"start_times": \[[^\]]*\]', lambda m: f'"start_times": {short}')
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / NAME).write_bytes(copy + b"\n" + good + b"\n" + good + b"\n")  # the damaged copy, the run, `cat a >> a`
    result = invoke("import-legacy", str(raw), "--out", str(tmp_path / "out"), *CHIP)
    assert sources(tmp_path / "out") == {(NAME, 1), (NAME, 2)}, result.stderr
    assert [m for m in named(result.stderr, NAME, 2) if "the same measurement as line 1" in m], result.stderr
    assert f"warning: {NAME}:3: the same run as line 2 (every value equal" in result.stderr
