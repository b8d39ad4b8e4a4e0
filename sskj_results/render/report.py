"""Markdown rendering: a run's report.md and a comparison's comparison.md. Pure: no I/O.

Both documents are one list of sections (`SECTIONS`), each with an id, its
heading and the documents it appears in; `render_report` and
`render_comparison` iterate it. The registry's distributions recorded on
scenarios[] (contract/metrics.py: SECTION_METRICS) each add a section of
their own. The side-by-side table is the team's daily format (seed report
002) and is rendered by hand, byte for byte (`mdparts`); other tables go
through tabulate's GitHub format (`mdtable`); the Validity section is
`validity_md`'s, comparison.md's own sections `comparison_md`'s.

`publish.write_report` writes report.md from results.json alone, with its
plots under RUN_DIR/plots/; `publish.write_comparison` writes comparison.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Callable, Literal, Optional, Sequence

from ..contract.comparison_models import ComparisonDoc, Row
from ..contract.escape import md_fence
from ..contract.metrics import SECTION_METRICS, WINDOW_METRICS, Metric
from ..contract.models import Metadata, SloSpec
from ..analysis.configdiff import is_speculative
from ..analysis.rundata import RunData, in_reading_order, natural_key, run_labels, scenario_status, table_row
from ..analysis.slo import MET_BOTH, MET_NONE, MET_ONE, NOT_MEASURED
from . import comparison_md, spec_md
from .chips_md import chips_section, has_figures
from .mdparts import (  # noqa: F401 - TABLE_*, SLO_NOTES and results_table are this module's public names too
    METRIC_LABELS, METRIC_SHORT, REPORT_TABLE_ALIGN, acceptance_notes, REPORT_TABLE_HEADER, SLO_NOTES, TABLE_ALIGN, TABLE_HEADER, code,
    UNRELIABLE_MARK, goodput_section, has_missing, mdt, metric_section, plot_lines, report_table, results_table,
    slo_cell, slo_reference, unmeasured_note, unreliable_note, window_section,
)
from .mdtable import github_table
from .validity_md import validity_section


# --------------------------------------------------------------------------- report.md


def _server_commands(run: RunData) -> list[tuple[str, str]]:
    """Each distinct server command of the run once: `server_args`, then the `phase<N>_server_args` that differ."""
    config = run.results.config.model_dump(exclude_none=True)
    out: list[tuple[str, str]] = []
    if config.get("server_args"):
        out.append(("", str(config["server_args"])))
    for key in sorted((k for k in config if k.startswith("phase") and k.endswith("_server_args")), key=natural_key):
        if all(str(config[key]) != command for _, command in out):
            out.append((key[: -len("_server_args")], str(config[key])))
    return out


def _report_title(run: RunData, label: str) -> str:
    meta = run.results.metadata
    where = meta.hardware or run.chip
    return f"# {mdt(meta.experiment)}: {mdt(label)}" + (f" on {mdt(where)}" if where else "") + f" (run {mdt(meta.run_id)})"


UNKNOWN_COUNT = "?"  # a count nobody recorded (never 0)


def time_text(value: Optional[str], precision: Optional[str]) -> str:
    """A recorded time as a reader should see it: `unknown` for null, the known part said for a partial one."""
    if value is None:
        return "unknown"
    if precision == "month-day":
        return f"{value} (month and day; year unknown)"
    if precision == "day":
        return f"{value} (date only)"
    return value


def _report_summary(run: RunData, label: str, spec: SloSpec, recomputed: bool, rows: list[Row]) -> list[str]:
    meta = run.results.metadata
    res = run.results
    lines = [f"- Experiment: {code(meta.experiment)} (run {code(meta.run_id)}, {time_text(meta.timestamp, meta.timestamp_precision)})",
             f"- Model: {code(meta.model)}"]
    engine = mdt(label) + (f" {mdt(meta.engine_version)}" if meta.engine_version else "")
    lines.append(f"- Engine: {engine}")
    if meta.phase:
        lines.append(f"- Phase: {mdt(meta.phase)}")
    lines.append(f"- Chip: {mdt(run.chip) if run.chip else 'not recorded'}")
    if meta.hardware:
        lines.append(f"- Hardware: {mdt(meta.hardware)}")
    if meta.client:
        lines.append(f"- Benchmark client: {code(meta.client)}" + (f" {mdt(meta.client_version)}" if meta.client_version else ""))
    commands = _server_commands(run)
    if not commands:
        lines.append("- Server command: not recorded (config.server_args is missing)")
    for phase, command in commands:
        lines.append(f"- Server command{f' ({mdt(phase)})' if phase else ''}: {code(command)}")
    if res.config.spec_method:
        tokens = f", {res.config.spec_tokens} speculative tokens" if res.config.spec_tokens is not None else ""
        lines.append(f"- Speculative decoding: {code(res.config.spec_method)}{tokens}")
    lines.append(f"- Git commit: {code(meta.git_commit) if meta.git_commit else 'not recorded'}")
    ref = slo_reference(spec)
    if res.slo is None and recomputed:
        ref += "; results.json records no SLO, marks computed against this one"
    elif recomputed:
        ref += f"; recorded: {slo_reference(res.slo)}, marks recomputed" if res.slo else ""
    lines.append(f"- SLO reference: {ref}")
    marks = Counter(slo_cell(r) for r in rows)
    failed = sum(1 for s in res.scenarios if s.failed)
    unknown = sum(1 for s in res.scenarios if s.failed is None)
    lines.append(
        f"- Scenarios: {len(rows)} measured ({marks[MET_BOTH]} {MET_BOTH}, {marks[MET_ONE]} {MET_ONE}, "
        f"{marks[MET_NONE]} {MET_NONE}" + (f", {marks[NOT_MEASURED]} {NOT_MEASURED}" if marks[NOT_MEASURED] else "")
        + (f", {marks[UNRELIABLE_MARK]} {UNRELIABLE_MARK} not judged" if marks[UNRELIABLE_MARK] else "")
        + f"), {len(res.skipped)} skipped, {failed} with failed requests"
        + (f", {unknown} with an unknown failure count" if unknown else "")
    )
    validity = validity_counts(rows)
    if validity:
        lines.append(f"- Validity: {validity} (section Validity)")
    return lines


def validity_counts(rows: Sequence[Row]) -> str:
    """`12 ✖ disqualified, 2 ✔ valid`: the points per grade, the worst first; "" when none was judged."""
    grades: Counter[Optional[str]] = Counter(r.validity_grade for r in rows if r.validity is not None)
    words = (("disqualified", "✖ disqualified"), ("partial", "◐ with unreliable metrics"), ("qualified", "⚠ qualified"),
             ("valid", "✔ valid"), (None, "unknown"))
    return ", ".join(f"{grades[g]} {w}" for g, w in words if grades[g])


def _order(run: RunData) -> list[int]:
    """The run's scenario indexes in reading order (rundata.natural_key of their names)."""
    scenarios = run.results.scenarios
    return sorted(range(len(scenarios)), key=lambda i: natural_key(scenarios[i].name))


def _reconstructed(run: RunData) -> list[str]:
    """### Reconstructed values: what the client did not write, and how sskj computed it (provenance, not a warning)."""
    recon = []
    for i in _order(run):
        s = run.results.scenarios[i]
        by_how: dict[str, list[str]] = {}
        for path, how in sorted(s.reconstructed.items()):
            by_how.setdefault(how, []).append(path)
        for how, paths in sorted(by_how.items()):
            recon.append([s.name, how, ", ".join(paths)])
    if not recon:
        return []
    return ["### Reconstructed values", "",
            "Values the client did not write, and how they were computed (`reconstructed` in results.json):", "",
            *github_table(["Scenario", "How", "Values"], recon), ""]


def _report_warnings(run: RunData) -> list[str]:
    res = run.results
    order = _order(run)
    lines: list[str] = []
    if res.skipped:
        lines += ["### Skipped scenarios", ""]
        lines += github_table(
            ["Scenario", "Conc", "Input", "Output", "Reason"],
            [[k.scenario, k.concurrency if k.concurrency is not None else "-",
              k.input_len if k.input_len is not None else "-", k.output_len if k.output_len is not None else "-",
              k.reason] for k in res.skipped],
            ["left", "right", "right", "right", "left"],
        ) + [""]
    failures = []
    for i in order:
        s = res.scenarios[i]
        if s.failed is None:
            failures.append([s.name, UNKNOWN_COUNT, s.num_prompts if s.num_prompts is not None else UNKNOWN_COUNT,
                             "failed count unknown: the client recorded only its completed requests"])
        elif s.failed:
            first = run.samples[i].first_error if i < len(run.samples) else None
            failures.append([s.name, s.failed, s.success + s.failed, first or "-"])
    if failures:
        known = [row[1] for row in failures if isinstance(row[1], int)]
        unknown = len(failures) - len(known)
        lines += ["### Failed requests", ""]
        if unknown:
            lines += [f"{sum(known)} failed request(s) in {len(known)} scenario(s); {unknown} scenario(s) with an unknown "
                      f"failure count ({UNKNOWN_COUNT}), not counted as 0.", ""]
        lines += github_table(["Scenario", "Failed", "Requests", "First error"], failures,
                              ["left", "right", "right", "left"]) + [""]
    empty = [[res.scenarios[i].name, res.scenarios[i].empty_outputs, res.scenarios[i].success]
             for i in order if res.scenarios[i].empty_outputs]
    if empty:
        lines += ["### Successful requests with 0 output tokens", "",
                  "Counted as successes; excluded from the statistics computed from per-request data "
                  "(the client's own statistics include them):", ""]
        lines += github_table(["Scenario", "0-token successes", "Successes"], empty, ["left", "right", "right"]) + [""]
    capped = [res.scenarios[i].name for i in order if res.scenarios[i].raw_requests_capped]
    if capped:
        lines += ["### Capped per-request data", "",
                  "raw_requests holds only the first requests of: " + ", ".join(map(mdt, capped)) + " (the raw files listed under Provenance have them all).", ""]
    return lines


def _meta_rows(meta: Metadata) -> list[list[str]]:
    """Every recorded field; an unknown time says so (it is never left out as if not asked)."""
    return [[name, "unknown" if value is None else str(value)] for name, value in meta.model_dump().items()
            if value is not None or name == "timestamp"]


def _report_provenance(run: RunData) -> list[str]:
    res = run.results
    lines = ["This report is generated from results.json alone; change results.json, not this file.", "",
             "### Metadata", ""]
    lines += github_table(["Field", "Value"], _meta_rows(res.metadata)) + [""]
    config = {k: v for k, v in res.config.model_dump(exclude_none=True).items() if not k.endswith("server_args")}
    if config:
        lines += ["### Configuration", ""]
        lines += github_table(["Key", "Value"], [[k, str(v)] for k, v in config.items()]) + [""]
    commands = _server_commands(run)
    if commands:
        lines += ["### Server launch command", ""]
        for phase, command in commands:
            if phase:
                lines += [f"{phase}:", ""]
            lines += md_fence(command, "text") + [""]
    lines += _reconstructed(run)
    sources = [(s.name, s.source) for s in in_reading_order(res.scenarios) if s.source]
    if sources:
        lines += ["### Source files", ""]
        lines += github_table(
            ["Scenario", "File", "Line", "Format", "SHA-256"],
            [[name, src.file, src.line, src.format or "-", (src.sha256 or "-")[:16]] for name, src in sources],
            ["left", "left", "right", "left", "left"],
        ) + [""]
    if res.raw_files:
        lines += ["### Raw files imported", ""]
        lines += github_table(["File", "Runs", "Size (bytes)", "SHA-256"],
                              [[f.file, f.runs, f.size, f.sha256] for f in res.raw_files],
                              ["left", "right", "right", "left"]) + [""]
    if not sources and not res.raw_files:
        lines += ["No source files recorded (no scenario has `source`, `raw_files` is empty).", ""]
    return lines


def report_rows(run: RunData, spec: SloSpec, recompute: bool) -> list[Row]:
    """The Results table's rows of one run, in reading order (numbers in names as numbers) (report.md and report.html show the same)."""
    label = run_labels([run])[0]
    scenarios = in_reading_order(run.results.scenarios)
    speculative = is_speculative(run)
    return [table_row(run, label, s, scenario_status(s, spec, recompute), recompute, speculative) for s in scenarios]


# --------------------------------------------------------------------------- the sections of both documents

Document = Literal["report", "comparison"]


@dataclass(frozen=True)
class Page:
    """What the sections render: one run's report (`run`) or a comparison (`doc`), with the table's rows."""

    rows: list[Row]
    spec: SloSpec
    doc: Optional[ComparisonDoc] = None
    run: Optional[RunData] = None
    label: str = ""
    recompute: bool = False
    plot_files: Sequence[str] = field(default_factory=tuple)

    @property
    def with_backend(self) -> bool:
        return self.doc is not None


def block(title: str, body: list[str]) -> list[str]:
    """`## title`, a blank line, the body, a blank line after it."""
    return [f"## {title}", ""] + body + ([""] if not body or body[-1] != "" else [])


@dataclass(frozen=True)
class Section:
    """One section: its id (tests find sections by it), its heading, the documents that have it, its lines
    (heading included, ending with a blank line; none when the page has nothing to show)."""

    id: str
    title: str
    documents: tuple[Document, ...]
    render: Callable[[Page], list[str]]


def _doc(page: Page) -> ComparisonDoc:
    assert page.doc is not None, "a comparison section rendered without a comparison"
    return page.doc


def _run(page: Page) -> RunData:
    assert page.run is not None, "a report section rendered without a run"
    return page.run


def _report_notes(page: Page) -> list[str]:
    notes = list(SLO_NOTES) + unmeasured_note(page.rows) + unreliable_note(page.rows) + acceptance_notes(page.rows)
    if has_missing(page.rows):
        notes.append("- `-` marks a value the run did not record.")
    return notes


def _metric_section(m: Metric) -> Section:
    return Section(f"metric:{m.name}", m.section or m.short, ("report", "comparison"),
                   lambda page: metric_section(m, page.rows, page.with_backend))


def _window_section(m: Metric) -> Section:
    return Section(f"metric:{m.name}", m.section or m.short, ("report", "comparison"),
                   lambda page: window_section(m, page.rows, page.with_backend))


def _cdf_shapes(run: RunData) -> tuple[list[str], list[str]]:
    """The shapes (`i<in>_o<out>`) of a run that have per-request latencies, and its scenarios that have none."""
    shapes: set[tuple[int, int]] = set()
    without: list[str] = []
    for i in _order(run):
        s = run.results.scenarios[i]
        if run.samples[i].metric("ttft_ms").size or run.samples[i].metric("tpot_ms").size:
            shapes.add((s.input_len, s.output_len))
        else:
            without.append(s.name)
    return [f"i{a}_o{b}" for a, b in sorted(shapes)], without


def _plots(page: Page) -> list[str]:
    """The figures, then which latency CDFs are not drawn and why (a CDF per shape in report.md, per matched
    scenario in comparison.md, the first `--cdf` of them)."""
    files = list(_doc(page).plots if page.doc else page.plot_files)
    drawn = sum(1 for f in files if PurePath(f).name.startswith("cdf_"))
    without: list[str] = []
    if page.doc:
        names = [s.name for s in page.doc.scenarios]
        command, unit = "compare", "matched scenarios"
    else:
        names, without = _cdf_shapes(_run(page))
        command, unit = "report", "shapes with per-request data"
    notes = []
    if drawn < len(names):
        notes.append(f"Latency CDFs: {drawn} of {len(names)} {unit} (the first {drawn} in order; "
                     f"`sskj-results {command} ... --cdf all` draws every one); not drawn: "
                     + ", ".join(map(mdt, names[drawn:])) + ".")
    if without:
        notes.append("No latency CDF (no per-request data): " + ", ".join(map(mdt, without)) + ".")
    return plot_lines(files) + [line for note in notes for line in (note, "")]


def _warnings(page: Page) -> list[str]:
    return _report_warnings(_run(page)) or [
        "None: every value is the client's own, no scenario was skipped, no request failed.", ""]


def _results(page: Page) -> list[str]:
    return report_table(page.rows) if page.rows else ["No measured scenarios."]


SECTIONS: tuple[Section, ...] = (
    Section("summary", "Summary", ("report", "comparison"), lambda page: block("Summary", (
        comparison_md.summary(_doc(page)) if page.doc else
        _report_summary(_run(page), page.label, page.spec, page.recompute, page.rows)))),
    Section("results", "Results", ("report",), lambda page: block("Results", _results(page))),
    Section("side-by-side", "Side-by-side results", ("comparison",),
            lambda page: block("Side-by-side results", results_table(page.rows, spec_md.beyond_marks(_doc(page))))),
    Section("notes", "Notes", ("report", "comparison"), lambda page: block("Notes", (
        comparison_md.notes(_doc(page)) if page.doc else _report_notes(page)))),
    Section("goodput", "Goodput", ("report", "comparison"),
            lambda page: goodput_section(page.rows, page.spec, page.with_backend)),
    *(_metric_section(m) for m in SECTION_METRICS),
    *(_window_section(m) for m in WINDOW_METRICS),
    Section("per-accelerator", "Per accelerator and energy", ("report", "comparison"), lambda page: block(
        "Per accelerator and energy", chips_section(
            page.rows, page.with_backend, page.doc.throughput_basis if page.doc else None,
            () if page.doc else _run(page).results.scenarios)) if has_figures(page.rows) else []),
    Section("verdicts", "Statistical verdicts", ("comparison",),
            lambda page: block("Statistical verdicts", comparison_md.verdicts(_doc(page)))),
    Section("speculative", "Speculative decoding", ("report", "comparison"),
            lambda page: spec_md.comparison_section(_doc(page)) if page.doc else spec_md.report_section(_run(page))),
    Section("validity", "Validity", ("report", "comparison"),
            lambda page: validity_section(page.rows, with_backend=page.with_backend, doc=page.doc)),
    Section("warnings", "Warnings", ("report",), lambda page: block("Warnings", _warnings(page))),
    Section("config-differences", "Configuration differences", ("comparison",),
            lambda page: block("Configuration differences", comparison_md.config_differences(_doc(page)))),
    Section("unmatched", "Unmatched scenarios", ("comparison",), lambda page: block(
        "Unmatched scenarios", comparison_md.unmatched(_doc(page))) if _doc(page).unmatched else []),
    Section("plots", "Plots", ("report", "comparison"), lambda page: block("Plots", _plots(page))
            if (page.doc.plots if page.doc else page.plot_files) else []),
    Section("provenance", "Provenance", ("report",), lambda page: block("Provenance", _report_provenance(_run(page)))),
    Section("runs", "Runs", ("comparison",), lambda page: block("Runs", comparison_md.runs_table(_doc(page)))),
)


def sections(document: Document) -> tuple[Section, ...]:
    """The sections of that document, in order."""
    return tuple(s for s in SECTIONS if document in s.documents)


def section_text(markdown: str, section_id: str) -> str:
    """One section of a rendered report.md or comparison.md, found by its id: from its heading to the next
    section's; "" when the document does not have it."""
    heading = "## " + next(s.title for s in SECTIONS if s.id == section_id)
    lines = markdown.split("\n")
    if heading not in lines:
        return ""
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def _render(document: Document, title: str, page: Page) -> str:
    lines = [title, ""]
    for section in sections(document):
        lines += section.render(page)
    return "\n".join(lines).rstrip("\n") + "\n"


def render_comparison(doc: ComparisonDoc) -> str:
    """comparison.md: the seed-002 layout (Summary, Side-by-side results, Notes) then the other sections."""
    rows = [r for s in doc.scenarios for r in s.rows]
    return _render("comparison", f"# {mdt(doc.title)}", Page(rows=rows, spec=doc.slo, doc=doc))


def render_report(run: RunData, spec: SloSpec, recompute: bool, plot_files: Sequence[str] = (),
                  rows: Optional[list[Row]] = None) -> str:
    """report.md of one run: title, Summary, Results table, Notes, Goodput, metric sections, Validity, Warnings,
    Plots, Provenance (`rows`: report_rows of the same arguments, when the caller has them already)."""
    label = run_labels([run])[0]
    rows = report_rows(run, spec, recompute) if rows is None else rows
    page = Page(rows=rows, spec=spec, run=run, label=label, recompute=recompute, plot_files=plot_files)
    return _render("report", _report_title(run, label), page)
