"""history.md and history.html: every setup's series over time and the changes found (analysis/history.py).

history.md: the changes (regressions first), the shifts not confirmed, every series in one table, the rule.
history.html: one self-contained page (plotly.js inlined as in render/html.py): the same tables, sortable, and
one trend figure per setup and metric (a line per shape, changes marked), filterable by chip, engine, shape and
metric; figures are drawn a page at a time and a series of more than MAX_DRAWN runs is drawn as the medians of
MAX_DRAWN consecutive groups of runs (changes still at their own run). The figures' data are compact (figure_data:
drawn points only, strings once, hover text of drawn runs only), packed (render/packing.py), the lines' y values
apart as small integers (values_packed), built into plotly figures by assets/history.js when shown. docs/HISTORY.md.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from ..analysis.history import (
    CONTEXT_COLUMNS, SETUP_COLUMNS, Change, History, Series, metric_direction, setup_label, shape_label,
)
from ..analysis.runtable import DTYPES, Dropped, Skipped, collect_table
from ..contract.errors import ResultsError
from ..contract.escape import csv_text_read
from ..contract.io import atomic_write_text
from .figures import log_ticks
from .html import document
from .markdown_html import markdown_blocks
from .mdtable import github_table
from .packing import pack_smallest, varints

DOUBTFUL_KIND = "not to be believed"  # a figure mark's kind (assets/history.js: MARKS)
Y_ID = "sskj-history-y"  # the element of the lines' y values (values_packed)
MAX_DRAWN = 120  # points of one line of a figure; beyond, medians of consecutive groups of runs
FIGURES_PER_PAGE = 8
LOG_SPAN = 20  # a figure whose values span more than this factor has a log y axis
LABELS = {"engine_version": "engine version", "image": "image", "env": "env", "client": "client",
          "client_version": "client version", "driver_version": "driver", "runtime_version": "runtime",
          "server_args": "server command"}


def _num(value: Optional[float]) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.0f}"


def _pct(ratio: Optional[float]) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


DOUBTFUL = "⊘"  # a value a failed validity check says not to believe (as in report.md)


def _doubtful_at(series: Series, index: int) -> bool:
    return series.doubtful is not None and bool(series.doubtful[index])


def _latest(series: Series) -> str:
    """The last run's value, marked ⊘ when a failed validity check says not to believe it there."""
    return _num(float(series.values[-1])) + (f" {DOUBTFUL}" if _doubtful_at(series, -1) else "")


def _doubtful_count(series: Series) -> str:
    """How many of the series' runs are not to be believed; `unknown` when the runs recorded no validity."""
    if series.doubtful is None:
        return "unknown"
    count = int(series.doubtful.sum())
    return f"{count} {DOUBTFUL}" if count else "0"


def _when(series: Series, index: int) -> str:
    p = series.runs[index]
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
    ci = "" if c.ci_low is None or c.ci_high is None else f" (95 % CI {_pct(c.ci_low)} … {_pct(c.ci_high)})"
    before, after = float(s.values[c.index - 1]), float(s.values[c.index])
    test = f"p {c.p:.2g}, " if c.p is not None else ""
    return [c.kind, s.metric, setup_label(s.setup), shape_label(s.shape), _when(s, c.index), difference_text(c),
            f"{_pct(c.ratio)}{ci}; {_num(before)} → {_num(after)}",
            f"{test}{c.n_before} / {c.n_after} samples"] + ([c.reason or ""] if c.kind == "not confirmed" else [])


CHANGE_HEADERS = ["Verdict", "Metric", "Setup", "Shape", "First run after", "Difference at that run",
                  "Size (median after / before); last before → first after", "Mann-Whitney U"]


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
    single = sum(1 for s in hist.series if len(s) == 1)
    uncertain = len({r.run_dir for s in hist.series for r in s.runs if r.order_note})
    n_reg = sum(1 for _, c in confirmed if c.kind == "regression")
    lines = [f"# {title}", "", "## Summary", "",
             f"- {hist.runs} run(s), {len(setups)} setup(s), {len(hist.series)} series "
             f"(setup x shape x metric; metrics: {', '.join(hist.metrics)}); {single} series of one run "
             "(nothing to compare).",
             f"- Changes: {n_reg} regression(s), {len(confirmed) - n_reg} improvement(s); "
             f"{len(unconfirmed)} shift(s) not confirmed.",
             f"- Rule: single-run outliers (beyond max({rule.min_change:.0%}, {rule.outlier_factor:g} x the "
             f"series' run-to-run noise) from the {rule.reach} runs either side) and disqualified points set aside; "
             f"a shift beyond {rule.min_change:.0%} in the median of up to {rule.window} runs either "
             f"side, with t > {rule.noise_factor:g} against the noise of those runs, at least {rule.persist} runs "
             f"after it, confirmed by a Mann-Whitney U test (p < {rule.alpha:g}); docs/HISTORY.md.",
             "- Directions: " + ", ".join(f"{m} {metric_direction(m)} is better" for m in hist.metrics) + "."]
    followed = {s.metric for s in hist.series}
    unrecorded = [m for m in hist.metrics if m not in followed]
    if unrecorded:
        lines.append(f"- Recorded by no run (unknown, no series): {', '.join(unrecorded)}.")
    if uncertain:
        lines.append(f"- Order partly assumed: {uncertain} run(s) lack a year, a time of day or a date; they are "
                     "placed as far as known (their 'First run after' column and the figures' hover say how; "
                     "docs/HISTORY.md, Order).")
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
    lines += ["", "## Outliers", ""]
    apart = [(s, o) for s in hist.series for o in s.outliers]
    if apart:
        lines.append("Single runs apart from the runs either side of them: shown, not used by the rule.")
        lines.append("")
        lines += github_table(["Metric", "Setup", "Shape", "Run", "Engine version", "Value", "Against the runs before"],
                              [[s.metric, setup_label(s.setup), shape_label(s.shape), _when(s, o.index),
                                s.runs[o.index].get("engine_version") or "unknown", _num(float(s.values[o.index])),
                                _pct(o.ratio)] for s, o in apart])
    else:
        lines.append("None.")
    lines += ["", "## Series", ""]
    if any(s.doubtful is not None and s.doubtful.any() for s in hist.series):
        lines += [f"{DOUBTFUL} after a value, and the Doubtful column: runs where a failed validity check says not "
                  "to believe the metric (a disqualified point, or a metric a failed check makes unreliable, as "
                  "TPOT under bursty streaming; docs/VALIDITY.md); shown, in the figures crossed.", ""]
    rows = []
    for s in hist.series:
        first, last = s.runs[0], s.runs[-1]
        versions = [r.get("engine_version") or "unknown" for r in (first, last)]
        span = versions[0] if versions[0] == versions[-1] else f"{versions[0]} → {versions[-1]}"
        rows.append([setup_label(s.setup), shape_label(s.shape), s.metric, str(len(s)),
                     first.timestamp or "unknown", last.timestamp or "unknown", span, _latest(s), _doubtful_count(s),
                     "-" if s.noise is None else f"{math.expm1(s.noise) * 100:.1f} %",
                     "-" if s.threshold is None else f"{s.threshold * 100:.1f} %",
                     str(len(s.confirmed))])
    lines += github_table(["Setup", "Shape", "Metric", "Runs", "First", "Last", "Engine versions", "Latest",
                           "Doubtful", "Noise", "Outlier limit", "Changes"], rows,
                          ["left"] * 3 + ["right"] + ["left"] * 3 + ["right"] * 5)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the page


def _sig(values: np.ndarray) -> list[float]:
    """Values with 4 significant digits (what a figure shows; the page stays small)."""
    return [float(f"{v:.4g}") for v in values.tolist()]


PREDICT = 4  # a line's y integer is written as its difference from the rounded mean of the PREDICT before it


def _scaled(values: list[float]) -> tuple[int, list[int]]:
    """(e, ints): values (4 significant digits) as integers times 10**e, exact (assets/history.js divides back)."""
    nonzero = [abs(v) for v in values if v]
    e = min(math.floor(math.log10(v)) for v in nonzero) - 3 if nonzero else 0
    return e, [round(v * 10 ** -e) if e < 0 else round(v / 10 ** e) for v in values]


def residuals(ints: list[int]) -> list[int]:
    """Each integer less the rounded mean of the PREDICT before it (the first whole): small numbers around 0 for a
    noisy flat line, which compress better than the values or their differences (assets/history.js adds back)."""
    out = []
    for i, value in enumerate(ints):
        before = ints[max(0, i - PREDICT):i]
        out.append(value - (sum(before) + len(before) // 2) // len(before) if before else value)
    return out


def values_packed(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the figure data without the lines' y, the y integers of every line (figures, then lines, in order) as
    residuals() in varints(), packed): #sskj-history-y, read back by assets/history.js."""
    figures, ints = [], []
    for f in data["figures"]:
        lines = []
        for line in f["lines"]:
            ints.extend(residuals(line["y"]))
            lines.append({k: v for k, v in line.items() if k != "y"})
        figures.append({**f, "lines": lines})
    return {**data, "figures": figures}, pack_smallest(varints(ints))[0]


def _binned(xs: np.ndarray, ys: np.ndarray) -> tuple[list[int], list[float]]:
    """At most MAX_DRAWN points: groups of consecutive runs, each drawn at its middle run with its median."""
    n = xs.size
    if n <= MAX_DRAWN:
        return xs.tolist(), _sig(ys)
    group = np.arange(n) * MAX_DRAWN // n
    order = np.lexsort((ys, group))
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    counts = np.diff(np.r_[starts, n])
    ordered = ys[order]
    medians = (ordered[starts + (counts - 1) // 2] + ordered[starts + counts // 2]) / 2.0
    return xs[starts + (counts - 1) // 2].tolist(), _sig(medians)


class _Texts:
    """The page's strings, each once: the data refer to them by their index (-1: none)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: Optional[str]) -> int:
        if text is None:
            return -1
        return self.index.setdefault(text, len(self.index))


def _ticks(versions: Sequence[Optional[str]]) -> list[list[Any]]:
    """[positions, labels]: the engine version under the first run of each version (at most ~12 labels)."""
    vals: list[int] = []
    text: list[str] = []
    last, gap = None, max(1, len(versions) // 12)
    for i, v in enumerate(versions):
        label = html.escape(v or "unknown")
        if label != last and (not vals or i - vals[-1] >= gap):
            vals.append(i)
            text.append(label)
        last = label
    return [vals, text]


def figure_data(hist: History) -> dict[str, Any]:
    """The trend figures' data, compact (docs/HISTORY.md, The page): one figure per setup and metric, a line per
    shape (its drawn points only: x the place of a run among the setup's runs, y at 4 significant digits as
    _scaled's integers and exponent e), the
    changes and doubtful runs as marks; the hover text of a drawn run once for the page (`runs`, columns of
    indices into `text`, each string once), the engine version ticks computed here."""
    groups: dict[tuple[Any, str], list[Series]] = {}
    for s in hist.series:
        groups.setdefault((s.setup, s.metric), []).append(s)
    texts = _Texts()
    run_index: dict[int, int] = {}  # a run's rank -> its row of `runs`
    runs: dict[str, list[int]] = {"id": [], "time": [], "version": [], "image": [], "note": []}
    figures = []
    for n, ((setup, metric), members) in enumerate(groups.items()):
        by_rank = {r.rank: r for s in members for r in s.runs}  # the setup's runs, in the order of all runs
        ranks = np.asarray(sorted(by_rank), dtype=np.int64)
        lines: list[dict[str, Any]] = []
        marks: list[list[Any]] = []  # [shape, x, y, kind, text] (texts by index)
        drawn: set[int] = set()
        for s in members:
            xs = np.searchsorted(ranks, s.ranks)
            bx, by = _binned(xs, s.values)
            shape = texts(shape_label(s.shape))
            drawn.update(bx)
            e, ints = _scaled(by)
            lines.append({"shape": shape, "x": bx, "e": e, "y": ints, "n": len(s)})
            for i in np.flatnonzero(s.doubtful).tolist() if s.doubtful is not None else []:
                marks.append([shape, int(xs[i]), float(f"{s.values[i]:.4g}"), texts(DOUBTFUL_KIND),
                              texts("not to be believed: a failed validity check (disqualified, or this metric "
                                    "unreliable; report.md, Validity)")])
            for c in s.changes:
                marks.append([shape, int(xs[c.index]), float(f"{s.values[c.index]:.4g}"), texts(c.kind),
                              texts(html.escape(f"{c.kind} {_pct(c.ratio)}: {difference_text(c)}"))])
            for o in s.outliers:
                marks.append([shape, int(xs[o.index]), float(f"{s.values[o.index]:.4g}"), texts("outlier"),
                              texts(f"outlier {_pct(o.ratio)} against the runs before: not used")])
        shown = sorted(drawn | {int(m[1]) for m in marks})
        for x in shown:  # the hover text of the drawn runs only; plotly reads a few tags and entities in it
            rank = int(ranks[x])
            if rank not in run_index:
                r = by_rank[rank]
                run_index[rank] = len(runs["id"])
                for key, value in (("id", r.run_id), ("time", r.timestamp), ("version", r.get("engine_version")),
                                   ("image", r.get("image")), ("note", r.order_note)):
                    runs[key].append(texts(None if value is None else html.escape(value)))
        named = dict(zip(SETUP_COLUMNS, setup))
        low, high = min(float(s.values.min()) for s in members), max(float(s.values.max()) for s in members)
        # lines of very different sizes (c1 beside c512) on one axis: a log axis with full-number labels
        ylog = list(log_ticks([low, high])) if high > LOG_SPAN * low else None
        figures.append({"ylog": ylog, "id": f"fig-h{n}", "title": html.escape(f"{metric} ({metric_direction(metric)} is better): {setup_label(setup)}"), "metric": metric,
                        "direction": metric_direction(metric), "chip": str(named["chip"] or "unknown"),
                        "engine": str(named["engine"] or "unknown"), "n": int(ranks.size),
                        "ticks": _ticks([by_rank[k].get("engine_version") for k in ranks.tolist()]),
                        "hover": [shown, [run_index[int(ranks[x])] for x in shown]], "lines": lines, "marks": marks})
    return {"text": list(texts.index), "runs": runs, "figures": figures}


def _filters(data: dict[str, Any], hist: History) -> str:
    figures = data["figures"]
    options = {"chip": sorted({f["chip"] for f in figures}), "engine": sorted({f["engine"] for f in figures}),
               "shape": sorted({data["text"][ln["shape"]] for f in figures for ln in f["lines"]}),
               "metric": list(hist.metrics)}
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

    data, packed_y = values_packed(figure_data(hist))
    _, sections = split_sections(markdown)
    body, nav_items = [], []
    for name, lines in sections:
        if name == "Series":
            nav_items.append(("Trends", "trends"))
            body.append('<section id="trends"><h2>Trends</h2>'
                        '<p class="hint">One figure per setup and metric, a line per shape; ▲ a regression, '
                        '▼ an improvement, ○ a shift not confirmed, ◇ a single-run outlier (hover for the size and what '
                        'changed), ✕ a run not to be believed (a failed validity check). The x axis '
                        "is the setup's runs in order, labelled with the engine version where it changes. "
                        f"A line of more than {MAX_DRAWN} runs is drawn as the medians of consecutive groups of runs."
                        f"</p>{_filters(data, hist)}<div id=\"history-figures\"></div>"
                        f'<script type="application/octet-stream" id="{Y_ID}">{packed_y}</script>'
                        '<p><button type="button" id="history-more">more figures</button></p></section>')
        sid = "section-" + "".join(ch if ch.isalnum() else "-" for ch in name.lower())
        nav_items.append((name, sid))
        body.append(f'<section id="{sid}"><h2>{html.escape(name)}</h2>\n{markdown_blocks(lines)}\n</section>')
    nav = " · ".join(f'<a href="#{sid}">{html.escape(name)}</a>' for name, sid in nav_items)
    return document(title, html.escape(title), nav, "\n".join(body), "history from results.json files",
                    "sskj-history", {**data, "perPage": FIGURES_PER_PAGE},
                    ("page.css", "history.css"), "history.js", packed=True)


TABLE_SUFFIXES = (".parquet", ".csv")


@dataclass(frozen=True)
class HistoryInput:
    """The runs table history reads, and the runs left out of it (invalid, or the same raw runs twice)."""

    frame: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


def _read_table(path: Path, columns: Optional[Sequence[str]]) -> pd.DataFrame:
    """A table written by `sskj-results collect` (.parquet or .csv), only `columns` of it when given; columns it
    lacks (an older layout) are unknown."""
    import pandas as pd

    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            present = set(pq.read_schema(path).names)
            want = None if columns is None else [c for c in dict.fromkeys(["scenario", *columns]) if c in present]
            frame = pd.read_parquet(path, columns=want)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""],
                                usecols=None if columns is None else (lambda c: c in {"scenario", *columns}))
            for name in frame.columns:  # text cells as collect wrote them: formula-like ones quoted (csv_text)
                if DTYPES.get(name) == "string":
                    frame[name] = frame[name].map(csv_text_read, na_action="ignore")
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not a table written by `sskj-results collect` ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else 'unreadable'}); collect it again") from None
    if "results_file" not in frame.columns or "scenario" not in frame.columns:
        raise ResultsError(f"{path}: no results_file/scenario columns: not a table written by `sskj-results "
                           "collect`; give run directories or collect them again")
    for name, dtype in DTYPES.items():
        if columns is not None and name not in columns:
            continue
        if name not in frame.columns:
            frame[name] = pd.array([None] * len(frame), dtype=dtype)
        elif str(frame[name].dtype) != dtype:
            try:
                frame[name] = frame[name].astype(dtype)
            except (TypeError, ValueError):
                raise ResultsError(f"{path}: column {name}: not {dtype} values; collect the table again") from None
    return frame


def load_history_input(paths: Sequence[Path], columns: Optional[Sequence[str]] = None) -> HistoryInput:
    """The runs table of run directories / results.json files (analysis/runtable.py), or of collected tables
    (.parquet, .csv) given alone or beside them; of a table only `columns` (analysis.history.needed_columns) when
    given."""
    import pandas as pd

    tables = [p for p in paths if p.suffix.lower() in TABLE_SUFFIXES and p.is_file()]
    runs = [p for p in paths if p not in tables]
    frames, skipped, dropped = [_read_table(p, columns) for p in tables], [], []
    if runs:
        table = collect_table(runs)
        frames.append(table.frame if columns is None or not tables else table.frame[list(frames[0].columns)])
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
