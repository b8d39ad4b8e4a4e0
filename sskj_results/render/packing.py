"""Packed text in a page: bytes gzip-compressed, then base85-encoded, for an application/octet-stream script
element (plotly.js, history.html's data). Pure: no I/O.

base85 in Python's b85 alphabet with `<` written as `,` (not in the alphabet): the element's text holds no `<`, so
neither `</script` nor `<!--`; 5 characters carry 4 bytes (base64: 4 carry 3), so the inlined plotly.js is 1.84 MB
instead of 1.96 MB. The pages' script (assets/common.js sskjUnpack) decodes it and decompresses it with the
browser's own DecompressionStream.
"""

from __future__ import annotations

import base64
import gzip

_B85_OUT, _B85_IN = str.maketrans("<", ","), str.maketrans(",", "<")


def pack(data: bytes) -> str:
    """The gzip of `data`, base85-encoded, `<` written as `,`."""
    return base64.b85encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii").translate(_B85_OUT)


def unpack(text: str) -> bytes:
    """`data` of pack(data)."""
    return gzip.decompress(base64.b85decode(text.translate(_B85_IN)))
