"""SLO search: the largest concurrency of a shape that meets the SLO (doubling, then bisection).

Pure decisions over what results.json already holds, so a search resumes
wherever it was interrupted: each call says which concurrency to measure next.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..contract.errors import UsageError
from ..contract.io import load_run, results_path, save_run
from ..contract.models import Results, Scenario, SloSearch, SloSearchStep, SloSpec
from .grades import believed, doubtful_metrics
from .slo import MET_BOTH, NOT_MEASURED, slo_status
from .validity import remeasure_prompts


@dataclass(frozen=True)
class Decision:
    next_concurrency: Optional[int]
    search: SloSearch
    # set when next_concurrency was measured already but its point is invalid: measure it again with this many prompts
    num_prompts: Optional[int] = None


def remeasures(results: Results, input_len: int, output_len: int) -> dict[int, int]:
    """Concurrencies of the shape whose only point is invalid, with the prompts to measure them again.

    An invalid point (docs/VALIDITY.md) is not a verdict on the engine: the
    search measures it once more with more prompts (validity.remeasure_prompts),
    then records the latest point whatever it says.
    """
    by_c: dict[int, list[Scenario]] = {}
    for s in results.scenarios:
        if s.input_len == input_len and s.output_len == output_len and s.concurrency is not None:
            by_c.setdefault(s.concurrency, []).append(s)
    out = {}
    for c, points in by_c.items():
        prompts = remeasure_prompts(points, results.validity_thresholds)
        if prompts is not None:
            out[c] = prompts
    return out


def _probes(results: Results, input_len: int, output_len: int,
            spec: Optional[SloSpec] = None) -> dict[int, SloSearchStep]:
    """What is known per concurrency: the latest scenario, or a skipped entry (a failure).

    A scenario passes when it meets the SLO: its recorded slo_status, or, when
    spec is given, its TTFT P95 and TPOT mean judged against spec. Its verdict
    is unknown (ok None) when not measured, or when a failed validity check
    says not to believe its TTFT or TPOT (grades.doubtful_metrics).
    """
    known: dict[int, SloSearchStep] = {}
    for skipped in results.skipped:
        if skipped.input_len == input_len and skipped.output_len == output_len and skipped.concurrency:
            known[skipped.concurrency] = SloSearchStep(concurrency=skipped.concurrency, scenario=None, overall=None, ok=False)
    for s in results.scenarios:
        if s.input_len == input_len and s.output_len == output_len and s.concurrency is not None:
            status = s.slo_status if spec is None else slo_status(s.latencies.ttft_ms.p95, s.latencies.tpot_ms.mean, spec)
            # the mark is not believed where a failed check refuses TTFT or TPOT (a disqualified point, or bursty
            # streaming's TPOT: docs/VALIDITY.md): unknown, as a ❔ one
            unknown = status.overall == NOT_MEASURED or not believed(
                doubtful_metrics(s.validity, results.validity_thresholds), "ttft_ms", "tpot_ms")
            known[s.concurrency] = SloSearchStep(
                concurrency=s.concurrency, scenario=s.name, overall=status.overall,
                ok=None if unknown else status.overall == MET_BOTH,
                valid=s.validity.ok if s.validity is not None else None,
            )
    return known


def decide(results: Results, input_len: int, output_len: int, lo_bound: int, hi_bound: int,
           resolution: float = 0.1, remeasure: bool = False, spec: Optional[SloSpec] = None) -> Decision:
    """The next concurrency to measure, or None when the search has converged (spec: see _probes).

    With remeasure, a probe whose only point is invalid is proposed again with
    more prompts (Decision.num_prompts) before the search reads its verdict.
    """
    if lo_bound < 1 or hi_bound < lo_bound:
        raise UsageError(f"need 1 <= --min-concurrency <= --max-concurrency, got {lo_bound} and {hi_bound}")
    known = _probes(results, input_len, output_len, spec)
    steps = [known[c] for c in sorted(known) if lo_bound <= c <= hi_bound]

    again = remeasures(results, input_len, output_len) if remeasure else {}

    def result(nxt: Optional[int], best: Optional[int], finished: Optional[bool] = None) -> Decision:
        search = SloSearch(input_len=input_len, output_len=output_len, min_concurrency=lo_bound,
                           max_concurrency=hi_bound, steps=steps, best_concurrency=best,
                           finished=nxt is None if finished is None else finished)
        return Decision(nxt, search, again.get(nxt) if nxt is not None else None)

    # a ❔ probe (TTFT P95 or TPOT mean not measured) is unknown: the search cannot go past it,
    # and stops unfinished with the best concurrency known to pass so far
    c = lo_bound
    if c not in known or c in again:
        return result(c, None)
    if known[c].ok is None:
        return result(None, None, finished=False)
    if not known[c].ok:
        return result(None, None)
    # doubling from the lower bound
    while known[c].ok:
        if c >= hi_bound:
            return result(None, c)
        nxt = min(c * 2, hi_bound)
        if nxt not in known or nxt in again:
            return result(nxt, c)
        if known[nxt].ok is None:
            return result(None, c, finished=False)
        c = nxt
    # bisection between the largest passing and the smallest failing concurrency
    lo = max(x for x, step in known.items() if step.ok and lo_bound <= x < c)
    hi = min(x for x, step in known.items() if step.ok is False and lo < x <= c)
    while hi - lo > max(1, math.ceil(lo * resolution)):
        mid = (lo + hi) // 2
        if mid not in known or mid in again:
            return result(mid, lo)
        if known[mid].ok is None:
            return result(None, lo, finished=False)
        if known[mid].ok:
            lo = mid
        else:
            hi = mid
    return result(None, lo)


def next_concurrency(run_dir: Path, input_len: int, output_len: int, lo_bound: int, hi_bound: int,
                     resolution: float = 0.1, remeasure: bool = False, spec: Optional[SloSpec] = None) -> Decision:
    """Decide, record the search in results.json (atomically), and return the decision."""
    results = load_run(run_dir)
    decision = decide(results, input_len, output_len, lo_bound, hi_bound, resolution, remeasure, spec)
    others = [s for s in results.slo_search if (s.input_len, s.output_len) != (input_len, output_len)]
    updated = results.model_copy(update={"slo_search": [*others, decision.search]})
    save_run(updated, results_path(run_dir))
    return decision
