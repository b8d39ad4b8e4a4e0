from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from .common import PositiveFloat, handle_errors, slo_options


@click.command("slo-next")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--input-len", type=click.IntRange(min=0), required=True, help="Input length of the shape searched.")
@click.option("--output-len", type=click.IntRange(min=0), required=True, help="Output length of the shape searched.")
@click.option("--min-concurrency", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--max-concurrency", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--resolution", type=PositiveFloat(allow_zero=True, example="0.1"), default=0.1, show_default=True,
              help="Stop bisecting when the bracket is within this fraction of the best concurrency.")
@click.option("--remeasure-invalid", is_flag=True,
              help="A probe whose only point is invalid (docs/VALIDITY.md) is proposed again: print "
                   "'CONCURRENCY PROMPTS' with more prompts (the runner must name the new raw file as a repeat).")
@slo_options
@handle_errors
def slo_next(run_dir: Path, input_len: int, output_len: int, min_concurrency: int, max_concurrency: int,
             resolution: float, remeasure_invalid: bool = False, slo_tier: Optional[str] = None,
             slo_ttft_p95_ms: Optional[float] = None, slo_tpot_mean_ms: Optional[float] = None) -> None:
    """Print the next concurrency an SLO search should measure; print nothing when it has converged.

    Doubling from --min-concurrency while the scenario meets the SLO (✅ in
    slo_status), then bisection between the last pass and the first failure.
    Skipped scenarios (skipped_after_oom.csv) count as failures; a ❔ scenario
    (not measured) is unknown and stops the search unfinished. The search
    is recorded in results.json (slo_search) on every call; run
    `sskj-results parse` after each measurement.
    """
    from ..analysis.slo_search import next_concurrency

    from ..analysis.slo import resolve_slo

    spec = None  # --slo-tier / thresholds: judge by that SLO instead of the one recorded in results.json
    if slo_tier or slo_ttft_p95_ms is not None or slo_tpot_mean_ms is not None:
        spec = resolve_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms)
    decision = next_concurrency(run_dir, input_len, output_len, min_concurrency, max_concurrency, resolution,
                                remeasure=remeasure_invalid, spec=spec)
    if decision.next_concurrency is not None and decision.num_prompts is not None:
        click.echo(f"{decision.next_concurrency} {decision.num_prompts}")
    elif decision.next_concurrency is not None:
        click.echo(decision.next_concurrency)
    else:
        best = decision.search.best_concurrency
        stopped = "" if decision.search.finished else " (stopped at a ❔ probe: TTFT P95 or TPOT mean not measured)"
        click.echo(f"slo search i{input_len}_o{output_len}: best concurrency {best if best else 'none'}{stopped}", err=True)
