"""Markdown tables of report.md and comparison.md: cells escaped, tabulate's GitHub format. Pure: no I/O."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from tabulate import tabulate


def cell(text: Any) -> str:
    """A Markdown table cell: pipes escaped, newlines flattened."""
    return str(text).replace("|", "\\|").replace("\n", " ")



def github_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: Optional[Sequence[str]] = None) -> list[str]:
    text = tabulate(
        [[cell(c) for c in r] for r in rows], headers=list(headers), tablefmt="github",
        disable_numparse=True, colalign=list(align) if align else None,
    )
    return text.splitlines()
