"""Writing a run's report and a comparison: load, analyse, render, write atomically.

The one place that ties the layers together for the CLI: `write_report`
(report.md + plots/) and `write_comparison` (comparison.md, comparison.json,
plots). Analysis (`compare`, `rundata`) and rendering (`report`, `plots`) stay
free of file output.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from ..analysis.compare import CompareOptions, build_comparison, match_scenarios, order_runs, pool, run_accelerators
from ..contract.bulk import bulk
from ..contract.comparison_models import ComparisonDoc
from ..contract.errors import ConfigError, ResultsError, UsageError
from ..contract.io import atomic_write_text, load_run
from ..contract.models import Results, SloSpec
from ..contract.names import path_segment
from .report import render_comparison, render_report, report_rows
from ..analysis.rundata import RunData, load_run_data, reference_slo, run_data, run_labels, same_thresholds
from ..contract.runset import expand, load_run_set, phase_paths, runs_inside
from ..analysis.slo import resolve_slo

PathLike = Union[str, "os.PathLike[str]"]
Progress = Callable[[int, int, str], None]  # (steps done, steps, what is next)

COMPARISON_MD = "comparison.md"
COMPARISON_JSON = "comparison.json"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
COMPARISON_HTML = "comparison.html"
PLOTS_DIR = "plots"
DEFAULT_CDF_SHAPES = 4


@dataclass(frozen=True)
class ComparisonOutput:
    """What write_comparison wrote."""

    markdown: Path
    json: Path
    plots: list[Path]
    doc: ComparisonDoc
    html: Optional[Path] = None

def plot_file_name(prefix: str, name: str) -> str:
    return f"{prefix}_{path_segment(name)}.png"

def comparison_json_text(doc: ComparisonDoc) -> str:
    """The exact text of comparison.json (2-space indent, UTF-8, trailing newline)."""
    return json.dumps(doc.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

def frontier_label(run: RunData, label: str) -> str:
    """A run in the frontier figure's legend: its label and its accelerator count."""
    count = run_accelerators(run)
    return f"{label}, {count} accel" if count is not None else label


def draw_comparison_plots(doc: ComparisonDoc, runs: Sequence[RunData], out_dir: Path, cdf: Optional[int]) -> list[Path]:
    """The comparison's PNGs in out_dir: throughput vs interactivity, TTFT P95 and TPOT mean vs
    concurrency, and TTFT/TPOT CDFs of the first `cdf` matched scenarios (all when None)."""
    from . import plots

    labels = [info.label for info in doc.runs]
    curves = [c for run, label in zip(runs, labels) for c in plots.run_curves(run, label)]
    written = [
        plots.throughput_vs_interactivity(curves, out_dir / "throughput_vs_interactivity.png",
                                          f"Output throughput vs interactivity — {doc.title}"),
        plots.frontier([c for run, label in zip(runs, labels) for c in plots.run_curves(run, frontier_label(run, label))],
                       doc.slo.tpot_mean_ms, out_dir / "frontier_per_accelerator.png",
                       f"Output throughput per accelerator vs interactivity — {doc.title}"),
        plots.latency_vs_concurrency(curves, "ttft_p95_ms", doc.slo.ttft_p95_ms, out_dir / "ttft_p95_vs_concurrency.png",
                                     f"TTFT P95 vs concurrency — {doc.title}"),
        plots.latency_vs_concurrency(curves, "tpot_mean_ms", doc.slo.tpot_mean_ms,
                                     out_dir / "tpot_mean_vs_concurrency.png", f"TPOT mean vs concurrency — {doc.title}"),
    ]
    groups, _ = match_scenarios(runs, labels)
    for group in groups if cdf is None else groups[:cdf]:
        lines = []
        for run, label, members in zip(runs, labels, group.members):
            ttft, tpot = pool(run, members, "ttft_ms"), pool(run, members, "tpot_ms")
            lines.append(plots.CdfLine(f"{label} (n={max(ttft.size, tpot.size)})", ttft, tpot))
        written.append(plots.latency_cdfs(
            lines, out_dir / plot_file_name("cdf", group.name),
            f"Per-request latency CDF — {group.name} (concurrency {group.key[0]}, "
            f"input {group.key[1]:,}, output {group.key[2]:,})",
            doc.slo.ttft_p95_ms, doc.slo.tpot_mean_ms,
        ))
    return [p for p in written if p is not None]


@dataclass(frozen=True)
class ReportOptions:
    """Options of `sskj-results report`."""

    slo: Optional[SloSpec] = None
    plots: bool = True
    cdf: Optional[int] = DEFAULT_CDF_SHAPES
    html: bool = False  # also report.html (self-contained, interactive)

@dataclass(frozen=True)
class ReportOutput:
    markdown: Path
    plots: list[Path]
    html: Optional[Path] = None

def draw_report_plots(run: RunData, spec: SloSpec, plot_dir: Path, cdf: Optional[int]) -> list[Path]:
    """A run's PNGs: the comparison's curves for one run, and per shape a CDF with one line per concurrency."""
    from . import plots

    label = run_labels([run])[0]
    curves = plots.run_curves(run, label)
    meta = run.results.metadata
    who = f"{label}, {meta.experiment} {meta.run_id}"
    written = [
        plots.throughput_vs_interactivity(curves, plot_dir / "throughput_vs_interactivity.png",
                                          f"Output throughput vs interactivity — {who}"),
        plots.frontier(plots.run_curves(run, frontier_label(run, label)), spec.tpot_mean_ms,
                       plot_dir / "frontier_per_accelerator.png", f"Output throughput per accelerator vs interactivity — {who}"),
        plots.latency_vs_concurrency(curves, "ttft_p95_ms", spec.ttft_p95_ms, plot_dir / "ttft_p95_vs_concurrency.png",
                                     f"TTFT P95 vs concurrency — {who}"),
        plots.latency_vs_concurrency(curves, "tpot_mean_ms", spec.tpot_mean_ms,
                                     plot_dir / "tpot_mean_vs_concurrency.png", f"TPOT mean vs concurrency — {who}"),
    ]
    shapes: dict[tuple[int, int], list[int]] = {}
    for i, s in enumerate(run.results.scenarios):
        if run.samples[i].metric("ttft_ms").size or run.samples[i].metric("tpot_ms").size:
            shapes.setdefault((s.input_len, s.output_len), []).append(i)
    chosen = sorted(shapes.items())
    for (inp, outp), idx in chosen if cdf is None else chosen[:cdf]:
        idx.sort(key=lambda i: (run.results.scenarios[i].concurrency or 0, run.results.scenarios[i].repeat or 0))
        lines = []
        for i in idx:
            s = run.results.scenarios[i]
            rep = f" r{s.repeat}" if s.repeat else ""
            n = max(run.samples[i].metric("ttft_ms").size, run.samples[i].metric("tpot_ms").size)
            load = (f"concurrency {s.concurrency}" if s.concurrency is not None
                    else f"rate {s.request_rate if s.request_rate is not None else 'unlimited'} req/s")
            lines.append(plots.CdfLine(f"{load}{rep} (n={n})", run.samples[i].metric("ttft_ms"),
                                       run.samples[i].metric("tpot_ms")))
        written.append(plots.latency_cdfs(
            lines, plot_dir / plot_file_name("cdf", f"i{inp}_o{outp}"),
            f"Per-request latency CDF — {who}, input {inp:,} / output {outp:,}",
            spec.ttft_p95_ms, spec.tpot_mean_ms,
        ))
    return [p for p in written if p is not None]

def _quiet(done: int, total: int, item: str) -> None:
    """No progress shown."""


@bulk
def write_report(run_dir: PathLike, options: ReportOptions = ReportOptions(),
                 progress: Optional[Progress] = None) -> ReportOutput:
    """Regenerate RUN_DIR/report.md (and RUN_DIR/plots/*.png, and RUN_DIR/report.html when options.html)
    from RUN_DIR/results.json. `progress(done, total, step)` is called before each step and at the end."""
    step = progress or _quiet
    if options.cdf is not None and options.cdf < 0:
        raise UsageError(f"--cdf {options.cdf}: give `all` or a number of shapes >= 0")
    directory = Path(run_dir)
    run = load_run_data(directory)
    if not directory.is_dir():
        directory = directory.parent
    spec = reference_slo([run], options.slo)
    recompute = options.slo is not None or not same_thresholds(run.results.slo, spec)
    md = directory / REPORT_MD
    try:
        written: list[Path] = []
        if options.plots:
            step(0, 3, "plots")
            plot_dir = directory / PLOTS_DIR
            if plot_dir.is_symlink():  # writing through it would write outside the run directory
                raise ResultsError(f"{plot_dir}: a symbolic link; plots are written only inside the run directory: "
                                   "remove the link (or give --no-plots)")
            written = draw_report_plots(run, spec, plot_dir, options.cdf)
        step(1, 3, REPORT_MD)
        rel = [p.relative_to(directory).as_posix() for p in written]
        rows = report_rows(run, spec, recompute)
        text = render_report(run, spec, recompute, rel, rows)
        atomic_write_text(md, text)
        page = None
        if options.html:
            from .html import render_report_html

            page = directory / REPORT_HTML
            step(2, 3, REPORT_HTML)
            atomic_write_text(page, render_report_html(run, spec, recompute, text, rows))
        step(3, 3, "")
    except OSError as exc:
        raise ConfigError(f"{exc.filename or md}: cannot write: {exc.strerror}") from None
    return ReportOutput(markdown=md, plots=written, html=page)


def write_reports(path: PathLike, options: ReportOptions = ReportOptions(),
                  progress: Optional[Progress] = None) -> list[ReportOutput]:
    """report.md of a run directory, of every phase of a run-set directory, or of every run of a folder of
    runs (`imported/`)."""
    inside = runs_inside(path)
    if inside:
        return [out for run in inside for out in write_reports(run, options, progress)]
    run_set = load_run_set(path) if Path(path).is_dir() or Path(path).is_file() else None
    if run_set is None:
        return [write_report(path, options, progress)]
    if not run_set.phases:
        raise ResultsError(f"{path}: the run-set index lists no phase; rebuild it with `sskj-results runset {path}`")
    return [write_report(p, options, progress) for p in phase_paths(path, run_set)]


@bulk
def write_comparison(
    paths: Sequence[PathLike],
    out_dir: PathLike,
    options: CompareOptions = CompareOptions(),
    baseline: Optional[PathLike] = None,
    html: bool = False,
) -> ComparisonOutput:
    """Load the runs, compare them, write comparison.md, comparison.json and the plots into out_dir
    (and comparison.html, self-contained and interactive, when `html`).

    A run-set directory stands for its phases, in order; given alone, its index's baseline, title and
    matrix name apply unless baseline/options say otherwise.
    """
    options.check()
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:  # said before counting the runs: `compare <typo>` names the typo
        raise ResultsError(f"{missing[0]}: no such run directory")
    expanded, sets = expand(paths)
    if len(paths) == 1 and len(sets) == 1:
        run_set = sets[0]
        if baseline is None and run_set.baseline is not None:
            baseline = Path(paths[0]) / run_set.baseline
            if Path(baseline) not in [Path(p) for p in expanded]:
                raise ResultsError(f"{paths[0]}: the index's baseline {run_set.baseline!r} names no phase; set it with "
                                   f"`sskj-results runset {paths[0]} --baseline PHASE`")
        options = replace(options, title=options.title or run_set.title, matrix=options.matrix or run_set.matrix)
    if baseline is not None and load_run_set(baseline) is not None:
        raise UsageError(f"--baseline {baseline}: is a run set; give one of its phase directories")
    ordered = order_runs(expanded, baseline)
    if len(ordered) < 2:
        try:  # one dry run (results/<RUN_ID> of a one-phase DRY_RUN=1 run) is said as such
            loaded = [load_run(p) for p in ordered]
        except ResultsError:
            loaded = []  # one run that cannot be read: two are needed anyway (said below)
        refuse_dry_runs(loaded, ordered)
        found = ""
        if ordered and [Path(p) for p in ordered] != [Path(p) for p in paths]:  # a folder stood for its runs
            found = f"; {', '.join(map(str, paths))} holds only {', '.join(map(str, ordered))}"
        raise UsageError(f"compare needs at least two runs (a baseline and one to compare with it){found}")
    runs = [load_run_data(p) for p in ordered]
    doc = build_comparison(runs, options)
    refuse_incomparable(doc, runs)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if options.plots:
            written = draw_comparison_plots(doc, runs, out, options.cdf)
            doc = doc.model_copy(update={"plots": [p.name for p in written]})
        md_path, json_path = out / COMPARISON_MD, out / COMPARISON_JSON
        text = render_comparison(doc)
        atomic_write_text(md_path, text)
        atomic_write_text(json_path, comparison_json_text(doc))
        page = None
        if html:
            from .html import render_comparison_html

            page = out / COMPARISON_HTML
            atomic_write_text(page, render_comparison_html(doc, runs, text))
    except OSError as exc:
        raise ConfigError(f"{exc.filename or out}: cannot write: {exc.strerror}; choose another --out") from None
    return ComparisonOutput(markdown=md_path, json=json_path, plots=written, doc=doc, html=page)


def refuse_incomparable(doc: ComparisonDoc, runs: Sequence[RunData]) -> None:
    """Raise ResultsError when the runs have no scenario in common (nothing to put side by side)."""
    if doc.scenarios:
        return
    refuse_dry_runs([run.results for run in runs], [info.path for info in doc.runs])
    where = ", ".join(str(info.path) for info in doc.runs)
    if not any(run.results.scenarios for run in runs):
        raise ResultsError(f"{where}: no run holds a measured scenario (a DRY_RUN=1 run writes metadata only); "
                           "nothing to compare")
    raise ResultsError(f"{where}: no scenario in common (matched by concurrency, input_len and output_len); nothing "
                       "to compare; `sskj-results report RUN` shows each run alone")


def refuse_dry_runs(results: Sequence[Results], paths: Sequence[PathLike]) -> None:
    """Raise ResultsError when every run given is a dry run's (config.dry_run = true, nothing measured)."""
    if not results or any(r.scenarios or (r.config.model_extra or {}).get("dry_run") is not True for r in results):
        return
    what = "a dry run" if len(results) == 1 else "dry runs"
    raise ResultsError(f"{', '.join(map(str, paths))}: {what} (DRY_RUN=1, config.dry_run = true): nothing was "
                       "measured, nothing to compare; run the experiment without DRY_RUN=1, then compare")


def report_text(results: Results, target: PathLike) -> str:
    """A run's report.md without plots, from its Results (import-legacy writes it; `report` adds plots)."""
    return render_report(run_data(results, target), results.slo or resolve_slo(), recompute=False)
