"""What text a raw file is: UTF-8 (with or without a byte-order mark), or another encoding it is refused in,
the words that name a line's bytes that are not UTF-8 (docs/INPUT_LIMITS.md), and the shapes of a first line
(a pretty-printed document's opening, a damaged JSON Lines record)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any, Optional

BOM = b"\xef\xbb\xbf"


def other_encoding(head: bytes) -> Optional[tuple[str, str]]:
    """(name, codec) when a file starting with these bytes looks like UTF-16 or UTF-32 text (a byte-order mark,
    or JSON's ASCII with NUL bytes between its characters); None for UTF-8 (or damage, which its lines report)."""
    marks = {b"\xff\xfe\x00\x00": "UTF-32", b"\x00\x00\xfe\xff": "UTF-32", b"\xff\xfe": "UTF-16", b"\xfe\xff": "UTF-16"}
    mark = next((m for m in marks if head.startswith(m)), b"")
    body = head[len(mark):len(mark) + 16]
    for width, name in ((4, "UTF-32"), (2, "UTF-16")):
        units = [body[i:i + width] for i in range(0, len(body) - width + 1, width)]
        ascii_units = [u for u in units if sum(1 for b in u if b == 0) == width - 1 and any(u)]
        if len(units) >= 4 and len(ascii_units) == len(units) and (not mark or marks[mark] == name):
            if mark:
                return name, name.lower()  # the codec reads the mark
            return name, f"{name.lower()}-{'le' if units[0][0] else 'be'}"
    return None


WIDE_MAX_BYTES = 512 << 20  # a UTF-16/32 file is decoded whole: above this it is refused


def wide_text(blob: bytes, codec: str) -> Optional[str]:
    """The text of a file that is UTF-16/32 from its first byte to its last (as JSON's ASCII), else None:
    a UTF-8 file with such a line in it is read line by line, and that line refused."""
    try:
        text = blob.decode(codec)
    except UnicodeDecodeError:
        return None
    if "\x00" in text or sum(1 for c in text if ord(c) > 0x7F) > len(text) // 10:
        return None  # UTF-8 bytes decoded as UTF-16 are not ASCII: not one encoding throughout
    return text.removeprefix("\ufeff")


def read_wide(head: bytes, handle: Any, name: str, codec: str) -> tuple[bytes, Optional[bytes], Optional[str]]:
    """A file that starts as UTF-16/32 (`head`, then the rest of `handle`, up to WIDE_MAX_BYTES): (the bytes read,
    the file as UTF-8 when it is that encoding throughout, why it is refused when it is too big to decode whole)."""
    blob = head + (handle.read(WIDE_MAX_BYTES + 1 - len(head)) or b"")
    if len(blob) > WIDE_MAX_BYTES:
        return blob, None, (f"{name} text over {WIDE_MAX_BYTES >> 20} MiB, not UTF-8: not read; convert it to UTF-8 "
                            f"(`iconv -f {name} -t UTF-8 FILE > NEW.jsonl`, PowerShell: `Out-File -Encoding utf8`)")
    text = wide_text(blob, codec)
    return blob, None if text is None else text.encode("utf-8"), None


def not_utf8(raw: bytes) -> Optional[tuple[str, int]]:
    """(why, 1-based column in characters) when raw is not UTF-8 text, else None."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = len(raw[:exc.start].decode("utf-8", errors="replace")) + 1
        return (f"not UTF-8 text (byte 0x{raw[exc.start]:02x}): a damaged line, or text saved in another encoding "
                "(convert the file to UTF-8)", column)
    return None


def not_utf8_json(raw: bytes) -> tuple[Optional[tuple[str, int]], Optional[Exception]]:
    """Of a line that did not parse: (why and column, when its bytes that are not UTF-8 are what is wrong, None),
    (None, the JSON error of its text read leniently, when that comes first), (None, None) for UTF-8."""
    undecodable = not_utf8(raw)
    if undecodable is None:
        return None, None
    text = raw.decode("utf-8", errors="replace")
    try:
        json.loads(text, parse_constant=lambda _name: None)
    except (ValueError, RecursionError) as exc:
        at = exc.pos if isinstance(exc, json.JSONDecodeError) else -1
        if not (0 <= at < len(text) and text[at] == "\ufffd"):  # stopped before a byte that is not UTF-8
            return None, exc
    return undecodable, None


def undecodable_at(blob: bytes, text: str, at: int) -> tuple[str, int]:
    """Why the object holding text[at] (a byte of blob that is not UTF-8, decoded as U+FFFD) is refused, and the
    column (in characters) on its line."""
    start = 0
    for _ in range(text.count("\n", 0, at)):  # the same line in the bytes (a newline always decodes)
        start = blob.index(b"\n", start) + 1
    why = (not_utf8(blob[start:].split(b"\n", 1)[0]) or ("not UTF-8 text", 0))[0]
    return why, at - text.rfind("\n", 0, at)


def span_crc(path: Path, span: tuple[int, int]) -> Optional[int]:
    """CRC-32 of a line of a file (offset, length), without its line end and trailing blanks; None when it cannot
    be read again (the file changed or went away). Read again only when a run's copy is suspected: no line is
    checksummed as it is parsed."""
    offset, length = span
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read(length)
    except OSError:
        return None
    if len(data) != length:
        return None
    return zlib.crc32(data.rstrip(b" \t\r\n"))


def opens_pretty_object(line: bytes) -> bool:
    """The first line opens a pretty-printed object or array: `{` or `[` alone, or `{`/`[` not closed on the line."""
    stripped = line.strip()
    return (stripped in (b"{", b"[") or (stripped.startswith(b"{") and not stripped.endswith(b"}"))
            or (stripped.startswith(b"[") and not stripped.endswith(b"]")))


def line_ends_of(buf: bytearray, start: int, end: int) -> bytes:
    """A line, or for a long one a stand-in with the same first and last non-blank bytes
    (a long line has two distinct non-blank bytes, so it is never a lone `{` or `[`)."""
    if end - start <= 8192:
        return bytes(buf[start:end])
    first = bytes(buf[start:start + 4096]).lstrip()
    last = bytes(buf[end - 4096:end]).rstrip()
    if not first or not last:
        return bytes(buf[start:end])
    return first[:1] + b" " + last[-1:]


def damaged_first_line(blob: bytes) -> bool:
    """The first line holds more than the opening `{` or `[` of a pretty-printed document: a whole
    JSON Lines record that was damaged, not the start of one object spread over lines."""
    first_end = blob.find(b"\n")
    first = (blob if first_end < 0 else blob[:first_end]).strip()
    return first.startswith(b"{") and first not in (b"{", b"[")
