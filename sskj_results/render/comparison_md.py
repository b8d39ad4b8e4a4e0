"""comparison.md's own sections: Summary, Notes, Statistical verdicts, Configuration differences, Unmatched
scenarios, Runs (the list that orders them is render/report.py's SECTIONS). Pure: no I/O."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Optional

from ..contract.comparison_models import ComparisonDoc, StatTest
from ..contract.metrics import METRICS, PER_REQUEST_COMPARED, and_words, metric
from .mdparts import METRIC_LABELS, acceptance_notes, METRIC_SHORT, SLO_NOTES, code, has_missing, mdt, num, slo_reference, unmeasured_note, unreliable_note
from . import spec_md
from ..analysis.pooled import MODERATED_MEANS
from .mdtable import github_table


def _p(p: Optional[float]) -> str:
    if p is None:
        return "-"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _ci(test: StatTest) -> str:
    if test.ci_low is None or test.ci_high is None:
        return "-"
    return f"[{test.ci_low:.3f}, {test.ci_high:.3f}]"


def _metric_label(t: StatTest) -> str:
    """The Metric column: the row's label, whose `median` is the statistic of a test within one run; a test across
    repeats of a per-request metric compares each repeat's trimmed geometric mean (docs/COMPARE.md), and says so."""
    label = METRIC_LABELS[t.metric]
    if t.test == MODERATED_MEANS:
        row = metric(t.metric)
        return f"{row.short} trimmed geo. mean ({row.unit})"
    return label


def _n(test: StatTest) -> str:
    """Samples per side: requests, or repeats for a test across repeats."""
    unit = " repeats" if test.test != "mann-whitney-u" else ""
    return f"{test.n_baseline}/{test.n_candidate}{unit}"


def _verdict(test: StatTest) -> str:
    """The verdict; beside "no significant difference" the change the test could have detected (MDC)."""
    v = test.verdict
    if v in ("faster", "slower"):
        return f"**{v}**"
    if v == "no significant difference" and test.mdc is not None:
        return f"{v} (MDC {test.mdc * 100:.1f}%)"
    return v


# --------------------------------------------------------------------------- comparison.md


def summary(doc: ComparisonDoc) -> list[str]:
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


def notes(doc: ComparisonDoc) -> list[str]:
    rows = [r for s in doc.scenarios for r in s.rows]
    lines = list(SLO_NOTES) + unmeasured_note(rows) + unreliable_note(rows) + acceptance_notes(rows)
    if spec_md.beyond_marks(doc):
        lines.append(spec_md.BEYOND_NOTE)
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


def verdicts(doc: ComparisonDoc) -> list[str]:
    s = doc.settings
    tests = [(sc, t) for sc in doc.scenarios for t in sc.tests]
    goodput = any(t.metric == "request_goodput" for _, t in tests)
    tested = {t.metric for _, t in tests}
    energy = "joules_per_output_token" in tested
    # the output throughput always (per accelerator across accelerator counts), every other per-repeat row tested
    throughput = metric("output_throughput_per_accel" if doc.throughput_basis else "output_token_throughput")
    others = [m.words for m in METRICS if m.compared == "per-repeat" and m.name in tested and m is not throughput
              and m.name != throughput.per_accel_of]
    repeated = and_words([throughput.words] + others)
    higher = "throughput or goodput" if goodput else "throughput"
    if energy:
        higher += "; for the energy per output token (lower is better) a ratio below 1 is less energy"
    # the client's per-request metrics always (what a comparison is about), those sskj computes when tested
    per_request = [m for m in map(metric, PER_REQUEST_COMPARED) if m.origin == "client" or m.name in tested]
    rates = [m.words for m in per_request if m.higher_is_better]
    if rates:
        higher += f"; for the {' or '.join(rates)} (higher is better) a ratio above 1 is faster"
    per_request_words = and_words([m.words for m in per_request])
    if s.run_to_run == "tested":
        how = (f"on the per-request {per_request_words} of successful requests and on {repeated}, with the repeat as "
               f"the unit: each repeat's trimmed geometric mean of a per-request metric (the mean of the logs "
               f"of its requests' values, 20% cut from each end), and each repeat's {repeated}, is one "
               "sample; a t-test across the repeats on the log scale whose run-to-run variance is pooled over the "
               "comparison's scenarios (empirical Bayes, never below the spread of the repeats' own requests); ratio "
               f"= candidate / baseline of the geometric mean over repeats, with its {s.confidence:.0%} CI. The "
               "verdicts test the difference against run-to-run variation")
    else:
        how = (f"on the per-request {per_request_words} of successful requests (two-sided Mann–Whitney U; ratio = "
               f"candidate median / baseline median, bootstrap {s.confidence:.0%} CI over {s.bootstrap_resamples} "
               f"resamples), and on {repeated} when a shape was repeated at least twice per side (a t-test across "
               "repeats; ratio of geometric means"
               f"{'; across accelerator counts on one run too, then insufficient samples' if doc.throughput_basis else ''})")
        if s.run_to_run == "partly":
            how += ("; a shape repeated on some side is tested with the repeat as the unit (one trimmed geometric "
                    "mean per repeat, a t-test across repeats with the pooled run-to-run variance)")
    once = " (a prefill rate's test with its TTFT's p-value is the same numbers inverted: counted once)" * (
        "prefill_tok_s" in tested)
    lines = [
        f"Baseline: {code(doc.baseline)}. Every other run is compared with it per matched scenario {how}. "
        f"p-values are Holm–Bonferroni adjusted over all {s.family_size} hypotheses with a p-value{once}. "
        f"A change is reported only when the adjusted p < {s.alpha:g} and the ratio differs from 1 by more than "
        f"{s.min_change * 100:g}%. Ratios below 1 mean lower latency, above 1 higher {higher}. MDC (minimum "
        "detectable change): beside a \"no significant difference\", the smallest change that test would have found "
        f"with 80% power at the noise it saw (Holm's threshold for a lone change, beyond {s.min_change * 100:g}%): a "
        "smaller change may be there unseen. See docs/COMPARE.md.",
        "",
    ]
    if tests and s.run_to_run != "tested":
        which = "No scenario was" if s.run_to_run == "ignored" else "Not every scenario was"
        lines += [f"⚠️ {which} repeated: a per-request test treats the requests of one run as independent samples, "
                  "so its verdict ignores run-to-run variation (a rerun can flip it). Set REPEATS=N (at least 2 per "
                  "side, 3 is better) to test against it.", ""]
    if not tests:
        return lines + ["No matched scenarios: nothing to test."]
    lines += _client_caveat(doc)
    counts: Counter[str] = Counter(t.verdict for _, t in tests)
    order = ("faster", "slower", "no significant difference", "insufficient samples", "not comparable")
    invalid = tuple(sorted(v for v in counts if v not in order))  # not comparable (invalid: …)
    lines += ["Verdicts: " + ", ".join(f"{counts[v]} {v}" for v in order + invalid if counts[v])
              + f" ({len(tests)} tests).", ""]
    qualified = sum(1 for _, t in tests if t.qualified)
    if qualified:
        lines[-2] = lines[-2][:-2] + f"; {qualified} qualified ⚠, see Validity)."
    shown = [(sc, t) for sc, t in tests if not t.verdict.startswith("not comparable")]
    if shown:
        rows = [
            [sc.name, t.run, _metric_label(t), _n(t), num(t.baseline_value),
             num(t.candidate_value), num(t.ratio, 3), _ci(t), _p(t.p_value), _verdict(t)]
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


def unmatched(doc: ComparisonDoc) -> list[str]:
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


def config_differences(doc: ComparisonDoc) -> list[str]:
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


def runs_table(doc: ComparisonDoc) -> list[str]:
    rows = [
        [i.label + (" (baseline)" if i.baseline else ""), i.path, i.experiment, i.run_id, i.engine, i.chip or "-",
         i.hardware or "-", i.model, i.git_commit or "-"]
        for i in doc.runs
    ]
    return github_table(["Run", "Directory", "Experiment", "Run ID", "Engine", "Chip", "Hardware", "Model",
                         "Git commit"], rows)
