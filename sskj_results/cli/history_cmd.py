"""`sskj-results history`: parse options, call the library, print."""

from __future__ import annotations

from pathlib import Path

import click

from .common import ExitError, echo, handle_errors


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--metric", "metrics", multiple=True,
              help="Runs-table column to follow (repeatable); default ttft_ms_p95, tpot_ms_mean, "
                   "output_token_throughput.")
@click.option("--out", "out", default=Path("history"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="Directory of history.md (and history.html).")
@click.option("--html", "with_html", is_flag=True, help="Also write history.html (one offline page).")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a regression is found, printing one line per regression.")
@click.option("--min-change", default=0.05, show_default=True, type=click.FloatRange(0, 10),
              help="Practical threshold: a change must exceed this relative size in the medians either "
                   "side (and t > 5 against the noise of those runs; docs/HISTORY.md).")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Significance level of the Mann-Whitney U test that confirms a change.")
@handle_errors
def history(paths: tuple[Path, ...], metrics: tuple[str, ...], out: Path, with_html: bool,
            fail_on_regression: bool, min_change: float, alpha: float) -> None:
    """Every setup's runs over time, and the runs where a series stepped.

    PATHS are run directories, results.json files, any directory (searched
    for results.json) or tables written by `collect` (.parquet, .csv). One
    series per setup (chip, engine, model, configuration), shape and metric,
    ordered by run time; a step change is reported with its run, what changed
    there (engine version, image, ...), its size and confidence.
    Rule: docs/HISTORY.md.
    """
    from ..analysis.history import DEFAULT_METRICS, Rule, history as build, needed_columns
    from ..render.history import failure_lines, load_history_input, write_history

    rule = Rule(alpha=alpha, min_change=min_change)  # a wrong value is said before anything is read
    loaded = load_history_input(list(paths), needed_columns(metrics or DEFAULT_METRICS))
    for skip in loaded.skipped:
        echo(f"skipped: {skip.reason}", err=True)
    for drop in loaded.dropped:
        echo(f"dropped: {drop.line()}", err=True)
    hist = build(loaded.frame, metrics or DEFAULT_METRICS, rule)
    written = write_history(hist, out, with_html)
    changes = [c for s in hist.series for c in s.confirmed]
    regressions = failure_lines(hist)
    echo(f"wrote {', '.join(str(w) for w in written)}: {hist.runs} run(s), {len(hist.series)} series, "
         f"{len(regressions)} regression(s), {len(changes) - len(regressions)} improvement(s)")
    if fail_on_regression and regressions:
        for line in regressions:
            echo(line)
        raise ExitError(f"{len(regressions)} regression(s) found (--fail-on-regression)", 1)
