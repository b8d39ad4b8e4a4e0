from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

if TYPE_CHECKING:
    from ..contract.models import SloSpec

from ..contract.io import display_name
from .common import ExitError, PlatformFile, catalog_chip_name, cleans_up_on_term, echo, handle_errors, slo_options
from .progress import Progress


VALIDITY_HELP = ("Validity threshold NAME=VALUE, repeatable (docs/VALIDITY.md), e.g. min_prompts_per_slot=8; "
                 "recorded in results.json and kept by later parses.")


def _slo(tier: Optional[str], ttft: Optional[float], tpot: Optional[float]) -> Optional[SloSpec]:
    from ..analysis.slo import resolve_slo

    if tier is None and ttft is None and tpot is None:
        return None
    return resolve_slo(tier, ttft, tpot)


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name-format", default=None, metavar="FMT",
              help="Scenario names, e.g. 'chat_c{concurrency}_i{input_len}_o{output_len}' (recorded in config).")
@click.option("--validity", "validity", multiple=True, metavar="NAME=VALUE", help=VALIDITY_HELP)
@slo_options
@handle_errors
@cleans_up_on_term
def parse(run_dir: Path, name_format: Optional[str], slo_tier: Optional[str], slo_ttft_p95_ms: Optional[float],
          slo_tpot_mean_ms: Optional[float], validity: tuple[str, ...] = ()) -> None:
    """Merge RUN_DIR/raw_outputs/* into RUN_DIR/results.json.

    Idempotent and atomic: safe to run after every scenario. Unchanged raw
    files (same content hash) are not read again. Side files: server_metrics/
    (accept length), gpu_logs/ (accelerator usage), skipped_after_oom.csv.
    A damaged results.json (not JSON, or no longer a valid run) is rebuilt
    from raw_outputs/: the damaged file is kept aside as
    results.json.damaged-<time>, what of it still validates is carried over.
    Exit 1 when a raw run could not be imported (each one is listed).
    """
    from ..ingest.parse_run import parse_run_dir
    from ..ingest.rebuild import rebuild_damaged
    from ..contract.io import load_run
    from ..analysis.grades import env_items
    from ..analysis.validity import parse_thresholds

    # config.env's VALIDITY_<NAME> keys (the shell exports them), then the command line, over the recorded ones
    validity = (*env_items(os.environ), *validity)
    rebuilt = rebuild_damaged(run_dir)  # a damaged results.json beside its raw outputs
    if rebuilt is not None:
        echo(f"warning: {rebuilt.line()}", err=True)
    recorded = (load_run(run_dir, hand_on=True).validity_thresholds  # parse takes the run loaded here
                if validity and (run_dir / "results.json").is_file() else None)
    outcome = parse_run_dir(run_dir, _slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms), name_format=name_format,
                            validity=parse_thresholds(validity, recorded))
    for warning in outcome.warnings:
        echo(f"warning: {warning}", err=True)
    for problem in outcome.problems:
        echo(f"skipped: {display_name(run_dir)}/{problem}", err=True)
    results = outcome.results
    click.echo(
        f"{run_dir / 'results.json'}: {len(results.scenarios)} scenario(s) "
        f"({outcome.files_read} raw file(s) read, {outcome.files_reused} unchanged)"
    )
    if outcome.problems:
        raise ExitError(f"{len(outcome.problems)} raw run(s) not imported (listed above); fix or remove them", 1)


@click.command("import-legacy")
@click.argument("raw_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Directory that receives one run directory per (engine, model, chip) "
                   "(default: imported/ beside RAW_DIR; never inside RAW_DIR).")
@click.option("--platform", "platform_file", type=PlatformFile(),
              help="platforms/<chip>.env giving CHIP, ACCELERATOR, HARDWARE, or the platform's name "
                   "(nvidia_h200: the repository's platforms/nvidia_h200.env).")
@click.option("--chip", help="Chip, e.g. nvidia_h200 or H200 (the catalog's name is recorded; instead of --platform). "
                             "Without either: 'unknown', with a warning.")
@click.option("--accelerator", help="Accelerator family, e.g. 'NVIDIA H200'.")
@click.option("--hardware", help="Hardware description, e.g. '8x NVIDIA H200 143GB'.")
@click.option("--engine", help="Engine of every file (default: the file name, else the runs' backend key).")
@click.option("--model", help="Model served (default: the runs' model_id / server_info.model_path).")
@click.option("--experiment", help="Experiment name (default: import_<RAW_DIR name>).")
@click.option("--server-args", help="Server launch command, if known.")
@click.option("--input-len", type=click.IntRange(min=0), default=None,
              help="Requested input length of every run (wins over the runs' keys and file names).")
@click.option("--output-len", type=click.IntRange(min=0), default=None,
              help="Requested output length of every run (wins over the runs' keys and file names).")
@click.option("--client-impl", type=click.Choice(["python", "rust"]), default=None,
              help="The load client that wrote the files, where a file cannot tell (the Rust clients write the "
                   "Python ones' keys); a file with keys only a Rust client writes is recorded as rust. "
                   "Default: unknown.")
@click.option("--name-pattern", default=None, metavar="PATTERN",
              help="How file names are read, e.g. '{chip}_{engine}_c{concurrency}_{input_len}_{output_len}' "
                   "(also {model}, {mmdd}, {rate}, {num_prompts}, {*}); or a regular expression with those named groups.")
@click.option("--dry-run", is_flag=True, help="Print per file and run what would be imported or skipped; write nothing.")
@click.option("--strict", is_flag=True, help="Stop at the first bad run and write nothing.")
@click.option("--name-format", default=None, metavar="FMT",
              help="Scenario names (default c{concurrency}_i{input_len}_o{output_len}; open-loop runs "
                   "r{request_rate}_i{input_len}_o{output_len}).")
@click.option("--validity", "validity", multiple=True, metavar="NAME=VALUE", help=VALIDITY_HELP)
@slo_options
@handle_errors
@cleans_up_on_term
def import_legacy(raw_dir: Path, out: Optional[Path], platform_file: Optional[Path], chip: Optional[str],
                  accelerator: Optional[str], hardware: Optional[str], engine: Optional[str],
                  model: Optional[str], experiment: Optional[str], server_args: Optional[str],
                  input_len: Optional[int], output_len: Optional[int], name_pattern: Optional[str], dry_run: bool,
                  strict: bool, name_format: Optional[str], slo_tier: Optional[str], slo_ttft_p95_ms: Optional[float],
                  slo_tpot_mean_ms: Optional[float], validity: tuple[str, ...] = (),
                  client_impl: Optional[str] = None) -> None:
    """Import RAW_DIR's *.jsonl|*.json (sglang.bench_serving, vllm bench serve, vllm bench sweep) into run directories.

    One run directory per (engine, model, chip): the engine comes from --engine,
    else the file names ({backend}_{MMDD}_{c}_{in}_{out}, {chip}_{engine}_{MMDD}_{c}_{in}_{out},
    --name-pattern), else the runs' backend; the chip from the run's own keys (gpu,
    accelerator, hardware…; docs/METRICS.md), else the file name's chip prefix, else
    --chip/--platform; the model from --model, else the runs. A file may also be one
    JSON array of runs. Re-running replaces the run directories of the previous import of RAW_DIR.
    """
    from ..ingest.legacy import (
        Platform, check_import_dir, default_import_dir, import_legacy as run_import, read_platform_file,
    )
    from ..render.publish import report_text
    from ..analysis.validity import parse_thresholds

    if chip:
        chip = catalog_chip_name(chip)
    if platform_file is not None:
        platform = read_platform_file(platform_file)
        platform.accelerator = accelerator or platform.accelerator
        platform.hardware = hardware or platform.hardware
        platform.chip = chip or platform.chip
    elif chip or accelerator:
        platform = Platform(chip=chip or accelerator or "", accelerator=accelerator, hardware=hardware)
    else:
        platform = Platform(chip="unknown", accelerator=None, hardware=hardware or "unknown", chip_given=False)
    if out is None:
        out = default_import_dir(raw_dir)
        if not dry_run:
            click.echo(f"output directory: {out} (imported/ beside {raw_dir}; --out to choose another)")
    check_import_dir(raw_dir, out)
    command = " ".join(shlex.quote(a) for a in ["sskj-results", *sys.argv[1:]]) if sys.argv[1:2] == ["import-legacy"] else None
    with Progress("importing") as progress:
        outcome = run_import(raw_dir, out, platform, engine=engine, model=model, experiment=experiment,
                             slo=_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms), strict=strict,
                             server_args=server_args, command=command, name_format=name_format,
                             name_pattern=name_pattern, input_len=input_len, output_len=output_len,
                             dry_run=dry_run, render_report=report_text, validity=parse_thresholds(validity),
                             progress=progress, client_impl=client_impl)
    for warning in outcome.warnings:
        echo(f"warning: {warning}", err=True)
    if dry_run:
        for line in outcome.plan:
            echo(line)
        click.echo(f"dry run: nothing written (would write under {out})")
        return
    for problem in outcome.problems:
        echo(f"skipped: {display_name(raw_dir)}/{problem}", err=True)
    for run_dir in outcome.run_dirs:
        echo(f"{'replaced' if run_dir in outcome.replaced else 'wrote'} {run_dir}")
    if outcome.problems:
        rest = "the rest were imported" if outcome.run_dirs else "nothing was imported"
        raise ExitError(f"{len(outcome.problems)} raw run(s) not imported (listed above); {rest}", 1)
