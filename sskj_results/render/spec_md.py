"""The Speculative decoding section of report.md and comparison.md. Pure: no I/O (docs/METRICS.md,
docs/VALIDITY.md).

report.md: the run's method and draft tokens, the settings that made its
acceptance synthetic, and per scenario its acceptance with source,
weighting, scope, reliability, the client's sampling temperature, the plausibility checks and the acceptance
rate of each draft position (a table, and a text figure of the rates that
report.html shows too). comparison.md: why ITL is not compared, and each
speculative run's TPOT speedup against the draft bound.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..analysis.configdiff import is_speculative
from ..analysis.grades import mark
from ..analysis.plausibility import PLAUSIBILITY_CHECKS, synthetic_settings
from ..analysis.rundata import RunData, in_reading_order
from ..contract.comparison_models import ComparisonDoc, DraftBound, ScenarioComparison
from ..contract.escape import md_code, md_fence, md_text
from ..contract.models import Scenario, ValidityThresholds
from .mdparts import UNRELIABLE_MARK as UNRELIABLE, reliable
from .mdtable import github_table

BAR_WIDTH = 40  # characters of a rate of 1.0 in the text figure
UNKNOWN = "unknown"


def _yes_no(value: Optional[bool]) -> str:
    return UNKNOWN if value is None else ("yes" if value else "no")


def _check_cell(scenario: Scenario, name: str) -> str:
    checks = scenario.validity.checks if scenario.validity is not None else []
    check = next((c for c in checks if c.name == name), None)
    if check is None or check.ok is None:
        return UNKNOWN
    value = "" if check.value is None else f" ({check.value:.2f})" if name == "acceptance_bound" else \
        f" ({check.value:.0%})"
    return ("✔" if check.ok else "✖" if name == "acceptance_bound" else "⚠") + value


def _acceptance_rows(scenarios: Sequence[Scenario], synthetic: bool,
                     thresholds: Optional[ValidityThresholds] = None) -> list[list[str]]:
    rows = []
    for s in scenarios:
        a = s.acceptance
        length = f"{a.length:.2f}" if a is not None else UNKNOWN
        if a is not None and synthetic:
            length += " (synthetic)"
        rows.append([
            s.name, length,
            a.source if a is not None else "-", a.weighting if a is not None else "-",
            a.scope if a is not None else "-",
            str(a.draft_length) if a is not None and a.draft_length else UNKNOWN,
            _yes_no(a.reliable) if a is not None else "-",
            f"{s.client.temperature:g}" if s.client is not None and s.client.temperature is not None else UNKNOWN,
            _check_cell(s, "acceptance_bound"), _check_cell(s, "repetitive_outputs"), mark(s.validity, thresholds),
        ])
    return rows


def per_position_table(scenarios: Sequence[Scenario], thresholds: Optional[ValidityThresholds] = None) -> list[str]:
    """Scenario x draft position: the acceptance rate of each position, where a source gave it, and the point's
    Valid mark (a rate of a disqualified point is no measurement of the drafter)."""
    with_rates = [s for s in scenarios if s.acceptance is not None and s.acceptance.per_position]
    if not with_rates:
        return []
    width = max(len(s.acceptance.per_position or []) for s in with_rates if s.acceptance is not None)
    rows = []
    for s in with_rates:
        assert s.acceptance is not None and s.acceptance.per_position is not None
        rates = [f"{r:.3f}" for r in s.acceptance.per_position]
        rows.append([s.name, *rates, *(["-"] * (width - len(rates))), mark(s.validity, thresholds)])
    return github_table(["Scenario", *(f"pos {k + 1}" for k in range(width)), "Valid"], rows,
                        ["left", *(["right"] * width), "left"])


def per_position_figure(scenarios: Sequence[Scenario]) -> list[str]:
    """A text figure of the per-position rates (one bar per position, BAR_WIDTH characters for 1.0)."""
    lines = []
    for s in scenarios:
        if s.acceptance is None or not s.acceptance.per_position:
            continue
        lines.append(s.name)
        for k, rate in enumerate(s.acceptance.per_position):
            bar = "#" * round(max(0.0, min(rate, 1.0)) * BAR_WIDTH)
            lines.append(f"  pos {k + 1:>2} | {bar:<{BAR_WIDTH}} {rate:.3f}")
    return md_fence("\n".join(lines), "text") if lines else []


def report_section(run: RunData) -> list[str]:
    """`## Speculative decoding` of report.md; [] when the run is not speculative and reports no acceptance."""
    scenarios = in_reading_order(run.results.scenarios)  # as the Results table
    if not is_speculative(run) and all(s.acceptance is None for s in scenarios):
        return []
    config = run.results.config
    synthetic = synthetic_settings(config)
    lines = ["## Speculative decoding", "",
             f"- Method: {md_code(config.spec_method) if config.spec_method else 'not recorded'}; draft tokens per "
             f"step: {config.spec_tokens if config.spec_tokens else 'not recorded'} (config.spec_tokens)."]
    if synthetic:
        lines.append(f"- ⚠ **Synthetic acceptance**: {', '.join(md_code(s) for s in synthetic)} in the server's command or environment: "
                     "acceptance was a setting, not measured; its speedups do not describe the drafter.")
    lines += ["- Acceptance length: 1 + accepted draft tokens / drafting steps (docs/METRICS.md); bounds and "
              "repetition checks: docs/VALIDITY.md.", ""]
    lines += github_table(
        ["Scenario", "Accept length", "Source", "Weighting", "Scope", "Draft tokens", "Reliable", "Temperature",
         *PLAUSIBILITY_CHECKS, "Valid"],
        _acceptance_rows(scenarios, bool(synthetic), run.results.validity_thresholds),
        ["left", "right", "left", "left", "left", "right", "left", "right", "left", "left", "left"]) + [""]
    notes = [s for s in scenarios if s.acceptance is not None and s.acceptance.note]
    for s in notes:
        assert s.acceptance is not None
        lines.append(f"- {md_text(s.name)}: {md_text(s.acceptance.note)}")
    if notes:
        lines.append("")
    table = per_position_table(scenarios, run.results.validity_thresholds)
    if table:
        lines += ["### Acceptance per draft position", "",
                  "The share of drafting steps whose draft token at that position was accepted (vLLM's "
                  "`spec_decode_per_position_acceptance_rates`).", ""]
        lines += table + [""] + per_position_figure(scenarios) + [""]
    return lines


def _tpot_refused(doc: ComparisonDoc) -> tuple[int, int]:
    """(refused, all): the comparison's TPOT tests, and those a validity check refused."""
    tests = [t for sc in doc.scenarios for t in sc.tests if t.metric == "tpot_ms"]
    return sum(t.verdict.startswith("not comparable (invalid:") for t in tests), len(tests)


def _unjudged(scenario: ScenarioComparison, bound: DraftBound) -> Optional[str]:
    """Why a pair's TPOT speedup says nothing: a side's point is disqualified or its TPOT unreliable; None when
    both sides' TPOT can be believed."""
    found = []
    for label in (bound.run, bound.plain):
        for row in scenario.rows:
            if row.run == label and not reliable(row, "tpot_ms"):
                why = "disqualified" if row.validity_grade == "disqualified" else "TPOT unreliable"
                found.append(f"{label} {why} ({', '.join(row.disqualifying or row.partial)})")
    return "; ".join(dict.fromkeys(found)) or None


def comparison_section(doc: ComparisonDoc) -> list[str]:
    """`## Speculative decoding` of comparison.md: the ITL caveat, the speculative runs held to no draft bound and
    the draft bounds; [] without any. A pair whose TPOT is unreliable on either side (or a disqualified point) is
    listed as not judged, never as within the bound."""
    bounds = [(s, b) for s in doc.scenarios for b in s.draft_bounds]
    if not bounds and doc.itl_not_comparable is None and not doc.draft_bound_unpaired:
        return []
    lines = ["## Speculative decoding", ""]
    if doc.itl_not_comparable:
        refused, total = _tpot_refused(doc)
        if total and refused == total:
            lines += [f"- {md_text(doc.itl_not_comparable)} But every TPOT verdict ({total}) was refused too (a "
                      "disqualified point or an unreliable TPOT, section Validity): no verdict on decoding speed "
                      "stands.", ""]
        else:
            extra = f" ({refused} of {total} TPOT verdicts refused: section Validity)" if refused else ""
            lines += [f"- {md_text(doc.itl_not_comparable)}{extra}", ""]
    if doc.draft_bound_unpaired:
        lines += [f"- Unpaired: {md_text(text)}" for text in doc.draft_bound_unpaired] + [""]
    if bounds:
        why = {id(b): _unjudged(s, b) for s, b in bounds}
        judged = [(s, b) for s, b in bounds if why[id(b)] is None]
        beyond = [(s, b) for s, b in judged if not b.ok]
        unjudged = len(bounds) - len(judged)
        lines += [f"TPOT speedup of each speculative run over a plain run of its engine family, against the draft "
                  f"bound 1 + k (docs/VALIDITY.md): {len(beyond)} of {len(judged)} beyond it"
                  + (f"; {unjudged} not judged: their TPOT is unreliable or their point disqualified (✖ below)"
                     if unjudged else "") + ".", ""]

        def within(b: DraftBound) -> str:
            if why[id(b)] is not None:
                return "✖ not judged: " + why[id(b)]  # type: ignore[operator]
            return "yes" if b.ok else "**no: beyond**"

        lines += github_table(["Scenario", "Speculative", "Plain", "TPOT speedup", "Bound", "Within"],
                              [[s.name, b.run, b.plain, f"{b.speedup:.2f}x" + (f" {UNRELIABLE}" if why[id(b)] else ""),
                                f"{b.bound:g}x", within(b)] for s, b in bounds],
                              ["left", "left", "left", "right", "right", "left"]) + [""]
        for s, b in beyond:
            lines.append(f"- {md_text(s.name)}, {md_text(b.run)}: {md_text(b.message)}")
        if beyond:
            lines.append("")
    return lines


def beyond_marks(doc: ComparisonDoc) -> dict[tuple[str, str], str]:
    """(scenario, run label) -> its Draft bound cell in the side-by-side table, for each speculative row beyond the
    draft bound against some plain run (the largest speedup named); a pair not judged (an unreliable TPOT or a
    disqualified point on either side: `_unjudged`) marks nothing."""
    marks: dict[tuple[str, str], tuple[float, str]] = {}
    for s in doc.scenarios:
        for b in s.draft_bounds:
            key = (s.name, b.run)
            if not b.ok and _unjudged(s, b) is None and b.speedup > marks.get(key, (0.0, ""))[0]:
                marks[key] = (b.speedup, f"⚠ TPOT {b.speedup:.2f}x {b.plain} > 1 + {b.draft_tokens}")
    return {key: text for key, (_, text) in marks.items()}


BEYOND_NOTE = ("- Draft bound: `⚠ TPOT Sx PLAIN > 1 + k`: the speculative run's TPOT mean is S times faster than the "
               "plain run PLAIN of its engine family, beyond the draft bound 1 + k (k draft tokens per step), which "
               "speculative decoding alone cannot give (Speculative decoding; docs/VALIDITY.md); `-`: within it, or "
               "not held to it.")
