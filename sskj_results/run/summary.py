"""The end of a run, in a few lines (`sskj-results run-summary`; BENCHMARK_WORKFLOW.md, "The end of a run").

Points measured per phase, the points skipped after a server failure, the
points with a failed validity check (✖ disqualified, ◐ some metrics
unreliable, ⚠ qualified) with the checks, the unknown ones, and the files to
look at. With `strict` (`STRICT=1`), a disqualified or partly unreliable point
makes the run fail.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..analysis.grades import DISQUALIFIED_MARK, QUALIFIED_MARK, breaches, grade_of, mark_of, partial_breaches
from ..contract.io import load_run

MAX_LISTED = 12


@dataclass
class Summary:
    """The lines to print and the number of disqualified or partly unreliable points (what STRICT=1 fails on)."""

    lines: list[str] = field(default_factory=list)
    disqualified: int = 0


def summarize(run_dirs: Sequence[Path], comparison: Path | None = None) -> Summary:
    """The end-of-run summary of the phases' run directories (results.json each) and the run's comparison."""
    out = Summary()
    counts: Counter[str] = Counter()
    checks: dict[str, Counter[str]] = {"qualified": Counter(), "partial": Counter(), "disqualified": Counter()}
    listed: list[str] = []
    phases, skipped, flagged = [], 0, []
    for run_dir in run_dirs:
        results = load_run(run_dir)
        phases.append(f"{run_dir.name} {len(results.scenarios)}")
        skipped += len(results.skipped)
        for sc in results.scenarios:
            qualifying, disqualifying = breaches(sc.validity, results.validity_thresholds)
            partial = partial_breaches(sc.validity)
            g = grade_of(sc.validity, qualifying, disqualifying, partial) or "unknown"
            counts[g] += 1
            if g in ("qualified", "partial", "disqualified") and run_dir not in flagged:
                flagged.append(run_dir)
            if g == "partial":
                checks[g].update(partial)
                listed.append(f"  {run_dir.name} {sc.name}: {mark_of(g, qualifying, disqualifying, partial)}")
            elif g == "disqualified":
                checks[g].update(disqualifying)
                listed.append(f"  {DISQUALIFIED_MARK} {run_dir.name} {sc.name}: {', '.join(disqualifying)}"
                              + (f" ({QUALIFIED_MARK} {', '.join(qualifying)})" if qualifying else ""))
            elif g == "qualified":
                checks[g].update(qualifying)
                listed.append(f"  {QUALIFIED_MARK} {run_dir.name} {sc.name}: {', '.join(qualifying)}")
    total = sum(counts.values())
    out.disqualified = counts["disqualified"] + counts["partial"]
    skip = f"; {skipped} skipped after a server failure" if skipped else ""
    out.lines.append(f"summary: {total} point(s) measured ({', '.join(phases)}){skip}")

    def per_check(grade: str) -> str:
        found = checks[grade]
        return f" ({', '.join(f'{name} {n}' for name, n in sorted(found.items()))})" if found else ""

    out.lines.append(f"  valid {counts['valid']}, qualified {counts['qualified']}{per_check('qualified')}, "
                     + (f"partly unreliable {counts['partial']}{per_check('partial')} (their other metrics stand), "
                        if counts["partial"] else "")
                     + f"disqualified {counts['disqualified']}{per_check('disqualified')}, unknown {counts['unknown']}")
    out.lines += listed[:MAX_LISTED]
    if len(listed) > MAX_LISTED:
        out.lines.append(f"  ... and {len(listed) - MAX_LISTED} more")
    look = [str(d / "report.md") for d in flagged]
    if look and comparison is not None and comparison.is_file():
        look.insert(0, str(comparison))
    if look:
        out.lines.append(f"  look at: {', '.join(look)} (Validity: each failed check, its message, how to change it)")
    if counts["unknown"]:
        out.lines.append(f"  {counts['unknown']} point(s) of unknown validity: a check's input was not recorded "
                         "(report.md, Validity)")
    return out


def loop_dirs(given: Sequence[str]) -> list[Path]:
    """The run directories the run loop's summary covers: those holding results.json, each once, in order (a
    phase that failed before it wrote one, or an empty word, is left out)."""
    kept: list[str] = []
    for name in given:
        if name and os.path.isfile(os.path.join(name, "results.json")) and name not in kept:
            kept.append(name)
    return [Path(name) for name in kept]
