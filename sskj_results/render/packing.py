"""Packed text in a page: bytes gzip-compressed, then base64-encoded, for an application/octet-stream script
element (plotly.js, a long table's rows, history.html's data). Pure: no I/O.

Base64's characters are letters, digits, `+`, `/` and `=`: printable ASCII that no HTML parser changes and that
can never end a script's text (no `<`), so the page stays plain text a terminal, a mail or a diff shows as it is.
The pages' script (assets/common.js sskjUnpack) decodes it and decompresses it with the browser's own
DecompressionStream.
"""

from __future__ import annotations

import base64
import binascii
import gzip


def encode(data: bytes) -> str:
    """`data` as base64 text."""
    return base64.b64encode(data).decode("ascii")


def decode(text: str) -> bytes:
    """The bytes of encode(); ValueError for text that is not base64."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError(f"not base64 text: {exc}") from None


def pack(data: bytes) -> str:
    """The gzip of `data`, as base64 text."""
    return encode(gzip.compress(data, compresslevel=9, mtime=0))


def unpack(text: str) -> bytes:
    """`data` of pack(data)."""
    return gzip.decompress(decode(text))
