"""What a comparison says about speculative decoding. Pure: no I/O (docs/VALIDITY.md, docs/COMPARE.md).

* The draft bound: at each shape, each speculative run's TPOT speedup over
  each plain run of the same engine family (vLLM-DSpark against vLLM, SGLang
  EAGLE against SGLang) must stay within 1 + draft tokens
  (`plausibility.tpot_bound`). Runs of other families are not held to it:
  their TPOT differs for reasons beyond speculation. A speculative run held
  to no bound (family unknown, no plain run of its family, draft tokens
  unknown) is said to be unpaired (`unpaired`), never silently skipped.
* ITL: a speculative step delivers several tokens in one streamed chunk, so
  ITL counts chunks, not tokens; between runs whose speculative settings
  differ it is not comparable (TPOT is).
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..catalog.engines import recorded_engine
from ..contract.comparison_models import DraftBound, StatTest
from ..contract.errors import SskjError
from .configdiff import is_speculative
from .plausibility import draft_tokens_of, tpot_bound
from .rundata import RunData


def family(run: RunData) -> Optional[str]:
    """The engine a run's engine is a build of (catalog/engines.py `lineage`: vLLM for vLLM-DSpark; the run's engine
    name as recorded, an alias such as `dspark` too), None for an unknown engine."""
    try:
        return recorded_engine(run.engine).lineage
    except SskjError:
        return None


def run_draft_tokens(run: RunData, members: Sequence[int]) -> Optional[int]:
    """Draft tokens per step of a run at one shape: its scenarios' acceptance draft length, else the config's."""
    for j in members:
        acceptance = run.results.scenarios[j].acceptance
        if acceptance is not None and acceptance.draft_length:
            return acceptance.draft_length
    return draft_tokens_of(run.engine, run.results.config.spec_tokens)


def tpot_mean(run: RunData, members: Sequence[int]) -> Optional[float]:
    """The TPOT mean of a run at one shape: the mean of its repeats' means (None when none was recorded)."""
    values = [v for j in members if (v := run.results.scenarios[j].latencies.tpot_ms.mean) is not None]
    return sum(values) / len(values) if values else None


def draft_bounds(runs: Sequence[RunData], labels: Sequence[str],
                 members: Sequence[Sequence[int]]) -> list[DraftBound]:
    """Every (speculative, plain) pair of one engine family at one shape whose TPOTs and draft tokens are known."""
    speculative = [is_speculative(r) for r in runs]
    families = [family(r) for r in runs]
    out = []
    for si, spec_run in enumerate(runs):
        if not speculative[si] or families[si] is None:
            continue
        draft = run_draft_tokens(spec_run, members[si])
        spec_tpot = tpot_mean(spec_run, members[si])
        for pi, plain_run in enumerate(runs):
            if speculative[pi] or families[pi] != families[si]:
                continue
            bound = tpot_bound(spec_tpot, tpot_mean(plain_run, members[pi]), draft, labels[pi])
            if bound is not None:
                out.append(DraftBound(run=labels[si], plain=labels[pi], speedup=bound.speedup, bound=bound.bound,
                                      draft_tokens=bound.draft_tokens, ok=bound.ok, message=bound.message))
    return out


def unpaired(runs: Sequence[RunData], labels: Sequence[str]) -> list[str]:
    """Why each speculative run is held to no draft bound at all: its engine has no row (family unknown), no plain
    run of its family is among the runs, or its draft tokens per step are unknown; [] when every one is paired."""
    speculative = [is_speculative(r) for r in runs]
    families = [family(r) for r in runs]
    out = []
    for si, run in enumerate(runs):
        if not speculative[si]:
            continue
        if families[si] is None:
            out.append(f"{labels[si]}: decodes speculatively, but its engine {run.engine!r} is no engine row's name "
                       "or alias (catalog/engines.py), so its engine family is unknown and no plain run is paired "
                       "with it: its TPOT speedup is held to no draft bound (record its engine by a row's name or "
                       "alias: `metadata RUN_DIR --meta engine=vllm-dspark`, or `import-legacy --engine`)")
        elif not any(not speculative[pi] and families[pi] == families[si] for pi in range(len(runs))):
            out.append(f"{labels[si]}: decodes speculatively, but no plain run of its engine family "
                       f"({families[si]}) is compared: its TPOT speedup is held to no draft bound")
        elif run_draft_tokens(run, range(len(run.results.scenarios))) is None:
            out.append(f"{labels[si]}: decodes speculatively with an unknown number of draft tokens per step "
                       "(config spec_tokens): its draft bound 1 + k is unknown")
    return out


def with_bound_caveats(tests: list[StatTest], bounds: Sequence[DraftBound], baseline: str) -> list[StatTest]:
    """The TPOT tests of a pair beyond the draft bound, with the bound as their caveat (`reason`): the verdict
    stands for what was measured, which speculative decoding alone cannot explain."""
    beyond = {frozenset((b.run, b.plain)): b for b in bounds if not b.ok}
    out = []
    for t in tests:
        bound = beyond.get(frozenset((t.run, baseline))) if t.metric == "tpot_ms" else None
        if bound is not None:
            caveat = f"beyond the draft bound: {bound.speedup:.2f}x > {bound.bound:g}x (docs/VALIDITY.md)"
            t = t.model_copy(update={"reason": f"{t.reason}; {caveat}" if t.reason else caveat})
        out.append(t)
    return out


def _setting(run: RunData) -> str:
    config = run.results.config
    if not is_speculative(run):
        return "plain decoding"
    tokens = f", {config.spec_tokens} speculative tokens" if config.spec_tokens else ""
    return f"{config.spec_method or 'speculative'}{tokens}"


def itl_note(runs: Sequence[RunData], labels: Sequence[str]) -> Optional[str]:
    """Why ITL is not comparable between the runs (their speculative settings differ); None when they agree."""
    settings = [_setting(r) for r in runs]
    if len(set(settings)) < 2:
        return None
    each = "; ".join(f"{label}: {setting}" for label, setting in zip(labels, settings))
    return (f"ITL is not comparable between these runs: their speculative settings differ ({each}). A speculative "
            "step delivers several tokens in one streamed chunk, so ITL measures chunks, not tokens; TPOT is "
            "compared instead.")
