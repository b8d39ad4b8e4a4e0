"""A fuzzer of sskj-results' readers: real inputs, mutated, fed to the commands in-process.

Every case is built from one random generator seeded with (seed, case number),
so any case can be replayed alone (`run_fuzz.py --case N`). A case is one of:

* ``import``: a raw directory holding a real raw output (the good file) and one
  or two mutated ones (truncated, bytes flipped, a value swapped for another
  type, nested thousands of levels deep, huge or tiny numbers, invalid UTF-8,
  lone surrogates, CR-only line ends, control characters in the name,
  upper-case extensions, hidden, backup and swap-file names, special files:
  FIFO, socket, device, broken or looping symlink, directory);
  `import-legacy` runs on it.
* ``lines``: one file of several real runs (LF, CRLF or CR-only line ends),
  one line mutated or a mutated copy of a line written before it;
  `import-legacy` runs on it, or `parse` where a file of that name was parsed
  before: every good line is imported, the bad one named with its line.
* ``parse``: a run directory already parsed from the good file; mutated raw
  outputs and side files (server metrics, accelerator logs, the skipped list)
  are added, or the recorded raw file is damaged; `parse` runs on it.
* ``results``: a real results.json, mutated; `validate`, `report`, `compare`
  and `parse` run on it.
* ``options``: a command run with hostile option values.

Checked for every case: no uncaught exception and no "internal error" (the
CLI's last resort); every message is one printable line; exit codes 0, 1 or
2 only; every raw file that was not imported is named in a message; the good
file next to bad ones is imported; a results.json is byte-identical after any
failed command, and no temporary file is left behind.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import socket
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.ingest.metadata import write_metadata
from sskj_results.contract.io import display_name

DATA = Path(__file__).resolve().parents[1] / "data"
RAW = DATA / "raw"
RUNS = DATA / "compare" / "runs"
GOOD = "vllm_0705_4_64_16.jsonl"
CHIP = ["--chip", "cpu", "--accelerator", "CPU", "--hardware", "2x CPU core"]

KINDS = ("import", "import", "import", "lines", "parse", "parse", "results", "results", "options")


@dataclass
class Failure:
    case: int
    kind: str
    mutation: str
    message: str

    def __str__(self) -> str:
        return f"case {self.case} ({self.kind}: {self.mutation}): {self.message}"


@dataclass
class Case:
    number: int
    rng: random.Random
    root: Path
    kind: str = ""
    mutation: str = ""
    failures: list[Failure] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.failures.append(Failure(self.number, self.kind, self.mutation, message))


# ---------------------------------------------------------------- mutations of bytes and values

def _raw_sources() -> list[Path]:
    return sorted(p for p in RAW.iterdir() if p.suffix in (".jsonl", ".json"))


def _huge_literal(rng: random.Random) -> str:
    return rng.choice([
        str(2**63), str(2**64 + 7), str(-(2**63) - 1), "1" + "0" * rng.choice([30, 309, 400, 4300, 5000]),
        "1e400", "-1e999", "1.7976931348623157e308", "1.7e308", "5e-324", "-5e-324", "1e-400", "4.9e-324",
        "NaN", "Infinity", "-Infinity", "0", "-0.0", "-1", "123456789012345678901234567890.5",
    ])


def _deep(rng: random.Random, inner: str = "1") -> str:
    levels = rng.choice([100, 600, 1100, 3000, 20000])
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
    return opener * levels + inner + closer * levels


def _swap_value(rng: random.Random) -> str:
    return rng.choice([
        '"text"', "null", "true", "[]", "{}", '[1, "a", null]', '{"x": 1}', '"\\udc80"', '"\\ud800x"',
        '["\\udcff"]', _huge_literal(rng), _deep(rng), _deep(rng, "NaN"), _deep(rng, "Infinity"), '""',
        "[" + ", ".join([_huge_literal(rng)] * 3) + "]", "-3", "0.5", '"inf"', '"nan"', '"12"',
    ])


def _value_spans(text: str) -> list[tuple[int, int]]:
    """Rough spans of values after `"key": ` in a JSON text (numbers, strings, literals, arrays of numbers)."""
    spans = []
    for m in re.finditer(r'"[A-Za-z0-9_.]+":\s*', text):
        start = m.end()
        if start >= len(text):
            continue
        c = text[start]
        if c == "[":
            depth, end = 0, start
            while end < len(text):
                if text[end] == "[":
                    depth += 1
                elif text[end] == "]":
                    depth -= 1
                    if depth == 0:
                        break
                end += 1
            spans.append((start, min(end + 1, len(text))))
        elif c == '"':
            end = text.find('"', start + 1)
            spans.append((start, end + 1 if end > 0 else len(text)))
        else:
            m2 = re.match(r"[-+0-9.eEa-zA-Z]+", text[start:])
            if m2:
                spans.append((start, start + m2.end()))
    return spans


def _array_element_spans(text: str) -> list[tuple[int, int]]:
    """Spans of numbers inside per-request arrays."""
    spans = []
    for key in ("input_lens", "output_lens", "ttfts", "itls", "latencies"):
        m = re.search(rf'"{key}":\s*\[', text)
        if not m:
            continue
        for n in re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text[m.end():m.end() + 2000]):
            spans.append((m.end() + n.start(), m.end() + n.end()))
    return spans


_NUMBER_VALUE = re.compile(r'("([A-Za-z0-9_]+)":\s*)(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?=\s*[,}\]])')


def _absurd_numbers(rng: random.Random, text: str) -> tuple[str, int]:
    """Numbers that keep their type but lose their sense: negative counts and times, zero durations,
    a P99 below the median."""
    count = 0

    def change(m: "re.Match[str]") -> str:
        nonlocal count
        if rng.random() > 0.3:
            return m.group(0)
        count += 1
        key, value = m.group(2), m.group(3)
        is_int = re.fullmatch(r"-?\d+", value) is not None
        if "p99" in key or "p95" in key:
            new = "0" if is_int else "0.001"
        else:
            new = rng.choice(["-1", "0", "-" + value.lstrip("-"), "3" if is_int else "1e-9"])
        return m.group(1) + new

    return _NUMBER_VALUE.sub(change, text), count


def mutate_text(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One mutation of a JSON (or JSON Lines) document, and its name."""
    choice = rng.choice(["truncate", "flip", "swap", "swap", "array", "deep", "huge", "utf8", "surrogate",
                         "duplicate", "empty", "blank", "nul", "key", "encoding", "crlf", "cr", "dupkey", "absurd",
                         "pretty"])
    if choice == "pretty":  # pretty-printed (indented, LF or CRLF line ends), then perhaps damaged as well
        return _pretty(rng, data)
    if choice == "truncate":
        return data[: rng.randrange(0, max(1, len(data)))], choice
    if choice == "flip":
        buf = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if buf:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf), choice
    if choice == "utf8":
        buf = bytearray(data)
        pos = rng.randrange(len(buf) + 1) if buf else 0
        buf[pos:pos] = rng.choice([b"\xff", b"\xfe\xfe", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"])
        return bytes(buf), choice
    if choice == "empty":
        return b"", choice
    if choice == "blank":
        return b"\n \n\t\n", choice
    if choice == "nul":
        return b"\x00" * rng.randint(1, 5000), choice
    if choice == "encoding":  # a byte-order mark, UTF-16, or NUL bytes inside the text
        how = rng.choice(["bom", "utf16", "nul-inside"])
        if how == "bom":
            return b"\xef\xbb\xbf" + data, "utf8-bom"
        if how == "utf16":
            return data.decode("utf-8", errors="replace").encode(rng.choice(["utf-16", "utf-16-le"])), "utf16"
        buf = bytearray(data)
        pos = rng.randrange(len(buf) + 1) if buf else 0
        buf[pos:pos] = b"\x00" * rng.randint(1, 3)
        return bytes(buf), "nul-inside"
    if choice == "crlf":
        return data.replace(b"\n", b"\r\n") if b"\n" in data else data + b"\r\n", choice
    if choice == "cr":  # classic Mac OS line ends: CR only
        return data.replace(b"\n", b"\r") if b"\n" in data else data + b"\r", choice
    if choice == "duplicate":
        lines = data.splitlines(keepends=True) or [data]
        return b"".join(lines * rng.randint(2, 3)), choice
    text = data.decode("utf-8", errors="replace")
    if choice == "dupkey":  # a key written twice: JSON readers keep the last one
        m = re.search(r'"([A-Za-z0-9_]+)":\s*', text)
        if m:
            dup = f'"{m.group(1)}": {_swap_value(rng)}, '
            text = text[:m.start()] + dup + text[m.start():] if rng.random() < 0.5 else \
                text[:m.start()] + text[m.start():].replace(m.group(0), m.group(0) + _swap_value(rng) + ", " + m.group(0), 1)
            return text.encode("utf-8", errors="surrogatepass"), choice
        return data, choice
    if choice == "absurd":  # numbers of the right type but absurd: negative, zero, percentiles out of order
        out, n = _absurd_numbers(rng, text)
        return out.encode("utf-8", errors="surrogatepass"), f"absurd ({n} numbers)"
    if choice in ("swap", "huge", "surrogate", "deep", "key"):
        spans = _value_spans(text)
        if not spans:
            return data[: len(data) // 2], "truncate"
        for _ in range(rng.randint(1, 3)):
            spans = _value_spans(text)
            start, end = rng.choice(spans)
            if choice == "huge":
                new = _huge_literal(rng)
            elif choice == "surrogate":
                new = rng.choice(['"\\udc80"', '"a\\ud83d"', '"\\udfff\\ud800"'])
            elif choice == "deep":
                new = _deep(rng, rng.choice(["1", "NaN", "Infinity", '"x"']))
            elif choice == "key":
                new = text[start:end]
                text = text[:start] + new + ', "' + rng.choice(["completed", "max_concurrency", "errors", "itls",
                                                              "x" * 5]) + '": ' + _swap_value(rng) + text[end:]
                continue
            else:
                new = _swap_value(rng)
            text = text[:start] + new + text[end:]
        return text.encode("utf-8", errors="surrogatepass"), choice
    spans = _array_element_spans(text)  # "array": a number inside a per-request array
    if not spans:
        return mutate_text(rng, data)
    for _ in range(rng.randint(1, 3)):
        start, end = rng.choice(spans)
        text = text[:start] + rng.choice([_huge_literal(rng), '"x"', "null", "[]", "-1", "1.5", "true"]) + text[end:]
        spans = _array_element_spans(text)
        if not spans:
            break
    return text.encode("utf-8", errors="surrogatepass"), choice


def _pretty(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """The first run of a document, indented as `json.dump(indent=…)` writes it, with LF or CRLF line ends; half
    the time damaged after that (truncated, a byte flipped, a line removed)."""
    import json
    try:
        first = json.loads(data.splitlines()[0]) if data.strip() else {}
    except (ValueError, IndexError):
        return data, "pretty (not JSON: unchanged)"
    ends = rng.choice([b"\n", b"\r\n"])
    body = json.dumps(first, indent=rng.choice([1, 2, 4])).encode().replace(b"\n", ends)
    how = "pretty" + ("-crlf" if ends == b"\r\n" else "")
    damage = rng.choice(["", "", "truncate", "flip", "drop-line"])
    if damage == "truncate":
        body = body[: rng.randrange(1, max(2, len(body)))]
    elif damage == "flip" and body:
        buf = bytearray(body)
        buf[rng.randrange(len(buf))] = rng.choice(b"{}[],:\"x0")
        body = bytes(buf)
    elif damage == "drop-line":
        lines = body.split(ends)
        if len(lines) > 2:
            del lines[rng.randrange(1, len(lines) - 1)]
        body = ends.join(lines)
    return body, how + (f" {damage}" if damage else "")


SPECIALS = ("fifo", "socket", "device", "broken-link", "loop-link", "directory", "link-to-dir")


def make_special(rng: random.Random, path: Path, kind: Optional[str] = None) -> str:
    kind = kind or rng.choice(SPECIALS)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(str(path))
        except OSError:  # path too long for a socket: a FIFO instead
            os.mkfifo(path)
        finally:
            sock.close()
    elif kind == "device":
        path.symlink_to(rng.choice(["/dev/zero", "/dev/null", "/dev/urandom"]))
    elif kind == "broken-link":
        path.symlink_to(path.parent / "does-not-exist")
    elif kind == "loop-link":
        path.symlink_to(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(path.parent)
    return kind


def _bad_name(rng: random.Random, n: int) -> str:
    stem = f"vllm_0705_{n}_64_16"
    return rng.choice([
        stem + ".jsonl", stem + ".JSONL", stem + ".Json", f"bad\nname{n}.jsonl", f"tab\there{n}.jsonl",
        f"esc\x1b[31m{n}.jsonl", f"cr\r{n}.json", f"uni-{n}-é.jsonl", f"sp ace {n}.jsonl", f"-dash{n}.jsonl",
        # names that are not plain ASCII: bytes that are not UTF-8, decomposed accents, a right-to-left override,
        # a zero-width space, CJK, an emoji, both quotes beside a newline
        os.fsdecode(b"raw\xff\xfe" + str(n).encode() + b".jsonl"), os.fsdecode(b"lat\xe9" + str(n).encode() + b".json"),
        f"cafe\u0301-{n}.jsonl", f"\u202e{n}lmosj.jsonl", f"zero\u200bwidth{n}.jsonl", f"結果_{n}.jsonl",
        f"run-{n}-\U0001f680.jsonl", f"q'\"\n{n}.jsonl", f"{stem}\u00a0.jsonl",
        # left out on purpose, and named: hidden, a backup, an editor's swap or auto-save file
        f".{stem}.jsonl", f"{stem}.jsonl~", f"{stem}.jsonl.bak", f".{stem}.jsonl.swp", f"#{stem}.jsonl#",
    ])


# ---------------------------------------------------------------- running and checking

def invoke(case: Case, *args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=True)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
        case.fail(f"uncaught {type(exc).__name__} in `{' '.join(args[:1])}`: {detail.strip()[-600:]}")
    if "internal error" in result.stderr or "Traceback" in result.output:
        case.fail(f"`{args[0]}` ended in an internal error: {result.stderr.strip()[-400:]}")
    if result.exit_code not in (0, 1, 2):
        case.fail(f"`{args[0]}` exit code {result.exit_code}")
    for line in result.output.split("\n"):
        if not all(ch.isprintable() for ch in line):
            case.fail(f"`{args[0]}` printed a line with control characters: {line[:120]!r}")
            break
    return result


def named(name: str, text: str) -> bool:
    """A message names the file: as it is, or quoted (escaped) when it holds control characters."""
    shown = display_name(name)
    return shown in text or (shown != name and repr(name)[1:-1] in text)


def has_line_number(name: str, text: str) -> bool:
    """A message names the file with a line number after it: `name:12` (or its escaped form)."""
    shown = display_name(name)
    forms = {shown} | ({repr(name)[1:-1]} if shown != name else set())
    return any(re.search(re.escape(form) + r"(?:'|\")?:\d+", text) for form in forms)


def _has_lines(data: bytes) -> bool:
    """The file has lines to point at: a line break and a line that is not blank."""
    return b"\n" in data and bool(data.strip())


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.name.endswith(".tmp"))


def _imported_sources(out: Path) -> set[str]:
    found: set[str] = set()
    if not out.is_dir():
        return found
    for run in out.iterdir():
        if run.name.startswith("."):
            continue
        for s in load_run(run).scenarios:
            if s.source is not None:
                found.add(Path(s.source.file).name)
    return found


def case_import(case: Case) -> None:
    rng = case.rng
    raw = case.root / "raw"
    raw.mkdir()
    good = raw / GOOD
    shutil.copy(RAW / GOOD, good)
    bad: list[str] = []
    names: list[str] = []
    lined: set[str] = set()  # bad files that have lines: a message about them gives one
    for n in range(rng.randint(1, 2)):
        name = _bad_name(rng, 5 + n)
        path = raw / name
        if rng.random() < 0.2:
            kind = make_special(rng, path)
            names.append(kind)
            if kind == "directory":  # import-legacy walks sub-directories, whatever their name
                continue
        else:
            source = rng.choice(_raw_sources())
            data, how = mutate_text(rng, source.read_bytes())
            path.write_bytes(data)
            names.append(how)
            if _has_lines(data):
                lined.add(name)
        bad.append(name)
    case.mutation = ", ".join(names)
    out = case.root / "out"
    result = invoke(case, "import-legacy", str(raw), "--out", str(out), *CHIP)
    if case.failures:
        return
    try:
        imported = _imported_sources(out)
    except Exception as exc:  # noqa: BLE001
        case.fail(f"a written run does not load back: {exc}")
        return
    if GOOD not in imported:
        case.fail(f"the good file was not imported (exit {result.exit_code}): {result.stderr.strip()[-400:]}")
    for name in bad:
        if name in imported:
            continue
        if not any(named(name, line) for line in result.stderr.splitlines()):
            case.fail(f"{display_name(name)} was not imported and no message names it: {result.stderr.strip()[-400:]}")
    for name in lined:
        for line in result.stderr.splitlines():
            if line.startswith("skipped:") and named(name, line) and not has_line_number(name, line):
                case.fail(f"a message about {display_name(name)} (which has lines) gives no line number: {line[:300]}")
    if result.exit_code == 0 and any(line.startswith("skipped:") for line in result.stderr.splitlines()):
        case.fail("runs were skipped but the exit code is 0")
    if _leftovers(case.root):
        case.fail(f"temporary files left: {_leftovers(case.root)}")
    written = [line[len("wrote "):] for line in result.stdout.splitlines() if line.startswith("wrote ")]
    if len(written) != len([p for p in out.iterdir() if not p.name.startswith(".")]):
        case.fail(f"wrote {len(written)} run directories but the output holds others: {sorted(os.listdir(out))}")
    for run in written:  # validate may flag the client's own inconsistent numbers, recorded as they are
        invoke(case, "validate", run)


def case_lines(case: Case) -> None:
    """One JSON Lines file of several real runs (LF, CRLF or CR-only line ends), one line mutated, or a mutated
    copy of a line written before it: the other lines are imported, by `import-legacy` or by `parse` of a run
    directory whose raw file of that name was parsed before."""
    rng = case.rng
    lines = [p.read_bytes().splitlines()[0] for p in _raw_sources() if p.suffix == ".jsonl"]
    rng.shuffle(lines)
    lines = lines[: rng.randint(2, len(lines))]
    bad_index = rng.randrange(len(lines))
    mutated, case.mutation = mutate_text(rng, lines[bad_index])
    copy = rng.random() < 0.25  # a damaged copy written before its good line: both are there
    case.mutation += f" ({'a copy of ' if copy else ''}line {bad_index + 1} of {len(lines)})"
    body_lines = lines[:bad_index] + [mutated] + lines[bad_index + (0 if copy else 1):]
    end = rng.choice([b"\n", b"\n", b"\r\n", b"\r"])
    case.mutation += {b"\n": "", b"\r\n": ", CRLF", b"\r": ", CR only"}[end]
    body = end.join(body_lines)
    if rng.random() < 0.8:
        body += end
    name = GOOD
    before = hashlib.sha256((RAW / GOOD).read_bytes()).hexdigest()
    parse = rng.random() < 0.3
    if parse:
        case.mutation += ", parse"
        out = _parsed_run(case)  # GOOD's run recorded from line 1 of a file of the same name
        (out / "raw_outputs" / name).write_bytes(body)
        result = invoke(case, "parse", str(out))
    else:
        raw = case.root / "raw"
        raw.mkdir()
        (raw / name).write_bytes(body)
        out = case.root / "out"
        result = invoke(case, "import-legacy", str(raw), "--out", str(out), *CHIP)
    if case.failures:
        return
    try:
        runs = [out] if parse else [run for run in out.iterdir() if not run.name.startswith(".")]
        # read from the file as it is now (parse keeps a scenario recorded from a line now bad: not counted)
        count = sum(1 for run in runs for s in load_run(run).scenarios if s.source and s.source.sha256 != before)
    except Exception as exc:  # noqa: BLE001
        case.fail(f"a written run does not load back: {exc}")
        return
    good_lines = len(lines) - (0 if copy else 1)
    if count < good_lines:
        case.fail(f"{count} scenario(s) imported from {good_lines} good line(s): {result.stderr.strip()[-400:]}")
    if count < len(body_lines) and mutated.strip() and not has_line_number(name, result.stderr):
        case.fail(f"a line was not imported and no message names it with its line: {result.stderr.strip()[-400:]}")


def _parsed_run(case: Case) -> Path:
    run = case.root / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    shutil.copy(RAW / GOOD, run / "raw_outputs" / GOOD)
    result = CliRunner().invoke(main, ["parse", str(run)])
    assert result.exit_code == 0, result.output
    return run


def _side_text(rng: random.Random, kind: str) -> bytes:
    if kind == "prom":
        lines = ["# HELP x", "vllm:spec_decode_num_drafts_total " + rng.choice(["10", "NaN", "+Inf", "-Inf", "1e308", "x", "-5"]),
                 "vllm:spec_decode_num_accepted_tokens_total{a=\"b\"} " + rng.choice(["7", "NaN", "1e999", "", "0"])]
        return "\n".join(lines).encode()
    if kind == "csv":
        header = rng.choice(["index, utilization.gpu [%], memory.used [MiB], power.draw [W]", "", "a,b", '"unterminated'])
        rows = [", ".join(rng.choice(["0", "50 %", "1e400", "NaN", "\x00", "9" * 5000, "x", ""]) for _ in range(4))
                for _ in range(rng.randint(0, 5))]
        return ("\n".join([header, *rows])).encode("utf-8", errors="surrogatepass")
    if kind == "xpu":
        return rng.choice([b"### t\n| 0 | 1e999MiB / 2MiB | 9" + b"9" * 400 + b"W / 3W | 50% |\n", b"\xff\xfe", b""])
    return rng.choice([
        b"scenario,concurrency,input_len,output_len,reason,log_excerpt\nc1,0,1,1,oom,\n",
        b"scenario,concurrency\nx," + b"9" * 40 + b"\n", b"scenario\n\xff\n", b"a,b\n", b"scenario,concurrency\ns,\xc2\xb2\n",
        b'scenario,reason\n"unterminated\n', b"",
    ])


def case_parse(case: Case) -> None:
    rng = case.rng
    run = _parsed_run(case)
    raw = run / "raw_outputs"
    names = []
    action = rng.choice(["add", "add", "damage", "sidecar", "special"])
    bad: list[str] = []
    lined: set[str] = set()
    if action in ("add", "special"):
        name = _bad_name(rng, 5)
        if action == "special":
            names.append(make_special(rng, raw / name))
        else:
            data, how = mutate_text(rng, rng.choice(_raw_sources()).read_bytes())
            (raw / name).write_bytes(data)
            names.append(how)
            if _has_lines(data):
                lined.add(name)
        bad.append(name)
    elif action == "damage":
        target = raw / GOOD
        how = rng.choice(["truncate", "garbage", "delete", "special", "mutate"])
        if how == "truncate":
            target.write_bytes(target.read_bytes()[: rng.randrange(1, 4000)])
        elif how == "garbage":
            target.write_bytes(os.urandom(rng.randint(1, 3000)))
        elif how == "delete":
            target.unlink()
        elif how == "special":
            target.unlink()
            how = make_special(rng, target)
        else:
            data, how = mutate_text(rng, target.read_bytes())
            target.write_bytes(data)
        names.append(f"damaged: {how}")
    else:
        stem = Path(GOOD).stem
        kind = rng.choice(["prom", "csv", "xpu", "skipped"])
        if kind == "prom":
            (run / "server_metrics").mkdir()
            (run / "server_metrics" / f"{stem}.before.prom").write_bytes(_side_text(rng, "prom"))
            (run / "server_metrics" / f"{stem}.after.prom").write_bytes(_side_text(rng, "prom"))
        elif kind == "csv":
            (run / "gpu_logs").mkdir()
            (run / "gpu_logs" / f"{stem}.csv").write_bytes(_side_text(rng, "csv"))
        elif kind == "xpu":
            (run / "gpu_logs").mkdir()
            (run / "gpu_logs" / f"{stem}.xpu-smi.log").write_bytes(_side_text(rng, "xpu"))
        else:
            (run / "skipped_after_oom.csv").write_bytes(_side_text(rng, "skipped"))
        os.utime(raw / GOOD, ns=(1, 1))
        names.append(f"side file {kind}")
    case.mutation = ", ".join(names)
    before = (run / "results.json").read_bytes()
    recorded = {s.name for s in load_run(run).scenarios}
    source_of = {s.name: s.source.file for s in load_run(run).scenarios if s.source is not None}
    result = invoke(case, "parse", str(run))
    if case.failures:
        return
    try:
        after = load_run(run)
    except Exception as exc:  # noqa: BLE001
        case.fail(f"results.json does not load after parse: {exc}")
        return
    if result.exit_code not in (0, 1):
        case.fail(f"parse exit {result.exit_code}")
    names_after = {s.name for s in after.scenarios}
    # a raw file that still reads as valid JSON but now says other things (another concurrency, lengths)
    # is the record of its runs: its scenarios follow what it says now; only a damaged file keeps the old ones
    reread = {rf.file for rf in after.raw_files if rf.damaged is None} & \
        {s.source.file for s in after.scenarios if s.source is not None}
    forgotten = {name for name in recorded - names_after if source_of.get(name) not in reread}
    if forgotten:
        case.fail(f"parse forgot measured scenario(s) {sorted(forgotten)}: {result.stderr.strip()[-300:]}")
    if result.exit_code == 1 and result.stderr.startswith("error:") and (run / "results.json").read_bytes() != before:
        case.fail("parse failed but results.json changed")
    for name in bad:
        if not any(named(name, line) for line in result.stderr.splitlines()) and \
                not any(s.source and s.source.file.endswith(name) for s in after.scenarios):
            case.fail(f"{display_name(name)} neither imported nor named: {result.stderr.strip()[-300:]}")
    for name in lined:
        for line in result.stderr.splitlines():
            if line.startswith("skipped:") and named(name, line) and not has_line_number(name, line):
                case.fail(f"a message about {display_name(name)} (which has lines) gives no line number: {line[:300]}")
    if _leftovers(run):
        case.fail(f"temporary files left: {_leftovers(run)}")
    invoke(case, "validate", str(run / "results.json"))  # loads back (above); validate never crashes on it


def case_results(case: Case) -> None:
    rng = case.rng
    source = rng.choice(sorted(RUNS.iterdir()))
    run = case.root / "run"
    shutil.copytree(source, run)
    (run / "raw_outputs").mkdir()
    if rng.random() < 0.15:
        (run / "results.json").unlink()
        case.mutation = make_special(rng, run / "results.json")
        before: Optional[bytes] = None
    else:
        data, case.mutation = mutate_text(rng, (run / "results.json").read_bytes())
        (run / "results.json").write_bytes(data)
        before = data
    good = case.root / "good"
    shutil.copytree(rng.choice(sorted(RUNS.iterdir())), good)
    commands: list[list[str]] = [["validate", str(run)], ["report", str(run), "--no-plots"], ["parse", str(run)]]
    if rng.random() < 0.4:
        commands.append(["compare", str(good), str(run), "--out", str(case.root / "cmp"), "--no-plots"])
    if rng.random() < 0.05:
        commands.append(["report", str(run), "--cdf", "1"])
    for args in commands:
        result = invoke(case, *args)
        if case.failures:
            return
        if before is not None and result.exit_code != 0:
            if (run / "results.json").read_bytes() != before:
                case.fail(f"`{args[0]}` failed but results.json changed")
            shown = display_name(run / "results.json")
            if args[0] != "validate" and result.exit_code == 1 and shown not in result.stderr and \
                    str(run) not in result.stderr:
                case.fail(f"`{args[0]}` error does not name the file: {result.stderr.strip()[-300:]}")
    if _leftovers(case.root):
        case.fail(f"temporary files left: {_leftovers(case.root)}")


_OPTION_VALUES = ["nan", "NaN", "inf", "-inf", "+inf", "0", "-0", "-1", "1e999", "1e-999", "abc", "", "0x10",
                  "1_000", "5e-324", "1e308", " 1", "∞", "0.05", "2"]


def case_options(case: Case) -> None:
    rng = case.rng
    run = case.root / "run"
    shutil.copytree(RUNS / "vllm", run)
    other = RUNS / "sglang"
    option = rng.choice(["--slo-ttft-p95-ms", "--slo-tpot-mean-ms", "--alpha", "--min-change", "--resolution",
                         "--cdf", "--slo-tier", "--max-concurrency", "--name-format"])
    value = rng.choice(_OPTION_VALUES + ["{concurrency", "{0}", "{x}", "S\n1", "9" * 5000])
    case.mutation = f"{option} {value!r}"
    before = (run / "results.json").read_bytes()
    if option in ("--alpha", "--min-change", "--cdf"):
        args = ["compare", str(run), str(other), "--out", str(case.root / "c"), "--no-plots", option, value]
    elif option in ("--resolution", "--max-concurrency"):
        args = ["slo-next", str(run), "--input-len", "128", "--output-len", "32", option, value]
    elif option == "--name-format":
        args = ["parse", str(run), option, value]
    else:
        args = [rng.choice(["report", "parse"]), str(run), option, value]
        if args[0] == "report":
            args.append("--no-plots")
    result = invoke(case, *args)
    if case.failures:
        return
    if result.exit_code != 0 and (run / "results.json").read_bytes() != before:
        case.fail(f"`{args[0]}` failed but results.json changed")
    if option in ("--slo-ttft-p95-ms", "--slo-tpot-mean-ms", "--alpha", "--min-change"):
        try:
            number = float(value)
            ok = number == number and abs(number) != float("inf") and number > 0 and (option != "--alpha" or number < 1)
        except ValueError:
            ok = False
        if not ok and result.exit_code != 2:
            case.fail(f"{option} {value!r} was accepted (exit {result.exit_code})")
        if not ok and option not in result.stderr:
            case.fail(f"the usage error does not name {option}: {result.stderr.strip()[-200:]}")


RUNNERS: dict[str, Callable[[Case], None]] = {
    "import": case_import, "lines": case_lines, "parse": case_parse, "results": case_results, "options": case_options,
}


def run_case(number: int, seed: int = 0, kinds: tuple[str, ...] = KINDS) -> list[Failure]:
    rng = random.Random(seed * 1_000_003 + number)
    kind = rng.choice(kinds)
    root = Path(tempfile.mkdtemp(prefix=f"sskj-fuzz-{number}-"))
    case = Case(number, rng, root, kind)
    cwd = os.getcwd()
    try:
        os.chdir(root)
        RUNNERS[kind](case)
    except Exception as exc:  # noqa: BLE001 - a bug of the harness or an exception outside the CLI
        case.fail(f"harness: {type(exc).__name__}: {exc}"[:600])
    finally:
        os.chdir(cwd)
        shutil.rmtree(root, ignore_errors=True)
    return case.failures


def run_cases(numbers: range, seed: int = 0, progress: Optional[Callable[[int, list[Failure]], None]] = None) -> list[Failure]:
    failures: list[Failure] = []
    for number in numbers:
        found = run_case(number, seed)
        failures.extend(found)
        if progress is not None:
            progress(number, found)
    return failures
