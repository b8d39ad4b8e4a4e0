"""Long tables in the HTML pages: the first rows drawn at load, the others on demand. Pure: no I/O.

A page's size and its time to first draw should follow what a person reads, not the number of scenarios: a run
of 20,000 scenarios has a dozen tables of 20,000 rows each, most of which nobody scrolls through. Every table of
a page's body with more than LONG_TABLE_ROWS body rows keeps its first SHOWN_ROWS rows as HTML (readable and
printable without JavaScript); its other rows go, as their HTML, into one JSON document for the whole page,
gzip-compressed and base64-encoded like plotly.js (`#sskj-rows`; the rows of a results table compress about
15-fold: their markup repeats). The page's script (assets/longtables.js) puts a table's rows back when asked: its
"Show all" button, a click on a header to sort it, a filter of the results table. The Markdown beside the page
(report.md, comparison.md, history.md) holds every row too.

The tables are the page's own (markdown_html, html.results_table_html): no table nests in another and a row's
text is escaped, so a row starts at `<tr` and the body ends at the table's one `</tbody>`.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Optional

LONG_TABLE_ROWS = 250
SHOWN_ROWS = 100
ROWS_ID = "sskj-rows"
_TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.S)
_ROW = re.compile(r"(?=<tr[\s>])")


def fold_long_tables(body: str) -> tuple[str, Optional[str]]:
    """(the body with every long table cut to its first SHOWN_ROWS rows and a note after it, the base64 of the
    gzip of the JSON list of each cut table's other rows, or None when no table is long)."""
    folded: list[list[str]] = []

    def fold(match: re.Match[str]) -> str:
        table = match.group(0)
        start, end = table.find("<tbody>"), table.rfind("</tbody>")
        if start < 0 or end < start:
            return table
        rows = [r for r in _ROW.split(table[start + len("<tbody>"):end]) if r.strip()]
        if len(rows) <= LONG_TABLE_ROWS:
            return table
        key = len(folded)
        folded.append(rows[SHOWN_ROWS:])
        head = table[:start].replace("<table", f'<table data-long="{key}" data-rows="{len(rows)}"', 1)
        note = (f'<p class="long-table" data-long="{key}">The first {SHOWN_ROWS} of {len(rows):,} rows are drawn. '
                f'<button type="button" data-long="{key}">Show all {len(rows):,} rows</button> (sorting or filtering '
                "the table shows them too; every row is also in the Markdown beside this page)</p>")
        return head + "<tbody>" + "".join(rows[:SHOWN_ROWS]) + table[end:] + note

    out = _TABLE.sub(fold, body)
    if not folded:
        return body, None
    text = json.dumps(folded, ensure_ascii=False, separators=(",", ":"))
    return out, base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def rows_script(packed: Optional[str]) -> str:
    """The element that carries the folded rows (empty when there are none)."""
    return "" if packed is None else f'<script type="application/octet-stream" id="{ROWS_ID}">{packed}</script>'
