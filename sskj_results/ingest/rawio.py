"""Streaming reader of raw client output files: JSON Lines or concatenated JSON objects.

Both reference clients write JSON that is not strict: sglang.bench_serving
writes bare ``Infinity``/``NaN`` (Python's json), ``vllm bench serve`` writes
one object per file, or one per line with ``--append-result``. Lines are read
one at a time; a bad line is reported with its 1-based number and does not
stop the others.

`FileScan` reads a file once: its objects, its SHA-256, size and line count
come from the same pass (big lines are hashed on a helper thread while they
are parsed; hashlib releases the GIL). `FileHashes` hashes many files on
several threads.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generator, Iterator, Optional, Union

import orjson

from ..contract.io import one_line, open_checked
from .hashing import Digest
from .rawtext import (BOM, damaged_first_line, line_ends_of, not_utf8_json, opens_pretty_object,
                      other_encoding, read_wide, undecodable_at)

# Bare non-finite constants in value position (after ':', ',' or '['): made null
# so orjson can parse the line; only tried after a plain orjson parse failed.
_NONFINITE = re.compile(rb"(?<=[:,\[])(\s*)(?:-?Infinity|NaN)(?=\s*[,\]}])")


@dataclass(frozen=True)
class Record:
    """One JSON object of a raw file and the 1-based line it starts on; `index` is its
    0-based position when the file (or line) is one JSON array of runs."""

    line: int
    data: dict[str, Any]
    index: Optional[int] = None
    # where the line's bytes are in the file (offset, length), a line of JSON Lines: a copy's bytes are the same
    # (compared only when two runs of a file are otherwise equal: rawtext.span_crc)
    span: Optional[tuple[int, int]] = None


@dataclass(frozen=True)
class LineError:
    """A line that could not be read, and why (`index`: the array element, as for Record)."""

    line: int
    message: str
    index: Optional[int] = None
    column: Optional[int] = None  # 1-based, in characters, where a JSON syntax error was found


def _column(exc: BaseException) -> Optional[int]:
    """The 1-based column of a JSON syntax error on its line (None for other errors)."""
    return exc.colno if isinstance(exc, json.JSONDecodeError) and exc.colno > 0 else None


Item = Union[Record, LineError]


# How many bare constants are replaced one by one, where orjson reports them,
# before the regular expression takes over (sglang.bench_serving writes one:
# its request_rate).
_MAX_TARGETED = 4


# orjson refuses a document of about 2 GB ("Not enough memory to allocate buffer for parsing", whatever is
# free): a longer one (the limit is 4 GiB, docs/INPUT_LIMITS.md) is read by the standard library, slower.
ORJSON_MAX_BYTES = 1536 * (1 << 20)


def loads_lenient(text: bytes) -> Any:
    """Parse one JSON document; bare Infinity/-Infinity/NaN become null.

    What orjson refuses but Python's json (the clients' own writer) accepts —
    lone surrogate escapes, integers beyond 64 bits — is read by the standard
    library; a line neither accepts raises orjson's error (beyond ORJSON_MAX_BYTES: the standard library).
    """
    if len(text) > ORJSON_MAX_BYTES:
        return json.loads(str(text, "utf-8"), parse_constant=lambda _name: None)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        pos = exc.pos  # no reference to the exception is kept: its .doc is the whole text
        first = str(exc).split(": line")[0]
    if b"Infinity" in text or b"NaN" in text:
        # Replace each constant where orjson stopped at it: no scan of the whole line.
        fixed = text
        for _ in range(_MAX_TARGETED):
            patched = _null_at(fixed, pos)
            if patched is None:
                break
            fixed = patched
            data, next_pos = _try_loads(fixed)
            if next_pos is None:
                return data
            pos = next_pos
        try:
            return orjson.loads(_NONFINITE.sub(rb"\1null", text))
        except orjson.JSONDecodeError:
            pass
    try:
        # Rare shapes the substitution does not cover: the standard library accepts them all.
        return json.loads(text, parse_constant=lambda _name: None)
    except RecursionError:
        raise
    except json.JSONDecodeError as exc:
        if b"Infinity" in text or b"NaN" in text:  # orjson's position is past replaced constants: the library's
            raise orjson.JSONDecodeError(exc.msg, "", exc.pos) from None
        raise orjson.JSONDecodeError(first, "", pos) from None  # one line: its column is pos + 1
    except ValueError:  # UnicodeDecodeError, the int-to-str limit
        raise orjson.JSONDecodeError(first, "", pos) from None


def _try_loads(data: Any) -> tuple[Any, Optional[int]]:
    """(parsed, None), or (None, character position where orjson stopped)."""
    if len(data) > ORJSON_MAX_BYTES:  # too long for orjson: the caller falls back to loads_lenient
        return None, 0
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError as exc:
        return None, exc.pos


def _null_at(text: bytes, pos: int) -> Optional[bytes]:
    """text with the bare constant orjson stopped at (character pos) made null; None if it is not one."""
    if pos <= 0 or pos >= len(text):
        return None
    if text.startswith(b"Infinity", pos):
        start, end = pos, pos + 8
        if text[pos - 1:pos] == b"-":
            start -= 1
    elif text.startswith(b"NaN", pos):
        start, end = pos, pos + 3
    else:
        return None
    # orjson counts characters: its position is a byte offset only after ASCII text
    if not text[:start].isascii():
        return None
    view = memoryview(text)
    return b"".join((view[:start], b"null", view[end:]))


def _describe(exc: Exception, last: bool) -> str:
    if isinstance(exc, RecursionError):
        return "not readable JSON: nested too deeply"
    # a JSON error's own line and column are not repeated: the message starts with `file:line:column:`
    msg = str(exc).split(": line")[0] if isinstance(exc, orjson.JSONDecodeError) else \
        exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    msg = one_line(msg[:200])
    if last:
        return f"not valid JSON ({msg}); the last line looks truncated — was the client killed mid-write?"
    return f"not valid JSON ({msg})"


_BLOCK = 64 << 20  # read size; a line longer than this grows the buffer
_BARE_CR = re.compile(rb"\r(?!\n)")  # a line end of classic Mac OS
_HEAD = 1 << 16  # of a line, hashed at once: bare constants there may be patched while the rest is hashed
_BLANK = re.compile(rb"[ \t\n\r\x0b\x0c]*")  # what bytes.isspace() calls whitespace


class FileScan:
    """One pass over a raw file: iterate it for its objects (or per-line errors);
    afterwards `sha256`, `size` and `lines` describe the bytes that were read
    (as `sha256_file` and `count_lines` would).

    The file is read in large blocks into a buffer; orjson parses each line
    where it lies (no copy per line), and the bare ``Infinity`` of
    sglang.bench_serving is overwritten in the buffer with ``null`` padded by
    spaces, after that part of the line has been hashed. Memory stays at one
    block (or the longest line) plus one parsed object.
    """

    def __init__(self, path: Path, digest: bool = True) -> None:
        self.path = path
        self._want_digest = digest
        self._digest: Optional[Digest] = None
        self.size = 0
        self.lines = 0
        self.sha256: Optional[str] = None
        self.line_end, self._sep = "LF", 0x0A  # "CR" for a file whose lines end in CR only (read with CR as the line end)
        self.encoding: Optional[str] = None  # "UTF-16"/"UTF-32" for a file read in that encoding

    def __iter__(self) -> Iterator[Item]:
        self._digest = Digest() if self._want_digest else None
        with open_checked(self.path, "raw output") as handle:
            yield from self._scan(handle)
        self._finish()

    def _scan(self, handle: Any, sniff: bool = True) -> Iterator[Item]:
        digest = self._digest
        try:
            hint = os.fstat(handle.fileno()).st_size
        except OSError:
            hint = 0
        buf = bytearray(min(max(hint + 1, 1 << 16), _BLOCK))  # +1: EOF shows without a second buffer
        filled = handle.readinto(memoryview(buf)) or 0  # the file's first bytes say its encoding and line ends
        eof = filled == 0
        wide = other_encoding(bytes(buf[:64])) if sniff else None
        if wide is not None:  # UTF-16 or UTF-32 (PowerShell's `>`): read as text when it is that throughout
            yield from self._wide(handle, buf, filled, *wide)
            return
        bom = 3 if buf.startswith(BOM) else 0  # a UTF-8 byte-order mark (Windows editors) is not part of a line
        # lines ending in CR only (classic Mac OS): no LF in the first block, a CR in it
        sep = b"\r" if buf.find(b"\n", 0, filled) < 0 and buf.find(b"\r", 0, filled) >= 0 else b"\n"
        self.line_end, self._sep = ("CR" if sep == b"\r" else "LF"), sep[0]
        if bom and digest is not None:
            digest.add(bytes(buf[:bom]), background=False)
        number, size, consumed = 0, bom, 0  # consumed: bytes of the file before buf[0]
        start = search = bom  # the current line starts at buf[start]; its newline is not before buf[search]
        while True:
            nl = buf.find(sep, search, filled)
            if nl < 0 and not eof:
                if filled == len(buf):
                    # full: move the unfinished line into a fresh (larger if needed) buffer;
                    # the old one is left as it is to the hash helper that may still read it
                    keep = filled - start
                    cap = max(_BLOCK, 2 * keep)
                    rest = hint - consumed - filled  # what the file still holds, if it did not grow
                    if rest >= 0:
                        cap = min(cap, keep + rest + 1)
                    fresh = bytearray(max(cap, keep + 1))
                    fresh[:keep] = memoryview(buf)[start:filled]
                    consumed += start
                    buf, filled, search, start = fresh, keep, keep, 0
                search = filled
                n = handle.readinto(memoryview(buf)[filled:]) or 0
                filled += n
                eof = n == 0
                continue
            if nl < 0:
                if start >= filled:
                    break
                end = filled  # the last line, without its newline
            else:
                end = nl + 1
            number += 1
            if number == 1 and opens_pretty_object(line_ends_of(buf, bom, end)):
                # one pretty-printed (or truncated) object: read whole, as the standard library does
                blob = bytes(memoryview(buf)[bom:filled]) + handle.read()
                del buf
                if digest is not None:
                    digest.add(blob, background=False)
                self.size = bom + len(blob)
                blob = _BARE_CR.sub(b"\n", blob)  # CR-only or mixed line ends: same length, same JSON
                self.lines = blob.count(b"\n") + (1 if blob and not blob.endswith(b"\n") else 0)
                if damaged_first_line(blob) and _has_object_line(blob):
                    # JSON Lines whose first line is a damaged object (cut short, or with bytes after
                    # its end): it costs that line only, whatever a decoder makes of its first part
                    yield from _each_line(blob)
                    return
                first = True
                for whole_item in _whole(self.path, blob):
                    if first and isinstance(whole_item, LineError) and _has_object_line(blob):
                        # JSON Lines whose first line is damaged, not one object: it costs that line only
                        yield from _each_line(blob)
                        return
                    first = False
                    yield whole_item
                return
            if end - start <= 8 and bytes(buf[start:end]).strip() in (b"{", b"["):
                # a pretty-printed run after JSON Lines (`cat a.jsonl b.json`): the rest is read whole, object by object
                rest = bytes(memoryview(buf)[start:filled]) + handle.read()
                del buf
                if digest is not None:
                    digest.add(rest, background=False)
                self.size = size + len(rest)
                lines = _BARE_CR.sub(b"\n", rest)
                self.lines = number - 1 + lines.count(b"\n") + (1 if lines and not lines.endswith(b"\n") else 0)
                yield from _whole(self.path, lines, number - 1)
                return
            size += end - start
            blank = _BLANK.match(buf, start, end)  # always matches (possibly empty)
            if blank is None or blank.end() < end:
                item = self._parse_line(buf, start, end, number, consumed)
                if isinstance(item, LineError) and _BARE_CR.search(buf, start, end):  # mixed line ends:
                    joined = bytes(buf[start:end]).rstrip(b"\r\n")  # runs joined by CRs, each a line of its own
                    item = [dataclasses.replace(p, line=p.line + number - 1) for p in _each_line(_BARE_CR.sub(b"\n", joined))]
                    number += joined.count(b"\r")
                if isinstance(item, list):  # one JSON array of runs on the line
                    yield from item
                else:
                    yield item
                del item
            elif digest is not None:
                digest.add(memoryview(buf)[start:end], background=False)
            start = search = end
        self.size = size
        self.lines = number

    def _parse_line(self, buf: bytearray, start: int, end: int, number: int,
                    consumed: int = 0) -> Union[Item, list[Item]]:
        digest = self._digest
        view = memoryview(buf)[start:end]
        head_end = end
        if digest is not None:
            head_end = min(end, start + _HEAD)
            digest.add(view[:head_end - start], background=False)
            if head_end < end:
                digest.add(view[head_end - start:])  # on the helper thread, while orjson parses

        def before_patch(a: int, b: int) -> None:
            if digest is not None and b > head_end:
                digest.wait()  # the original bytes there must be hashed first

        # only the file's last line can lack its newline; it looks truncated if it began as JSON
        last = buf[end - 1] != self._sep and bytes(buf[start:min(end, start + 64)]).lstrip().startswith(b"{")
        try:
            data = _loads_in_place(buf, start, end, view, before_patch)
        except (ValueError, orjson.JSONDecodeError, RecursionError) as exc:
            if bytes(buf[start:min(end, start + 64)]).lstrip().startswith(b"["):
                # a damaged array of runs: its complete elements still count
                return _line_array(bytes(view), number)
            undecodable, lenient = not_utf8_json(bytes(view))  # bytes that are not UTF-8: said so, or the JSON error
            if undecodable is not None:
                return LineError(number, undecodable[0], column=undecodable[1])
            return LineError(number, _describe(lenient or exc, last), column=_column(lenient or exc))
        if isinstance(data, list):
            return _array_records(data, number)
        if not isinstance(data, dict):
            return LineError(number, f"expected a JSON object per line, got {type(data).__name__}")
        return Record(number, data, span=(consumed + start, end - start))

    def _wide(self, handle: Any, buf: bytearray, filled: int, name: str, codec: str) -> Iterator[Item]:
        """A file that starts as UTF-16/32: read as UTF-8 when it is that throughout (`encoding`), else as it is."""
        digest, (blob, utf8, refused) = self._digest, read_wide(bytes(buf[:filled]), handle, name, codec)
        del buf
        rest: Iterator[bytes] = iter(lambda: handle.read(_BLOCK), b"") if refused is not None else iter(())
        for chunk in itertools.chain([blob], rest):  # a refused file is hashed to its end all the same
            self.size += len(chunk)
            if digest is not None:
                digest.add(chunk, background=False)
        if refused is not None:
            yield LineError(1, refused)
            return
        self._digest, self.encoding = None, (None if utf8 is None else name)  # hashed above, as the file's bytes
        try:
            yield from self._scan(io.BytesIO(blob if utf8 is None else utf8), sniff=False)
        finally:
            self._digest = digest
        self.size = len(blob)

    def _finish(self) -> None:
        if self._digest is not None:
            self.sha256 = self._digest.hexdigest()


_PROBE = 1 << 16  # a long line is first parsed this far: a bare constant there is found cheaply


def _constant_at(buf: bytearray, start: int, pos: int) -> Optional[tuple[int, int]]:
    """Span of the bare Infinity/-Infinity at byte pos of the line starting at start (None if none is there)."""
    if pos <= start or not buf.startswith(b"Infinity", pos):
        return None
    a = pos - 1 if buf[pos - 1] == 0x2D else pos  # 0x2D: "-"
    # orjson reports a character position: it is a byte offset only after ASCII text
    if not buf[start:a].isascii():
        return None
    return a, pos + 8


def _loads_in_place(buf: bytearray, start: int, end: int, view: memoryview,
                    before_patch: Callable[[int, int], None]) -> Any:
    """`loads_lenient(bytes(buf[start:end]))` without copying the line.

    A bare Infinity/-Infinity where orjson stops is overwritten in the buffer
    by ``null`` and spaces (same length, same meaning as the substitution of
    loads_lenient); anything else takes the copying path on the original bytes.
    A failed orjson parse costs a copy of its whole input as text (the
    exception's ``doc``), so a long line is first probed on its start, where
    sglang.bench_serving writes its ``"request_rate": Infinity``.
    """
    pos: Optional[int] = None
    if end - start > _PROBE:
        _, probed = _try_loads(view[:_PROBE])
        # parsing is left to right: a constant stopping the probe stops the whole line there
        if probed is not None and _constant_at(buf, start, start + probed) is not None:
            pos = probed
    patches: list[tuple[int, bytes]] = []
    try:
        while True:
            if pos is None:
                data, pos = _try_loads(view)
                if pos is None:
                    return data
            span = _constant_at(buf, start, start + pos)
            if span is None or len(patches) == _MAX_TARGETED:
                break
            a, b = span
            before_patch(a, b)
            patches.append((a, bytes(buf[a:b])))
            buf[a:b] = b"null" + b" " * (b - a - 4)
            pos = None
    finally:
        for a, original in reversed(patches):
            buf[a:a + len(original)] = original
    try:
        return loads_lenient(bytes(view))
    except orjson.JSONDecodeError as exc:
        if pos is None or not patches:
            raise
        # the column where the patched line failed: `null` + spaces keeps every byte where it was
        raise orjson.JSONDecodeError(str(exc).split(": line")[0], "", pos) from None


def _has_object_line(blob: bytes) -> bool:
    """A line after the first (among the next 64) is a whole non-empty JSON object: the file is
    JSON Lines (a pretty-printed object never holds one on a line of its own)."""
    first_end = blob.find(b"\n")
    if first_end < 0:
        return False
    for line in blob[first_end + 1:].split(b"\n", 64)[:64]:
        stripped = line.strip()
        if stripped.startswith(b"{") and stripped.endswith(b"}") and len(stripped) > 2:
            try:
                data = loads_lenient(stripped)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict) and data:
                return True
    return False


def _each_line(blob: bytes) -> Iterator[Item]:
    """Every non-blank line of blob as its own JSON object."""
    lines = blob.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        last = number == len(lines) and not blob.endswith(b"\n")
        try:
            data = loads_lenient(line)
        except (ValueError, orjson.JSONDecodeError, RecursionError) as exc:
            yield LineError(number, _describe(exc, last and line.lstrip().startswith(b"{")), column=_column(exc))
            continue
        if isinstance(data, dict):
            yield Record(number, data)
        elif isinstance(data, list):
            yield from _array_records(data, number)
        else:
            yield LineError(number, f"expected a JSON object per line, got {type(data).__name__}")


# elements of one JSON array read as runs; past this the rest of the array is refused in one line
MAX_ARRAY_RUNS = 100_000


def _element(line: int, index: int, value: Any) -> Item:
    if isinstance(value, dict):
        return Record(line, value, index)
    return LineError(line, f"[{index}]: expected a JSON object (one run), got {type(value).__name__}", index)


def _too_many(line: int) -> LineError:
    return LineError(line, f"[{MAX_ARRAY_RUNS}]: more than {MAX_ARRAY_RUNS} runs in one JSON array; "
                           "the rest is not read (split the file)", MAX_ARRAY_RUNS)


def _array_records(data: list[Any], line: int) -> list[Item]:
    """A JSON array of runs parsed from one line: each element is a run, `[i]` in its messages."""
    if not data:
        return [LineError(line, "an empty JSON array: no runs")]
    items = [_element(line, i, v) for i, v in enumerate(data[:MAX_ARRAY_RUNS])]
    if len(data) > MAX_ARRAY_RUNS:
        items.append(_too_many(line))
    return items


def _line_array(raw: bytes, line: int) -> list[Item]:
    """A line holding a damaged JSON array: its complete elements, then one error for the damage."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return [LineError(line, "not UTF-8 text")]
    decoder = json.JSONDecoder(parse_constant=lambda _name: None)
    start = len(text) - len(text.lstrip())
    return list(_array_items(decoder, text, start, line - 1))


def _array_items(decoder: json.JSONDecoder, text: str, pos: int,
                 first_line: int = 0) -> Generator[Item, None, Optional[int]]:
    """The elements of the JSON array opening at text[pos] (`[`), one at a time, each with the line it starts on
    (text's lines counted after first_line). Returns the position after its `]`, or None when the array is
    damaged (the error is yielded; the elements before it are kept)."""
    n = len(text)
    counted, line = 0, first_line + 1

    def line_at(p: int) -> int:
        nonlocal counted, line
        if p > counted:
            line += text.count("\n", counted, p)
            counted = p
        return line

    def skip(p: int) -> int:
        while p < n and text[p].isspace():
            p += 1
        return p

    def damaged(at: int, p: int, index: int, what: str) -> LineError:
        """The element starting at `at` is damaged at p (named by the line it starts on)."""
        hint = "; the file looks truncated" if skip(p) >= n else ""
        return LineError(line_at(min(at, n)), f"[{index}]: {what}{hint}", index)

    pos = skip(pos + 1)
    if pos < n and text[pos] == "]":
        yield LineError(line_at(pos), "an empty JSON array: no runs")
        return pos + 1
    index = 0
    while True:
        if index == MAX_ARRAY_RUNS:
            yield _too_many(line_at(pos))
            return None
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            yield damaged(pos, exc.pos, index, f"not valid JSON ({exc.msg})")
            return None
        except (RecursionError, ValueError) as exc:  # nesting too deep; an integer beyond the int-to-str limit
            yield damaged(pos, pos, index, _describe(exc, False))
            return None
        yield _element(line_at(pos), index, value)
        del value
        pos = skip(end)
        if pos < n and text[pos] == ",":
            pos = skip(pos + 1)
            index += 1
            continue
        if pos < n and text[pos] == "]":
            return pos + 1
        yield damaged(pos, pos, index + 1, "not valid JSON (expected ',' or ']' after the previous run)")
        return None


def _whole(path: Path, blob: bytes, before: int = 0) -> Iterator[Item]:
    """Concatenated (possibly pretty-printed) objects in one file (or its rest, after `before` lines)."""
    undecodable: list[int] = []  # where bytes that are not UTF-8 were: an object holding one is refused
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        text = blob.decode("utf-8", errors="replace")
        undecodable = [i for i, c in enumerate(text) if c == "\ufffd"]
    decoder = json.JSONDecoder(parse_constant=lambda _name: None)
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        line = before + text.count("\n", 0, pos) + 1
        if text[pos] == "[" and not undecodable:
            # one JSON array of runs (pretty-printed or not): element by element, each with its own line
            after = yield from _array_items(decoder, text, pos, line - 1)
            if after is None:
                return
            pos = after
            continue
        try:
            data, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            # the next object that opens a line (a JSON Lines record, another pretty-printed run) is read on
            nxt = text.find("\n{", pos)
            if nxt >= 0 and exc.pos > nxt:  # damaged where it ran into the next object: named by its first line
                after = before + text.count("\n", 0, nxt + 1) + 1
                yield LineError(line, f"not valid JSON (the object is not closed before line {after})")
            else:
                content = len(text.rstrip())
                truncated = exc.pos >= content or not text.rstrip().endswith(("}", "]"))
                hint = "; the file looks truncated" if truncated and nxt < 0 else ""
                # an error past the content's last line is where the content ends: its last line, not a blank one
                at = content if "\n" in text[content:exc.pos] else exc.pos
                yield LineError(before + text.count("\n", 0, at) + 1, f"not valid JSON ({exc.msg}){hint}",
                                column=at - text.rfind("\n", 0, at))
            if nxt < 0:
                return
            pos = nxt + 1
            continue
        except (RecursionError, ValueError) as exc:  # nesting too deep; an integer beyond the int-to-str limit
            yield LineError(line, _describe(exc, False))
            return
        bad = next((i for i in undecodable if pos <= i < end), None)
        if bad is not None:  # named by its line and column, the byte as the file holds it
            why, column = undecodable_at(blob, text, bad)
            yield LineError(before + text.count("\n", 0, bad) + 1, why, column=column)
        elif isinstance(data, dict):
            yield Record(line, data)
        else:
            yield LineError(line, f"expected a JSON object, got {type(data).__name__}")
        pos = end
