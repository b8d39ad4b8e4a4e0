"""Markdown tables of report.md and comparison.md: cells escaped, GitHub pipe-table layout. Pure: no I/O.

The layout is the one tabulate's `github` format writes with numbers left as
text (every table here was written by it before; the bytes are unchanged):
each column as wide as its widest cell and at least its header plus 2, cells
stripped, padded by one space each side, left or right aligned, the header
aligned like its column, an alignment row of dashes only. Widths count
characters (code points). Laid out here, in one pass per table, because at
20,000 scenarios tabulate's per-cell type inference was a third of `report`.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..contract.escape import md_cell


def cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes and markup escaped (contract.escape.md_cell)."""
    return md_cell(text)


def github_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: Optional[Sequence[str]] = None) -> list[str]:
    """The lines of a pipe table: `headers`, then one line per row (each as many cells as headers);
    `align` per column `left` (the default) or `right`."""
    head = [cell(h) for h in headers]
    body = [[cell(c).strip() for c in r] for r in rows]
    columns = list(zip(*body)) or [()] * len(head)
    widths = [max(len(h) + 2, max(map(len, column), default=0)) for h, column in zip(head, columns)]
    right = [bool(body) and align is not None and i < len(align) and align[i] == "right" for i in range(len(head))]
    pads = [str.rjust if r else str.ljust for r in right]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join([pad(c, w) for pad, c, w in zip(pads, cells, widths)]) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in body]
