"""Figures of reports and comparisons: matplotlib (Agg canvas, no pyplot), PNG files.

Inputs are plain data (`Curve`, `CdfLine`), built by `report` and `compare`
from the results; matplotlib is imported only when a figure is drawn.

* `throughput_vs_interactivity`: output token throughput against
  interactivity (1000 / TPOT mean, tok/s per user) across concurrency, one
  line per run and one panel per shape, points labelled with the concurrency.
* `latency_vs_concurrency`: TTFT P95 or TPOT mean against concurrency, one
  panel per shape, the SLO threshold as a dashed line.
* `latency_cdfs`: empirical CDFs of per-request TTFT and TPOT, one line per
  run (or scenario), with the SLO thresholds.
"""

from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Sequence, cast

import numpy as np

from ..contract.io import atomic_write_bytes
from ..contract.models import Scenario
from ..analysis.grades import believed, doubtful_metrics
from ..analysis.rundata import RunData, mean_known

DPI = 110
PANEL_W = 5.4
PANEL_H = 4.0
MAX_COLS = 3
# Concurrency labels of different runs go to different sides of their points.
LABEL_OFFSETS = ((5, 5), (5, -13), (-5, 5), (-5, -13))
# rcParams names; matplotlib's own stubs key rc_context by a Literal of every name
# (only in recent versions), hence the cast where FONT is passed.
FONT: dict[str, Any] = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "figure.titlesize": 14,
}
LatencyMetric = Literal["ttft_p95_ms", "tpot_mean_ms"]
METRIC_TEXT = {
    "ttft_p95_ms": ("TTFT P95", "TTFT P95 (ms)"),
    "tpot_mean_ms": ("TPOT mean", "TPOT mean (ms)"),
}
METRIC_OF = {"ttft_p95_ms": "ttft_ms", "tpot_mean_ms": "tpot_ms"}  # the registry metric a plotted statistic is of
DOUBTFUL_COLOR = "#b3261e"
DOUBTFUL_LABEL = "not to be believed: disqualified point or unreliable metric (docs/VALIDITY.md)"


@dataclass(frozen=True)
class Point:
    """One scenario's aggregate numbers (repeats averaged by the caller)."""

    concurrency: int
    output_throughput: Optional[float]
    tpot_mean_ms: Optional[float]
    ttft_p95_ms: Optional[float]
    per_accel: Optional[float] = None  # output throughput per accelerator (tok/s)
    doubtful: frozenset[str] = frozenset()  # metrics not to be believed here (grades.doubtful_metrics; of any repeat)


@dataclass(frozen=True)
class Curve:
    """One run at one shape (input_len, output_len), points in increasing concurrency."""

    label: str
    input_len: int
    output_len: int
    points: tuple[Point, ...]


@dataclass(frozen=True)
class CdfLine:
    """Per-request TTFT and TPOT of one run (or one scenario), ms."""

    label: str
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray


def run_curves(run: RunData, label: str) -> list[Curve]:
    """One curve per shape (input, output) of a run; repeats of a concurrency are averaged."""
    by_shape: dict[tuple[int, int], dict[int, list[Scenario]]] = {}
    thresholds = run.results.validity_thresholds
    for s in run.results.scenarios:
        if s.concurrency is None:
            continue  # open-loop runs have no concurrency to plot against
        by_shape.setdefault((s.input_len, s.output_len), {}).setdefault(s.concurrency, []).append(s)
    curves = []
    for (inp, outp), by_conc in sorted(by_shape.items()):
        points = tuple(
            Point(
                concurrency=conc,
                output_throughput=mean_known([s.output_token_throughput for s in scen]),
                tpot_mean_ms=mean_known([s.latencies.tpot_ms.mean for s in scen]),
                ttft_p95_ms=mean_known([s.latencies.ttft_ms.p95 for s in scen]),
                per_accel=mean_known([s.output_throughput_per_accel for s in scen]),
                doubtful=frozenset().union(*(doubtful_metrics(s.validity, thresholds) for s in scen)),
            )
            for conc, scen in sorted(by_conc.items())
        )
        curves.append(Curve(label, inp, outp, points))
    return curves


# --------------------------------------------------------------------------- helpers


def shape_title(input_len: int, output_len: int) -> str:
    return f"input {input_len:,} / output {output_len:,} tokens"


def _colors(labels: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    cmap = colormaps["tab10"] if len(labels) <= 10 else colormaps["tab20"]
    if not isinstance(cmap, ListedColormap):
        raise TypeError(f"colormap {cmap.name} has no list of colours")
    # tab10 / tab20 hold a sequence of RGB triples; the stubs type `colors` as any colour or array.
    palette = cast("Sequence[Any]", cmap.colors)
    return {label: palette[i % len(palette)] for i, label in enumerate(labels)}


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _new_figure(panels: int, cols: Optional[int] = None, extra_h: float = 0.9) -> tuple[Any, list[Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = cols or min(MAX_COLS, panels)
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(PANEL_W * cols, PANEL_H * rows + extra_h), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes[:panels]


def _scale(ax: Any, axis: str, values: Sequence[float], ratio: float = 20.0, headroom: float = 1.12) -> None:
    """Log scale when the values span `ratio` or more; otherwise linear from zero (no exaggerated gaps).

    The upper limit leaves headroom above the largest value so that point labels stay inside the panel.
    """
    positive = [v for v in values if v > 0]
    if not positive:
        return
    low, high = min(positive), max(positive)
    set_lim = ax.set_xlim if axis == "x" else ax.set_ylim
    if high / low >= ratio:
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
        span = math.log10(high / low)
        set_lim(low / 10 ** (0.06 * span), high * 10 ** (0.12 * span))
        target = ax.xaxis if axis == "x" else ax.yaxis
        target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if span <= 2.5 else (1.0,)))
        target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        target.set_minor_formatter(NullFormatter())
    else:
        set_lim(0, high * headroom)


def _threshold_in_view(values: Sequence[float], threshold: float) -> bool:
    """Draw an SLO line only when it does not squash the data: within 3x of the largest value."""
    return bool(values) and threshold <= 3.0 * max(values)


def _panel_title(ax: Any, title: str, note: Optional[str] = None) -> None:
    """Panel title, with an optional red note between it and the axes (never over the data)."""
    if note is None:
        ax.set_title(title)
        return
    ax.set_title(title, pad=21)
    ax.annotate(note, xy=(0.5, 1.0), xycoords="axes fraction", xytext=(0, 3), textcoords="offset points",
                ha="center", va="bottom", fontsize=9, color="#c0392b")


def _legend_columns(labels: Sequence[str], fig_width_in: float) -> int:
    """As many columns as fit across the figure (about 8 px per character at the legend's font size)."""
    width_px = fig_width_in * DPI
    per_entry = (max(len(label) for label in labels) + 7) * 8.0
    return max(1, min(len(labels), int(width_px // per_entry)))


def _concurrency_axis(ax: Any, concurrencies: Sequence[int]) -> None:
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ticks = sorted(set(concurrencies))
    if ticks and ticks[-1] / ticks[0] >= 8:
        ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("Concurrency (max concurrent requests)")


def _finish(fig: Any, title: str, handles: list[Any], labels: list[str], path: Path) -> Path:
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=_legend_columns(labels, fig.get_figwidth()),
                   frameon=False)
    # a long title (run labels, device counts) wraps to the figure's width instead of running off it
    fig.suptitle("\n".join(textwrap.wrap(title, max(40, int(fig.get_figwidth() * 72 / (0.55 * FONT["figure.titlesize"]))))))
    from matplotlib.text import Text

    for text in fig.findobj(Text):  # a lone surrogate (undecodable bytes in a name) cannot be drawn
        content = text.get_text()
        if isinstance(content, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in content):
            text.set_text(content.encode("utf-8", errors="backslashreplace").decode("utf-8"))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    atomic_write_bytes(path, buf.getvalue())
    return path


def _by_shape(curves: Sequence[Curve]) -> list[tuple[tuple[int, int], list[Curve]]]:
    shapes: dict[tuple[int, int], list[Curve]] = {}
    for c in curves:
        shapes.setdefault((c.input_len, c.output_len), []).append(c)
    return sorted(shapes.items())


# Values a figure can place: finite, and far enough from the float limits that
# axis margins and log scales do not overflow (values near 1e308 or 5e-324 are not drawn).
PLOT_MAX = 1e300
PLOT_MIN = 1e-300


def plottable(value: Optional[float]) -> bool:
    """A number a figure can draw (None is not)."""
    return value is not None and (value == 0 or PLOT_MIN <= abs(value) <= PLOT_MAX)


def _plottable_array(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return values[(values == 0) | ((np.abs(values) >= PLOT_MIN) & (np.abs(values) <= PLOT_MAX))]


def _keep_points(curves: Sequence[Curve], keep: Callable[[Point], bool]) -> list[Curve]:
    """The curves restricted to the points that can be drawn; curves left empty are dropped."""
    kept = []
    for c in curves:
        pts = tuple(p for p in c.points if keep(p) and plottable(p.concurrency) and all(
            v is None or plottable(v) for v in (p.output_throughput, p.tpot_mean_ms, p.ttft_p95_ms)))
        if pts:
            kept.append(Curve(c.label, c.input_len, c.output_len, pts))
    return kept


# --------------------------------------------------------------------------- figures


def throughput_vs_interactivity(curves: Sequence[Curve], path: Path, title: str) -> Optional[Path]:
    """Output throughput (tok/s) vs interactivity (1000 / TPOT mean, tok/s/user); None when nothing to draw."""
    return _versus_interactivity(curves, path, title, lambda p: p.output_throughput, "Output throughput (tok/s)")


def frontier(curves: Sequence[Curve], slo_tpot_ms: float, path: Path, title: str) -> Optional[Path]:
    """Output throughput per accelerator (tok/s) vs interactivity, every chip and engine, with the TPOT SLO as a
    vertical boundary (points right of it meet it): the best chip at each interactivity reads off the top curve;
    None when no point knows its accelerators."""
    return _versus_interactivity(curves, path, title, lambda p: p.per_accel,
                                 "Output throughput per accelerator (tok/s)", boundary=1000.0 / slo_tpot_ms,
                                 boundary_label=f"SLO TPOT mean < {slo_tpot_ms:g} ms (shaded: missed)",
                                 doubt_of=("tpot_ms", "output_throughput_per_accel"))


def _mark_doubtful(ax: Any, handles: dict[str, Any], points: Sequence[tuple[float, float]]) -> None:
    """A red cross over each point a failed validity check says not to believe, once in the legend."""
    if points:
        cross = ax.scatter([x for x, _ in points], [y for _, y in points], marker="x", s=110, linewidths=2.4,
                           color=DOUBTFUL_COLOR, zorder=5)
        handles.setdefault(DOUBTFUL_LABEL, cross)


def _versus_interactivity(curves: Sequence[Curve], path: Path, title: str, y_of: Callable[[Point], Optional[float]],
                          y_label: str, boundary: Optional[float] = None, boundary_label: str = "",
                          doubt_of: tuple[str, ...] = ("tpot_ms", "output_token_throughput")) -> Optional[Path]:
    import matplotlib

    usable = _keep_points(
        curves, lambda p: y_of(p) is not None and p.tpot_mean_ms is not None and p.tpot_mean_ms > 0
        and plottable(1000.0 / p.tpot_mean_ms)
    )
    if not usable:
        return None
    labels = _unique([c.label for c in curves])
    colors = _colors(labels)
    shapes = _by_shape(usable)
    with matplotlib.rc_context(cast("dict[Any, Any]", FONT)):
        fig, axes = _new_figure(len(shapes))
        handles: dict[str, Any] = {}
        for ax, ((inp, outp), group) in zip(axes, shapes):
            xs_all, ys_all = [], []
            for c in group:
                dx, dy = LABEL_OFFSETS[labels.index(c.label) % len(LABEL_OFFSETS)]
                # every point of a usable curve has both numbers: the condition only narrows the types
                drawn = [(p, 1000.0 / p.tpot_mean_ms, y) for p in c.points
                         if p.tpot_mean_ms and (y := y_of(p)) is not None]
                xs = [x for _, x, _ in drawn]
                ys = [y for _, _, y in drawn]
                xs_all += xs
                ys_all += ys
                (line,) = ax.plot(xs, ys, marker="o", markersize=6, linewidth=1.8, color=colors[c.label], label=c.label)
                handles.setdefault(c.label, line)
                _mark_doubtful(ax, handles, [(x, y) for p, x, y in drawn if not believed(p.doubtful, *doubt_of)])
                for p, x, y in drawn:
                    ax.annotate(f"c{p.concurrency}", (x, y), textcoords="offset points", xytext=(dx, dy),
                                fontsize=9, color=colors[c.label], ha="left" if dx >= 0 else "right")
            if boundary is not None:  # left of the line the TPOT SLO is missed: shaded
                slo = ax.axvline(boundary, color="#555555", linestyle="--", linewidth=1.3, label=boundary_label)
                handles.setdefault(boundary_label, slo)
                xs_all.append(boundary)
            _scale(ax, "x", xs_all, headroom=1.15)
            if boundary is not None:
                ax.axvspan(min(ax.get_xlim()[0], boundary), boundary, color="#999999", alpha=0.12, linewidth=0)
            _scale(ax, "y", ys_all, headroom=1.15)
            _panel_title(ax, shape_title(inp, outp))
            ax.set_xlabel("Interactivity: 1000 / TPOT mean (tok/s per user)")
            ax.set_ylabel(y_label)
            ax.grid(True, which="major", alpha=0.35)
        return _finish(fig, title, list(handles.values()), list(handles), path)


def latency_vs_concurrency(
    curves: Sequence[Curve],
    metric: LatencyMetric,
    threshold_ms: Optional[float],
    path: Path,
    title: str,
) -> Optional[Path]:
    """TTFT P95 or TPOT mean against concurrency, one panel per shape, SLO threshold dashed."""
    import matplotlib

    usable = _keep_points(curves, lambda p: getattr(p, metric) is not None)
    if not usable:
        return None
    short, axis_label = METRIC_TEXT[metric]
    labels = _unique([c.label for c in curves])
    colors = _colors(labels)
    shapes = _by_shape(usable)
    with matplotlib.rc_context(cast("dict[Any, Any]", FONT)):
        fig, axes = _new_figure(len(shapes))
        handles: dict[str, Any] = {}
        for ax, ((inp, outp), group) in zip(axes, shapes):
            values: list[float] = []
            concurrencies: list[int] = []
            for c in group:
                xs = [p.concurrency for p in c.points]
                ys = [getattr(p, metric) for p in c.points]
                values += ys
                concurrencies += xs
                (line,) = ax.plot(xs, ys, marker="o", markersize=6, linewidth=1.8, color=colors[c.label], label=c.label)
                handles.setdefault(c.label, line)
                _mark_doubtful(ax, handles, [(p.concurrency, getattr(p, metric)) for p in c.points
                                             if not believed(p.doubtful, METRIC_OF[metric])])
            note = None
            if threshold_ms is not None:
                if _threshold_in_view(values, threshold_ms):
                    slo_line = ax.axhline(threshold_ms, linestyle="--", linewidth=1.6, color="#c0392b")
                    handles.setdefault(f"SLO: {short} < {threshold_ms:g} ms", slo_line)
                    values.append(threshold_ms)
                else:
                    note = f"SLO {short} < {threshold_ms:g} ms is above this range"
            _concurrency_axis(ax, concurrencies)
            _scale(ax, "y", values, ratio=30.0)
            _panel_title(ax, shape_title(inp, outp), note)
            ax.set_ylabel(axis_label)
            ax.grid(True, which="major", alpha=0.35)
        return _finish(fig, title, list(handles.values()), list(handles), path)


def _ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(values)
    return x, np.arange(1, x.size + 1) / x.size


def latency_cdfs(
    lines: Sequence[CdfLine],
    path: Path,
    title: str,
    ttft_p95_slo_ms: Optional[float] = None,
    tpot_mean_slo_ms: Optional[float] = None,
) -> Optional[Path]:
    """Empirical CDFs of per-request TTFT (left) and TPOT (right), one line per entry; None without data."""
    import matplotlib

    if not any(_plottable_array(line.ttft_ms).size or _plottable_array(line.tpot_ms).size for line in lines):
        return None
    labels = _unique([line.label for line in lines])
    colors = _colors(labels)
    panels = (
        ("ttft_ms", "TTFT per request (ms)", ttft_p95_slo_ms, "SLO: TTFT P95 < {:g} ms"),
        ("tpot_ms", "TPOT per request (ms)", tpot_mean_slo_ms, "SLO: TPOT mean < {:g} ms"),
    )
    with matplotlib.rc_context(cast("dict[Any, Any]", FONT)):
        fig, axes = _new_figure(2, cols=2)
        handles: dict[str, Any] = {}
        for ax, (attr, xlabel, threshold, slo_text) in zip(axes, panels):
            values: list[float] = []
            for line in lines:
                data = _plottable_array(getattr(line, attr))
                if not data.size:
                    continue
                x, y = _ecdf(data)
                values += [float(x[0]), float(x[-1])]
                (h,) = ax.step(x, y, where="post", linewidth=1.8, color=colors[line.label])
                handles.setdefault(line.label, h)
            note = None
            if threshold is not None and values:
                if _threshold_in_view(values, threshold):
                    h = ax.axvline(threshold, linestyle="--", linewidth=1.6, color="#c0392b")
                    handles.setdefault(slo_text.format(threshold), h)
                    values.append(threshold)
                else:
                    note = slo_text.format(threshold) + " is right of this range"
            _scale(ax, "x", values, headroom=1.05)
            if attr == "ttft_ms":
                ax.axhline(0.95, linestyle=":", linewidth=1.2, color="#555555")
                ax.annotate("P95", (0.0, 0.95), xycoords=("axes fraction", "data"), xytext=(4, -12),
                            textcoords="offset points", ha="left", fontsize=9, color="#555555")
            ax.set_ylim(0, 1.02)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("Fraction of requests")
            _panel_title(ax, "TTFT" if attr == "ttft_ms" else "TPOT", note)
            ax.grid(True, which="major", alpha=0.35)
        return _finish(fig, title, list(handles.values()), list(handles), path)
