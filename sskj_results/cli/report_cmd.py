"""`sskj-results report` and `sskj-results compare`: parse options, call one library function, print."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

if TYPE_CHECKING:
    from ..contract.models import SloSpec

from .common import PositiveFloat, handle_errors, slo_options


class CdfCount(click.ParamType):
    """`all` or a number of scenarios (0 for none)."""

    name = "all|N"

    def convert(self, value: object, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Optional[int]:
        if value is None or isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text == "all":
            return None
        try:
            count = int(text)
        except ValueError:
            self.fail(f"{value!r}: give `all` or a number >= 0", param, ctx)
        if count < 0:
            self.fail(f"{value!r}: give `all` or a number >= 0", param, ctx)
        return count


def _slo(slo_tier: Optional[str], ttft: Optional[float], tpot: Optional[float]) -> Optional[SloSpec]:
    from ..analysis.slo import resolve_slo

    if slo_tier is None and ttft is None and tpot is None:
        return None
    return resolve_slo(slo_tier, ttft, tpot)


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--no-plots", is_flag=True, help="Do not draw the PNG plots (faster).")
@click.option("--cdf", type=CdfCount(), default="4", show_default=True,
              help="Latency CDF figures for the first N shapes (input, output), or `all`.")
@click.option("--html", "html", is_flag=True,
              help="Also write RUN_DIR/report.html: one self-contained interactive page that works offline.")
@slo_options
@handle_errors
def report(run_dir: Path, no_plots: bool, cdf: Optional[int], html: bool, slo_tier: Optional[str],
           slo_ttft_p95_ms: Optional[float], slo_tpot_mean_ms: Optional[float]) -> None:
    """Write RUN_DIR/report.md (and RUN_DIR/plots/*.png) from RUN_DIR/results.json alone.

    A run-set directory (a multi-phase run) gets the report of every phase.
    The SLO marks are the recorded ones; --slo-tier (or explicit thresholds)
    recomputes them against another SLO.
    """
    from ..ingest.sniff import check_run_path
    from ..render.publish import ReportOptions, write_reports

    check_run_path(run_dir)
    from .progress import Progress

    with Progress(f"report {run_dir}") as progress:
        outs = write_reports(run_dir, ReportOptions(slo=_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms),
                                                    plots=not no_plots, cdf=cdf, html=html), progress)
    for out in outs:
        click.echo(f"wrote {out.markdown}"
                   + (f" and {len(out.plots)} plot(s) in {out.plots[0].parent}" if out.plots else ""))
        if out.html:
            click.echo(f"wrote {out.html}")


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="Run every other run is compared with. Default: the first RUN_DIR.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("comparison"),
              show_default=True, help="Directory for comparison.md, comparison.json and the PNG plots.")
@click.option("--min-change", type=PositiveFloat(example="0.05 for 5 %"), default=0.05, show_default=True,
              help="Practical threshold: a change counts only when |ratio - 1| exceeds it (0.05 = 5 %).")
@click.option("--alpha", type=PositiveFloat(upper=1.0, example="0.05"), default=0.05, show_default=True,
              help="Significance level for the Holm-Bonferroni adjusted p-values.")
@click.option("--no-plots", is_flag=True, help="Do not draw the PNG plots.")
@click.option("--cdf", type=CdfCount(), default="4", show_default=True,
              help="Latency CDF figures for the first N matched scenarios, or `all`.")
@click.option("--html", "html", is_flag=True,
              help="Also write DIR/comparison.html: one self-contained interactive page that works offline.")
@click.option("--title", default=None,
              help="Title of comparison.md. Default: `<run> vs <run> ... [<matrix name>] (<hardware>)`; "
                   "`(configurations differ)` is appended when the runs differ in more than what is compared.")
@click.option("--matrix", "matrix", default=None, metavar="NAME",
              help="Name of the scenario matrix in the default title, e.g. `long-context matrix`.")
@click.option("--validity", "validity", multiple=True, metavar="NAME=VALUE",
              help="Validity threshold NAME=VALUE, repeatable (docs/VALIDITY.md), e.g. min_prompts_per_slot=2: every "
                   "point's recorded check values are judged again against it (over each run's recorded thresholds).")
@click.option("--strict", is_flag=True,
              help="Refuse a test on any failed validity check, qualified (⚠) points too (for CI gates); by default "
                   "only disqualified (✖) points are refused and qualified verdicts stand with their qualification.")
@click.option("--allow-prompt-difference", is_flag=True,
              help="Give verdicts although the runs' prompt method or prompt source differ (each test then says so); "
                   "by default such runs are listed as differing in their prompts and get no verdict (docs/COMPARE.md).")
@click.option("--plan", "plan", type=PositiveFloat(example="0.10 for 10 %"), default=None, metavar="CHANGE",
              help="Write nothing: say how many repeats per side a comparison of the RUN_DIRs' grid needs to find "
                   "a change of CHANGE (0.10 = 10 %) with 80 % power, at the run-to-run noise their repeats showed "
                   "(past runs of the same setup; docs/COMPARE.md).")
@slo_options
@handle_errors
def compare(run_dirs: tuple[Path, ...], baseline: Optional[Path], out_dir: Path, min_change: float, alpha: float,
            no_plots: bool, cdf: Optional[int], html: bool, title: Optional[str], matrix: Optional[str],
            validity: tuple[str, ...], strict: bool, allow_prompt_difference: bool, plan: Optional[float],
            slo_tier: Optional[str], slo_ttft_p95_ms: Optional[float], slo_tpot_mean_ms: Optional[float]) -> None:
    """Compare RUN_DIRs side by side, with statistical verdicts against the baseline.

    A run-set directory (a multi-phase run, results/<RUN_ID>) stands for its
    phases, baseline = phase 1 unless its index names another.
    Writes DIR/comparison.md, DIR/comparison.json and PNG plots. Scenarios are
    matched by (concurrency, input_len, output_len); see docs/COMPARE.md for
    how to read the verdicts.
    """
    from ..analysis.compare import CompareOptions
    from ..ingest.sniff import check_run_path
    from ..render.publish import write_comparison

    for path in run_dirs:
        check_run_path(path)
    if plan is not None:
        from ..analysis.powerplan import plan_lines, plan_repeats
        from ..analysis.rundata import load_run_data
        from ..contract.runset import expand

        runs = [load_run_data(p) for p in expand(run_dirs)[0]]
        for line in plan_lines(plan_repeats(runs, plan, alpha=alpha, min_change=min_change), plan, len(runs)):
            click.echo(line)
        return
    options = CompareOptions(alpha=alpha, min_change=min_change, plots=not no_plots, cdf=cdf, title=title,
                             matrix=matrix, slo=_slo(slo_tier, slo_ttft_p95_ms, slo_tpot_mean_ms),
                             validity=validity, strict=strict, allow_prompt_difference=allow_prompt_difference)
    out = write_comparison(run_dirs, out_dir, options, baseline=baseline, html=html)
    click.echo(f"wrote {out.markdown} and {out.json}"
               + (f" and {len(out.plots)} plot(s) in {out_dir}" if out.plots else ""))
    if out.html:
        click.echo(f"wrote {out.html}")
    unexpected = [d.setting for d in out.doc.config_differences if not d.expected]
    if unexpected:
        click.echo(f"warning: the runs differ in more than {' and '.join(out.doc.compared)}: {', '.join(unexpected)}; "
                   f"see Configuration differences in {out.markdown}", err=True)
