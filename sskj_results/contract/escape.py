"""One escaping function per output format, for values a user or a raw file wrote. Pure.

Every renderer puts recorded values (descriptions, labels, commands, file names, reasons)
into its output through these, so a value stays one value: it cannot start a Markdown
heading or table row, open raw HTML or a link, split a table row at a line break, or
become a spreadsheet formula. (HTML itself is escaped with ``html.escape``; the page's
Markdown-to-HTML converter reads what md_text writes.)
"""

from __future__ import annotations

import re
from typing import Any

# every character str.splitlines() breaks at, and \r\n as one break
_BREAK = re.compile("\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f\t]")
# Markdown punctuation that could make a value into markup: emphasis, code, raw HTML or an
# autolink (`<` before a letter, `/`, `!` or `?`), an inline link or image (`](`), a table cell end
_MD_SPECIAL = re.compile(r"([\\`*|])|<(?=[A-Za-z/!?])|\](?=[(\[])")
# in a table cell that may hold our own markup (code spans, **bold**): raw HTML, links and `|` only
_MD_CELL = re.compile(r"(\|)|<(?=[A-Za-z/!?])|\](?=[(\[])")
_CODE_SPAN = re.compile(r"``\s.+?\s``|`[^`]+`")
# a value holding none of these comes out of one_line / md_text / md_cell as it went in (the common case:
# one search instead of the substitutions, which matters at 20,000 scenarios of report.md)
_PLAIN_LINE = re.compile("[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00-\x08\x0e-\x1b\x7f\t]")
_PLAIN_TEXT = re.compile("[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00-\x08\x0e-\x1b\x7f\t\\\\`*|<\\]]")
_PLAIN_CELL = re.compile("[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00-\x08\x0e-\x1b\x7f\t|<\\]]")


def _escape(m: re.Match[str]) -> str:
    return "\\" + m.group(0)


def one_line(text: Any) -> str:
    """The value as one line: every line break (\\n, \\r\\n, \\r, \\v, \\f, \\x1c-\\x1e, \\x85, U+2028,
    U+2029) and control character becomes a space."""
    text = str(text)
    return text if _PLAIN_LINE.search(text) is None else _CONTROL.sub(" ", _BREAK.sub(" ", text))


def normalize_breaks(text: Any) -> str:
    """The value with every kind of line break written as \\n (for a fenced block)."""
    return _CONTROL.sub(" ", _BREAK.sub("\n", str(text)))


def md_text(text: Any) -> str:
    """A value as Markdown text on one line, shown literally (backslash escapes)."""
    text = str(text)
    return text if _PLAIN_TEXT.search(text) is None else _MD_SPECIAL.sub(_escape, one_line(text))


def md_cell(text: Any) -> str:
    """A value as one cell of a Markdown pipe table: one line, `|`, raw HTML and links escaped.
    Inline code and **bold** a renderer put in the cell are kept (inside code only `|` is escaped)."""
    flat = str(text)
    if _PLAIN_CELL.search(flat) is None:
        return flat
    flat = one_line(flat)
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(flat):
        out.append(_MD_CELL.sub(_escape, flat[pos:m.start()]))
        out.append(m.group(0).replace("|", "\\|"))
        pos = m.end()
    out.append(_MD_CELL.sub(_escape, flat[pos:]))
    return "".join(out)


def md_code(text: Any) -> str:
    """A value as inline code on one line (a value holding backticks gets the double-backtick form;
    md_cell escapes its `|` when it goes into a table)."""
    flat = one_line(text)
    return f"`` {flat} ``" if "`" in flat else f"`{flat}`"


def md_fence(text: Any, info: str = "") -> list[str]:
    """Lines of a fenced code block holding text verbatim: the fence is longer than any run of
    backticks inside it, so nothing in the text can close it."""
    body = normalize_breaks(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body.split("\n"), fence]


_MD_UNESCAPE = re.compile(r"\\([\\`*\]|<])")


def md_unescape(text: str) -> str:
    """The text md_text escaped (for the page's own Markdown-to-HTML converter)."""
    return _MD_UNESCAPE.sub(r"\1", text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """A text cell of a CSV file made safe for spreadsheets (OWASP, CSV injection): a cell starting
    with = + - @ TAB or CR is prefixed with a single quote, so it is shown as text, never run as a
    formula. Numbers are not text cells and are never changed."""
    return "'" + value if value.startswith(_FORMULA_START) else value


def csv_text_read(value: str) -> str:
    """The text csv_text was given: its single quote before = + - @ TAB or CR taken off (reading a CSV sskj wrote)."""
    return value[1:] if value.startswith("'") and value[1:].startswith(_FORMULA_START) else value
