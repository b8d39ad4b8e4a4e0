"""report.html and comparison.html: one self-contained page each, working offline. Pure: no I/O.

The page has the sections of the Markdown (report.md / comparison.md, which
`report` renders and this module converts), with three differences:

* the results table is interactive: sortable by any column, filterable by
  scenario, engine, chip and SLO mark;
* the plots are interactive figures (plotly.js): hover shows the exact
  values and the scenario, a click on a legend entry hides or shows a run,
  drag to zoom, double-click to reset; one CDF figure per scenario, chosen
  from a list;
* every table can be sorted by a click on its header.

Everything is inlined: the page's own script and style, the data (JSON),
and plotly.min.js from the `plotly` Python package, gzip-compressed and
base64-encoded (about 2.0 MB instead of 4.8 MB), decompressed by the
browser's own DecompressionStream. A Content-Security-Policy forbids every
request, so nothing can leave the page. docs/HTML_REPORTS.md says why plotly.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from .compare import match_scenarios, pool
from .comparison_models import ComparisonDoc, Row
from .models import Scenario, SloSpec
from .rundata import RunData, mean_known, run_labels, scenario_status, table_row

# Points per CDF line: the sorted samples at evenly spaced ranks (every sample when there are fewer).
CDF_POINTS = 200
# plotly's default qualitative palette (colours of runs, in order).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
SLO_COLOR = "#c0392b"
CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")
TABLE_COLUMNS = (  # (header, Row attribute, decimals) of the interactive results table
    ("Scenario", "scenario", None), ("Backend", "run", None), ("Engine", "engine", None), ("Chip", "chip", None),
    ("Conc", "concurrency", 0), ("Input", "input_len", 0), ("Output", "output_len", 0),
    ("Req/s", "request_throughput", 2), ("OutTok/s", "output_token_throughput", 2),
    ("TTFT P95(ms)", "ttft_p95_ms", 2), ("TTFT P99(ms)", "ttft_p99_ms", 2), ("TPOT Mean(ms)", "tpot_mean_ms", 2),
    ("TPOT P95(ms)", "tpot_p95_ms", 2), ("TPOT P99(ms)", "tpot_p99_ms", 2), ("E2E P99(ms)", "e2e_p99_ms", 2),
    ("SLO", "slo", None),
)
FILTERS = (("scenario", "Scenario"), ("engine", "Engine"), ("chip", "Chip"), ("slo", "SLO"))


# --------------------------------------------------------------------------- plotly.js, inlined once


@functools.lru_cache(maxsize=1)
def plotly_js_gzip_base64() -> tuple[str, str]:
    """(version, base64 of the gzip of plotly.min.js) from the installed plotly package."""
    from importlib import resources

    data = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    match = re.search(rb"plotly\.js v([0-9][0-9A-Za-z.\-]*)", data[:400])
    version = match.group(1).decode("ascii") if match else "unknown"
    return version, base64.b64encode(gzip.compress(data, compresslevel=9, mtime=0)).decode("ascii")


# --------------------------------------------------------------------------- Markdown -> HTML (our own subset)


_INLINE = re.compile(r"``\s(.+?)\s``|`([^`]+)`|\*\*(.+?)\*\*|!\[([^\]]*)\]\(([^)]*)\)")


def inline(text: str) -> str:
    """Inline Markdown of report.py: `code`, `` code with ` ``, **bold**; images become their alt text."""
    out: list[str] = []
    pos = 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos:m.start()]))
        if m.group(1) is not None or m.group(2) is not None:
            out.append(f"<code>{html.escape(m.group(1) if m.group(1) is not None else m.group(2))}</code>")
        elif m.group(3) is not None:
            out.append(f"<strong>{html.escape(m.group(3))}</strong>")
        else:
            out.append(html.escape(m.group(4)))
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _table(lines: list[str]) -> str:
    head = _cells(lines[0])
    aligns = ["right" if c.strip().endswith(":") else "left" for c in _cells(lines[1])]
    out = ['<div class="scroll"><table class="sortable"><thead><tr>']
    out += [f'<th class="{a}">{inline(h)}</th>' for h, a in zip(head, aligns)]
    out.append("</tr></thead><tbody>")
    for line in lines[2:]:
        row = _cells(line)
        tds = []
        for value, align in zip(row, aligns):
            bare = value.strip("*")
            cls = f"{align} v-{bare.replace(' ', '-')}" if bare in ("faster", "slower") else align
            tds.append(f'<td class="{cls}"{_sort_value(bare)}>{inline(value)}</td>')
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _sort_value(text: str) -> str:
    try:
        value = float(text.replace(",", "").lstrip("<"))
    except ValueError:
        return ""
    return f' data-v="{value!r}"' if math.isfinite(value) else ""


def markdown_blocks(lines: Sequence[str]) -> str:
    """HTML of Markdown lines: paragraphs, `-` lists, pipe tables, ```fences```, ### headings."""
    out: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            j = i + 1
            while j < n and not lines[j].startswith("```"):
                j += 1
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1:j])) + "</code></pre>")
            i = j + 1
        elif line.startswith("### "):
            out.append(f"<h3>{inline(line[4:])}</h3>")
            i += 1
        elif line.startswith("|") and i + 1 < n and re.match(r"^\|?\s*:?-{3,}", lines[i + 1]):
            j = i
            while j < n and lines[j].startswith("|"):
                j += 1
            out.append(_table(list(lines[i:j])))
            i = j
        elif line.startswith("- "):
            items = []
            while i < n and lines[i].startswith("- "):
                items.append(f"<li>{inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        else:
            para = []
            while i < n and lines[i].strip() and not lines[i].startswith(("- ", "|", "```", "### ")):
                para.append(lines[i])
                i += 1
            out.append(f"<p>{inline(' '.join(para))}</p>")
    return "\n".join(out)


def split_sections(markdown: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(title, [(section title, its lines)]) of a report.md / comparison.md."""
    title = ""
    sections: list[tuple[str, list[str]]] = []
    for line in markdown.splitlines():
        if line.startswith("# ") and not title and not sections:
            title = line[2:]
        elif line.startswith("## "):
            sections.append((line[3:], []))
        elif sections:
            sections[-1][1].append(line)
    return title, sections


# --------------------------------------------------------------------------- the interactive table


def _fmt(value: Any, digits: Optional[int]) -> tuple[str, str]:
    """(shown text, sort value) of a cell."""
    if value is None:
        return "-", ""
    if digits is None:
        return str(value), ""
    return (f"{value:.{digits}f}" if digits else str(value)), f' data-v="{float(value)!r}"'


def results_table_html(rows: Sequence[Row]) -> str:
    """The side-by-side table with its filters: one row per run per scenario."""
    if not rows:
        return "<p>No measured scenarios.</p>"
    options: dict[str, list[str]] = {key: [] for key, _ in FILTERS}
    # Engine and Chip columns only when they tell the rows apart (the filters work either way).
    same = {attr for attr in ("engine", "chip") if len({getattr(r, attr) for r in rows}) == 1}
    columns = [c for c in TABLE_COLUMNS if c[1] not in same]
    body = []
    for row in rows:
        values = {"slo": row.slo_status.overall, "chip": row.chip or "-"}
        attrs = {"scenario": row.scenario, "engine": row.engine, "chip": row.chip or "-", "slo": row.slo_status.overall,
                 "run": row.run}
        for key, _ in FILTERS:
            if attrs[key] not in options[key]:
                options[key].append(attrs[key])
        tds = []
        for _, attr, digits in columns:
            value = values.get(attr, getattr(row, attr, None))
            text, sort = _fmt(value, digits)
            cls = "right" if digits is not None else "left"
            tds.append(f'<td class="{cls}"{sort}>{html.escape(text)}</td>')
        data = "".join(f' data-{k}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
        body.append(f"<tr{data}>" + "".join(tds) + "</tr>")
    selects = []
    for key, label in FILTERS:
        opts = "".join(f'<option value="{html.escape(v, quote=True)}">{html.escape(v)}</option>'
                       for v in sorted(options[key]))
        selects.append(f'<label>{label} <select data-filter="{key}"><option value="">all</option>{opts}</select></label>')
    head = "".join(f'<th class="{"right" if d is not None else "left"}">{html.escape(h)}</th>'
                   for h, _, d in columns)
    return (
        f'<div class="filters" id="results-filters">{"".join(selects)}'
        f'<span class="count" id="results-count">{len(rows)} of {len(rows)} rows</span></div>'
        f'<div class="scroll"><table class="sortable results" id="results-table"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div>'
    )


# --------------------------------------------------------------------------- figures (plotly JSON)


@dataclass(frozen=True)
class ShapePoint:
    """One concurrency of one run at one shape (repeats averaged), with the scenario names behind it."""

    concurrency: int
    scenarios: str
    output_throughput: Optional[float]
    tpot_mean_ms: Optional[float]
    ttft_p95_ms: Optional[float]


def shape_points(run: RunData) -> dict[tuple[int, int], list[ShapePoint]]:
    """Per shape (input, output), the closed-loop points of a run in increasing concurrency."""
    by_shape: dict[tuple[int, int], dict[int, list[Scenario]]] = {}
    for s in run.results.scenarios:
        if s.concurrency is not None:
            by_shape.setdefault((s.input_len, s.output_len), {}).setdefault(s.concurrency, []).append(s)
    out: dict[tuple[int, int], list[ShapePoint]] = {}
    for shape, by_conc in sorted(by_shape.items()):
        out[shape] = [
            ShapePoint(conc, html.escape(", ".join(s.name for s in scen)),
                       mean_known([s.output_token_throughput for s in scen]),
                       mean_known([s.latencies.tpot_ms.mean for s in scen]),
                       mean_known([s.latencies.ttft_ms.p95 for s in scen]))
            for conc, scen in sorted(by_conc.items())
        ]
    return out


def _grid(count: int, titles: Sequence[str], x_title: str, y_title: str, x_log: bool, y_log: bool = False,
          x_ticks: Optional[Sequence[float]] = None) -> dict[str, Any]:
    """A plotly layout with `count` panels (at most 3 per row), each titled; the legend below them."""
    cols = min(3, max(count, 1))
    rows = max(1, math.ceil(count / cols))
    top, bottom, panel, gap_px = 60, 110, 300, 80
    area = panel * rows + gap_px * (rows - 1)
    gap_x, gap_y = 0.07, gap_px / area
    width = (1 - gap_x * (cols - 1)) / cols
    height = (1 - gap_y * (rows - 1)) / rows
    layout: dict[str, Any] = {
        "height": top + bottom + area, "margin": {"t": top, "l": 70, "r": 20, "b": bottom},
        "hovermode": "closest", "legend": {"orientation": "h", "x": 0, "y": -62 / area, "yanchor": "top"},
        "annotations": [], "plot_bgcolor": "#fbfbfb",
    }
    for i in range(count):
        r, c = divmod(i, cols)
        suffix = "" if i == 0 else str(i + 1)
        x0 = c * (width + gap_x)
        y1 = 1 - r * (height + gap_y)
        xaxis: dict[str, Any] = {"domain": [x0, x0 + width], "anchor": f"y{suffix}", "title": {"text": x_title},
                                 "type": "log" if x_log else "linear", "gridcolor": "#e5e5e5"}
        if x_ticks:
            xaxis.update(tickmode="array", tickvals=list(x_ticks), ticktext=[f"{v:g}" for v in x_ticks])
        yaxis: dict[str, Any] = {"domain": [y1 - height, y1], "anchor": f"x{suffix}", "title": {"text": y_title},
                                 "type": "log" if y_log else "linear", "gridcolor": "#e5e5e5"}
        if y_log:
            yaxis["dtick"] = 1  # labels at powers of ten only (plotly's log labels of 2, 3, 5 read as values)
        else:
            yaxis["rangemode"] = "tozero"
        layout[f"xaxis{suffix}"] = xaxis
        layout[f"yaxis{suffix}"] = yaxis
        layout["annotations"].append({"text": f"<b>{html.escape(titles[i])}</b>", "xref": "paper", "yref": "paper",
                                      "x": x0 + width / 2, "y": y1, "yanchor": "bottom", "xanchor": "center",
                                      "showarrow": False, "font": {"size": 13}})
    return layout


def _axes(i: int) -> dict[str, str]:
    return {"xaxis": "x" if i == 0 else f"x{i + 1}", "yaxis": "y" if i == 0 else f"y{i + 1}"}


def _shape_title(shape: tuple[int, int]) -> str:
    return f"input {shape[0]:,} / output {shape[1]:,} tokens"


def _span(values: Sequence[float]) -> bool:
    """Log scale when the values span 20× or more (as the PNG plots choose)."""
    known = [v for v in values if v is not None and v > 0]
    return bool(known) and max(known) / min(known) >= 20


def curve_figures(series: Sequence[tuple[str, dict[tuple[int, int], list[ShapePoint]]]], spec: SloSpec,
                  title: str) -> list[dict[str, Any]]:
    """Throughput vs interactivity, TTFT P95 vs concurrency and TPOT mean vs concurrency: one panel per shape,
    one trace per run (a legend click hides or shows that run in every panel)."""
    shapes = sorted({shape for _, points in series for shape in points})
    titles = [_shape_title(s) for s in shapes]
    concs = [p.concurrency for _, pts in series for ps in pts.values() for p in ps]
    figures = []
    for key, name, x_title, y_title in (
        ("tput", f"Output throughput vs interactivity — {title}", "interactivity (1000 / TPOT mean, tok/s per user)",
         "output throughput (tok/s)"),
        ("ttft", f"TTFT P95 vs concurrency — {title}", "concurrency", "TTFT P95 (ms)"),
        ("tpot", f"TPOT mean vs concurrency — {title}", "concurrency", "TPOT mean (ms)"),
    ):
        traces: list[dict[str, Any]] = []
        xs_all: list[float] = []
        for r, (raw_label, points) in enumerate(series):
            label = html.escape(raw_label)  # plotly reads entities and a few tags in text: names stay text
            color = PALETTE[r % len(PALETTE)]
            for i, shape in enumerate(shapes):
                pts = points.get(shape, [])
                if key == "tput":
                    pts = [p for p in pts if p.tpot_mean_ms and p.output_throughput is not None]
                    xs = [1000.0 / p.tpot_mean_ms for p in pts if p.tpot_mean_ms]
                    ys = [p.output_throughput for p in pts]
                    hover = ("<b>%{fullData.name}</b><br>scenario %{customdata[0]}<br>concurrency %{customdata[1]}"
                             "<br>interactivity %{x:.2f} tok/s per user<br>output throughput %{y:.2f} tok/s"
                             "<br>TPOT mean %{customdata[2]:.2f} ms<extra></extra>")
                    custom = [[p.scenarios, p.concurrency, p.tpot_mean_ms] for p in pts]
                else:
                    attr = "ttft_p95_ms" if key == "ttft" else "tpot_mean_ms"
                    pts = [p for p in pts if getattr(p, attr) is not None]
                    xs = [float(p.concurrency) for p in pts]
                    ys = [getattr(p, attr) for p in pts]
                    what = "TTFT P95" if key == "ttft" else "TPOT mean"
                    hover = (f"<b>%{{fullData.name}}</b><br>scenario %{{customdata[0]}}<br>concurrency %{{x}}"
                             f"<br>{what} %{{y:.2f}} ms<extra></extra>")
                    custom = [[p.scenarios, p.concurrency] for p in pts]
                if not pts:
                    continue
                xs_all += xs
                traces.append({
                    "type": "scatter", "mode": "lines+markers+text" if key == "tput" else "lines+markers",
                    "name": label, "legendgroup": label, "showlegend": not any(t["name"] == label for t in traces),
                    "x": xs, "y": ys, "customdata": custom, "hovertemplate": hover,
                    "text": [str(p.concurrency) for p in pts] if key == "tput" else None,
                    "textposition": "top right", "textfont": {"size": 10, "color": color},
                    "line": {"color": color}, "marker": {"color": color, "size": 8}, **_axes(i),
                })
        if key != "tput":
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
        layout = _grid(len(shapes), titles, x_title, y_title, x_log=key != "tput",
                       y_log=key != "tput" and _span([v for t in traces for v in t["y"]]),
                       x_ticks=sorted(set(float(c) for c in concs)) if key != "tput" else None)
        layout["title"] = {"text": html.escape(name), "x": 0.01}
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
    traces: list[dict[str, Any]] = []
    for r, (raw_label, ttft, tpot) in enumerate(cdf.lines):
        label = html.escape(raw_label)
        color = PALETTE[r % len(PALETTE)]
        for i, (metric, values) in enumerate((("TTFT", ttft), ("TPOT", tpot))):
            xs, ys = cdf_points(values)
            if not xs:
                continue
            traces.append({
                "type": "scatter", "mode": "lines", "name": f"{label} (n={values.size})", "legendgroup": label,
                "showlegend": not any(t["legendgroup"] == label for t in traces), "x": xs, "y": ys,
                "line": {"color": color, "shape": "hv"}, **_axes(i),
                "hovertemplate": (f"<b>{label}</b><br>{html.escape(cdf.name)}<br>{metric} %{{x:.2f}} ms"
                                  "<br>fraction %{y:.3f}<extra></extra>"),
            })
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
        data_max = max(xs, default=None)
        if data_max and threshold > 1.5 * data_max:
            # the SLO line is far beyond the samples: start on the samples (double-click shows the line too)
            low = min(v for v in xs if v > 0) if log and any(v > 0 for v in xs) else 0.0
            layout[axis]["range"] = ([math.log10(low), math.log10(data_max * 1.1)] if log else [0, data_max * 1.05])
    layout["title"] = {"text": html.escape(cdf.title), "x": 0.01}
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
        if run.samples[i].ttft_ms.size or run.samples[i].tpot_ms.size:
            shapes.setdefault((s.input_len, s.output_len), []).append(i)
    out = []
    for (inp, outp), idx in sorted(shapes.items()):
        scen = run.results.scenarios
        idx.sort(key=lambda i: (scen[i].concurrency or 0, scen[i].repeat or 0))
        lines = []
        for i in idx:
            s = scen[i]
            who = f"concurrency {s.concurrency}" if s.concurrency is not None else f"rate {s.request_rate}"
            lines.append((f"{who}{f' r{s.repeat}' if s.repeat else ''}", run.samples[i].ttft_ms, run.samples[i].tpot_ms))
        out.append(CdfSet(f"i{inp}_o{outp}", f"Per-request latency CDF — input {inp:,} / output {outp:,}", lines))
    return out


# --------------------------------------------------------------------------- the page


def _json_script(element_id: str, data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = text.replace("</", "<\\/").replace("<!--", "<\\!--")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


def plots_section(figures: Sequence[dict[str, Any]], cdfs: Sequence[dict[str, Any]]) -> str:
    parts = [f'<div class="plot" id="{f["id"]}"></div>' for f in figures]
    if cdfs:
        opts = "".join(f'<option value="{i}">{c["name"]}</option>' for i, c in enumerate(cdfs))  # escaped already
        parts.append(f'<div class="filters"><label>CDF of <select id="cdf-select">{opts}</select></label>'
                     f'<span class="count">{len(cdfs)} scenario(s)</span></div><div class="plot" id="fig-cdf"></div>')
    else:
        parts.append("<p>No per-request data: no CDF.</p>")
    return ('<p class="hint">Hover a point for its values and scenario; click a legend entry to hide or show a run '
            "(double-click: only that one); drag to zoom, double-click the plot to reset.</p>" + "".join(parts))


def page(markdown: str, table_section: str, table: str, plots: str, data: dict[str, Any],
         plots_before: str) -> str:
    """The HTML page: the Markdown's sections in order, `table_section` replaced by the interactive
    table, the Plots section (added before `plots_before` when the Markdown has none) by the figures."""
    title, sections = split_sections(markdown)
    if not any(name == "Plots" for name, _ in sections):
        at = next((i for i, (name, _) in enumerate(sections) if name == plots_before), len(sections))
        sections.insert(at, ("Plots", []))
    body = []
    for name, lines in sections:
        if name == table_section:
            content = table
        elif name == "Plots":
            content = plots
        else:
            content = markdown_blocks(lines)
        body.append(f'<section id="{_slug(name)}"><h2>{html.escape(name)}</h2>\n{content}\n</section>')
    nav = " · ".join(f'<a href="#{_slug(name)}">{html.escape(name)}</a>' for name, _ in sections)
    version, plotly_b64 = plotly_js_gzip_base64()
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<header><h1>{inline(title)}</h1><nav>{nav}</nav></header><main>",
        "\n".join(body),
        "</main>",
        f'<footer>Written by sskj-results from results.json alone; self-contained (plotly.js {html.escape(version)}, '
        "MIT license, inlined), works offline.</footer>",
        _json_script("sskj-data", data),
        f'<script type="application/octet-stream" id="plotly-gz">{plotly_b64}</script>',
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]) + "\n"


def render_comparison_html(doc: ComparisonDoc, runs: Sequence[RunData], markdown: str) -> str:
    """comparison.html from the comparison, its loaded runs and comparison.md."""
    rows = [r for s in doc.scenarios for r in s.rows]
    labels = [info.label for info in doc.runs]
    figures = curve_figures([(label, shape_points(run)) for label, run in zip(labels, runs)], doc.slo, doc.title)
    cdfs = [cdf_figure(c, doc.slo) for c in comparison_cdfs(doc, runs)]
    return page(markdown, "Side-by-side results", results_table_html(rows), plots_section(figures, cdfs),
                {"figures": figures, "cdfs": cdfs}, plots_before="Runs")


def render_report_html(run: RunData, spec: SloSpec, recompute: bool, markdown: str) -> str:
    """report.html of one run from its RunData and report.md."""
    label = run_labels([run])[0]
    scenarios = sorted(run.results.scenarios, key=lambda s: s.name)
    rows = [table_row(run, label, s, scenario_status(s, spec, recompute)) for s in scenarios]
    meta = run.results.metadata
    figures = curve_figures([(label, shape_points(run))], spec, f"{label}, {meta.experiment} {meta.run_id}")
    cdfs = [cdf_figure(c, spec) for c in report_cdfs(run)]
    return page(markdown, "Results", results_table_html(rows), plots_section(figures, cdfs),
                {"figures": figures, "cdfs": cdfs}, plots_before="Provenance")


STYLE = """
:root{--fg:#1d2329;--muted:#5f6b76;--line:#d9dee3;--head:#f2f4f6;--accent:#1f5f99}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:#fff}
header{padding:18px 28px 10px;border-bottom:1px solid var(--line);background:#fafbfc}
h1{font-size:22px;margin:0 0 6px}
nav{font-size:13px;color:var(--muted)}
nav a{color:var(--accent);text-decoration:none}
main{padding:6px 28px 24px;max-width:1500px}
section{margin:18px 0 26px}
h2{font-size:18px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f2f4f6;padding:1px 4px;border-radius:3px}
pre{background:#f6f8fa;padding:10px;overflow:auto;border-radius:4px}
pre code{background:none;padding:0}
.scroll{overflow:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid var(--line);padding:3px 8px;white-space:nowrap}
th{background:var(--head);position:sticky;top:0;cursor:pointer;user-select:none}
th.sorted-asc::after{content:" \\25B2";font-size:10px}
th.sorted-desc::after{content:" \\25BC";font-size:10px}
td.right,th.right{text-align:right}
tbody tr:nth-child(even){background:#fafbfc}
tbody tr:hover{background:#eef4fa}
.v-faster{color:#1e7b34;font-weight:600}
.v-slower{color:#b3261e;font-weight:600}
.filters{display:flex;flex-wrap:wrap;gap:14px;align-items:center;margin:8px 0;font-size:13px}
.filters select{font-size:13px;padding:2px 4px;max-width:260px}
.count{color:var(--muted)}
.hint{color:var(--muted);font-size:13px}
.plot{width:100%;min-height:420px;margin:10px 0 22px;border:1px solid var(--line);border-radius:4px}
.error{color:#b3261e;font-weight:600}
footer{padding:10px 28px 24px;color:var(--muted);font-size:12px;border-top:1px solid var(--line)}
"""

SCRIPT = r"""
(function () {
  "use strict";
  function sortable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("sorted-asc");
        Array.prototype.forEach.call(heads, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(asc ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          var vx = x.getAttribute("data-v"), vy = y.getAttribute("data-v");
          var r;
          if (vx !== null && vy !== null) { r = parseFloat(vx) - parseFloat(vy); }
          else if (vx !== null) { r = -1; } else if (vy !== null) { r = 1; }
          else { r = x.textContent.localeCompare(y.textContent, undefined, {numeric: true}); }
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);

  var results = document.getElementById("results-table");
  if (results) {
    var selects = document.querySelectorAll("#results-filters select");
    var filter = function () {
      var shown = 0, total = results.tBodies[0].rows.length;
      Array.prototype.forEach.call(results.tBodies[0].rows, function (tr) {
        var ok = true;
        Array.prototype.forEach.call(selects, function (s) {
          if (s.value && tr.getAttribute("data-" + s.getAttribute("data-filter")) !== s.value) { ok = false; }
        });
        tr.style.display = ok ? "" : "none";
        if (ok) { shown += 1; }
      });
      document.getElementById("results-count").textContent = shown + " of " + total + " rows";
    };
    Array.prototype.forEach.call(selects, function (s) { s.addEventListener("change", filter); });
  }

  var data = JSON.parse(document.getElementById("sskj-data").textContent);
  var config = {responsive: true, displaylogo: false, scrollZoom: false};
  function fail(message) {
    Array.prototype.forEach.call(document.querySelectorAll(".plot"), function (div) {
      div.innerHTML = '<p class="error">' + message + "</p>";
    });
  }
  function draw() {
    data.figures.forEach(function (f) {
      Plotly.newPlot(f.id, f.data, f.layout, config);
    });
    var select = document.getElementById("cdf-select");
    if (select && data.cdfs.length) {
      var show = function () {
        var f = data.cdfs[parseInt(select.value, 10)];
        Plotly.react("fig-cdf", f.data, f.layout, config);
      };
      select.addEventListener("change", show);
      show();
    }
    document.body.setAttribute("data-plots", "ready");
  }
  function b64bytes(text) {
    var bin = atob(text.replace(/\s+/g, ""));
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { out[i] = bin.charCodeAt(i); }
    return out;
  }
  if (typeof DecompressionStream === "undefined") {
    fail("This browser cannot decompress the inlined plotly.js (DecompressionStream is missing): " +
         "open the file in a current Chrome, Edge, Firefox or Safari.");
    document.body.setAttribute("data-plots", "unsupported");
    return;
  }
  var packed = document.getElementById("plotly-gz");
  var stream = new Blob([b64bytes(packed.textContent)]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(stream).text().then(function (code) {
    var script = document.createElement("script");
    script.textContent = code;
    document.head.appendChild(script);
    packed.textContent = "";
    draw();
  }).catch(function (err) {
    fail("The plots could not be drawn: " + err);
    document.body.setAttribute("data-plots", "failed");
  });
})();
"""
