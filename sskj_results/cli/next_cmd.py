from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

import click

from .common import grid_options, handle_errors, slo_options

NAME_PART = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


def _name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not re.match(NAME_PART, value):
        raise click.BadParameter(f"{value!r} must match {NAME_PART} (it becomes part of a file name)")
    return value


@click.command("next")
# RUN_DIR may not exist yet: a dry run of an existing run plans a phase it has not begun without making it
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--chip", required=True, callback=_name, help="Chip of the run (first part of the raw file stem).")
@click.option("--engine", required=True, callback=_name, help="Engine of the phase (second part of the stem).")
@click.option("--run-id", default=None, help="RUN_ID: the stem's MMDD is its date when it starts with YYYYMMDD-.")
@click.option("--mmdd", default=None, help="Date part of the stem (MMDD); default: from --run-id, else the run's creation date.")
@click.option("--client", type=click.Choice(["sglang", "vllm"]), default="sglang", show_default=True,
              help="Bench client: its raw file is .jsonl (sglang) or .json (vllm).")
@grid_options
@click.option("--session", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Session file: scenarios proposed by this run loop (appended to; never proposed twice).")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="REPEATS: measure every grid scenario this many times, round by round (stems `_r2`, `_r3`, ...).")
@click.option("--slo-search", is_flag=True, help="Search the largest concurrency meeting the SLO per shape instead of running the grid.")
@click.option("--slo-min-concurrency", type=click.IntRange(min=1), default=None, help="Default: the shape's smallest grid concurrency.")
@click.option("--slo-max-concurrency", type=click.IntRange(min=1), default=None, help="Default: the shape's largest grid concurrency.")
@click.option("--slo-max-steps", type=click.IntRange(min=1), default=32, show_default=True,
              help="Measurements per shape and session at most.")
@slo_options
@handle_errors
def next_scenario(run_dir: Path, chip: str, engine: str, run_id: Optional[str], mmdd: Optional[str], client: str, scenarios_file: Optional[Path],
                  concurrencies: Optional[str], shapes: Optional[str], num_prompts: Optional[int],
                  prompts_per_concurrency: int, min_prompts: int, session: Optional[Path], repeats: int, slo_search: bool,
                  slo_min_concurrency: Optional[int], slo_max_concurrency: Optional[int], slo_max_steps: int,
                  slo_tier: Optional[str], slo_ttft_p95_ms: Optional[float], slo_tpot_mean_ms: Optional[float]) -> None:
    """Print the next scenario the run loop measures, or nothing when the phase is done.

    One line `CONCURRENCY INPUT_LEN OUTPUT_LEN NUM_PROMPTS STEM RAW_FILE_NAME`.
    Grid order: shapes as they first appear, ascending concurrency. A scenario
    is done when results.json holds it, imported from a raw file still present
    and unchanged, or when skipped_after_oom.csv names it; with --repeats N
    every scenario is measured N times, round r of the grid before round r + 1
    (raw file stems `_r2`, `_r3`, ...); after a failure
    (server death, OOM) the larger concurrencies of the shape are recorded
    there as skipped. With --slo-search the SLO search (see `slo-next`)
    chooses the concurrency per shape. Progress goes to stderr.
    """
    from ..run.plan import Planner, PromptsRule, load_grid, stem_date
    from ..analysis.slo import resolve_slo

    mmdd = mmdd or stem_date(run_dir, run_id)
    if not re.match(r"^[0-9]{4}$", mmdd):
        raise click.BadParameter(f"{mmdd!r} is not MMDD", param_hint="--mmdd")

    planner = Planner(
        run_dir=run_dir,
        grid=load_grid(scenarios_file, concurrencies, shapes),
        prompts=PromptsRule(num_prompts, prompts_per_concurrency, min_prompts),
        chip=chip, engine=engine, mmdd=mmdd, raw_ext="json" if client == "vllm" else "jsonl", session=session,
        record=os.environ.get("DRY_RUN", "0") != "1",  # a dry run writes nothing into the run it plans
    )
    log: list[str] = []
    if slo_search:
        spec = None
        if slo_tier or slo_ttft_p95_ms is not None or slo_tpot_mean_ms is not None:
            spec = resolve_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms)
        found = planner.next_in_slo_search(log, spec, slo_min_concurrency, slo_max_concurrency, slo_max_steps)
    else:
        found = planner.next_in_grid(log, repeats)
    for line in log:
        click.echo(line, err=True)
    if found is not None:
        click.echo(found.line())


@click.command("phase")
@click.argument("spec")
@handle_errors
def phase(spec: str) -> None:
    """Print a phase spec NAME[:ENGINE][:KEY=VALUE]... as NUL-separated NAME, ENGINE, KEY=VALUE... (ENGINE defaults to NAME)."""
    from ..run.specs import parse_phase_spec

    parsed = parse_phase_spec(spec)
    click.echo("".join(f"{w}\0" for w in (parsed.name, parsed.engine, *parsed.settings)), nl=False)
