"""The Validity section of report.md and comparison.md (docs/VALIDITY.md). Pure: no I/O.

Every point's mark (✔, ⚠ qualified, ✖ disqualified, blank unknown), the failed
checks with their messages, and per failed check how to change it: the option
or config.env key that moves its threshold, and what a better measurement
would need. When nothing could be judged, one paragraph says why.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from ..analysis.grades import REAL_TEXT_PREFIX, RULES, better_measurement, how_to_move, mark_of, passing_limit, short_names, unreliable_of
from ..analysis.validity import CHECK_ORDER
from ..contract.comparison_models import ComparisonDoc, Row, ScenarioComparison, StatTest
from ..contract.models import ValidityCheck
from ..contract.escape import md_text
from .mdtable import github_table


def validity_mark(row: Row) -> str:
    """The Valid cell: `✔`, `⚠ <qualifying breaches>`, `✖ <disqualifying breaches>`, or blank when unknown
    (docs/VALIDITY.md)."""
    return mark_of(row.validity_grade, row.qualifying, row.disqualifying, row.partial)


VALIDITY_LEGEND = ("Whether each point measured the engine (docs/VALIDITY.md): ✔ every check passed; ⚠ qualified: "
                   "the workload's shape was breached (too few prompts per slot, a low achieved concurrency, a small "
                   "failure share), the numbers describe what was measured; ◐ some metrics unreliable: a check with a "
                   "scope failed (bursty streaming: TPOT and ITL timed chunks, not tokens, and what is derived from "
                   "them), those metrics are marked ⊘ and their verdicts refused, the others stand; ✖ disqualified: "
                   "the measurement is broken (client bottleneck, outputs cut short, token mismatch, empty successes, "
                   "many failures), no verdict; blank unknown (a check's inputs were not recorded).")


def _all_unknown(rows: Sequence[Row]) -> list[str]:
    """Said once when no judged point has a known grade: why validity is unknown, per check."""
    reasons: dict[tuple[str, str], int] = {}
    for r in rows:
        for c in r.validity.checks if r.validity is not None else []:
            if c.ok is None:
                reasons[(c.name, c.message)] = reasons.get((c.name, c.message), 0) + 1
    judged = sum(r.validity is not None for r in rows)
    lines = [f"Validity is unknown for every point ({judged} judged): the checks' inputs were not recorded, so no "
             "point is marked and no verdict is refused or qualified. Why, per check:", ""]
    for (name, message), count in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"- {name}: {message} ({count} point(s))")
    lines += ["", "Per-request data (the client's `--output-details` / `--save-detailed`) and a run through the "
              "shell's run loop (server_metrics/, client_stats/) make the checks known.", ""]
    return lines


def _refused_by(name: str, scenario: ScenarioComparison, test: StatTest, strict: bool) -> bool:
    """The check refused the test: a point disqualified by it, the one-sided prompts_per_slot rule, or --strict."""
    if not test.verdict.startswith("not comparable (invalid:"):
        return False
    listed = test.verdict[len("not comparable (invalid: "):-1].split(", ")
    return name in listed and (strict or listed == [name] or any(name in r.disqualifying for r in scenario.rows))


def _how_to_change(rows: Sequence[Row], doc: Optional[ComparisonDoc]) -> list[str]:
    """Per failed check: its grade, the points, how the test verdicts took it, the option or config.env key that
    moves its threshold, and what a better measurement would need."""
    by_check: dict[str, list[tuple[Row, ValidityCheck]]] = {}
    for r in rows:
        for c in r.validity.checks if r.validity is not None else []:
            if c.ok is False:
                by_check.setdefault(c.name, []).append((r, c))
    if not by_check:
        return []
    strict = doc is not None and doc.settings.strict
    lines = ["### How to change it", ""]
    for name in CHECK_ORDER:
        if name not in by_check:
            continue
        found = by_check[name]
        qualified = [r for r, _ in found if name in r.qualifying]
        partial = [r for r, _ in found if name in r.partial]
        points = [(c, row.concurrency) for row, c in found]
        grade_words = []
        if qualified:
            grade_words.append(f"{len(qualified)} qualified ⚠")
        if partial:
            grade_words.append(f"{len(partial)} with {short_names(unreliable_of([name]))} unreliable ◐")
        if len(found) > len(qualified) + len(partial):
            grade_words.append(f"{len(found) - len(qualified) - len(partial)} disqualified ✖")
        tests = [(sc, t) for sc in doc.scenarios for t in sc.tests] if doc is not None else []
        refused = sum(1 for sc, t in tests if _refused_by(name, sc, t, strict))
        kept = sum(1 for _, t in tests if name in t.qualified)
        verdicts = f"; tests: {refused} refused, {kept} qualified" if tests else ""
        field = RULES[name].field
        limit = passing_limit(name, points)
        move = f"{how_to_move(field, limit)} makes them pass" if limit is not None and field else \
            f"the threshold is `{field}`" if field else "no threshold moves it"
        if name == "completeness" and len(found) > len(qualified) + len(partial):
            shares = [c.value for _, c in found if c.value is not None]
            if shares:
                move += (f"; {how_to_move('max_qualified_failed_share', math.ceil(max(shares) * 1e4) / 1e4)} "
                         "qualifies them instead")
        real_text = all((row.prompt_source or "").startswith(REAL_TEXT_PREFIX) for row, _ in found)
        lines.append(f"- **{name}** ({', '.join(grade_words)}{verdicts}): {move}; a better measurement: "
                     f"{better_measurement(name, points, real_text)}.")
    if strict:
        lines.append("- This comparison ran with `--strict`: qualified points were refused too; without it their "
                     "verdicts stand, with the qualification beside them.")
    elif doc is not None:
        lines.append("- `sskj-results compare --strict` refuses qualified points too (for CI gates).")
    return lines + [""]


def validity_section(rows: Sequence[Row], with_backend: bool, doc: Optional[ComparisonDoc] = None) -> list[str]:
    """`## Validity`: every row's mark, each failed point's checks, how to change them; said once when every point
    is unknown; nothing when no row was judged."""
    if all(r.validity is None for r in rows):
        return []
    lines = ["## Validity", ""]
    if all(r.validity_grade is None for r in rows):
        return lines + _all_unknown(rows)
    lines += [VALIDITY_LEGEND, ""]
    if with_backend:
        lines += github_table(["Scenario", "Backend", "Valid"], [[r.scenario, r.run, validity_mark(r)] for r in rows],
                              ["left", "left", "left"]) + [""]
    invalid = [r for r in rows if r.validity is not None and r.validity.ok is False]
    if invalid:
        partial = sum(r.validity_grade == "partial" for r in invalid)
        lines += [f"Points with a failed check ({len(invalid)}: "
                  f"{sum(r.validity_grade == 'qualified' for r in invalid)} qualified, "
                  + (f"{partial} with unreliable metrics, " if partial else "")
                  + f"{sum(r.validity_grade == 'disqualified' for r in invalid)} disqualified):", ""]
        for r in invalid:
            assert r.validity is not None
            who = md_text(f"{r.scenario} ({r.run})" if with_backend else r.scenario)
            for check in r.validity.checks:
                if check.ok is False:
                    sign = "⚠" if check.name in r.qualifying else "◐" if check.name in r.partial else "✖"
                    lines.append(f"- {who}, {check.name}: {sign} {md_text(check.message)}")
        lines.append("")
        lines += _how_to_change(rows, doc)
    else:
        lines += ["No invalid point.", ""]
    return lines
