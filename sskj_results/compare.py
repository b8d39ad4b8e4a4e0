"""Comparison of runs: scenario matching, statistical verdicts, comparison.json.

`build_comparison` is pure (Results in, `ComparisonDoc` out); the maths lives
in `stats`, the Markdown in `report`, the figures in `plots`.
`write_comparison` is the one function the CLI calls: it loads the runs,
builds the document, draws the plots and writes `comparison.md` and
`comparison.json` atomically.

Scenarios are matched by (concurrency, input_len, output_len). The first run
(or the explicit baseline) is the baseline; every other run is compared with
it on the per-request TTFT, TPOT and E2E of successful requests, and on the
output token throughput of repeated runs (see docs/COMPARE.md).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Optional, Sequence, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from . import stats
from .errors import ConfigError, ResultsError, UsageError
from .io import atomic_write_text, load_run
from .models import Results, Scenario, SloSpec, SloStatus
from .slo import resolve_slo, slo_status

if TYPE_CHECKING:
    from .plots import Curve

PathLike = Union[str, "os.PathLike[str]"]
Key = tuple[int, int, int]

COMPARISON_MD = "comparison.md"
COMPARISON_JSON = "comparison.json"
DEFAULT_CDF_SCENARIOS = 4

MetricName = Literal["ttft_ms", "tpot_ms", "e2e_ms", "output_token_throughput"]
LATENCY_METRICS: tuple[MetricName, ...] = ("ttft_ms", "tpot_ms", "e2e_ms")
THROUGHPUT_METRIC: Final = "output_token_throughput"


# --------------------------------------------------------------------------- comparison.json


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RunInfo(_Doc):
    """One compared run."""

    label: str = Field(description="Unique label used in the table's Backend column and in `run` fields: "
                                   "the engine, with the chip when the runs' chips differ, disambiguated by phase or directory.")
    path: str = Field(description="Run directory (or results.json) as given on the command line.")
    baseline: bool = Field(description="This run is the baseline of every test.")
    engine: str = Field(description="metadata.engine, else metadata.backend.")
    chip: Optional[str] = Field(description="metadata.chip, else metadata.accelerator.")
    hardware: Optional[str] = Field(description="metadata.hardware.")
    model: str = Field(description="metadata.model.")
    experiment: str = Field(description="metadata.experiment.")
    run_id: str = Field(description="metadata.run_id.")
    phase: Optional[str] = Field(description="metadata.phase.")
    client: Optional[str] = Field(description="metadata.client.")
    git_commit: Optional[str] = Field(description="metadata.git_commit.")
    spec_method: Optional[str] = Field(description="config.spec_method (null when not speculative).")
    spec_tokens: Optional[int] = Field(description="config.spec_tokens.")
    recorded_slo: Optional[SloSpec] = Field(description="The SLO recorded in the run's results.json.")
    slo_recomputed: bool = Field(description="The run's SLO marks were recomputed against the comparison's SLO "
                                             "(it recorded another SLO, or none, or --slo-tier was given).")


class Row(_Doc):
    """One row of the side-by-side table: one scenario of one run."""

    run: str = Field(description="Run label.")
    engine: str = Field(description="Engine of the run.")
    chip: Optional[str] = Field(description="Chip of the run.")
    scenario: str = Field(description="The run's own scenario name.")
    repeat: Optional[int] = Field(description="Repeat index, when the shape was run more than once.")
    concurrency: int = Field(description="Concurrency.")
    input_len: int = Field(description="Input length, tokens.")
    output_len: int = Field(description="Output length, tokens.")
    request_throughput: Optional[float] = Field(description="Req/s.")
    output_token_throughput: Optional[float] = Field(description="Output tokens/s.")
    ttft_p95_ms: Optional[float] = Field(description="TTFT P95, ms.")
    ttft_p99_ms: Optional[float] = Field(description="TTFT P99, ms.")
    tpot_mean_ms: Optional[float] = Field(description="TPOT mean, ms.")
    tpot_p95_ms: Optional[float] = Field(description="TPOT P95, ms.")
    tpot_p99_ms: Optional[float] = Field(description="TPOT P99, ms.")
    e2e_p99_ms: Optional[float] = Field(description="E2E P99, ms.")
    slo_status: SloStatus = Field(description="SLO verdict against the comparison's SLO.")


class StatTest(_Doc):
    """One statistical test of a candidate run against the baseline."""

    run: str = Field(description="Candidate run label.")
    metric: MetricName = Field(description="Per-request latency (`ttft_ms`, `tpot_ms`, `e2e_ms`) or "
                                           "`output_token_throughput` across repeats.")
    test: str = Field(description="`mann-whitney-u` (per-request latencies) or `welch-t` (repeated throughput).")
    verdict: Literal["faster", "slower", "no significant difference", "insufficient samples", "not comparable"] = Field(
        description="faster/slower only when significant and beyond --min-change.")
    p_value: Optional[float] = Field(description="Holm-Bonferroni adjusted p-value over the whole family; null without a test.")
    p_raw: Optional[float] = Field(description="Unadjusted p-value.")
    ratio: Optional[float] = Field(description="Candidate / baseline: ratio of medians (latency) or of means (throughput).")
    ci_low: Optional[float] = Field(description="Lower bound of the ratio's confidence interval.")
    ci_high: Optional[float] = Field(description="Upper bound of the ratio's confidence interval.")
    n_baseline: int = Field(description="Samples on the baseline side (requests or repeats).")
    n_candidate: int = Field(description="Samples on the candidate side.")
    baseline_value: Optional[float] = Field(description="Baseline median (latency, ms) or mean (throughput, tok/s).")
    candidate_value: Optional[float] = Field(description="Candidate median or mean.")
    reason: Optional[str] = Field(description="Why there is no test (insufficient samples, not comparable), or a caveat.")


class ScenarioComparison(_Doc):
    """A scenario shape present in every run."""

    name: str = Field(description="Scenario name (the runs' common name, else `c{conc}_i{in}_o{out}`).")
    concurrency: int = Field(description="Concurrency.")
    input_len: int = Field(description="Input length, tokens.")
    output_len: int = Field(description="Output length, tokens.")
    rows: list[Row] = Field(description="One row per run per scenario (repeats are separate rows).")
    tests: list[StatTest] = Field(description="Tests of each candidate run against the baseline.")


class Unmatched(_Doc):
    """A scenario of a run whose shape is missing from some other run."""

    run: str = Field(description="Run label that has the scenario.")
    scenario: str = Field(description="Scenario name in that run.")
    concurrency: int = Field(description="Concurrency.")
    input_len: int = Field(description="Input length.")
    output_len: int = Field(description="Output length.")
    missing_in: list[str] = Field(description="Runs without this shape.")
    skipped: dict[str, str] = Field(default_factory=dict, description="Runs that recorded the shape as skipped, with the reason.")


class Settings(_Doc):
    """Parameters of the statistics."""

    alpha: float = Field(description="Significance level of the Holm-adjusted p-values.")
    min_change: float = Field(description="Practical threshold: a change counts only when |ratio - 1| exceeds it.")
    confidence: float = Field(description="Confidence level of the intervals.")
    bootstrap_resamples: int = Field(description="Bootstrap resamples of the median ratio.")
    seed: int = Field(description="Seed of the bootstrap generator.")
    correction: Literal["holm"] = Field(default="holm", description="Multiple-testing correction.")
    family_size: int = Field(description="Number of tests with a p-value (the Holm family).")


class ComparisonDoc(_Doc):
    """comparison.json: everything comparison.md shows, as data."""

    schema_version: Literal[1] = Field(default=1, description="Version of this format.")
    title: str = Field(description="Title of comparison.md.")
    baseline: str = Field(description="Label of the baseline run.")
    runs: list[RunInfo] = Field(description="Compared runs, baseline first.")
    slo: SloSpec = Field(description="SLO the marks are judged against.")
    settings: Settings = Field(description="Statistics parameters.")
    scenarios: list[ScenarioComparison] = Field(description="Matched scenarios, sorted by name.")
    unmatched: list[Unmatched] = Field(description="Scenarios present in only some runs.")
    plots: list[str] = Field(default_factory=list, description="PNG files written beside comparison.md.")

    def run(self, label: str) -> RunInfo:
        for info in self.runs:
            if info.label == label:
                return info
        raise KeyError(label)


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class RequestSamples:
    """Per-request latencies of the successful requests of one scenario, ms."""

    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    e2e_ms: np.ndarray
    recorded: int = 0
    failed: int = 0
    capped: bool = False
    first_error: Optional[str] = None

    def metric(self, name: str) -> np.ndarray:
        return getattr(self, name)


def request_samples(scenario: Scenario) -> RequestSamples:
    """Arrays of the successful requests' TTFT, TPOT and E2E (missing values dropped per metric)."""
    ok = [r for r in scenario.raw_requests if r.success]
    first_error = next((r.error or "(no error text)" for r in scenario.raw_requests if not r.success), None)

    def column(attr: str) -> np.ndarray:
        return np.fromiter((v for r in ok if (v := getattr(r, attr)) is not None), dtype=float)

    return RequestSamples(
        ttft_ms=column("ttft_ms"), tpot_ms=column("tpot_ms"), e2e_ms=column("e2e_ms"),
        recorded=len(scenario.raw_requests), failed=len(scenario.raw_requests) - len(ok),
        capped=scenario.raw_requests_capped, first_error=first_error,
    )


@dataclass
class RunData:
    """A loaded run: its results (per-request lists dropped) and per-scenario arrays."""

    path: str
    results: Results
    samples: list[RequestSamples] = field(default_factory=list)

    @property
    def engine(self) -> str:
        meta = self.results.metadata
        return meta.engine or meta.backend or "unknown"

    @property
    def chip(self) -> Optional[str]:
        meta = self.results.metadata
        return meta.chip or meta.accelerator

    @property
    def dir_name(self) -> str:
        p = Path(self.path)
        if p.suffix == ".json":
            p = p.parent
        return p.name or p.resolve().name


def run_data(results: Results, path: PathLike) -> RunData:
    """Turn Results into RunData: per-request arrays extracted, raw request objects released."""
    samples = [request_samples(s) for s in results.scenarios]
    light = results.model_copy(update={"scenarios": [s.model_copy(update={"raw_requests": []}) for s in results.scenarios]})
    return RunData(path=str(path), results=light, samples=samples)


def load_run_data(path: PathLike) -> RunData:
    """Load one run directory (or results.json) for a comparison or a report."""
    p = Path(path)
    if not p.exists():
        raise ResultsError(f"{path}: no such run directory")
    return run_data(load_run(p), path)


@dataclass(frozen=True)
class CompareOptions:
    """Options of a comparison (the CLI's flags)."""

    alpha: float = 0.05
    min_change: float = 0.05
    slo: Optional[SloSpec] = None
    plots: bool = True
    cdf: Optional[int] = DEFAULT_CDF_SCENARIOS
    title: Optional[str] = None
    n_resamples: int = stats.DEFAULT_RESAMPLES
    confidence: float = stats.DEFAULT_CONFIDENCE
    seed: int = stats.DEFAULT_SEED

    def check(self) -> None:
        if not 0 < self.alpha < 1:
            raise UsageError(f"--alpha {self.alpha:g}: must be between 0 and 1 (exclusive), e.g. 0.05")
        if self.min_change < 0:
            raise UsageError(f"--min-change {self.min_change:g}: must be >= 0, e.g. 0.05 for 5 %")
        if self.cdf is not None and self.cdf < 0:
            raise UsageError(f"--cdf {self.cdf}: give `all` or a number of scenarios >= 0")
        if not 0 < self.confidence < 1:
            raise UsageError(f"confidence {self.confidence:g}: must be between 0 and 1")
        if self.n_resamples < 100:
            raise UsageError(f"bootstrap resamples {self.n_resamples}: use at least 100")


# --------------------------------------------------------------------------- labels, SLO, matching


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """Unique labels: engine; `@ chip` when chips differ; then phase or directory name for duplicates."""
    chips_differ = len({r.chip for r in runs}) > 1
    labels = [r.engine + (f" @ {r.chip or 'unknown chip'}" if chips_differ else "") for r in runs]

    def dups(values: list[str]) -> set[int]:
        return {i for i, v in enumerate(values) if values.count(v) > 1}

    for qualifier in (lambda r: r.results.metadata.phase, lambda r: r.dir_name, lambda r: r.path):
        clash = dups(labels)
        if not clash:
            break
        for i in clash:
            q = qualifier(runs[i])
            if q:
                base = labels[i].split(" (")[0]
                labels[i] = f"{base} ({q})"
    for i in sorted(dups(labels)):
        labels[i] = f"{labels[i]} #{i + 1}"
    return labels


def reference_slo(runs: Sequence[RunData], override: Optional[SloSpec]) -> SloSpec:
    """--slo-* when given; else the baseline's recorded SLO; else the first recorded one; else the default tier."""
    if override is not None:
        return override
    for run in runs:
        if run.results.slo is not None:
            return run.results.slo
    return resolve_slo()


def same_thresholds(a: Optional[SloSpec], b: SloSpec) -> bool:
    return a is not None and a.ttft_p95_ms == b.ttft_p95_ms and a.tpot_mean_ms == b.tpot_mean_ms


def scenario_status(scenario: Scenario, spec: SloSpec, recompute: bool) -> SloStatus:
    """The recorded mark, or the mark recomputed from TTFT P95 and TPOT mean."""
    if not recompute:
        return scenario.slo_status
    return slo_status(scenario.latencies.ttft_ms.p95, scenario.latencies.tpot_ms.mean, spec)


def shape_key(scenario: Scenario) -> Key:
    return (scenario.concurrency, scenario.input_len, scenario.output_len)


def canonical_name(key: Key) -> str:
    return f"c{key[0]}_i{key[1]}_o{key[2]}"


@dataclass(frozen=True)
class Group:
    """A shape present in every run: per run, the indices of its scenarios (repeats in order)."""

    name: str
    key: Key
    members: tuple[tuple[int, ...], ...]


def _by_shape(run: RunData) -> dict[Key, list[int]]:
    out: dict[Key, list[int]] = {}
    for i, s in enumerate(run.results.scenarios):
        out.setdefault(shape_key(s), []).append(i)
    for idx in out.values():
        idx.sort(key=lambda i: (run.results.scenarios[i].repeat or 0, run.results.scenarios[i].name))
    return out


def match_scenarios(runs: Sequence[RunData], labels: Sequence[str]) -> tuple[list[Group], list[Unmatched]]:
    """Shapes in every run (sorted by name, as the team's reports are) and the scenarios of the others."""
    shapes = [_by_shape(r) for r in runs]
    all_keys = sorted({k for s in shapes for k in s})
    groups: list[Group] = []
    unmatched: list[Unmatched] = []
    for key in all_keys:
        present = [i for i, s in enumerate(shapes) if key in s]
        names = {runs[i].results.scenarios[j].name for i in present for j in shapes[i][key]}
        name = names.pop() if len(names) == 1 else canonical_name(key)
        if len(present) == len(runs):
            groups.append(Group(name, key, tuple(tuple(s[key]) for s in shapes)))
            continue
        missing = [labels[i] for i in range(len(runs)) if i not in present]
        skipped = {}
        for i in range(len(runs)):
            if i in present:
                continue
            for sk in runs[i].results.skipped:
                if (sk.concurrency, sk.input_len, sk.output_len) == key:
                    skipped[labels[i]] = sk.reason
        for i in present:
            for j in shapes[i][key]:
                s = runs[i].results.scenarios[j]
                unmatched.append(Unmatched(run=labels[i], scenario=s.name, concurrency=key[0], input_len=key[1],
                                           output_len=key[2], missing_in=missing, skipped=skipped))
    groups.sort(key=lambda g: g.name)
    order = {label: i for i, label in enumerate(labels)}
    unmatched.sort(key=lambda u: (u.scenario, order[u.run]))
    return groups, unmatched


# --------------------------------------------------------------------------- building


def table_row(run: RunData, label: str, scenario: Scenario, status: SloStatus) -> Row:
    lat = scenario.latencies
    return Row(
        run=label, engine=run.engine, chip=run.chip, scenario=scenario.name, repeat=scenario.repeat,
        concurrency=scenario.concurrency, input_len=scenario.input_len, output_len=scenario.output_len,
        request_throughput=scenario.request_throughput, output_token_throughput=scenario.output_token_throughput,
        ttft_p95_ms=lat.ttft_ms.p95, ttft_p99_ms=lat.ttft_ms.p99, tpot_mean_ms=lat.tpot_ms.mean,
        tpot_p95_ms=lat.tpot_ms.p95, tpot_p99_ms=lat.tpot_ms.p99, e2e_p99_ms=lat.e2e_ms.p99, slo_status=status,
    )


def _parameter_difference(base: list[Scenario], cand: list[Scenario]) -> Optional[str]:
    """Why two matched scenario groups were not measured the same way, if they were not."""

    def rate(s: Scenario) -> str:
        return "inf" if s.request_rate is None or math.isinf(s.request_rate) else f"{s.request_rate:g}"

    base_rates = {rate(s) for s in base}
    cand_rates = {rate(s) for s in cand}
    if base_rates != cand_rates:
        return f"request rate differs: {', '.join(sorted(base_rates))} vs {', '.join(sorted(cand_rates))} req/s"
    base_data = {s.dataset_name for s in base if s.dataset_name}
    cand_data = {s.dataset_name for s in cand if s.dataset_name}
    if base_data and cand_data and base_data != cand_data:
        return f"dataset differs: {', '.join(sorted(base_data))} vs {', '.join(sorted(cand_data))}"
    return None


def _pool(run: RunData, members: Sequence[int], metric: str) -> np.ndarray:
    arrays = [run.samples[j].metric(metric) for j in members]
    return np.concatenate(arrays) if arrays else np.empty(0)


def _finite(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def _stat_test(label: str, metric: MetricName, outcome: stats.Outcome, caveat: Optional[str]) -> StatTest:
    if outcome.verdict is None:
        raise ValueError(f"{label} {metric}: outcome has no verdict (not decided)")
    reason = outcome.reason
    if caveat:
        reason = f"{reason}; {caveat}" if reason else caveat
    return StatTest(
        run=label, metric=metric, test=outcome.test, verdict=outcome.verdict,
        p_value=outcome.p_adjusted, p_raw=outcome.p_raw, ratio=_finite(outcome.ratio),
        ci_low=_finite(outcome.ci_low), ci_high=_finite(outcome.ci_high),
        n_baseline=outcome.n_baseline, n_candidate=outcome.n_candidate,
        baseline_value=outcome.baseline_value, candidate_value=outcome.candidate_value, reason=reason,
    )


def _group_outcomes(runs: Sequence[RunData], group: Group, options: CompareOptions) -> list[tuple[int, MetricName, stats.Outcome, Optional[str]]]:
    """Undecided outcomes of one group: (candidate run index, metric, outcome, caveat)."""
    base_run = runs[0]
    base_members = group.members[0]
    base_scen = [base_run.results.scenarios[j] for j in base_members]
    out: list[tuple[int, MetricName, stats.Outcome, Optional[str]]] = []
    for ci in range(1, len(runs)):
        cand_run = runs[ci]
        cand_members = group.members[ci]
        cand_scen = [cand_run.results.scenarios[j] for j in cand_members]
        difference = _parameter_difference(base_scen, cand_scen)
        capped = any(base_run.samples[j].capped for j in base_members) or any(
            cand_run.samples[j].capped for j in cand_members)
        caveat = "per-request data capped (first requests only)" if capped else None
        for metric in LATENCY_METRICS:
            if difference:
                outcome = stats.not_comparable(stats.MANN_WHITNEY, difference)
            else:
                outcome = stats.compare_latency(
                    _pool(base_run, base_members, metric), _pool(cand_run, cand_members, metric),
                    alpha=options.alpha, n_resamples=options.n_resamples,
                    confidence=options.confidence, seed=options.seed,
                )
            out.append((ci, metric, outcome, caveat))
        if len(base_members) > 1 or len(cand_members) > 1:
            if difference:
                outcome = stats.not_comparable(stats.WELCH, difference)
            else:
                outcome = stats.compare_means_welch(
                    np.array([s.output_token_throughput for s in base_scen if s.output_token_throughput is not None]),
                    np.array([s.output_token_throughput for s in cand_scen if s.output_token_throughput is not None]),
                    confidence=options.confidence,
                )
            out.append((ci, THROUGHPUT_METRIC, outcome, None))
    return out


def default_title(runs: Sequence[RunData], labels: Sequence[str]) -> str:
    hardware = {r.results.metadata.hardware for r in runs}
    title = " vs ".join(labels)
    if len(hardware) == 1 and None not in hardware:
        title += f" ({hardware.pop()})"
    return title


def build_comparison(runs: Sequence[RunData], options: CompareOptions = CompareOptions()) -> ComparisonDoc:
    """The whole comparison as data; runs[0] is the baseline. Pure: no I/O."""
    options.check()
    if len(runs) < 2:
        raise UsageError("compare needs at least two runs (a baseline and one to compare with it)")
    labels = run_labels(runs)
    spec = reference_slo(runs, options.slo)
    recompute = [options.slo is not None or not same_thresholds(r.results.slo, spec) for r in runs]
    groups, unmatched = match_scenarios(runs, labels)

    pending: list[tuple[int, int, MetricName, stats.Outcome, Optional[str]]] = []
    for gi, group in enumerate(groups):
        for ci, metric, outcome, caveat in _group_outcomes(runs, group, options):
            pending.append((gi, ci, metric, outcome, caveat))
    decided = stats.decide(
        [p[3] for p in pending], [p[2] == THROUGHPUT_METRIC for p in pending],
        alpha=options.alpha, min_change=options.min_change,
    )
    tests_by_group: dict[int, list[StatTest]] = {}
    for (gi, ci, metric, _, caveat), outcome in zip(pending, decided):
        tests_by_group.setdefault(gi, []).append(_stat_test(labels[ci], metric, outcome, caveat))

    scenarios = []
    for gi, group in enumerate(groups):
        rows = [
            table_row(run, labels[ri], run.results.scenarios[j],
                 scenario_status(run.results.scenarios[j], spec, recompute[ri]))
            for ri, run in enumerate(runs) for j in group.members[ri]
        ]
        scenarios.append(ScenarioComparison(
            name=group.name, concurrency=group.key[0], input_len=group.key[1], output_len=group.key[2],
            rows=rows, tests=tests_by_group.get(gi, []),
        ))

    infos = []
    for i, (run, label) in enumerate(zip(runs, labels)):
        meta, config = run.results.metadata, run.results.config
        infos.append(RunInfo(
            label=label, path=run.path, baseline=i == 0, engine=run.engine, chip=run.chip, hardware=meta.hardware,
            model=meta.model, experiment=meta.experiment, run_id=meta.run_id, phase=meta.phase, client=meta.client,
            git_commit=meta.git_commit, spec_method=config.spec_method, spec_tokens=config.spec_tokens,
            recorded_slo=run.results.slo, slo_recomputed=recompute[i],
        ))
    return ComparisonDoc(
        title=options.title or default_title(runs, labels),
        baseline=labels[0], runs=infos, slo=spec,
        settings=Settings(
            alpha=options.alpha, min_change=options.min_change, confidence=options.confidence,
            bootstrap_resamples=options.n_resamples, seed=options.seed,
            family_size=sum(o.p_raw is not None for o in decided),
        ),
        scenarios=scenarios, unmatched=unmatched,
    )


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class ComparisonOutput:
    """What write_comparison wrote."""

    markdown: Path
    json: Path
    plots: list[Path]
    doc: ComparisonDoc


def order_runs(paths: Sequence[PathLike], baseline: Optional[PathLike]) -> list[PathLike]:
    """Baseline first: the explicit one (added when not among the paths), else the first path."""
    if not paths and baseline is None:
        raise UsageError("give at least two run directories to compare")
    ordered = list(paths)
    resolved = [Path(p).resolve() for p in ordered]
    for i, r in enumerate(resolved):
        if r in resolved[:i]:
            raise UsageError(f"{ordered[i]}: given twice; each run can appear once")
    if baseline is not None:
        b = Path(baseline).resolve()
        if b in resolved:
            i = resolved.index(b)
            ordered.insert(0, ordered.pop(i))
        else:
            ordered.insert(0, baseline)
    return ordered


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def plot_file_name(prefix: str, name: str) -> str:
    return f"{prefix}_{_UNSAFE.sub('_', name).strip('_') or 'scenario'}.png"


def comparison_json_text(doc: ComparisonDoc) -> str:
    """The exact text of comparison.json (2-space indent, UTF-8, trailing newline)."""
    return json.dumps(doc.model_dump(mode="json"), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _mean(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def run_curves(run: RunData, label: str) -> list["Curve"]:
    """One curve per shape (input, output) of a run; repeats of a concurrency are averaged."""
    from .plots import Curve, Point

    by_shape: dict[tuple[int, int], dict[int, list[Scenario]]] = {}
    for s in run.results.scenarios:
        by_shape.setdefault((s.input_len, s.output_len), {}).setdefault(s.concurrency, []).append(s)
    curves = []
    for (inp, outp), by_conc in sorted(by_shape.items()):
        points = tuple(
            Point(
                concurrency=conc,
                output_throughput=_mean([s.output_token_throughput for s in scen]),
                tpot_mean_ms=_mean([s.latencies.tpot_ms.mean for s in scen]),
                ttft_p95_ms=_mean([s.latencies.ttft_ms.p95 for s in scen]),
            )
            for conc, scen in sorted(by_conc.items())
        )
        curves.append(Curve(label, inp, outp, points))
    return curves


def draw_comparison_plots(doc: ComparisonDoc, runs: Sequence[RunData], out_dir: Path, cdf: Optional[int]) -> list[Path]:
    """The comparison's PNGs in out_dir: throughput vs interactivity, TTFT P95 and TPOT mean vs
    concurrency, and TTFT/TPOT CDFs of the first `cdf` matched scenarios (all when None)."""
    from . import plots

    labels = [info.label for info in doc.runs]
    curves = [c for run, label in zip(runs, labels) for c in run_curves(run, label)]
    written = [
        plots.throughput_vs_interactivity(curves, out_dir / "throughput_vs_interactivity.png",
                                          f"Output throughput vs interactivity — {doc.title}"),
        plots.latency_vs_concurrency(curves, "ttft_p95_ms", doc.slo.ttft_p95_ms, out_dir / "ttft_p95_vs_concurrency.png",
                                     f"TTFT P95 vs concurrency — {doc.title}"),
        plots.latency_vs_concurrency(curves, "tpot_mean_ms", doc.slo.tpot_mean_ms,
                                     out_dir / "tpot_mean_vs_concurrency.png", f"TPOT mean vs concurrency — {doc.title}"),
    ]
    groups, _ = match_scenarios(runs, labels)
    for group in groups if cdf is None else groups[:cdf]:
        lines = []
        for run, label, members in zip(runs, labels, group.members):
            ttft, tpot = _pool(run, members, "ttft_ms"), _pool(run, members, "tpot_ms")
            lines.append(plots.CdfLine(f"{label} (n={max(ttft.size, tpot.size)})", ttft, tpot))
        written.append(plots.latency_cdfs(
            lines, out_dir / plot_file_name("cdf", group.name),
            f"Per-request latency CDF — {group.name} (concurrency {group.key[0]}, "
            f"input {group.key[1]:,}, output {group.key[2]:,})",
            doc.slo.ttft_p95_ms, doc.slo.tpot_mean_ms,
        ))
    return [p for p in written if p is not None]


def write_comparison(
    paths: Sequence[PathLike],
    out_dir: PathLike,
    options: CompareOptions = CompareOptions(),
    baseline: Optional[PathLike] = None,
) -> ComparisonOutput:
    """Load the runs, compare them, write comparison.md, comparison.json and the plots into out_dir."""
    options.check()
    ordered = order_runs(paths, baseline)
    if len(ordered) < 2:
        raise UsageError("compare needs at least two runs (a baseline and one to compare with it)")
    runs = [load_run_data(p) for p in ordered]
    doc = build_comparison(runs, options)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        if options.plots:
            written = draw_comparison_plots(doc, runs, out, options.cdf)
            doc = doc.model_copy(update={"plots": [p.name for p in written]})
        from .report import render_comparison

        md_path, json_path = out / COMPARISON_MD, out / COMPARISON_JSON
        atomic_write_text(md_path, render_comparison(doc))
        atomic_write_text(json_path, comparison_json_text(doc))
    except OSError as exc:
        raise ConfigError(f"{exc.filename or out}: cannot write: {exc.strerror}; choose another --out") from None
    return ComparisonOutput(markdown=md_path, json=json_path, plots=written, doc=doc)
