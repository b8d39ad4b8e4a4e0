"""Markdown tables of report.md and comparison.md: cells escaped, tabulate's GitHub format. Pure: no I/O."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tabulate import tabulate

from ..contract.escape import md_cell


def cell(text: Any) -> str:
    """A Markdown table cell: one line, pipes and markup escaped (contract.escape.md_cell)."""
    return md_cell(text)


def github_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: Optional[Sequence[str]] = None) -> list[str]:
    text = tabulate(
        [[cell(c) for c in r] for r in rows], headers=[cell(h) for h in headers], tablefmt="github",
        disable_numparse=True, colalign=list(align) if align else None,
    )
    return text.splitlines()
