"""Markdown tables of report.md and comparison.md: cells escaped, tabulate's GitHub format. Pure: no I/O.

The layout (tabulate's `github` format with numbers left as text): each
column as wide as its widest cell and at least its header plus 2, cells
stripped, padded by one space each side, left or right aligned, the header
aligned like its column, an alignment row of dashes only.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tabulate import tabulate

from ..contract.escape import md_cell


def cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes and markup escaped (contract.escape.md_cell)."""
    return md_cell(text)


def github_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: Optional[Sequence[str]] = None) -> list[str]:
    """The lines of a pipe table: `headers`, then one line per row (each as many cells as headers);
    `align` per column `left` (the default) or `right`. Cells are escaped here and given to tabulate as
    text (no number parsing: they are already formatted)."""
    text = tabulate(
        [[cell(c) for c in r] for r in rows], headers=[cell(h) for h in headers], tablefmt="github",
        disable_numparse=True, colalign=list(align) if align else None,
    )
    return text.splitlines()
