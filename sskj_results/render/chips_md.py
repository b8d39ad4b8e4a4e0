"""The "Per accelerator and energy" section of report.md and comparison.md (docs/METRICS.md#per-accelerator,
#energy): each scenario's accelerators, throughput per accelerator, interactivity, energy per output token and the
user's price; in a comparison across device counts, why whole-server throughput is not compared. Pure: no I/O."""

from __future__ import annotations

from typing import Optional, Sequence

from ..contract.comparison_models import Row
from ..contract.metrics import CHIP_NAMES, metric
from ..contract.models import Scenario
from .mdtable import github_table

# the table's figures, in its order (registry rows: their short labels head the columns)
SHOWN = ("output_throughput_per_accel", "total_throughput_per_accel", "interactivity", "joules_per_output_token",
         "output_tokens_per_kwh", "cost_per_million_output_tokens")


def _number(value: Optional[float]) -> str:
    if value is None:
        return "unknown"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"


def has_figures(rows: Sequence[Row]) -> bool:
    """Some row knows its accelerators or an energy figure: the section is shown."""
    return any(r.accelerators is not None or any(getattr(r, n) is not None for n in CHIP_NAMES) for r in rows)


def chips_section(rows: Sequence[Row], with_run: bool, basis: Optional[str] = None,
                  scenarios: Sequence[Scenario] = ()) -> list[str]:
    """The section's body: the basis sentence (a comparison across device counts), the table, the legend and, for
    one run, why a scenario has no energy figure."""
    lines = [f"{basis[0].upper()}{basis[1:]}.", ""] if basis else []
    priced = any(getattr(r, "cost_per_million_output_tokens") is not None for r in rows)  # a price is given, not measured
    shown = [n for n in SHOWN if priced or n != "cost_per_million_output_tokens"]
    headers = (["Run"] if with_run else []) + ["Scenario", "Accel"] + [metric(n).short for n in shown]
    table = [([r.run] if with_run else []) + [r.scenario, "unknown" if r.accelerators is None else str(r.accelerators)]
             + [_number(getattr(r, n)) for n in shown] for r in rows]
    align = (["left"] if with_run else []) + ["left"] + ["right"] * (1 + len(shown))
    lines += github_table(headers, table, align)
    price = (" Price/MOutTok: the user's price per million output tokens from the platform's PRICE_PER_ACCEL_HOUR, "
             "a price the user gave, not a measurement.") if priced else ""
    lines += ["", "Accel: accelerators that served the phase (DEVICES, else tp x dp of the server command). "
              "Interactivity: 1000 / TPOT mean, tokens per second one user sees. J/OutTok: energy of the served "
              "devices over the benchmark window / output tokens, J; OutTok/kWh: its inverse per kWh (`unknown` "
              f"when the power samples do not cover the window).{price} See docs/METRICS.md (Per accelerator, "
              "Energy, Cost).", ""]
    reasons = [f"- {s.name}: {s.power.reason}" for s in scenarios if s.power is not None and s.power.reason]
    if reasons:
        lines += ["Energy unknown:", ""] + reasons + [""]
    return lines
