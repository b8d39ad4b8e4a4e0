"""Packed text in a page: bytes gzip-compressed, then written as text for an application/octet-stream script
element (plotly.js, history.html's data). Pure: no I/O.

The text is in base 125: its digits are the ASCII characters U+0001-U+007F but CR (an HTML parser turns it into
LF) and `<` (the only character that can end a script's text: without it, neither `</script` nor `<!--`), so it
includes tabs, newlines and other control characters, kept as they are by HTML parsers (the characters are ASCII:
the page stays UTF-8 text without NUL). 6 bytes are 7 digits (125**7 > 2**48), a last group of k bytes k + 1 digits;
base64 writes 6 bytes as 8 characters, base85 as 7.5: the inlined plotly.js is 1.71 MB instead of 1.96 MB. The
pages' script (assets/common.js sskjUnpack) decodes it and decompresses it with the browser's own
DecompressionStream.
"""

from __future__ import annotations

import gzip

import numpy as np

RADIX = 125
DIGITS = bytes(c for c in range(1, 128) if c not in (0x0D, 0x3C))  # digit value -> character
_VALUE = np.full(128, -1, dtype=np.int64)
_VALUE[np.frombuffer(DIGITS, dtype=np.uint8)] = np.arange(RADIX)


def encode(data: bytes) -> str:
    """`data` as base-125 text (6 bytes as 7 digits, most significant first)."""
    tail = len(data) % 6
    padded = np.frombuffer(data + bytes((6 - tail) % 6), dtype=np.uint8).reshape(-1, 6).astype(np.uint64)
    value = np.zeros(len(padded), dtype=np.uint64)
    for column in range(6):
        value = (value << np.uint64(8)) | padded[:, column]
    digits = np.empty((len(padded), 7), dtype=np.uint8)
    for column in range(6, -1, -1):
        digits[:, column] = value % np.uint64(RADIX)
        value //= np.uint64(RADIX)
    text = np.frombuffer(DIGITS, dtype=np.uint8)[digits].tobytes()
    return (text if not tail else text[:len(text) - 7 + tail + 1]).decode("ascii")


def decode(text: str) -> bytes:
    """The bytes of encode(): a last group of fewer than 7 digits is completed with the largest digit."""
    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    values = _VALUE[codes] if codes.size else np.zeros(0, dtype=np.int64)
    if (values < 0).any():
        raise ValueError("not base-125 text")
    tail = len(codes) % 7
    if tail == 1:
        raise ValueError("base-125 text of a wrong length")
    groups = np.concatenate([values, np.full((7 - tail) % 7, RADIX - 1)]).reshape(-1, 7).astype(np.uint64)
    value = np.zeros(len(groups), dtype=np.uint64)
    for column in range(7):
        value = value * np.uint64(RADIX) + groups[:, column]
    out = np.empty((len(groups), 6), dtype=np.uint8)
    for column in range(5, -1, -1):
        out[:, column] = (value & np.uint64(255)).astype(np.uint8)
        value >>= np.uint64(8)
    data = out.tobytes()
    return data if not tail else data[:len(data) - 6 + tail - 1]


def pack(data: bytes) -> str:
    """The gzip of `data`, as base-125 text."""
    return encode(gzip.compress(data, compresslevel=9, mtime=0))


def unpack(text: str) -> bytes:
    """`data` of pack(data)."""
    return gzip.decompress(decode(text))
