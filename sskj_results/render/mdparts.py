"""The Markdown pieces report.md and comparison.md share: formatting, the seed-002 table, notes, the Goodput
section and the registry's metric sections (contract/metrics.py), plot lines. Pure: no I/O."""

from __future__ import annotations

from pathlib import PurePath
from typing import Iterable, Mapping, Optional, Sequence

from ..contract.escape import md_code, md_text
from ..contract.comparison_models import Row
from ..contract.metrics import METRICS, Metric
from ..contract.models import SloSpec
from ..analysis.grades import metric_reliable
from ..analysis.slo import NOT_MEASURED, describe
from .mdtable import cell, github_table
from .validity_md import validity_mark

TABLE_HEADER = (
    "| Scenario | Backend | Conc | Input | Output | Req/s | OutTok/s | TTFT P95(ms) | TTFT P99(ms) "
    "| TPOT Mean(ms) | TPOT P95(ms) | TPOT P99(ms) | E2E P99(ms) | SLO |"
)
TABLE_ALIGN = "|---|---|" + "---:|" * 12
# the seed-002 table and, after it, the Valid column: report.md's Results and comparison.md's side-by-side table
REPORT_TABLE_HEADER = TABLE_HEADER + " Valid |"
REPORT_TABLE_ALIGN = TABLE_ALIGN + "---|"
SLO_NOTES = (
    "- SLO check uses TTFT P95 and TPOT mean.",
    "- A ⚠️ indicates one of the two metrics is out of target; ❌ indicates both are out.",
)
# a value not to be believed (a failed check makes its metric unreliable: docs/VALIDITY.md), and an SLO mark
# that rests on such a value or on a disqualified point: never ✅
UNRELIABLE_MARK = "⊘"
SLO_METRICS = ("ttft_ms", "tpot_ms")  # the SLO mark's inputs (TTFT P95, TPOT mean)
UNRELIABLE_NOTE = (f"- {UNRELIABLE_MARK} after a value: a failed validity check makes that metric unreliable on "
                   "this point (the Valid column says which; docs/VALIDITY.md); as the SLO mark: not judged, the "
                   "point is disqualified (✖) or its TPOT or TTFT is unreliable.")
METRIC_LABELS = {m.name: m.label for m in METRICS}  # the verdict table's Metric column
METRIC_SHORT = {m.name: m.short for m in METRICS}  # lists of metrics
PLOT_TITLES = {
    "throughput_vs_interactivity.png": "Output throughput vs interactivity",
    "frontier_per_accelerator.png": "Output throughput per accelerator vs interactivity",
    "ttft_p95_vs_concurrency.png": "TTFT P95 vs concurrency",
    "tpot_mean_vs_concurrency.png": "TPOT mean vs concurrency",
}


# --------------------------------------------------------------------------- formatting helpers


def num(value: Optional[float], digits: int = 2) -> str:
    """`-` for a missing value, else fixed decimals."""
    return "-" if value is None else f"{value:.{digits}f}"


def code(text: str) -> str:
    """Inline code on one line that survives backticks in the text (contract.escape.md_code)."""
    return md_code(text)


mdt = md_text  # a recorded value inside Markdown text


def slo_reference(spec: SloSpec) -> str:
    """`TTFT P95 < 3000.0ms, TPOT mean < 50.0ms (S2)`."""
    rule = describe(SloSpec(tier=None, ttft_p95_ms=spec.ttft_p95_ms, tpot_mean_ms=spec.tpot_mean_ms))
    return f"{rule} ({spec.tier})" if spec.tier else rule


def reliable(row: Row, metric: str) -> bool:
    """A metric of a row can be believed: the point is not disqualified and no failed check makes it unreliable."""
    return metric_reliable(row.validity_grade, row.partial, metric)


def marked(row: Row, metric: str, text: str) -> str:
    """A value's text with ⊘ when a failed check makes its metric unreliable on that point (a disqualified point is
    marked once, by its Valid cell); `-` (not recorded) as it is."""
    return f"{text} {UNRELIABLE_MARK}" if text not in ("-", "unknown") and metric in row.unreliable else text


def slo_cell(row: Row) -> str:
    """The SLO mark as shown: ⊘ when it rests on a disqualified point or an unreliable TTFT or TPOT (never ✅),
    else the recorded mark."""
    if row.validity_grade == "disqualified" or not all(reliable(row, m) for m in SLO_METRICS):
        return UNRELIABLE_MARK
    return row.slo_status.overall


def unreliable_note(rows: Iterable[Row]) -> list[str]:
    """The legend line for ⊘, when a row has it."""
    return [UNRELIABLE_NOTE] if any(slo_cell(r) == UNRELIABLE_MARK or r.unreliable for r in rows) else []


def table_line(row: Row) -> str:
    """One row of the side-by-side table, as the team's reports print it (an unreliable value marked ⊘)."""
    cells = [
        cell(row.scenario), cell(row.run), str(row.concurrency) if row.concurrency is not None else "-", str(row.input_len), str(row.output_len),
        num(row.request_throughput), num(row.output_token_throughput), num(row.ttft_p95_ms), num(row.ttft_p99_ms),
        marked(row, "tpot_ms", num(row.tpot_mean_ms)), marked(row, "tpot_ms", num(row.tpot_p95_ms)),
        marked(row, "tpot_ms", num(row.tpot_p99_ms)), num(row.e2e_p99_ms), slo_cell(row),
    ]
    return "| " + " | ".join(cells) + " |"


# ---------------------------------------------------------------- acceptance (speculative runs)

ACCEPT_HEADER = "Accept len"
UNKNOWN_ACCEPTANCE = "unknown ✖"
# scenarios[].acceptance.source (contract/clientinfo.py) in a table cell, and in words for the notes
ACCEPT_SOURCES = {
    "client_counters": ("client", "the vLLM client's own /metrics change over its benchmark"),
    "server_metrics": ("/metrics", "the server's /metrics counters before and after the scenario"),
    "server_info_lifetime": ("server_info", "SGLang's server_info average of the first scheduler since the server "
                                            "started (earlier scenarios and warmups included)"),
}


def shows_acceptance(rows: Iterable[Row]) -> bool:
    """The tables get an Accept len column when some row is speculative or records an accept length."""
    return any(r.speculative or r.accept_length is not None for r in rows)


def accept_cell(row: Row) -> str:
    """`2.07 (/metrics)`; `unknown ✖` for a speculative row without acceptance (never 0); `-` when not speculative."""
    if row.acceptance is not None:
        text = f"{row.acceptance.length:.2f} ({ACCEPT_SOURCES[row.acceptance.source][0]})"
        return text + (" unreliable" if row.acceptance.reliable is False else "")
    if row.accept_length is not None:
        return f"{row.accept_length:.2f} (source not recorded)"
    return UNKNOWN_ACCEPTANCE if row.speculative else "-"


def acceptance_notes(rows: Sequence[Row]) -> list[str]:
    """The Notes' lines on the Accept len column: its definition, each source shown, the unknown ones."""
    if not shows_acceptance(rows):
        return []
    lines = [f"- {ACCEPT_HEADER}: tokens per speculative verification step, 1 + accepted draft tokens / drafting "
             "steps (docs/METRICS.md#acceptance-length), in brackets its source; `-`: not speculative."]
    shown = {(r.acceptance.source, r.acceptance.weighting, r.acceptance.scope) for r in rows if r.acceptance}
    for source, weighting, scope in sorted(shown):
        short, words = ACCEPT_SOURCES[source]
        over = "this scenario only" if scope == "scenario" else "the server's lifetime"
        lines.append(f"- `{short}`: {words}; {weighting}-weighted, over {over}.")
    if any(r.acceptance is not None and r.acceptance.reliable is False for r in rows):
        lines.append("- `unreliable`: the source does not cover the whole server (scenarios[].acceptance.note says "
                     "why).")
    unknown = [f"{r.scenario} ({r.run})" for r in rows if accept_cell(r) == UNKNOWN_ACCEPTANCE]
    if unknown:
        lines.append(f"- `{UNKNOWN_ACCEPTANCE}`: the run decodes speculatively but recorded no acceptance for "
                     f"{', '.join(map(md_text, unknown))}: neither its client nor the server's /metrics before and "
                     "after the scenario reported speculative-decoding counters (metrics disabled, snapshots "
                     "missing, or another engine answered); unknown, not 0.")
    return lines


BOUND_HEADER = "Draft bound"


def results_table(rows: Sequence[Row], bound_marks: Optional[Mapping[tuple[str, str], str]] = None) -> list[str]:
    """comparison.md's side-by-side table: the same as report.md's Results table (`report_table`: the team's columns,
    Accept len where a row is speculative, Valid), and a Draft bound column when bound_marks, (scenario, run) -> its
    mark, names a row (a speculative row beyond the draft bound; `-` the others)."""
    lines = report_table(rows)
    if bound_marks:
        lines = ([f"{lines[0]} {BOUND_HEADER} |", lines[1] + "---|"]
                 + [f"{line} {cell(bound_marks.get((r.scenario, r.run), '-'))} |" for line, r in zip(lines[2:], rows)])
    return lines


def report_table(rows: Sequence[Row]) -> list[str]:
    """The seed-002 table (its Accept len column for a speculative run) plus a Valid column (✔, ⚠ qualified,
    ◐ some metrics unreliable, ✖ disqualified, blank unknown): every table that shows a point says its validity."""
    if not shows_acceptance(rows):
        return [REPORT_TABLE_HEADER, REPORT_TABLE_ALIGN] + [f"{table_line(r)} {cell(validity_mark(r))} |" for r in rows]
    return ([f"{TABLE_HEADER} {ACCEPT_HEADER} | Valid |", TABLE_ALIGN + "---:|---|"]
            + [f"{table_line(r)} {cell(accept_cell(r))} | {cell(validity_mark(r))} |" for r in rows])


NOT_MEASURED_NOTE = (
    f"- A {NOT_MEASURED} marks a scenario whose TTFT P95 or TPOT mean was not measured (neither in the raw file nor "
    "computable from it; a client that did not stream measures neither: TTFT and TPOT need the first token's "
    "arrival, docs/METRICS.md \"Streaming\"): its SLO check is unknown, not failed."
)


def unmeasured_note(rows: Iterable[Row]) -> list[str]:
    """The legend line for ❔, when a row has it."""
    return [NOT_MEASURED_NOTE] if any(r.slo_status.overall == NOT_MEASURED for r in rows) else []


def has_missing(rows: Iterable[Row]) -> bool:
    fields = ("request_throughput", "output_token_throughput", "ttft_p95_ms", "ttft_p99_ms", "tpot_mean_ms",
              "tpot_p95_ms", "tpot_p99_ms", "e2e_p99_ms")
    return any(getattr(r, f) is None for r in rows for f in fields)


def goodput_section(rows: Sequence[Row], spec: SloSpec, with_backend: bool) -> list[str]:
    """`## Goodput`: per scenario the share of requests within the SLO and their rate; nothing when no row has one."""
    if all(r.slo_attainment is None and r.request_goodput is None for r in rows):
        return []
    tier = f" ({spec.tier})" if spec.tier else ""
    lines = ["## Goodput", "",
             f"Requests that succeeded with their own TTFT below {spec.ttft_p95_ms:g} ms and TPOT below "
             f"{spec.tpot_mean_ms:g} ms{tier}: their share of all requests (failed ones count as misses) and their "
             "rate over the benchmark duration (docs/METRICS.md). `-`: not measured (no per-request data, or the "
             "run's marks were recomputed against another SLO).", ""]
    headers = ["Scenario"] + (["Backend"] if with_backend else []) + ["In SLO (%)", "Goodput (req/s)", "Req/s", "Valid"]
    table = [[r.scenario] + ([r.run] if with_backend else [])
             + [marked(r, "slo_attainment", num(None if r.slo_attainment is None else r.slo_attainment * 100, 1)),
                marked(r, "request_goodput", num(r.request_goodput)), num(r.request_throughput), validity_mark(r)]
             for r in rows]
    align = ["left"] + (["left"] if with_backend else []) + ["right"] * 3 + ["left"]
    return lines + github_table(headers, table, align) + [""]


STAT_COLUMNS = (("mean", "Mean"), ("p50", "P50"), ("p90", "P90"), ("p99", "P99"))


def _section_head(m: Metric, dash: str) -> list[str]:
    """A registry metric's section title and first paragraph (what `-` in its table means: `dash`)."""
    better = "higher" if m.higher_is_better else "lower"
    return [f"## {m.section}", "", f"{m.intro} {better.capitalize()} is better. `-`: {dash}. Definition: {m.docs}.", ""]


def metric_section(m: Metric, rows: Sequence[Row], with_backend: bool) -> list[str]:
    """`## <section>` of a registry distribution recorded on scenarios[] (contract/metrics.py: SECTION_METRICS):
    per scenario its count and statistics; nothing when no row has it."""
    values = [getattr(r, m.name) for r in rows]
    if all(v is None for v in values):
        return []
    lines = _section_head(m, "not measured")
    headers = (["Scenario"] + (["Backend"] if with_backend else []) + ["Requests"]
               + [f"{title} ({m.unit})" for _, title in STAT_COLUMNS] + ["Valid"])
    table = [[r.scenario] + ([r.run] if with_backend else [])
             + ["-" if v is None else str(v.count)]
             + [marked(r, m.name, num(None if v is None else getattr(v, stat))) for stat, _ in STAT_COLUMNS]
             + [validity_mark(r)] for r, v in zip(rows, values)]
    align = ["left"] + (["left"] if with_backend else []) + ["right"] * (1 + len(STAT_COLUMNS)) + ["left"]
    return lines + github_table(headers, table, align) + [""]


def window_section(m: Metric, rows: Sequence[Row], with_backend: bool) -> list[str]:
    """`## <section>` of a registry value over a window of the run (contract/metrics.py: WINDOW_METRICS): per
    scenario its value, its window's length and that window's share of the run; nothing when no row has it."""
    values = [getattr(r, m.name) for r in rows]
    if all(v is None for v in values):
        return []
    lines = _section_head(m, "unknown")
    headers = (["Scenario"] + (["Backend"] if with_backend else [])
               + [f"{m.short} ({m.unit})", "Window (s)", "Share of run (%)", "Valid"])
    windows = [getattr(r, f"{m.name}_window") for r in rows]
    table = [[r.scenario] + ([r.run] if with_backend else [])
             + [marked(r, m.name, num(v)), num(None if w is None else w.length_s, 3),
                num(None if w is None else w.share * 100, 1), validity_mark(r)]
             for r, v, w in zip(rows, values, windows)]
    align = ["left"] + (["left"] if with_backend else []) + ["right"] * 3 + ["left"]
    return lines + github_table(headers, table, align) + [""]


def plot_alt(name: str) -> str:
    if name in PLOT_TITLES:
        return PLOT_TITLES[name]
    stem = name[:-4] if name.endswith(".png") else name
    if stem.startswith("cdf_"):
        return f"TTFT and TPOT CDFs, {stem[4:]}"
    return stem


def plot_lines(files: Sequence[str]) -> list[str]:
    lines: list[str] = []
    for f in files:
        lines += [f"![{plot_alt(PurePath(f).name)}]({f})", ""]
    return lines

