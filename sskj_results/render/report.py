"""Markdown rendering: a run's report.md and a comparison's comparison.md. Pure: no I/O.

The side-by-side table is the team's daily format (seed report 002) and is
rendered by hand, byte for byte: `| a | b |` cells and the alignment row
`|---|---|---:|...`. Other tables go through tabulate's GitHub format
(`mdtable`); the Validity section is `validity_md`'s.

`publish.write_report` writes report.md from results.json alone, with its
plots under RUN_DIR/plots/; `publish.write_comparison` writes comparison.md.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import PurePath
from typing import Any, Iterable, Optional, Sequence


from ..contract.escape import md_cell, md_code, md_fence, md_text
from ..contract.comparison_models import ComparisonDoc, Row, StatTest
from ..contract.models import Metadata, SloSpec
from ..analysis.rundata import RunData, run_labels, scenario_status, table_row
from ..analysis.slo import MET_BOTH, MET_NONE, MET_ONE, NOT_MEASURED, describe
from .mdtable import cell, github_table
from .validity_md import validity_mark, validity_section

TABLE_HEADER = (
    "| Scenario | Backend | Conc | Input | Output | Req/s | OutTok/s | TTFT P95(ms) | TTFT P99(ms) "
    "| TPOT Mean(ms) | TPOT P95(ms) | TPOT P99(ms) | E2E P99(ms) | SLO |"
)
TABLE_ALIGN = "|---|---|" + "---:|" * 12
# report.md only: comparison.md keeps the seed-002 table and shows validity in its own section
REPORT_TABLE_HEADER = TABLE_HEADER + " Valid |"
REPORT_TABLE_ALIGN = TABLE_ALIGN + "---|"
SLO_NOTES = (
    "- SLO check uses TTFT P95 and TPOT mean.",
    "- A ⚠️ indicates one of the two metrics is out of target; ❌ indicates both are out.",
)
METRIC_LABELS = {
    "ttft_ms": "TTFT median (ms)",
    "tpot_ms": "TPOT median (ms)",
    "e2e_ms": "E2E median (ms)",
    "output_token_throughput": "OutTok/s mean",
    "request_goodput": "Goodput mean (req/s)",
}
METRIC_SHORT = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E", "output_token_throughput": "OutTok/s",
                "request_goodput": "Goodput"}
PLOT_TITLES = {
    "throughput_vs_interactivity.png": "Output throughput vs interactivity",
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


def table_line(row: Row) -> str:
    """One row of the side-by-side table, exactly as the team's reports print it."""
    cells = [
        cell(row.scenario), cell(row.run), str(row.concurrency) if row.concurrency is not None else "-", str(row.input_len), str(row.output_len),
        num(row.request_throughput), num(row.output_token_throughput), num(row.ttft_p95_ms), num(row.ttft_p99_ms),
        num(row.tpot_mean_ms), num(row.tpot_p95_ms), num(row.tpot_p99_ms), num(row.e2e_p99_ms),
        row.slo_status.overall,
    ]
    return "| " + " | ".join(cells) + " |"


def results_table(rows: Iterable[Row]) -> list[str]:
    """Header, alignment row and one line per row."""
    return [TABLE_HEADER, TABLE_ALIGN] + [table_line(r) for r in rows]


def report_table(rows: Iterable[Row]) -> list[str]:
    """report.md's Results table: the side-by-side table plus a Valid column (✔, ✖ failed checks, blank unknown)."""
    return [REPORT_TABLE_HEADER, REPORT_TABLE_ALIGN] + [f"{table_line(r)} {cell(validity_mark(r))} |" for r in rows]


NOT_MEASURED_NOTE = (
    f"- A {NOT_MEASURED} marks a scenario whose TTFT P95 or TPOT mean was not measured (neither in the raw file nor "
    "computable from it): its SLO check is unknown, not failed."
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
    headers = ["Scenario"] + (["Backend"] if with_backend else []) + ["In SLO (%)", "Goodput (req/s)", "Req/s"]
    table = [[r.scenario] + ([r.run] if with_backend else [])
             + [num(None if r.slo_attainment is None else r.slo_attainment * 100, 1), num(r.request_goodput),
                num(r.request_throughput)] for r in rows]
    align = ["left"] + (["left"] if with_backend else []) + ["right"] * 3
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


def _p(p: Optional[float]) -> str:
    if p is None:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _ci(test: StatTest) -> str:
    if test.ci_low is None or test.ci_high is None:
        return "-"
    return f"[{test.ci_low:.3f}, {test.ci_high:.3f}]"


def _verdict(v: str) -> str:
    return f"**{v}**" if v in ("faster", "slower") else v


# --------------------------------------------------------------------------- comparison.md


def _summary(doc: ComparisonDoc) -> list[str]:
    runs = doc.runs
    base = runs[0]
    lines = [f"- Model: {code(base.model)}"]
    for info in runs[1:]:
        if info.model != base.model:
            lines.append(f"- {mdt(info.display_name or info.label)} model: {code(info.model)}")
    for field, title in (("hardware", "Hardware"), ("client", "Benchmark client")):
        values = [getattr(info, field) for info in runs]
        known = [v for v in values if v]
        if not known:
            continue
        wrap = code if field == "client" else mdt
        if len(set(values)) == 1:
            lines.append(f"- {title}: {wrap(known[0])}")
        else:
            parts = []
            for value in dict.fromkeys(values):
                who = ", ".join(mdt(i.label) for i in runs if getattr(i, field) == value)
                parts.append(f"{wrap(value) if value else 'not recorded'} ({who})")
            lines.append(f"- {title}: " + "; ".join(parts))
    for info in runs:
        if info.speculative_flags:
            lines.append(f"- {mdt(info.display_name or info.label)} flags: {code(info.speculative_flags)}")
        elif info.spec_method:
            tokens = f", {info.spec_tokens} speculative tokens" if info.spec_tokens is not None else ""
            lines.append(f"- {mdt(info.display_name or info.label)} speculative decoding: {code(info.spec_method)}{tokens}")
    lines.append(f"- SLO reference: {slo_reference(doc.slo)}")
    others = ", ".join(f"{code(i.label)} ({code(i.path)})" for i in runs[1:])
    lines.append(f"- Baseline: {code(base.label)} ({code(base.path)}); compared: {others}")
    chips = list(dict.fromkeys(mdt(i.chip) if i.chip else "not recorded" for i in runs))
    if len(chips) > 1:
        lines.append(f"- Different chips: {', '.join(chips)}; a difference mixes engine and hardware.")
    models = list(dict.fromkeys(i.model for i in runs))
    if len(models) > 1:
        lines.append(f"- Different models: {', '.join(code(m) for m in models)}; a difference mixes engine and model.")
    return lines


def _notes(doc: ComparisonDoc) -> list[str]:
    rows = [r for s in doc.scenarios for r in s.rows]
    lines = list(SLO_NOTES) + unmeasured_note(rows)
    if has_missing(rows):
        lines.append("- `-` marks a value the run did not record.")
    if len({i.chip for i in doc.runs}) > 1:
        lines.append("- The runs use different chips: the Backend column names engine @ chip.")
    if len({i.model for i in doc.runs}) > 1:
        lines.append("- The runs serve different models (see Summary).")
    if doc.configurations_differ:
        unexpected = [d.setting for d in doc.config_differences if not d.expected]
        lines.append(f"- The runs differ in more than {' and '.join(doc.compared)}: {', '.join(map(mdt, unexpected))}; "
                     "see Configuration differences.")
    recomputed = [i for i in doc.runs if i.slo_recomputed]
    if recomputed:
        parts = []
        for i in recomputed:
            was = slo_reference(i.recorded_slo) if i.recorded_slo else "none"
            parts.append(f"{code(i.label)} (recorded: {was})")
        lines.append("- SLO marks recomputed against the reference for " + ", ".join(parts) + ".")
    if doc.unmatched:
        lines.append(f"- {len({u.scenario for u in doc.unmatched})} scenario(s) exist in only some runs; "
                     "see Unmatched scenarios.")
    return lines


def _client_caveat(doc: ComparisonDoc) -> list[str]:
    """Beside the verdicts: the runs were measured by different load clients (implementation, module, seed
    or warmup policy), whose effect is mixed into every verdict."""
    found = [d for d in doc.config_differences if d.setting.startswith("client ")]
    if not found:
        return []
    def shown(value: object) -> str:
        return "unknown" if value is None else mdt(str(value))

    parts = [f"{d.setting} ({', '.join(f'{code(k)}: {shown(v)}' for k, v in d.values.items())})" for d in found]
    return ["⚠️ The runs were measured by different load clients: " + "; ".join(parts) + ". The clients time "
            "requests differently (a Rust load generator reports lower TTFT than the Python client on the same "
            "server), so every verdict below mixes the client with the engine.", ""]


def _verdicts(doc: ComparisonDoc) -> list[str]:
    s = doc.settings
    tests = [(sc, t) for sc in doc.scenarios for t in sc.tests]
    goodput = any(t.metric == "request_goodput" for _, t in tests)
    repeated, higher = ("output throughput and goodput", "throughput or goodput") if goodput else ("output throughput", "throughput")
    lines = [
        f"Baseline: {code(doc.baseline)}. Every other run is compared with it per matched scenario on the "
        "per-request TTFT, TPOT and E2E of successful requests (two-sided Mann–Whitney U; ratio = candidate "
        f"median / baseline median, bootstrap {s.confidence:.0%} CI over {s.bootstrap_resamples} resamples), "
        f"and on {repeated} when a shape was repeated at least twice per side (Welch's t-test; ratio of "
        f"means). p-values are Holm–Bonferroni adjusted over all {s.family_size} tests with a p-value. A change is "
        f"reported only when the adjusted p < {s.alpha:g} and the ratio differs from 1 by more than "
        f"{s.min_change * 100:g}%. Ratios below 1 mean lower latency, above 1 higher {higher}. See docs/COMPARE.md.",
        "",
    ]
    if not tests:
        return lines + ["No matched scenarios: nothing to test."]
    lines += _client_caveat(doc)
    counts: Counter[str] = Counter(t.verdict for _, t in tests)
    order = ("faster", "slower", "no significant difference", "insufficient samples", "not comparable")
    invalid = tuple(sorted(v for v in counts if v not in order))  # not comparable (invalid: …)
    lines += ["Verdicts: " + ", ".join(f"{counts[v]} {v}" for v in order + invalid) + f" ({len(tests)} tests).", ""]
    qualified = sum(1 for _, t in tests if t.qualified)
    if qualified:
        lines[-2] = lines[-2][:-2] + f"; {qualified} qualified ⚠, see Validity)."
    shown = [(sc, t) for sc, t in tests if not t.verdict.startswith("not comparable")]
    if shown:
        rows = [
            [sc.name, t.run, METRIC_LABELS[t.metric], f"{t.n_baseline}/{t.n_candidate}", num(t.baseline_value),
             num(t.candidate_value), num(t.ratio, 3), _ci(t), _p(t.p_value), _verdict(t.verdict)]
            + ([("⚠ " + ", ".join(t.qualified)) if t.qualified else ""] if qualified else [])
            for sc, t in shown
        ]
        headers = ["Scenario", "Run", "Metric", "n (base/run)", "Baseline", "This run", "Ratio",
                   f"{s.confidence:.0%} CI", "p (Holm)", "Verdict"] + (["Qualified"] if qualified else [])
        align = ["left", "left", "left", "right", "right", "right", "right", "right", "right", "left"]
        lines += github_table(headers, rows, align + (["left"] if qualified else [])) + [""]
    # Untested (or qualified) results, one line per run, verdict, reason and set of metrics.
    metrics_of: dict[tuple[str, str, str, str], list[str]] = {}
    for sc, t in tests:
        if t.verdict.startswith("not comparable") or t.verdict == "insufficient samples" or t.reason:
            metrics_of.setdefault((t.run, t.verdict, t.reason or "", sc.name), []).append(METRIC_SHORT[t.metric])
    grouped: dict[tuple[str, str, str, tuple[str, ...]], list[str]] = {}
    for (run, verdict, reason, name), metrics in metrics_of.items():
        grouped.setdefault((run, verdict, reason, tuple(metrics)), []).append(name)
    if grouped:
        lines.append("Untested or qualified results:")
        lines.append("")
        for (run, verdict, reason, metric_names), names in grouped.items():
            lines.append(f"- {code(run)}, {mdt(verdict)}: {mdt(reason)} — {', '.join(map(mdt, names))} ({', '.join(metric_names)})")
        lines.append("")
    return lines


def _unmatched(doc: ComparisonDoc) -> list[str]:
    rows: dict[str, dict[str, Any]] = {}
    for u in doc.unmatched:
        entry = rows.setdefault(u.scenario, {"u": u, "runs": []})
        entry["runs"].append(u.run)
    table = []
    for name, entry in rows.items():
        u = entry["u"]
        missing = ", ".join(f"{m} (skipped: {u.skipped[m]})" if m in u.skipped else m for m in u.missing_in)
        table.append([name, u.concurrency if u.concurrency is not None else "-", u.input_len, u.output_len, ", ".join(entry["runs"]), missing])
    return [
        "Scenarios whose (concurrency, input, output) is missing from some run: neither in the table above "
        "nor tested.",
        "",
    ] + github_table(["Scenario", "Conc", "Input", "Output", "In", "Missing in"], table,
                     ["left", "right", "right", "right", "left", "left"])


def _difference_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return code(value) if value.startswith("-") else value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, dict)):
        return code(json.dumps(value, ensure_ascii=False))
    return str(value)


def _config_differences(doc: ComparisonDoc) -> list[str]:
    compared = " and ".join(doc.compared)
    if not doc.config_differences:
        return [f"This comparison compares {compared}. Every other recorded setting is the same in every run.", ""]
    unexpected = [d for d in doc.config_differences if not d.expected]
    intro = f"This comparison compares {compared}. "
    if unexpected:
        intro += (f"{len(unexpected)} other setting(s) differ too (⚠️): their effect is mixed into every difference "
                  "above, so the table does not compare like for like.")
    else:
        intro += "Every difference below belongs to it (or is provenance only)."
    labels = [i.label for i in doc.runs]
    rows = [[d.setting] + [_difference_value(d.values.get(label)) for label in labels]
            + ["⚠️ no" if not d.expected else f"yes ({d.axis})"] for d in doc.config_differences]
    headers = ["Setting"] + [i.label + (" (baseline)" if i.baseline else "") for i in doc.runs] + ["Compared"]
    legend = ("`-`: not recorded (for `config.spec_method` and `config.spec_tokens`: not speculative). "
              "Flags: those not given identically to every run (`--port`, `--host` and the model flags left out).")
    return [intro, ""] + github_table(headers, rows) + ["", legend, ""]


def _runs_table(doc: ComparisonDoc) -> list[str]:
    rows = [
        [i.label + (" (baseline)" if i.baseline else ""), i.path, i.experiment, i.run_id, i.engine, i.chip or "-",
         i.hardware or "-", i.model, i.git_commit or "-"]
        for i in doc.runs
    ]
    return github_table(["Run", "Directory", "Experiment", "Run ID", "Engine", "Chip", "Hardware", "Model",
                         "Git commit"], rows)


def render_comparison(doc: ComparisonDoc) -> str:
    """comparison.md: the seed-002 layout (Summary, Side-by-side results, Notes) then verdicts, unmatched, plots, runs."""
    rows = [r for s in doc.scenarios for r in s.rows]
    lines = [f"# {mdt(doc.title)}", "", "## Summary", ""] + _summary(doc)
    lines += ["", "## Side-by-side results", ""] + results_table(rows)
    lines += ["", "## Notes", ""] + _notes(doc) + [""]
    lines += goodput_section(rows, doc.slo, with_backend=True)
    lines += ["## Statistical verdicts", ""] + _verdicts(doc)
    if lines[-1] != "":
        lines.append("")
    lines += validity_section(rows, with_backend=True, doc=doc)
    lines += ["## Configuration differences", ""] + _config_differences(doc)
    if doc.unmatched:
        lines += ["## Unmatched scenarios", ""] + _unmatched(doc) + [""]
    if doc.plots:
        lines += ["## Plots", ""] + plot_lines(doc.plots)
    lines += ["## Runs", ""] + _runs_table(doc)
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- report.md


def _server_commands(run: RunData) -> list[tuple[str, str]]:
    config = run.results.config.model_dump(exclude_none=True)
    out = []
    if config.get("server_args"):
        out.append(("", str(config["server_args"])))
    for key in sorted(k for k in config if k.startswith("phase") and k.endswith("_server_args")):
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
    marks = Counter(r.slo_status.overall for r in rows)
    failed = sum(1 for s in res.scenarios if s.failed)
    unknown = sum(1 for s in res.scenarios if s.failed is None)
    lines.append(
        f"- Scenarios: {len(rows)} measured ({marks[MET_BOTH]} {MET_BOTH}, {marks[MET_ONE]} {MET_ONE}, "
        f"{marks[MET_NONE]} {MET_NONE}" + (f", {marks[NOT_MEASURED]} {NOT_MEASURED}" if marks[NOT_MEASURED] else "")
        + f"), {len(res.skipped)} skipped, {failed} with failed requests"
        + (f", {unknown} with an unknown failure count" if unknown else "")
    )
    return lines


def _report_warnings(run: RunData) -> list[str]:
    res = run.results
    order = sorted(range(len(res.scenarios)), key=lambda i: res.scenarios[i].name)
    lines: list[str] = []
    recon = []
    for i in order:
        s = res.scenarios[i]
        by_how: dict[str, list[str]] = {}
        for path, how in sorted(s.reconstructed.items()):
            by_how.setdefault(how, []).append(path)
        for how, paths in sorted(by_how.items()):
            recon.append([s.name, how, ", ".join(paths)])
    if recon:
        lines += ["### Reconstructed values", "",
                  "Values the client did not write, and how they were computed (`reconstructed` in results.json):", ""]
        lines += github_table(["Scenario", "How", "Values"], recon) + [""]
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
    sources = [(s.name, s.source) for s in sorted(res.scenarios, key=lambda s: s.name) if s.source]
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
    """The Results table's rows of one run, by scenario name (report.md and report.html show the same)."""
    label = run_labels([run])[0]
    scenarios = sorted(run.results.scenarios, key=lambda s: s.name)
    return [table_row(run, label, s, scenario_status(s, spec, recompute), recompute) for s in scenarios]


def render_report(run: RunData, spec: SloSpec, recompute: bool, plot_files: Sequence[str] = (),
                  rows: Optional[list[Row]] = None) -> str:
    """report.md of one run: title, Summary, Results table, Notes, Warnings, Plots, Provenance
    (`rows`: report_rows of the same arguments, when the caller has them already)."""
    label = run_labels([run])[0]
    rows = report_rows(run, spec, recompute) if rows is None else rows
    lines = [_report_title(run, label), "", "## Summary", ""] + _report_summary(run, label, spec, recompute, rows)
    lines += ["", "## Results", ""]
    lines += report_table(rows) if rows else ["No measured scenarios."]
    notes = list(SLO_NOTES) + unmeasured_note(rows)
    if has_missing(rows):
        notes.append("- `-` marks a value the run did not record.")
    lines += ["", "## Notes", ""] + notes + [""]
    lines += goodput_section(rows, spec, with_backend=False)
    lines += validity_section(rows, with_backend=False)
    lines += ["## Warnings", ""]
    warnings = _report_warnings(run)
    lines += warnings or ["None: every value is the client's own, no scenario was skipped, no request failed.", ""]
    if plot_files:
        lines += ["## Plots", ""] + plot_lines(plot_files)
    lines += ["## Provenance", ""] + _report_provenance(run)
    return "\n".join(lines).rstrip("\n") + "\n"
