"""The interactive figures of the HTML pages (plotly figure dicts): per-shape curves and latency CDFs. Pure."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence, TypeVar

import numpy as np

from ..analysis.compare import match_scenarios, pool
from ..analysis.grades import believed, doubtful_metrics
from ..analysis.rundata import RunData, mean_known
from ..contract.comparison_models import ComparisonDoc
from ..contract.models import Scenario, SloSpec

# Points per CDF line: the sorted samples at evenly spaced ranks (every sample when there are fewer).
CDF_POINTS = 200
# What a page draws at most (a run of 20,000 scenarios stays a page a browser opens): input/output shapes per
# curves figure, CDF figures in the list, lines per CDF figure. Beyond a cap, the ones drawn are evenly
# spaced over the ordered list, the first and the last included (`evenly`); the page says so.
MAX_PANELS = 12
CDF_MAX_FIGURES = 60
CDF_MAX_LINES = 12
# plotly's default qualitative palette (colours of runs, in order).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
SLO_COLOR = "#c0392b"


# --------------------------------------------------------------------------- figures (plotly JSON)


T = TypeVar("T")


def evenly(items: Sequence[T], most: int) -> list[T]:
    """At most `most` of `items`, evenly spaced over them in their order, the first and the last included."""
    if len(items) <= most:
        return list(items)
    if most <= 1:
        return list(items[:most])
    step = (len(items) - 1) / (most - 1)
    return [items[round(k * step)] for k in range(most)]


@dataclass(frozen=True)
class ShapePoint:
    """One concurrency of one run at one shape (repeats averaged), with the scenario names behind it."""

    concurrency: int
    scenarios: str
    output_throughput: Optional[float]
    tpot_mean_ms: Optional[float]
    ttft_p95_ms: Optional[float]
    per_accel: Optional[float] = None  # output throughput per accelerator (tok/s)
    accelerators: Optional[int] = None
    doubtful: frozenset[str] = frozenset()  # metrics not to be believed here (grades.doubtful_metrics; of any repeat)


DOUBTFUL_COLOR = "#b3261e"
DOUBTFUL_LABEL = "not to be believed: disqualified point or unreliable metric"


def shape_points(run: RunData) -> dict[tuple[int, int], list[ShapePoint]]:
    """Per shape (input, output), the closed-loop points of a run in increasing concurrency."""
    by_shape: dict[tuple[int, int], dict[int, list[Scenario]]] = {}
    thresholds = run.results.validity_thresholds
    for s in run.results.scenarios:
        if s.concurrency is not None:
            by_shape.setdefault((s.input_len, s.output_len), {}).setdefault(s.concurrency, []).append(s)
    out: dict[tuple[int, int], list[ShapePoint]] = {}
    for shape, by_conc in sorted(by_shape.items()):
        out[shape] = [
            ShapePoint(conc, html.escape(", ".join(s.name for s in scen)),
                       mean_known([s.output_token_throughput for s in scen]),
                       mean_known([s.latencies.tpot_ms.mean for s in scen]),
                       mean_known([s.latencies.ttft_ms.p95 for s in scen]),
                       mean_known([s.output_throughput_per_accel for s in scen]), scen[0].accelerators,
                       frozenset().union(*(doubtful_metrics(s.validity, thresholds) for s in scen)))
            for conc, scen in sorted(by_conc.items())
        ]
    return out


# Pixel geometry of a figure: panel height, gap between rows, space above and below (axis title, legend).
# Above: a row for plotly's mode bar (the toolbar at the top right), the figure's title under it (one line;
# page.js wraps a long one and adds TITLE_LINE_PX per line), then the panels' own titles.
MODEBAR_PX, TITLE_LINE_PX = 30, 22
PANEL_PX, GAP_PX, TOP_PX, BOTTOM_PX = 300, 80, MODEBAR_PX + TITLE_LINE_PX + 30, 110
MAX_COLS = 3  # panels per row on a wide page; page.js uses fewer when the figure's box is narrow


def _place(count: int, cols: int) -> dict[str, Any]:
    """Where the panels of a `count`-panel figure go with `cols` per row: the figure's height (px), the
    legend's y, and per panel its x and y domains and its title's position (paper coordinates)."""
    cols = min(cols, max(count, 1))
    rows = max(1, math.ceil(count / cols))
    area = PANEL_PX * rows + GAP_PX * (rows - 1)
    gap_x, gap_y = 0.07, GAP_PX / area
    width = (1 - gap_x * (cols - 1)) / cols
    height = (1 - gap_y * (rows - 1)) / rows
    x: list[list[float]] = []
    y: list[list[float]] = []
    for i in range(count):
        r, c = divmod(i, cols)
        x0 = c * (width + gap_x)
        y1 = 1 - r * (height + gap_y)
        x.append([x0, x0 + width])
        y.append([y1 - height, y1])
    return {"height": TOP_PX + BOTTOM_PX + area, "legend_y": -62 / area, "x": x, "y": y}


def log_ticks(values: Sequence[float]) -> tuple[list[float], list[str]]:
    """Tick values and labels of a log axis over `values`: 1-2-5 steps of each decade (1-3, or powers of ten
    only, when that would be more than 7 labels), every label the full number, so that even a narrow panel
    shows several readable labels (plotly's own log ticks show bare mantissas `2`, `5` or one label)."""
    known = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not known:
        return [], []
    lo, hi = min(known) / 1.15, max(known) * 1.15
    ticks: list[float] = []
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                 for m in mantissas if lo <= m * 10.0 ** e <= hi]
        if len(ticks) <= 7:
            break
    return ticks, [f"{v:,.10g}" for v in ticks]


def _grid(count: int, titles: Sequence[str], x_title: str, y_title: str, x_log: bool, y_log: bool = False,
          x_ticks: Optional[Sequence[float]] = None, y_values: Sequence[float] = (),
          x_from_zero: bool = False) -> dict[str, Any]:
    """A plotly layout with `count` panels (MAX_COLS per row), each titled; the legend below them.
    `layout.meta.places` holds the placement for every smaller number of panels per row (page.js picks one
    by the width of the figure's box and sets the height that goes with it)."""
    cols = min(MAX_COLS, max(count, 1))
    place = _place(count, cols)
    layout: dict[str, Any] = {
        "height": place["height"], "margin": {"t": TOP_PX, "l": 70, "r": 20, "b": BOTTOM_PX},
        "hovermode": "closest", "legend": {"orientation": "h", "x": 0, "y": place["legend_y"], "yanchor": "top"},
        "annotations": [], "plot_bgcolor": "#fbfbfb",
        "meta": {"places": {str(c): _place(count, c) for c in range(1, cols + 1)}, "title_line_px": TITLE_LINE_PX},
    }
    y_ticks = log_ticks(y_values) if y_log else ([], [])
    for i in range(count):
        suffix = "" if i == 0 else str(i + 1)
        xaxis: dict[str, Any] = {"domain": place["x"][i], "anchor": f"y{suffix}", "title": {"text": x_title},
                                 "type": "log" if x_log else "linear", "gridcolor": "#e5e5e5"}
        if x_ticks:
            xaxis.update(tickmode="array", tickvals=list(x_ticks), ticktext=[f"{v:g}" for v in x_ticks])
        elif not x_log and x_from_zero:
            xaxis["rangemode"] = "tozero"  # a 0.1 % difference stays small: the axis starts at 0
        yaxis: dict[str, Any] = {"domain": place["y"][i], "anchor": f"x{suffix}", "title": {"text": y_title},
                                 "type": "log" if y_log else "linear", "gridcolor": "#e5e5e5"}
        if y_log:
            yaxis.update(tickmode="array", tickvals=y_ticks[0], ticktext=y_ticks[1])
        else:
            yaxis["rangemode"] = "tozero"
        layout[f"xaxis{suffix}"] = xaxis
        layout[f"yaxis{suffix}"] = yaxis
        layout["annotations"].append({"text": f"<b>{html.escape(titles[i])}</b>", "xref": "paper", "yref": "paper",
                                      "x": sum(place["x"][i]) / 2, "y": place["y"][i][1], "yanchor": "bottom",
                                      "xanchor": "center", "showarrow": False, "font": {"size": 13}})
    return layout


def figure_title(text: str) -> dict[str, Any]:
    """A figure's title: left-aligned, its top under the mode bar's row (never under the toolbar)."""
    return {"text": html.escape(text), "x": 0.01, "xanchor": "left", "xref": "container", "y": 1, "yref": "container",
            "yanchor": "top", "pad": {"t": MODEBAR_PX}, "font": {"size": 16}}


def _axes(i: int) -> dict[str, str]:
    return {"xaxis": "x" if i == 0 else f"x{i + 1}", "yaxis": "y" if i == 0 else f"y{i + 1}"}


def _shape_title(shape: tuple[int, int]) -> str:
    return f"input {shape[0]:,} / output {shape[1]:,} tokens"


def _span(values: Sequence[float]) -> bool:
    """Log scale when the values span 20× or more (as the PNG plots choose)."""
    known = [v for v in values if v is not None and v > 0]
    return bool(known) and max(known) / min(known) >= 20


INTERACTIVITY = "interactivity (1000 / TPOT mean, tok/s per user)"
FRONTIER = "Output throughput per accelerator vs interactivity"


def curve_figures(series: Sequence[tuple[str, dict[tuple[int, int], list[ShapePoint]]]], spec: SloSpec,
                  title: str) -> list[dict[str, Any]]:
    """Throughput vs interactivity, TTFT P95 vs concurrency and TPOT mean vs concurrency: one panel per shape,
    one trace per run (a legend click hides or shows that run in every panel). At most MAX_PANELS shapes
    (`evenly`); `layout.meta.shapes` is [drawn, measured]."""
    measured = sorted({shape for _, points in series for shape in points})
    shapes = evenly(measured, MAX_PANELS)
    titles = [_shape_title(s) for s in shapes]
    concs = [p.concurrency for _, pts in series for shape in shapes for p in pts.get(shape, [])]
    figures = []
    per_accel = any(p.per_accel is not None for _, pts in series for shape in shapes for p in pts.get(shape, []))
    for key, name, x_title, y_title in (
        ("tput", f"Output throughput vs interactivity — {title}", INTERACTIVITY, "output throughput (tok/s)"),
        *((("frontier", f"{FRONTIER} — {title}", INTERACTIVITY, "output throughput per accelerator (tok/s)"),)
          if per_accel else ()),
        ("ttft", f"TTFT P95 vs concurrency — {title}", "concurrency", "TTFT P95 (ms)"),
        ("tpot", f"TPOT mean vs concurrency — {title}", "concurrency", "TPOT mean (ms)"),
    ):
        curve = key in ("tput", "frontier")
        traces: list[dict[str, Any]] = []
        xs_all: list[float] = []
        in_legend: set[str] = set()
        for r, (raw_label, points) in enumerate(series):
            label = html.escape(raw_label)  # plotly reads entities and a few tags in text: names stay text
            counts = {p.accelerators for pts in points.values() for p in pts} - {None}
            if key == "frontier" and len(counts) == 1:
                label += f", {counts.pop()} accel"
            color = PALETTE[r % len(PALETTE)]
            for i, shape in enumerate(shapes):
                pts = points.get(shape, [])
                if curve:
                    y_of = (lambda p: p.output_throughput) if key == "tput" else (lambda p: p.per_accel)
                    pts = [p for p in pts if p.tpot_mean_ms and y_of(p) is not None]
                    xs = [1000.0 / p.tpot_mean_ms for p in pts if p.tpot_mean_ms]
                    ys = [y_of(p) for p in pts]
                    what = "output throughput" if key == "tput" else "output throughput per accelerator"
                    hover = ("<b>%{fullData.name}</b><br>scenario %{customdata[0]}<br>concurrency %{customdata[1]}"
                             f"<br>interactivity %{{x:.2f}} tok/s per user<br>{what} %{{y:.2f}} tok/s"
                             "<br>TPOT mean %{customdata[2]:.2f} ms<br>accelerators %{customdata[3]}<extra></extra>")
                    custom = [[p.scenarios, p.concurrency, p.tpot_mean_ms, p.accelerators or "unknown"] for p in pts]
                    doubt: tuple[str, ...] = (
                        "tpot_ms", "output_token_throughput" if key == "tput" else "output_throughput_per_accel")
                else:
                    attr = "ttft_p95_ms" if key == "ttft" else "tpot_mean_ms"
                    pts = [p for p in pts if getattr(p, attr) is not None]
                    xs = [float(p.concurrency) for p in pts]
                    ys = [getattr(p, attr) for p in pts]
                    what = "TTFT P95" if key == "ttft" else "TPOT mean"
                    hover = (f"<b>%{{fullData.name}}</b><br>scenario %{{customdata[0]}}<br>concurrency %{{x}}"
                             f"<br>{what} %{{y:.2f}} ms<extra></extra>")
                    custom = [[p.scenarios, p.concurrency] for p in pts]
                    doubt = ("ttft_ms" if key == "ttft" else "tpot_ms",)
                if not pts:
                    continue
                bad = [(x, y) for p, x, y in zip(pts, xs, ys) if not believed(p.doubtful, *doubt)]
                xs_all += xs
                traces.append({
                    "type": "scatter", "mode": "lines+markers+text" if curve else "lines+markers",
                    "name": label, "legendgroup": label, "showlegend": label not in in_legend,
                    "x": xs, "y": ys, "customdata": custom, "hovertemplate": hover,
                    "text": [str(p.concurrency) for p in pts] if curve else None,
                    "textposition": "top right", "textfont": {"size": 10, "color": color},
                    "line": {"color": color}, "marker": {"color": color, "size": 8}, **_axes(i),
                })
                in_legend.add(label)
                if bad:  # a red cross over each point a failed validity check says not to believe
                    traces.append({
                        "type": "scatter", "mode": "markers", "name": DOUBTFUL_LABEL, "legendgroup": "doubtful",
                        "showlegend": DOUBTFUL_LABEL not in in_legend, "x": [x for x, _ in bad],
                        "y": [y for _, y in bad], "hovertemplate": f"{DOUBTFUL_LABEL}<extra></extra>",
                        "marker": {"symbol": "x-thin-open", "size": 16, "color": DOUBTFUL_COLOR,
                                   "line": {"width": 3, "color": DOUBTFUL_COLOR}}, **_axes(i),
                    })
                    in_legend.add(DOUBTFUL_LABEL)
        if key == "frontier":  # the TPOT SLO as an interactivity: points right of the line meet it
            bound = 1000.0 / spec.tpot_mean_ms
            label = f"SLO TPOT mean &lt; {spec.tpot_mean_ms:g} ms (interactivity &gt; {bound:.3g}; shaded: missed)"
            for i in range(len(shapes)):
                top = max((v for t in traces if t["yaxis"] == _axes(i)["yaxis"] for v in t["y"]), default=1.0)
                traces.append({  # the interactivities that miss the SLO, shaded; no hover of its own
                    "type": "scatter", "mode": "lines", "x": [0, bound, bound, 0, 0], "y": [0, 0, top, top, 0],
                    "fill": "toself", "fillcolor": "rgba(150,150,150,0.12)", "line": {"width": 0},
                    "hoverinfo": "skip", "showlegend": False, "legendgroup": "slo", **_axes(i),
                })
                traces.append({
                    "type": "scatter", "mode": "lines", "name": label, "legendgroup": "slo", "showlegend": i == 0,
                    "x": [bound, bound], "y": [0, top], "hovertemplate": f"{label}<extra></extra>",
                    "line": {"color": SLO_COLOR, "dash": "dash", "width": 1.5}, **_axes(i),
                })
        elif not curve:
            threshold = spec.ttft_p95_ms if key == "ttft" else spec.tpot_mean_ms
            label = ("SLO TTFT P95" if key == "ttft" else "SLO TPOT mean") + f" &lt; {threshold:g} ms"
            lo, hi = (min(concs), max(concs)) if concs else (1, 1)
            for i in range(len(shapes)):
                traces.append({
                    "type": "scatter", "mode": "lines", "name": label, "legendgroup": "slo", "showlegend": i == 0,
                    "x": [lo, hi], "y": [threshold, threshold], "hovertemplate": f"{label}<extra></extra>",
                    "line": {"color": SLO_COLOR, "dash": "dash", "width": 1.5}, **_axes(i),
                })
        # Concurrency on a log axis labelled with the concurrencies measured (usually powers of two).
        ys_all = [v for t in traces for v in t["y"]]
        layout = _grid(len(shapes), titles, x_title, y_title, x_log=not curve,
                       y_log=not curve and _span(ys_all), y_values=ys_all, x_from_zero=curve,
                       x_ticks=sorted(set(float(c) for c in concs)) if not curve else None)
        layout["title"] = figure_title(name)
        layout["meta"]["shapes"] = [len(shapes), len(measured)]
        figures.append({"id": f"fig-{key}", "data": traces, "layout": layout})
    return figures


def cdf_points(values: np.ndarray) -> tuple[list[float], list[float]]:
    """(x, y) of an empirical CDF: sorted samples and i/n, at most CDF_POINTS (every sample when fewer)."""
    ordered = np.sort(values[np.isfinite(values)])
    n = ordered.size
    if n == 0:
        return [], []
    idx = np.unique(np.linspace(0, n - 1, min(n, CDF_POINTS)).round().astype(int))
    return ordered[idx].tolist(), ((idx + 1) / n).tolist()


@dataclass(frozen=True)
class CdfSet:
    """One CDF figure: a scenario (or a shape), one line per run (or per concurrency)."""

    name: str
    title: str
    lines: list[tuple[str, np.ndarray, np.ndarray]]  # (label, ttft ms, tpot ms)


def cdf_figure(cdf: CdfSet, spec: SloSpec) -> dict[str, Any]:
    """One CDF figure: at most CDF_MAX_LINES of the set's lines (`evenly`), the title saying how many of how many."""
    traces: list[dict[str, Any]] = []
    lines = evenly(cdf.lines, CDF_MAX_LINES)
    in_legend: set[str] = set()
    for r, (raw_label, ttft, tpot) in enumerate(lines):
        label = html.escape(raw_label)
        color = PALETTE[r % len(PALETTE)]
        for i, (metric, values) in enumerate((("TTFT", ttft), ("TPOT", tpot))):
            xs, ys = cdf_points(values)
            if not xs:
                continue
            traces.append({
                "type": "scatter", "mode": "lines", "name": f"{label} (n={values.size})", "legendgroup": label,
                "showlegend": label not in in_legend, "x": xs, "y": ys,
                "line": {"color": color, "shape": "hv"}, **_axes(i),
                "hovertemplate": (f"<b>{label}</b><br>{html.escape(cdf.name)}<br>{metric} %{{x:.2f}} ms"
                                  "<br>fraction %{y:.3f}<extra></extra>"),
            })
            in_legend.add(label)
    for i, (threshold, what) in enumerate(((spec.ttft_p95_ms, "TTFT P95"), (spec.tpot_mean_ms, "TPOT mean"))):
        traces.append({"type": "scatter", "mode": "lines", "name": "SLO thresholds", "legendgroup": "slo",
                       "showlegend": i == 0, "x": [threshold, threshold], "y": [0, 1],
                       "hovertemplate": f"SLO {what} &lt; {threshold:g} ms<extra></extra>",
                       "line": {"color": SLO_COLOR, "dash": "dash", "width": 1.5}, **_axes(i)})
    samples = [t for t in traces if t["legendgroup"] != "slo"]
    ttft_all = [v for t in samples if t["xaxis"] == "x" for v in t["x"]]
    tpot_all = [v for t in samples if t["xaxis"] == "x2" for v in t["x"]]
    layout = _grid(2, ["TTFT per request", "TPOT per request"], "ms", "fraction of requests", x_log=False)
    for axis, xs, threshold in (("xaxis", ttft_all, spec.ttft_p95_ms), ("xaxis2", tpot_all, spec.tpot_mean_ms)):
        log = _span(xs)
        layout[axis]["type"] = "log" if log else "linear"
        if log:
            layout[axis]["tickvals"], layout[axis]["ticktext"] = log_ticks(xs)
            layout[axis]["tickmode"] = "array"
        data_max = max(xs, default=None)
        if data_max and threshold > 1.5 * data_max:
            # the SLO line is far beyond the samples: start on the samples (double-click shows the line too)
            low = min(v for v in xs if v > 0) if log and any(v > 0 for v in xs) else 0.0
            layout[axis]["range"] = ([math.log10(low), math.log10(data_max * 1.1)] if log else [0, data_max * 1.05])
    title = cdf.title
    if len(lines) < len(cdf.lines):
        title += f" — {len(lines)} of {len(cdf.lines)} lines (evenly spaced)"
    layout["title"] = figure_title(title)
    layout["meta"]["lines"] = [len(lines), len(cdf.lines)]
    return {"id": "fig-cdf", "name": html.escape(cdf.name), "data": traces, "layout": layout}


def comparison_cdfs(doc: ComparisonDoc, runs: Sequence[RunData]) -> list[CdfSet]:
    labels = [info.label for info in doc.runs]
    groups, _ = match_scenarios(runs, labels)
    out = []
    for group in groups:
        lines = [(label, pool(run, members, "ttft_ms"), pool(run, members, "tpot_ms"))
                 for run, label, members in zip(runs, labels, group.members)]
        if any(t.size or p.size for _, t, p in lines):
            conc = f"concurrency {group.key[0]}" if group.key[0] else f"request rate {group.key[3]:g}/s"
            out.append(CdfSet(group.name, f"Per-request latency CDF — {group.name} ({conc}, input "
                                          f"{group.key[1]:,}, output {group.key[2]:,})", lines))
    return out


def report_cdfs(run: RunData) -> list[CdfSet]:
    shapes: dict[tuple[int, int], list[int]] = {}
    for i, s in enumerate(run.results.scenarios):
        if run.samples[i].metric("ttft_ms").size or run.samples[i].metric("tpot_ms").size:
            shapes.setdefault((s.input_len, s.output_len), []).append(i)
    out = []
    for (inp, outp), idx in sorted(shapes.items()):
        scen = run.results.scenarios
        idx.sort(key=lambda i: (scen[i].concurrency or 0, scen[i].repeat or 0))
        lines = []
        for i in idx:
            s = scen[i]
            who = f"concurrency {s.concurrency}" if s.concurrency is not None else f"rate {s.request_rate}"
            lines.append((f"{who}{f' r{s.repeat}' if s.repeat else ''}", run.samples[i].metric("ttft_ms"), run.samples[i].metric("tpot_ms")))
        out.append(CdfSet(f"i{inp}_o{outp}", f"Per-request latency CDF — input {inp:,} / output {outp:,}", lines))
    return out

