"""history.md and history.html: every setup's series over time and the changes found (analysis/history.py).

history.md: the changes (regressions first), the shifts not confirmed, every series in one table, the rule.
history.html: one self-contained page (plotly.js inlined as in render/html.py): the same tables, sortable, and
one trend figure per setup and metric (a line per shape, changes marked), filterable by chip, engine, shape and
metric; figures are drawn a page at a time and a series of more than MAX_DRAWN runs is drawn as the medians of
MAX_DRAWN consecutive groups of runs (changes still at their own run). docs/HISTORY.md.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    import pandas as pd

from ..analysis.history import (
    CONTEXT_COLUMNS, SETUP_COLUMNS, Change, History, Series, metric_direction, setup_label, shape_label,
)
from ..analysis.runtable import DTYPES, Dropped, Skipped, collect_table
from ..contract.errors import ResultsError
from ..contract.io import atomic_write_text
from .html import CSP, _asset, _json_script, plotly_js_gzip_base64
from .markdown_html import markdown_blocks
from .mdtable import github_table

MAX_DRAWN = 120  # points of one line of a figure; beyond, medians of consecutive groups of runs
FIGURES_PER_PAGE = 8
LABELS = {"engine_version": "engine version", "image": "image", "env": "env", "client": "client",
          "client_version": "client version", "driver_version": "driver", "runtime_version": "runtime",
          "server_args": "server command"}


def _num(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"


def _pct(ratio: Optional[float]) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def _when(series: Series, index: int) -> str:
    p = series.points[index]
    stamp = p.timestamp or "date unknown"
    return f"{p.run_id} ({stamp}{', ' + p.order_note if p.order_note else ''})"


def difference_text(change: Change) -> str:
    """`engine version 0.5.0 → 0.5.1; image a → b`; the server command only said to differ."""
    parts = []
    for name, before, after in change.differences:
        label = LABELS.get(name, name)
        if name in ("server_args", "env"):
            parts.append(f"{label} differs")
        else:
            parts.append(f"{label} {before or 'unknown'} → {after or 'unknown'}")
    return "; ".join(parts) or "no recorded version or configuration difference"


def _change_row(s: Series, c: Change) -> list[str]:
    ci = "-" if c.ci_low is None or c.ci_high is None else f"{_pct(c.ci_low)} … {_pct(c.ci_high)}"
    before, after = s.points[c.index - 1].value, s.points[c.index].value
    return [c.kind, s.metric, setup_label(s.setup), shape_label(s.shape), _when(s, c.index), difference_text(c),
            f"{_num(before)} → {_num(after)}", _pct(c.ratio), ci, "-" if c.p is None else f"{c.p:.2g}",
            f"{c.n_before} / {c.n_after}"] + ([c.reason or ""] if c.kind == "not confirmed" else [])


CHANGE_HEADERS = ["Verdict", "Metric", "Setup", "Shape", "First run after", "Difference at that run",
                  "Last before → first after", "Size (median ratio)", "95 % CI", "p (Mann-Whitney U)",
                  "Samples before / after"]


def failure_lines(hist: History) -> list[str]:
    """One line per regression (`--fail-on-regression`)."""
    return [f"regression: {s.metric} {_pct(c.ratio)} at run {_when(s, c.index)}: {setup_label(s.setup)}, "
            f"{shape_label(s.shape)}; {difference_text(c)}"
            for s in hist.series for c in s.changes if c.kind == "regression"]


def history_markdown(hist: History, title: str = "History") -> str:
    rule = hist.rule
    confirmed = [(s, c) for s in hist.series for c in s.confirmed]
    confirmed.sort(key=lambda sc: (sc[1].kind != "regression", sc[0].metric))
    unconfirmed = [(s, c) for s in hist.series for c in s.changes if c.kind == "not confirmed"]
    setups = {s.setup for s in hist.series}
    single = sum(1 for s in hist.series if len(s.points) == 1)
    uncertain = sum(1 for s in hist.series for p in s.points if p.order_note)
    n_reg = sum(1 for _, c in confirmed if c.kind == "regression")
    lines = [f"# {title}", "", "## Summary", "",
             f"- {hist.runs} run(s), {len(setups)} setup(s), {len(hist.series)} series "
             f"(setup x shape x metric; metrics: {', '.join(hist.metrics)}); {single} series of one run "
             "(nothing to compare).",
             f"- Changes: {n_reg} regression(s), {len(confirmed) - n_reg} improvement(s); "
             f"{len(unconfirmed)} shift(s) not confirmed.",
             f"- Rule: a shift beyond max({rule.min_change:.0%}, {rule.noise_factor:g} x the series' run-to-run "
             f"noise) in the median of up to {rule.window} runs and in each of the first {rule.persist} runs after "
             f"it, confirmed by a Mann-Whitney U test (p < {rule.alpha:g}); docs/HISTORY.md.",
             "- Directions: " + ", ".join(f"{m} {metric_direction(m)} is better" for m in hist.metrics) + "."]
    if uncertain:
        lines.append(f"- Order partly assumed: {uncertain} point(s) lack a year, a time of day or a date "
                     "(placed as the Series table's runs say).")
    lines += ["", "## Changes", ""]
    if confirmed:
        lines += github_table(CHANGE_HEADERS, [_change_row(s, c) for s, c in confirmed])
    else:
        lines.append("No step change found.")
    lines += ["", "## Not confirmed", ""]
    if unconfirmed:
        lines.append("Shifts beyond the threshold that persist, but which the test does not confirm (too few runs "
                     "either side, or not significant): watch them, they are not changes.")
        lines.append("")
        lines += github_table(CHANGE_HEADERS + ["Why not confirmed"], [_change_row(s, c) for s, c in unconfirmed])
    else:
        lines.append("None.")
    lines += ["", "## Series", ""]
    rows = []
    for s in hist.series:
        first, last = s.points[0], s.points[-1]
        versions = [p.get("engine_version") or "unknown" for p in s.points]
        span = versions[0] if versions[0] == versions[-1] else f"{versions[0]} → {versions[-1]}"
        rows.append([setup_label(s.setup), shape_label(s.shape), s.metric, str(len(s.points)),
                     first.timestamp or "unknown", last.timestamp or "unknown", span, _num(last.value),
                     "-" if s.noise is None else f"{math.expm1(s.noise) * 100:.1f} %",
                     "-" if s.threshold is None else f"{s.threshold * 100:.1f} %",
                     str(len(s.confirmed))])
    lines += github_table(["Setup", "Shape", "Metric", "Runs", "First", "Last", "Engine versions", "Latest",
                           "Noise", "Threshold", "Changes"], rows,
                          ["left"] * 3 + ["right"] + ["left"] * 3 + ["right"] * 4)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the page


def _binned(xs: Sequence[int], ys: Sequence[float]) -> tuple[list[int], list[float]]:
    """At most MAX_DRAWN points: groups of consecutive runs, each drawn at its middle run with its median."""
    if len(xs) <= MAX_DRAWN:
        return list(xs), [float(f"{y:.4g}") for y in ys]
    step = len(xs) / MAX_DRAWN
    out_x, out_y = [], []
    for k in range(MAX_DRAWN):
        lo, hi = int(k * step), int((k + 1) * step)
        group = sorted(ys[lo:hi])
        out_x.append(xs[(lo + hi - 1) // 2])
        out_y.append(float(f"{group[len(group) // 2]:.4g}"))
    return out_x, out_y


def figure_data(hist: History) -> list[dict[str, Any]]:
    """One figure per setup and metric: its runs (in order), a line per shape, the changes."""
    groups: dict[tuple[Any, str], list[Series]] = {}
    for s in hist.series:
        groups.setdefault((s.setup, s.metric), []).append(s)
    figures = []
    for n, ((setup, metric), members) in enumerate(groups.items()):
        order: dict[str, int] = {}
        runs: list[list[Optional[str]]] = []
        by_rank = {p.rank: p for s in members for p in s.points}  # the setup's runs, in the order of all runs
        for rank in sorted(by_rank):
            p = by_rank[rank]
            order[p.run_dir] = len(runs)
            runs.append([p.run_id, p.timestamp, p.get("engine_version"), p.get("image"), p.order_note])
        lines, marks = [], []
        for s in members:
            xs = [order[p.run_dir] for p in s.points]
            bx, by = _binned(xs, [p.value for p in s.points])
            lines.append({"shape": shape_label(s.shape), "x": bx, "y": by, "n": len(xs)})
            for c in s.changes:
                marks.append({"shape": shape_label(s.shape), "x": xs[c.index], "y": float(f"{s.points[c.index].value:.4g}"),
                              "kind": c.kind, "text": f"{c.kind} {_pct(c.ratio)}: {difference_text(c)}"})
        named = dict(zip(SETUP_COLUMNS, setup))
        figures.append({"id": f"fig-h{n}", "title": f"{metric}: {setup_label(setup)}", "metric": metric,
                        "direction": metric_direction(metric), "chip": str(named["chip"] or "unknown"),
                        "engine": str(named["engine"] or "unknown"), "runs": runs, "lines": lines, "marks": marks})
    return figures


def _filters(figures: Sequence[dict[str, Any]], hist: History) -> str:
    options = {"chip": sorted({f["chip"] for f in figures}), "engine": sorted({f["engine"] for f in figures}),
               "shape": sorted({ln["shape"] for f in figures for ln in f["lines"]}), "metric": list(hist.metrics)}
    selects = []
    for key, values in options.items():
        opts = "".join(f'<option value="{html.escape(v, quote=True)}">{html.escape(v)}</option>' for v in values)
        selects.append(f'<label>{key.capitalize()} <select data-hfilter="{key}"><option value="">all</option>{opts}'
                       "</select></label>")
    return (f'<div class="filters" id="history-filters">{"".join(selects)}'
            '<span class="count" id="history-count"></span></div>')


def history_html(hist: History, markdown: str, title: str = "History") -> str:
    """The page: the Markdown's sections as HTML, the trend figures before the Series table."""
    from .markdown_html import split_sections

    figures = figure_data(hist)
    _, sections = split_sections(markdown)
    body = []
    for name, lines in sections:
        if name == "Series":
            body.append('<section id="trends"><h2>Trends</h2>'
                        '<p class="hint">One figure per setup and metric, a line per shape; ▲ a regression, '
                        '▼ an improvement, ○ a shift not confirmed (hover for the size and what changed). The x axis '
                        "is the setup's runs in order, labelled with the engine version where it changes. "
                        f"A line of more than {MAX_DRAWN} runs is drawn as the medians of consecutive groups of runs."
                        f"</p>{_filters(figures, hist)}<div id=\"history-figures\"></div>"
                        '<p><button type="button" id="history-more">more figures</button></p></section>')
        sid = "section-" + "".join(ch if ch.isalnum() else "-" for ch in name.lower())
        content = markdown_blocks(lines).replace("<table>", '<table class="sortable">')
        body.append(f'<section id="{sid}"><h2>{html.escape(name)}</h2>\n<div class="scroll">{content}</div>\n'
                    "</section>")
    version, plotly_b64 = plotly_js_gzip_base64()
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_asset('page.css')}{_asset('history.css')}</style></head><body>",
        f"<header><h1>{html.escape(title)}</h1></header><main>",
        "\n".join(body),
        "</main>",
        f'<footer>Written by sskj-results history from results.json files; self-contained (plotly.js '
        f"{html.escape(version)}, MIT license, inlined), works offline.</footer>",
        _json_script("sskj-history", {"figures": figures, "perPage": FIGURES_PER_PAGE}),
        f'<script type="application/octet-stream" id="plotly-gz">{plotly_b64}</script>',
        f"<script>{_asset('history.js')}</script>",
        "</body></html>",
    ]) + "\n"


TABLE_SUFFIXES = (".parquet", ".csv")


@dataclass(frozen=True)
class HistoryInput:
    """The runs table history reads, and the runs left out of it (invalid, or the same raw runs twice)."""

    frame: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


def _read_table(path: Path) -> pd.DataFrame:
    """A table written by `sskj-results collect` (.parquet or .csv); columns it lacks (an older layout) are unknown."""
    import pandas as pd

    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not a table written by `sskj-results collect` ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else 'unreadable'}); collect it again") from None
    if "results_file" not in frame.columns or "scenario" not in frame.columns:
        raise ResultsError(f"{path}: no results_file/scenario columns: not a table written by `sskj-results "
                           "collect`; give run directories or collect them again")
    for name, dtype in DTYPES.items():
        if name not in frame.columns:
            frame[name] = pd.array([None] * len(frame), dtype=dtype)
        elif str(frame[name].dtype) != dtype:
            try:
                frame[name] = frame[name].astype(dtype)
            except (TypeError, ValueError):
                raise ResultsError(f"{path}: column {name}: not {dtype} values; collect the table again") from None
    return frame


def load_history_input(paths: Sequence[Path]) -> HistoryInput:
    """The runs table of run directories / results.json files (analysis/runtable.py), or of collected tables
    (.parquet, .csv) given alone or beside them."""
    import pandas as pd

    tables = [p for p in paths if p.suffix.lower() in TABLE_SUFFIXES and p.is_file()]
    runs = [p for p in paths if p not in tables]
    frames, skipped, dropped = [_read_table(p) for p in tables], [], []
    if runs:
        table = collect_table(runs)
        frames.append(table.frame)
        skipped, dropped = table.skipped, table.dropped
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    return HistoryInput(frame, skipped, dropped)


def write_history(hist: History, out: Path, with_html: bool, title: str = "History") -> list[Path]:
    """Write out/history.md (and out/history.html), atomically; the files written."""
    out.mkdir(parents=True, exist_ok=True)
    markdown = history_markdown(hist, title)
    written = [out / "history.md"]
    atomic_write_text(written[0], markdown)
    if with_html:
        written.append(out / "history.html")
        atomic_write_text(written[1], history_html(hist, markdown, title))
    return written


__all__ = ["CONTEXT_COLUMNS", "failure_lines", "figure_data", "history_html", "history_markdown", "write_history"]
