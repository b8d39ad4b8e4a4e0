"""The "Per accelerator and energy" section of report.md and comparison.md (docs/METRICS.md#per-accelerator,
#energy): each scenario's accelerators, throughput per accelerator, interactivity, energy per output token and the
user's price; in a comparison across device counts, why whole-server throughput is not compared. Pure: no I/O."""

from __future__ import annotations

from typing import Optional, Sequence

from ..contract.comparison_models import Row
from ..contract.metrics import CHIP_NAMES, metric
from ..contract.models import Scenario
from .mdparts import marked
from .mdtable import github_table
from .validity_md import validity_mark

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
    one run, why a scenario has no energy figure. A figure no row knows (a CPU run: no accelerator count, no power
    samples) is said once to be unknown instead of a column of `unknown`; an unreliable value is marked ⊘ and
    every row says its validity."""
    lines = [f"{basis[0].upper()}{basis[1:]}.", ""] if basis else []
    priced = any(getattr(r, "cost_per_million_output_tokens") is not None for r in rows)  # a price is given, not measured
    offered = [n for n in SHOWN if priced or n != "cost_per_million_output_tokens"]
    shown = [n for n in offered if any(getattr(r, n) is not None for r in rows)]
    counted = any(r.accelerators is not None for r in rows)
    unknown = [metric(n).short for n in offered if n not in shown]
    if not counted:
        lines += [f"The accelerator count is unknown for every scenario (no DEVICES, no tp x dp in the server "
                  f"command; a CPU run has none): {', '.join(unknown) or 'no figure'} unknown, not 0.", ""]
    elif unknown:
        lines += [f"Unknown for every scenario: {', '.join(unknown)} (not 0).", ""]
    headers = ((["Run"] if with_run else []) + ["Scenario"] + (["Accel"] if counted else [])
               + [metric(n).short for n in shown] + ["Valid"])
    table = [([r.run] if with_run else []) + [r.scenario]
             + (["unknown" if r.accelerators is None else str(r.accelerators)] if counted else [])
             + [marked(r, n, _number(getattr(r, n))) for n in shown] + [validity_mark(r)] for r in rows]
    align = (["left"] if with_run else []) + ["left"] + ["right"] * (int(counted) + len(shown)) + ["left"]
    if shown or counted:
        lines += github_table(headers, table, align)
    price = (" Price/MOutTok: the user's price per million output tokens from the platform's PRICE_PER_ACCEL_HOUR, "
             "a price the user gave, not a measurement.") if priced else ""
    lines += ["", "Accel: accelerators that served the phase (DEVICES, else tp x dp of the server command). "
              "Interactivity: 1000 / TPOT mean, tokens per second one user sees. J/OutTok: energy of the served "
              "devices over the benchmark window / output tokens, J; OutTok/kWh: its inverse per kWh (`unknown` "
              f"when the power samples do not cover the window).{price} See docs/METRICS.md (Per accelerator, "
              "Energy, Cost).", ""]
    by_reason: dict[str, list[str]] = {}
    for s in scenarios:
        if s.power is not None and s.power.reason:
            by_reason.setdefault(s.power.reason, []).append(s.name)
    if by_reason:  # one line per reason: every scenario of a run without power samples shares one
        lines += ["Energy unknown:", ""]
        lines += [f"- {names[0]}: {reason}" if len(names) == 1 else
                  (f"- every scenario ({len(names)}): {reason}" if len(names) == len(scenarios) else
                   f"- {', '.join(names)}: {reason}") for reason, names in by_reason.items()]
        lines.append("")
    return lines
