"""Packed text in a page: bytes gzip-compressed, then written in base 91, for an application/octet-stream script
element (plotly.js, a long table's rows, history.html's data). Pure: no I/O.

Base 91 here: the printable ASCII characters but `<`, `>` and `&` (ALPHABET, 91 of them, in code order); every 13
bits of the data (the last group padded with zero bits) are two characters, the first the value modulo 91. The
text starts with the number of bytes in decimal and one space. 16 characters carry 13 bytes (base64: 4 carry 3):
plotly.js takes 1.81 MB (1.75 MB by zopfli) instead of 1.96 MB. Without `<` the text can never end a script's text or open a comment
in it (no `</script`, no `<!--`), and without control characters the page stays plain text a terminal, a mail or a
diff shows as it is. The pages' script (assets/common.js sskjUnpack) decodes it and decompresses it with the
browser's own DecompressionStream.
"""

from __future__ import annotations

import gzip
import re

import numpy as np

ALPHABET = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in "<>&")
BITS = 13  # 91 ** 2 = 8281 >= 2 ** 13
_CODES = np.frombuffer(ALPHABET.encode("ascii"), dtype=np.uint8)
_VALUES = np.full(256, -1, dtype=np.int16)
_VALUES[_CODES] = np.arange(len(ALPHABET), dtype=np.int16)
_WEIGHTS = (1 << np.arange(BITS - 1, -1, -1)).astype(np.int32)
_HEAD = re.compile(r"([0-9]+) ")


def encode(data: bytes) -> str:
    """`data` as base-91 text: its length, a space, two characters for every 13 bits."""
    flat = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    groups = np.concatenate([flat, np.zeros(-flat.size % BITS, dtype=np.uint8)]).reshape(-1, BITS)
    values = groups.astype(np.int32) @ _WEIGHTS
    pairs = np.empty((values.size, 2), dtype=np.uint8)
    pairs[:, 0], pairs[:, 1] = _CODES[values % 91], _CODES[values // 91]
    return f"{len(data)} " + pairs.tobytes().decode("ascii")


def decode(text: str) -> bytes:
    """The bytes of encode(); ValueError for text that is not its form."""
    head = _HEAD.match(text)
    try:
        raw = np.frombuffer(text[head.end():].encode("ascii"), dtype=np.uint8) if head else None
    except UnicodeEncodeError:
        raw = None
    if head is None or raw is None or raw.size % 2:
        raise ValueError("not base-91 text: no length and space before an even number of characters")
    values = _VALUES[raw].astype(np.int32)
    if values.size and values.min() < 0:
        raise ValueError("not base-91 text: a character outside its alphabet")
    number = values[0::2] + 91 * values[1::2]
    size = int(head.group(1))
    if (number.size and number.max() >= 1 << BITS) or not 0 <= number.size * BITS - size * 8 < BITS:
        raise ValueError("not base-91 text: its length does not match its characters")
    bits = ((number[:, None] & _WEIGHTS) != 0).astype(np.uint8).reshape(-1)
    return np.packbits(bits[:size * 8]).tobytes()


def pack(data: bytes) -> str:
    """The gzip of `data`, as base-91 text."""
    return encode(gzip.compress(data, compresslevel=9, mtime=0))


def varints(values: list[int]) -> bytes:
    """Integers as bytes that gzip compresses well: each zigzag-coded (0, -1, 1, -2, ... as 0, 1, 2, 3, ...) and
    written in 7-bit groups, low first, the high bit of a byte set when another group follows; the first group of
    every value, then the second group of those that have one, and so on (like bytes together: gzip's Huffman codes
    fit each kind). assets/history.js sskjVarints reads them back (exact up to 2**53, as a JavaScript number)."""
    planes: list[bytearray] = []
    for value in values:
        z = 2 * value if value >= 0 else -2 * value - 1
        k = 0
        while True:
            if k == len(planes):
                planes.append(bytearray())
            z, low = divmod(z, 128)
            planes[k].append(low | (128 if z else 0))
            k += 1
            if not z:
                break
    return b"".join(planes)


def unvarints(data: bytes, count: int) -> list[int]:
    """The `count` integers of varints() (ValueError when `data` is not that many)."""
    planes, start, size = [], 0, count
    while size:
        plane = data[start:start + size]
        if len(plane) < size:
            raise ValueError("not varints: fewer bytes than the values need")
        planes.append(plane)
        start, size = start + size, sum(b >> 7 for b in plane)
    if start != len(data):
        raise ValueError("not varints: more bytes than the values need")
    at = [0] * len(planes)
    out = []
    for _ in range(count):
        z, k, more = 0, 0, True
        while more:
            b = planes[k][at[k]]
            at[k] += 1
            z += (b & 127) << (7 * k)
            more, k = bool(b & 128), k + 1
        out.append(z // 2 if z % 2 == 0 else -(z + 1) // 2)
    return out


def pack_smallest(data: bytes) -> tuple[str, bool]:
    """(the smallest gzip of `data` this installation makes, as base-91 text; whether zopfli made it): zopfli
    (one iteration: about 3.4 % fewer bytes than gzip -9 for plotly.js, about 4 s for its 4.8 MB) when the `zopfli`
    package is installed, else gzip -9. Either is the gzip format the browser's DecompressionStream reads."""
    try:
        import zopfli.gzip
    except ImportError:
        return pack(data), False
    return encode(zopfli.gzip.compress(data, numiterations=1)), True


def unpack(text: str) -> bytes:
    """`data` of pack(data)."""
    return gzip.decompress(decode(text))
