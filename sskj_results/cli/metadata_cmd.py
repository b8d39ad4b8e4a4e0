from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from .common import catalog_chip_name, handle_errors, slo_options


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE",
              help="A metadata field (experiment, run_id, model, engine, chip, ...). Repeatable.")
@click.option("--config", "config", multiple=True, metavar="KEY=VALUE",
              help="A config key; JSON scalars become numbers/booleans. server_args values are redacted. Repeatable.")
@click.option("--chip", help="Shortcut for --meta chip=CHIP (e.g. to set the chip of a run imported without one); "
                             "H200 is recorded as the catalog's nvidia_h200.")
@click.option("--accelerator", help="Shortcut for --meta accelerator=TEXT.")
@click.option("--hardware", help="Shortcut for --meta hardware=TEXT.")
@click.option("--record-env", "record_env", default="", metavar="'NAME ...'",
              help="Record these environment variables in config (key: the name lower-cased); unset or empty ones are left out.")
@click.option("--no-detect", is_flag=True, help="Do not query nvidia-smi/xpu-smi/cpuinfo for hardware and driver facts.")
@slo_options
@handle_errors
def metadata(run_dir: Path, meta: tuple[str, ...], config: tuple[str, ...], chip: Optional[str],
             accelerator: Optional[str], hardware: Optional[str], record_env: str, no_detect: bool,
             slo_tier: Optional[str], slo_ttft_p95_ms: Optional[float], slo_tpot_mean_ms: Optional[float]) -> None:
    """Create RUN_DIR/results.json, or update only the given keys (scenarios are kept).

    Unset timestamp, host and git_commit are filled in on creation; so are
    hardware, driver and runtime versions that nvidia-smi / xpu-smi / the CPU report.
    """
    from ..contract.envfile import parse_assignments
    from ..ingest.metadata import write_metadata
    from ..analysis.slo import resolve_slo

    if chip:
        chip = catalog_chip_name(chip)
    shortcuts = tuple(f"{key}={value}" for key, value in
                      (("chip", chip), ("accelerator", accelerator), ("hardware", hardware)) if value)
    meta = meta + shortcuts
    slo = None
    if slo_tier or slo_ttft_p95_ms is not None or slo_tpot_mean_ms is not None:
        slo = resolve_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms)
    import os
    import re

    recorded = {name.lower(): os.environ[name] for name in record_env.split()
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) and os.environ.get(name)}
    results = write_metadata(
        run_dir,
        parse_assignments(meta, "--meta"),
        {**recorded, **parse_assignments(config, "--config")},
        slo=slo,
        detect=not no_detect,
    )
    click.echo(f"{run_dir / 'results.json'}: metadata of {results.metadata.experiment} ({results.metadata.run_id}) written")
    if (chip or accelerator or hardware) and (run_dir / "report.md").is_file() and results.scenarios:
        # the run's report says what results.json says: rewritten (as it was: with plots and page if it had them)
        from ..render.publish import ReportOptions, write_report

        out = write_report(run_dir, ReportOptions(plots=(run_dir / "plots").is_dir(),
                                                  html=(run_dir / "report.html").is_file()))
        click.echo(f"wrote {out.markdown}" + (f" and {out.html}" if out.html else ""))
