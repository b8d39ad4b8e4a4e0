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
and plotly.min.js from the `plotly` Python package, gzip-compressed (zopfli, cached: render/plotly_js.py) and
written in base 91 (render/packing.py: about 1.75 MB instead of 4.8 MB), decompressed by the
browser's own DecompressionStream. A Content-Security-Policy forbids every
request, so nothing can leave the page. docs/HTML_REPORTS.md says why plotly.
"""

from __future__ import annotations

import functools
import html
import json
import re
from typing import Any, Mapping, Optional, Sequence

from ..analysis.rundata import RunData, run_labels
from .validity_md import validity_mark
from ..contract.comparison_models import ComparisonDoc, Row
from ..contract.escape import md_unescape
from ..contract.models import SloSpec
from .figures import (
    CDF_MAX_FIGURES,
    CDF_MAX_LINES,
    MAX_PANELS,
    CdfSet,
    cdf_figure,
    comparison_cdfs,
    curve_figures,
    evenly,
    report_cdfs,
    shape_points,
)
from .longtables import ROWS_ID, fold_long_tables, rows_script
from .markdown_html import inline, markdown_blocks, split_sections
from . import spec_md
from .packing import pack_smallest
from .plotly_js import plotly_js_packed
from .mdparts import ACCEPT_HEADER, BOUND_HEADER, UNRELIABLE_MARK, accept_cell, shows_acceptance, slo_cell
from .report import report_rows

CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'")
TABLE_COLUMNS = (  # (header, Row attribute, decimals) of the interactive results table
    ("Scenario", "scenario", None), ("Backend", "run", None), ("Engine", "engine", None), ("Chip", "chip", None),
    ("Conc", "concurrency", 0), ("Input", "input_len", 0), ("Output", "output_len", 0),
    ("Req/s", "request_throughput", 2), ("OutTok/s", "output_token_throughput", 2),
    ("TTFT P95(ms)", "ttft_p95_ms", 2), ("TTFT P99(ms)", "ttft_p99_ms", 2), ("TPOT Mean(ms)", "tpot_mean_ms", 2),
    ("TPOT P95(ms)", "tpot_p95_ms", 2), ("TPOT P99(ms)", "tpot_p99_ms", 2), ("E2E P99(ms)", "e2e_p99_ms", 2),
    ("SLO", "slo", None), (ACCEPT_HEADER, "accept", None), ("Valid", "valid", None), (BOUND_HEADER, "bound", None),
)
FILTERS = (("scenario", "Scenario"), ("engine", "Engine"), ("chip", "Chip"), ("slo", "SLO"))
COLUMN_METRIC = {"tpot_mean_ms": "tpot_ms", "tpot_p95_ms": "tpot_ms", "tpot_p99_ms": "tpot_ms"}  # a cell's metric
# A filter is a list of its values up to this many; beyond, a text box: the rows whose value contains the text.
FILTER_MAX_OPTIONS = 50


# --------------------------------------------------------------------------- plotly.js, inlined once


@functools.lru_cache(maxsize=None)
def _asset(name: str) -> str:
    """The page's own style or script, a file of render/assets/ (kept as files so they can be read and linted)."""
    from importlib import resources

    return (resources.files(__package__) / "assets" / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the interactive table


def results_table_html(rows: Sequence[Row], valid: bool = True,
                       bound_marks: Optional[Mapping[tuple[str, str], str]] = None) -> str:
    """The side-by-side table with its filters: one row per run per scenario, with the Valid column of report.md
    (✔, ⚠, ◐, ✖ and the failed checks, blank when unknown); a value a failed check makes unreliable is marked ⊘,
    an SLO mark resting on one (or on a disqualified point) is ⊘ (mdparts.slo_cell); with bound_marks,
    comparison.md's Draft bound column ((scenario, run) -> its mark, `-` the others)."""
    if not rows:
        return "<p>No measured scenarios.</p>"
    options: dict[str, set[str]] = {key: set() for key, _ in FILTERS}
    # Engine and Chip columns only when they tell the rows apart (the filters work either way); Engine not
    # when every Backend label already names it (run_labels starts each label with the run's engine).
    same = {attr for attr in ("engine", "chip") if len({getattr(r, attr) for r in rows}) == 1}
    if all(r.run == r.engine or r.run.startswith(r.engine + " ") for r in rows):
        same.add("engine")
    if not valid:
        same.add("valid")
    if not shows_acceptance(rows):
        same.add("accept")
    if not bound_marks:
        same.add("bound")
    columns = [c for c in TABLE_COLUMNS if c[1] not in same]
    body = []
    escaped: dict[str, str] = {}  # the same few engine, chip, SLO and Valid texts on every row: escaped once

    def esc(text: str) -> str:
        if text not in escaped:
            escaped[text] = html.escape(text)
        return escaped[text]

    for row in rows:
        slo = slo_cell(row)
        values = {"slo": slo, "chip": row.chip or "-", "valid": validity_mark(row), "accept": accept_cell(row),
                  "bound": (bound_marks or {}).get((row.scenario, row.run), "-")}
        attrs = {"scenario": row.scenario, "engine": row.engine, "chip": row.chip or "-", "slo": slo, "run": row.run}
        for key, _ in FILTERS:
            options[key].add(attrs[key])
        tds = []
        for _, attr, digits in columns:
            value = values[attr] if attr in values else getattr(row, attr, None)
            if digits is None:  # the Valid cell wraps (its checks can be long): the row still fits 1400 px
                tds.append(f'<td class="left{" valid" if attr == "valid" else ""}">'
                           f'{esc("-" if value is None else str(value))}</td>')
            elif value is None:
                tds.append('<td class="right">-</td>')
            else:  # a number (its decimals, or as it is) and its sort value: digits, `.`, `-`, inf: nothing to escape
                unreliable = COLUMN_METRIC.get(attr) in row.unreliable
                mark = (f' <span class="unreliable" title="unreliable: {esc(validity_mark(row))}">'
                        f'{UNRELIABLE_MARK}</span>') if unreliable else ""
                tds.append(f'<td class="right" data-v="{float(value)!r}">{value:.{digits}f}{mark}</td>' if digits else
                           f'<td class="right" data-v="{float(value)!r}">{value}{mark}</td>')
        data = "".join(f' data-{k}="{esc(v)}"' for k, v in attrs.items())
        body.append(f"<tr{data}>" + "".join(tds) + "</tr>")
    selects = []
    for key, label in FILTERS:
        if len(options[key]) > FILTER_MAX_OPTIONS:
            selects.append(f'<label>{label} <input type="search" data-filter="{key}" data-match="contains" '
                           f'placeholder="contains… ({len(options[key])} values)" '
                           f'title="more than {FILTER_MAX_OPTIONS} values: the rows whose {label.lower()} contains '
                           'the text typed here"></label>')
            continue
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


# --------------------------------------------------------------------------- the page


def _json_script(element_id: str, data: Any, packed: bool = False) -> str:
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if packed:  # compact data of a large page (history.html): gzip (zopfli where installed) + base 91
        # (render/packing.py pack_smallest), unpacked by sskjUnpack
        packed_text = pack_smallest(text.encode("utf-8"))[0]
        return f'<script type="application/octet-stream" id="{element_id}">{packed_text}</script>'
    text = text.replace("</", "<\\/").replace("<!--", "<\\!--")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"


# the ids the page's own elements and script use: a section never takes one of them
PAGE_IDS = frozenset({"sskj-data", "plotly-gz", ROWS_ID, "results-table", "results-filters", "results-count", "cdf-select",
                      "fig-cdf"})


def _section_ids(names: Sequence[str]) -> list[str]:
    """One id per section: its slug, made unique and kept off the page's own ids (and figure ids)."""
    used: set[str] = set()
    out = []
    for name in names:
        base = _slug(name)
        base = f"section-{base}" if base.startswith("fig-") else base  # the figures' ids
        sid, n = base, 2
        while sid in used or sid in PAGE_IDS:
            sid, n = f"{base}-{n}", n + 1
        used.add(sid)
        out.append(sid)
    return out


def capped_cdfs(sets: Sequence[CdfSet], spec: SloSpec) -> tuple[list[dict[str, Any]], int]:
    """The CDF figures a page carries (at most CDF_MAX_FIGURES, `evenly`) and how many there are."""
    return [cdf_figure(c, spec) for c in evenly(sets, CDF_MAX_FIGURES)], len(sets)


def caps_note(figures: Sequence[dict[str, Any]], cdfs: Sequence[dict[str, Any]], cdf_total: int, what: str) -> str:
    """The sentence that says what the plots leave out when a cap (figures.py) applies; empty when none does."""
    said = []
    shapes = [f["layout"]["meta"].get("shapes", [0, 0]) for f in figures]
    drawn, measured = max(shapes, key=lambda s: s[1], default=[0, 0])
    if drawn < measured:
        said.append(f"{drawn} of {measured} input/output shapes in each curves figure (at most {MAX_PANELS})")
    if len(cdfs) < cdf_total:
        said.append(f"CDFs of {len(cdfs)} of {cdf_total} {what} (at most {CDF_MAX_FIGURES})")
    cut = [c["layout"]["meta"]["lines"] for c in cdfs if c["layout"]["meta"]["lines"][0] < c["layout"]["meta"]["lines"][1]]
    if cut:
        said.append(f"at most {CDF_MAX_LINES} lines in a CDF figure ({len(cut)} figure(s) have more: up to "
                    f"{max(n for _, n in cut)})")
    if not said:
        return ""
    return (f'<p class="hint cap" id="plots-cap">Drawn: {"; ".join(said)}. Where there are more, those drawn are '
            "evenly spaced over the ordered list, the first and the last included; every scenario is in the "
            "table.</p>")


def plots_section(figures: Sequence[dict[str, Any]], cdfs: Sequence[dict[str, Any]], cdf_total: Optional[int] = None,
                  what: str = "scenarios") -> str:
    total = len(cdfs) if cdf_total is None else cdf_total
    parts = [caps_note(figures, cdfs, total, what)] + [f'<div class="plot" id="{f["id"]}"></div>' for f in figures]
    if cdfs:
        opts = "".join(f'<option value="{i}">{c["name"]}</option>' for i, c in enumerate(cdfs))  # escaped already
        shown = f"{len(cdfs)} {what}" if len(cdfs) == total else f"{len(cdfs)} of {total} {what}"
        parts.append(f'<div class="filters"><label>CDF of <select id="cdf-select">{opts}</select></label>'
                     f'<span class="count">{shown}</span></div><div class="plot" id="fig-cdf"></div>')
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
    ids = _section_ids([name for name, _ in sections])
    for (name, lines), sid in zip(sections, ids):
        if name == table_section:
            content = table
        elif name == "Plots":
            content = plots
        else:
            content = markdown_blocks(lines)
        body.append(f'<section id="{sid}"><h2>{html.escape(name)}</h2>\n{content}\n</section>')
    nav = " · ".join(f'<a href="#{sid}">{html.escape(name)}</a>' for (name, _), sid in zip(sections, ids))
    return document(md_unescape(title), inline(title), nav, "\n".join(body), "from results.json alone", "sskj-data",
                    data)


def document(title: str, title_html: str, nav: str, body: str, source: str, data_id: str, data: Any,
             styles: Sequence[str] = ("page.css",), script: str = "page.js", packed: bool = False) -> str:
    """A self-contained page: head (CSP, style), header, body, footer, the data as JSON (`data_id`), plotly.js
    inlined, the shared script (assets/common.js: sortable tables, the plotly loader) and the page's own script (an asset).
    `packed`: the data gzip-compressed and written in base 91 (render/packing.py) instead of JSON text. Long tables and
    lists of the body are drawn in part, the rest packed (render/longtables.py)."""
    version, plotly_packed = plotly_js_packed()
    body, packed_rows = fold_long_tables(body)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{''.join(_asset(name) for name in styles)}</style></head><body>",
        f"<header><h1>{title_html}</h1><nav>{nav}</nav></header><main>",
        body,
        "</main>",
        f'<footer>Written by sskj-results {source}; self-contained (plotly.js {html.escape(version)}, '
        "MIT license, inlined), works offline.</footer>",
        _json_script(data_id, data, packed),
        f'<script type="application/octet-stream" id="plotly-gz">{plotly_packed}</script>',
        rows_script(packed_rows),
        f"<script>{_asset('common.js')}\n{_asset(script)}\n{_asset('longtables.js')}</script>",
        "</body></html>",
    ]) + "\n"


def render_comparison_html(doc: ComparisonDoc, runs: Sequence[RunData], markdown: str) -> str:
    """comparison.html from the comparison, its loaded runs and comparison.md."""
    rows = [r for s in doc.scenarios for r in s.rows]
    labels = [info.label for info in doc.runs]
    figures = curve_figures([(label, shape_points(run)) for label, run in zip(labels, runs)], doc.slo, doc.title)
    cdfs, total = capped_cdfs(comparison_cdfs(doc, runs), doc.slo)
    table = results_table_html(rows, bound_marks=spec_md.beyond_marks(doc))
    return page(markdown, "Side-by-side results", table, plots_section(figures, cdfs, total),
                {"figures": figures, "cdfs": cdfs}, plots_before="Runs")


def render_report_html(run: RunData, spec: SloSpec, recompute: bool, markdown: str,
                       rows: Optional[list[Row]] = None) -> str:
    """report.html of one run from its RunData and report.md (`rows`: the report_rows report.md was
    rendered from, when the caller has them)."""
    label = run_labels([run])[0]
    rows = report_rows(run, spec, recompute) if rows is None else rows
    meta = run.results.metadata
    figures = curve_figures([(label, shape_points(run))], spec, f"{label}, {meta.experiment} {meta.run_id}")
    cdfs, total = capped_cdfs(report_cdfs(run), spec)
    return page(markdown, "Results", results_table_html(rows, valid=True),
                plots_section(figures, cdfs, total, "shapes"), {"figures": figures, "cdfs": cdfs},
                plots_before="Provenance")
