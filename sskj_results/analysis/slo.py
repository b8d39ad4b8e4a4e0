"""SLO tiers and verdicts (docs/SLO_STANDARDS.md). Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..contract.errors import ConfigError
from ..contract.models import SloMark, SloSpec, SloStatus

MET_BOTH: SloMark = "✅"
MET_ONE: SloMark = "⚠️"
MET_NONE: SloMark = "❌"
NOT_MEASURED: SloMark = "❔"


@dataclass(frozen=True)
class Tier:
    name: str
    title: str
    ttft_p95_ms: float
    tpot_mean_ms: float


# Keep in step with docs/SLO_STANDARDS.md (a test checks the table there).
TIERS: dict[str, Tier] = {
    "S1": Tier("S1", "interactive", 1000.0, 25.0),
    "S2": Tier("S2", "standard", 3000.0, 50.0),
    "S3": Tier("S3", "batch", 10000.0, 100.0),
}
DEFAULT_TIER = "S2"


def resolve_slo(
    tier: Optional[str] = None,
    ttft_p95_ms: Optional[float] = None,
    tpot_mean_ms: Optional[float] = None,
) -> SloSpec:
    """The SLO to judge by: a named tier, explicit thresholds, or a tier with one threshold overridden."""
    if tier is None and ttft_p95_ms is not None and tpot_mean_ms is not None:
        return SloSpec(tier=None, ttft_p95_ms=ttft_p95_ms, tpot_mean_ms=tpot_mean_ms)
    name = (tier or DEFAULT_TIER).upper()
    if name not in TIERS:
        raise ConfigError(
            f"unknown SLO tier {tier!r}; use one of {', '.join(TIERS)} (docs/SLO_STANDARDS.md) "
            "or give both --slo-ttft-p95-ms and --slo-tpot-mean-ms"
        )
    base = TIERS[name]
    if ttft_p95_ms is None and tpot_mean_ms is None:
        return SloSpec(tier=name, ttft_p95_ms=base.ttft_p95_ms, tpot_mean_ms=base.tpot_mean_ms)
    return SloSpec(
        tier=None,
        ttft_p95_ms=base.ttft_p95_ms if ttft_p95_ms is None else ttft_p95_ms,
        tpot_mean_ms=base.tpot_mean_ms if tpot_mean_ms is None else tpot_mean_ms,
    )


def overall_mark(ttft_ok: Optional[bool], tpot_ok: Optional[bool]) -> SloMark:
    """✅ both met, ⚠️ exactly one, ❌ neither; ❔ when either is unknown (not measured)."""
    if ttft_ok is None or tpot_ok is None:
        return NOT_MEASURED
    if ttft_ok and tpot_ok:
        return MET_BOTH
    if ttft_ok or tpot_ok:
        return MET_ONE
    return MET_NONE


def below(value: Optional[float], threshold: float) -> Optional[bool]:
    """A threshold is met when the value is strictly below it; None when the value was not measured."""
    if value is None:
        return None
    return value < threshold


def slo_status(ttft_p95_ms: Optional[float], tpot_mean_ms: Optional[float], spec: SloSpec) -> SloStatus:
    """The scenario verdict: TTFT P95 and TPOT mean against the spec (an unmeasured value is unknown, not failed)."""
    ttft_ok = below(ttft_p95_ms, spec.ttft_p95_ms)
    tpot_ok = below(tpot_mean_ms, spec.tpot_mean_ms)
    return SloStatus(ttft_p95_ok=ttft_ok, tpot_mean_ok=tpot_ok, overall=overall_mark(ttft_ok, tpot_ok))


def describe(spec: SloSpec) -> str:
    """`S2: TTFT P95 < 3000.0ms, TPOT mean < 50.0ms` (the seed reports' wording)."""
    rule = f"TTFT P95 < {spec.ttft_p95_ms}ms, TPOT mean < {spec.tpot_mean_ms}ms"
    return f"{spec.tier}: {rule}" if spec.tier else rule
