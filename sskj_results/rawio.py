"""Streaming reader of raw client output files: JSON Lines or concatenated JSON objects.

Both reference clients write JSON that is not strict: sglang.bench_serving
writes bare ``Infinity``/``NaN`` (Python's json), ``vllm bench serve`` writes
one object per file, or one per line with ``--append-result``. Lines are read
one at a time; a bad line is reported with its 1-based number and does not
stop the others.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import orjson

# Bare non-finite constants in value position (after ':', ',' or '['): made null
# so orjson can parse the line; only tried after a plain orjson parse failed.
_NONFINITE = re.compile(rb"(?<=[:,\[])(\s*)(?:-?Infinity|NaN)(?=\s*[,\]}])")


@dataclass(frozen=True)
class Record:
    """One JSON object of a raw file and the 1-based line it starts on."""

    line: int
    data: dict[str, Any]


@dataclass(frozen=True)
class LineError:
    """A line that could not be read, and why."""

    line: int
    message: str


Item = Union[Record, LineError]


def loads_lenient(text: bytes) -> Any:
    """Parse one JSON document; bare Infinity/-Infinity/NaN become null."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        if b"Infinity" not in text and b"NaN" not in text:
            raise
    try:
        return orjson.loads(_NONFINITE.sub(rb"\1null", text))
    except orjson.JSONDecodeError:
        # Rare shapes the substitution does not cover: the standard library accepts them all.
        return json.loads(text, parse_constant=lambda _name: None)


def _describe(exc: Exception, last: bool) -> str:
    msg = str(exc).split(": line")[0] if isinstance(exc, orjson.JSONDecodeError) else str(exc)
    if last:
        return f"not valid JSON ({msg}); the last line looks truncated — was the client killed mid-write?"
    return f"not valid JSON ({msg})"


def iter_items(path: Path) -> Iterator[Item]:
    """Every object of a raw file, or an error per unreadable line.

    A file holding one pretty-printed object (lines that are not complete JSON
    on their own) is read whole.
    """
    with path.open("rb") as handle:
        first = handle.readline()
        handle.seek(0)
        stripped = first.strip()
        if stripped in (b"{", b"[") or (stripped.startswith(b"{") and not stripped.endswith(b"}")):
            yield from _whole(path, handle.read())
            return
        pending: tuple[int, bytes] | None = None
        number = 0
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if pending is not None:
                yield _parse(*pending, last=False)
            pending = (number, raw)
        if pending is not None:
            yield _parse(*pending, last=not pending[1].endswith(b"\n"))


def _parse(number: int, raw: bytes, last: bool) -> Item:
    try:
        data = loads_lenient(raw)
    except (ValueError, orjson.JSONDecodeError) as exc:
        return LineError(number, _describe(exc, last))
    if not isinstance(data, dict):
        return LineError(number, f"expected a JSON object per line, got {type(data).__name__}")
    return Record(number, data)


def _whole(path: Path, blob: bytes) -> Iterator[Item]:
    """Concatenated (possibly pretty-printed) objects in one file."""
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield LineError(blob.count(b"\n", 0, exc.start) + 1, "not UTF-8 text")
        return
    decoder = json.JSONDecoder(parse_constant=lambda _name: None)
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        line = text.count("\n", 0, pos) + 1
        try:
            data, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            truncated = exc.pos >= len(text.rstrip())
            hint = "; the file looks truncated" if truncated else ""
            yield LineError(exc.lineno, f"not valid JSON ({exc.msg}){hint}")
            return
        if isinstance(data, dict):
            yield Record(line, data)
        elif isinstance(data, list) and all(isinstance(x, dict) for x in data):
            for item in data:
                yield Record(line, item)
        else:
            yield LineError(line, f"expected a JSON object, got {type(data).__name__}")
        pos = end


def sha256_file(path: Path) -> tuple[str, int]:
    """SHA-256 hex digest and size of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def count_lines(path: Path) -> int:
    """Number of lines (a last line without a newline counts)."""
    lines = 0
    last = b"\n"
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (0 if last == b"\n" else 1)
