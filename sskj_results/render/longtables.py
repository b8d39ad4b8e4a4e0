"""Long tables and lists in the HTML pages: the first rows drawn at load, the others on demand. Pure: no I/O.

A page's size and its time to first draw should follow what a person reads, not the number of scenarios: a run
of 20,000 scenarios has a dozen tables of 20,000 rows each, most of which nobody scrolls through. Every table of
a page's body with more than LONG_TABLE_ROWS body rows keeps its first SHOWN_ROWS rows as HTML (readable and
printable without JavaScript); its other rows go, as their HTML, into one JSON document for the whole page,
packed like plotly.js (`#sskj-rows`: gzip, base 91, render/packing.py; the rows of a results table compress about
15-fold: their markup repeats). The page's script (assets/longtables.js) puts a table's rows back when asked: its
"Show all" button, a click on a header to sort it, a filter of the results table. The Markdown beside the page
(report.md, comparison.md, history.md) holds every row too. A list of more than LONG_TABLE_ROWS items (the
Validity section's failed checks, one item a check) is folded the same way, its items kept whole. In a folded
table a number's sort value (`data-v`) is the number as shown (the cell's text), not its full precision: the rows
compress several times better, and a sort orders them as the reader sees them.

The tables are the page's own (markdown_html, html.results_table_html): no table nests in another and a row's
text is escaped, so a row starts at `<tr` and the body ends at the table's one `</tbody>`.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from .packing import pack

LONG_TABLE_ROWS = 250
SHOWN_ROWS = 100
ROWS_ID = "sskj-rows"
_TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.S)
_LIST = re.compile(r"<ul>(?:(?!<ul>).)*?</ul>", re.S)  # a list with no list inside it
_ROW = re.compile(r"(?=<tr[\s>])")
_ITEM = re.compile(r"(?=<li[\s>])")
_SORT_VALUE = re.compile(r'data-v="[^"]*">(-?[0-9]+(?:\.[0-9]+)?)</td>')


def _as_shown(rows: list[str]) -> list[str]:
    """The rows with each number's sort value cut to the number shown."""
    return [_SORT_VALUE.sub(r'data-v="\1">\1</td>', row) for row in rows]


def _note(key: int, total: int, what: str) -> str:
    return (f'<p class="long-table" data-long="{key}">The first {SHOWN_ROWS} of {total:,} {what} are drawn. '
            f'<button type="button" data-long="{key}">Show all {total:,} {what}</button> '
            + ("(sorting or filtering the table shows them too; " if what == "rows" else "(")
            + "every one is also in the Markdown beside this page)</p>")


def fold_long_tables(body: str) -> tuple[str, Optional[str]]:
    """(the body with every long table and list cut to its first SHOWN_ROWS rows or items and a note after it, the
    base-91 text of the gzip of the JSON list of each cut one's other rows or items, or None when none is long)."""
    folded: list[list[str]] = []

    def fold_table(match: re.Match[str]) -> str:
        table = match.group(0)
        start, end = table.find("<tbody>"), table.rfind("</tbody>")
        if start < 0 or end < start:
            return table
        rows = [r for r in _ROW.split(table[start + len("<tbody>"):end]) if r.strip()]
        if len(rows) <= LONG_TABLE_ROWS:
            return table
        rows = _as_shown(rows)
        key = len(folded)
        folded.append(rows[SHOWN_ROWS:])
        head = table[:start].replace("<table", f'<table data-long="{key}" data-rows="{len(rows)}"', 1)
        return head + "<tbody>" + "".join(rows[:SHOWN_ROWS]) + table[end:] + _note(key, len(rows), "rows")

    def fold_list(match: re.Match[str]) -> str:
        items = [i for i in _ITEM.split(match.group(0)[len("<ul>"):-len("</ul>")]) if i.strip()]
        if len(items) <= LONG_TABLE_ROWS:
            return match.group(0)
        key = len(folded)
        folded.append(items[SHOWN_ROWS:])
        return (f'<ul data-long="{key}" data-rows="{len(items)}">' + "".join(items[:SHOWN_ROWS]) + "</ul>"
                + _note(key, len(items), "items"))

    out = _LIST.sub(fold_list, _TABLE.sub(fold_table, body))
    if not folded:
        return body, None
    text = json.dumps(folded, ensure_ascii=False, separators=(",", ":"))
    return out, pack(text.encode("utf-8"))


def rows_script(packed: Optional[str]) -> str:
    """The element that carries the folded rows (empty when there are none)."""
    return "" if packed is None else f'<script type="application/octet-stream" id="{ROWS_ID}">{packed}</script>'
