"""Comparison of runs: scenario matching and statistical verdicts. Pure: no I/O.

`build_comparison` takes loaded runs (`rundata.RunData`) and returns the
`comparison_models.ComparisonDoc`; the maths lives in `stats`, the Markdown
in `report`, the figures in `plots`, and `publish.write_comparison` writes
the files.

Scenarios are matched by (concurrency, input_len, output_len). The first run
(or the explicit baseline) is the baseline; every other run is compared with
it on the per-request TTFT, TPOT and E2E of successful requests, and on the
output token throughput of repeated runs (see docs/COMPARE.md). When a side
has a shape more than once the repeat is the unit of every test: one trimmed
geometric mean per repeat of each per-request metric, a t-test across repeats whose run-to-run
variance is pooled over the comparison's scenarios (`pooled`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from . import pooled, stats
from .configdiff import (
    config_differences, is_speculative, one_model_with_speculative_variant, prompt_refusal, server_command,
    speculative_flags,
)
from ..contract.comparison_models import (
    ComparisonDoc, MetricName, RunInfo, RunToRun, ScenarioComparison, Settings, StatTest, Unmatched,
)
from ..contract.metrics import COMPARED, PER_REPEAT_COMPARED, PER_REQUEST_COMPARED, and_words, metric as metric_row
from ..catalog.engines import label_words
from ..contract.errors import UsageError
from ..contract.models import Scenario, SloSpec, Validity, ValidityThresholds
from .grades import SHARED_CHECKS, Severity, failed, partial_breaches, regrade, short_names, unreliable_of
from .speccompare import draft_bounds, itl_note, unpaired, with_bound_caveats
from .rundata import (
    RunData, graded, natural_key, reference_slo, run_labels, same_thresholds, scenario_status, table_row,
)
from .validity import CHECK_ORDER, DEFAULT_THRESHOLDS, parse_thresholds

PathLike = Union[str, "os.PathLike[str]"]
DEFAULT_CDF_SCENARIOS = 4
Key = tuple[int, int, int, float]  # (concurrency or 0, input, output, open-loop request rate or inf)


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class CompareOptions:
    """Options of a comparison (the CLI's flags)."""

    alpha: float = 0.05
    min_change: float = 0.05
    slo: Optional[SloSpec] = None
    plots: bool = True
    cdf: Optional[int] = DEFAULT_CDF_SCENARIOS
    title: Optional[str] = None
    matrix: Optional[str] = None
    n_resamples: int = stats.DEFAULT_RESAMPLES
    confidence: float = stats.DEFAULT_CONFIDENCE
    seed: int = stats.DEFAULT_SEED
    validity: tuple[str, ...] = ()  # `NAME=VALUE` threshold overrides (docs/VALIDITY.md)
    strict: bool = False  # any failed validity check refuses a test (CI gates), not only a disqualifying one
    allow_prompt_difference: bool = False  # verdicts across other prompts (configdiff.prompt_refusal), with a caveat

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
        parse_thresholds(self.validity)


# --------------------------------------------------------------------------- labels, SLO, matching


def shape_key(scenario: Scenario) -> Key:
    """Closed-loop runs match by concurrency; open-loop runs (no concurrency) by their request rate."""
    if scenario.concurrency is None:
        rate = scenario.request_rate if scenario.request_rate is not None else math.inf
        return (0, scenario.input_len, scenario.output_len, rate)
    return (scenario.concurrency, scenario.input_len, scenario.output_len, math.inf)


def canonical_name(key: Key) -> str:
    if key[0] == 0:
        return f"r{key[3]:g}_i{key[1]}_o{key[2]}"
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
    """Shapes in every run and the scenarios of the others, in report.md's reading order (rundata.natural_key:
    c2 before c16), so that a report and a comparison list scenarios alike."""
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
                if (sk.concurrency, sk.input_len, sk.output_len) == key[:3]:
                    skipped[labels[i]] = sk.reason
        for i in present:
            for j in shapes[i][key]:
                s = runs[i].results.scenarios[j]
                unmatched.append(Unmatched(run=labels[i], scenario=s.name, concurrency=key[0] or None, input_len=key[1],
                                           output_len=key[2], missing_in=missing, skipped=skipped))
    groups.sort(key=lambda g: natural_key(g.name))
    order = {label: i for i, label in enumerate(labels)}
    unmatched.sort(key=lambda u: (natural_key(u.scenario), order[u.run]))
    return groups, unmatched


# --------------------------------------------------------------------------- building


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


def pool(run: RunData, members: Sequence[int], metric: str) -> np.ndarray:
    arrays = [run.samples[j].metric(metric) for j in members]
    return np.concatenate(arrays) if arrays else np.empty(0)


def _finite(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class Judged:
    """A point as compare judges it: its scenario, its validity (judged again with `--validity`), its thresholds."""

    scenario: Scenario
    validity: Optional[Validity]
    thresholds: ValidityThresholds


@dataclass(frozen=True)
class Grades:
    """What validity does to one test: refuse it (checks, reason), or qualify it (checks, words)."""

    refused: tuple[str, ...] = ()
    reason: Optional[str] = None
    qualified: tuple[str, ...] = ()
    qualification: Optional[str] = None
    unreliable: tuple[str, ...] = ()  # metrics whose tests the scoped checks refuse (the others stand)
    scoped: tuple[str, ...] = ()  # those checks
    scoped_reason: Optional[str] = None

    def of(self, metric: str) -> "Grades":
        """What validity does to one metric's test: refused when a scoped check makes the metric unreliable."""
        if metric in self.unreliable:
            return Grades(refused=self.scoped, reason=self.scoped_reason, qualified=self.qualified,
                          qualification=self.qualification)
        return Grades(qualified=self.qualified, qualification=self.qualification) if not self.reason else self


def _scoped(sides: Sequence[tuple[str, Sequence[Judged]]]) -> Grades:
    """The scoped checks failed on either side: the metrics they make unreliable and why."""
    checks: list[str] = []
    parts = []
    for side, points in sides:
        for p in points:
            found = partial_breaches(p.validity)
            if found:
                checks.extend(c for c in found if c not in checks)
                parts.append(f"{side} {p.scenario.name} failed {', '.join(found)}")
    if not checks:
        return Grades()
    metrics = tuple(unreliable_of(checks))
    return Grades(unreliable=metrics, scoped=tuple(checks), scoped_reason=(
        f"unreliable {short_names(metrics)}: " + "; ".join(parts)))


def _breaches(points: Sequence[Judged], grade: Severity) -> dict[str, list[str]]:
    """check -> names of the points that breach it with that severity."""
    out: dict[str, list[str]] = {}
    for p in points:
        for name in failed(p.validity, p.thresholds, grade):
            out.setdefault(name, []).append(p.scenario.name)
    return out


def _passed(points: Sequence[Judged], check: str) -> bool:
    """Some point of the side passed the check (known, not breached)."""
    return any(c.name == check and c.ok is True for p in points if p.validity is not None for c in p.validity.checks)


def _grades(base: Sequence[Judged], cand: Sequence[Judged], strict: bool) -> Grades:
    """Disqualified points (either side) refuse the test; with `strict` any failed check does. A qualifying
    breach qualifies it, except a breach of a SHARED_CHECKS check on one side only (a burst against a load)."""
    sides = (("baseline", base), ("this run", cand))
    checks: list[str] = []
    parts = []
    for side, points in sides:
        for p in points:
            failing = p.validity.failing if p.validity is not None else []
            if failing and (strict or failed(p.validity, p.thresholds, "disqualifying")):
                checks.extend(c for c in failing if c not in checks)
                parts.append(f"{side} {p.scenario.name} failed {', '.join(failing)}")
    if parts:
        return Grades(refused=tuple(checks), reason="invalid point: " + "; ".join(parts))
    scoped = _scoped(sides)
    qual = [_breaches(base, "qualifying"), _breaches(cand, "qualifying")]
    for check in SHARED_CHECKS:
        for i, (side, points) in enumerate(sides):
            other_side, other_points = sides[1 - i]
            if check in qual[i] and check not in qual[1 - i] and _passed(other_points, check):
                return Grades(refused=(check,), reason=(
                    f"invalid point: {side} {', '.join(qual[i][check])} failed {check} and {other_side} did not: "
                    "a burst against a steady load is no comparison"))
    if not qual[0] and not qual[1]:
        return scoped
    names = [c for c in CHECK_ORDER if c in qual[0] or c in qual[1]]
    words = []
    for check in names:
        who = [f"{side} {', '.join(q[check])}" for (side, _), q in zip(sides, qual) if check in q]
        both = "both sides: " if len(who) == 2 else ""
        words.append(f"{check} ({both}{'; '.join(who)})")
    return replace(scoped, qualified=tuple(names), qualification="qualified: " + "; ".join(words))


def invalid_verdict(checks: Sequence[str]) -> str:
    """`not comparable (invalid: <checks>)`."""
    return f"not comparable (invalid: {', '.join(checks)})"


def _stat_test(label: str, metric: MetricName, outcome: stats.Outcome, caveat: Optional[str],
               grades: Grades = Grades()) -> StatTest:
    if outcome.verdict is None:
        raise ValueError(f"{label} {metric}: outcome has no verdict (not decided)")
    reason = outcome.reason
    if caveat:
        reason = f"{reason}; {caveat}" if reason else caveat
    invalid = grades.refused
    return StatTest(
        qualified=list(grades.qualified), qualification=grades.qualification,  # type: ignore[arg-type]
        run=label, metric=metric, test=outcome.test, verdict=invalid_verdict(invalid) if invalid else outcome.verdict,
        p_value=outcome.p_adjusted, p_raw=outcome.p_raw, ratio=_finite(outcome.ratio),
        ci_low=_finite(outcome.ci_low), ci_high=_finite(outcome.ci_high),
        n_baseline=outcome.n_baseline, n_candidate=outcome.n_candidate,
        baseline_value=outcome.baseline_value, candidate_value=outcome.candidate_value, reason=reason,
        mdc=outcome.mdc, df=outcome.df if outcome.df is not None and math.isfinite(outcome.df) else None,
    )


Pending = tuple[int, MetricName, Union[stats.Outcome, pooled.Repeats], Optional[str], Grades]


def _repeat_values(scenarios: Sequence[Scenario], metric: MetricName, recomputed: bool) -> np.ndarray:
    """A repeat metric's known values; one judged against another SLO than the comparison's (goodput) is unknown."""
    if metric_row(metric).slo_dependent and recomputed:
        return np.zeros(0)
    return np.array([v for s in scenarios if (v := getattr(s, metric)) is not None], dtype=float)


def run_accelerators(run: RunData) -> Optional[int]:
    """The accelerators that served a run's scenarios (`scenarios[].accelerators`); None when unknown or mixed."""
    counts = {s.accelerators for s in run.results.scenarios}
    return counts.pop() if len(counts) == 1 else None


def devices_differ(runs: Sequence[RunData]) -> Optional[str]:
    """`whole-server throughput is not compared: …` when the runs' accelerator counts are known and differ; None
    otherwise (an unknown count compares whole servers, as before counts were recorded)."""
    counts = [run_accelerators(r) for r in runs]
    if None in counts or len(set(counts)) < 2:
        return None
    shown = " vs ".join(map(str, counts))
    divided = and_words([metric_row(m).words for m in COMPARED
                         if metric_row(m).scales_with_devices and m not in _REPLACED])
    return (f"accelerator counts differ ({shown}): whole-server throughput is not compared; the verdicts are on "
            f"output throughput per accelerator, on the {divided} per accelerator (each side's values / its "
            "accelerators) and on energy per output token")


# whole-server rows that a per-accelerator row of their own replaces across accelerator counts
_REPLACED = {row.per_accel_of for row in map(metric_row, COMPARED) if row.per_accel_of}


def _repeat_metrics(per_device: bool) -> tuple[str, ...]:
    """The per-repeat tests: a whole-server row with a per-accelerator row of its own is replaced by it when the
    device counts differ; the per-accelerator rows are left out when they do not (the same test)."""
    if per_device:
        return tuple(m for m in PER_REPEAT_COMPARED if m not in _REPLACED)
    return tuple(m for m in PER_REPEAT_COMPARED if not metric_row(m).per_accel_of)


def _devices(run: RunData, metric: str, per_device: bool) -> float:
    """What a metric's values of a run are divided by: its accelerators for a row that scales with the devices when
    the counts differ (judged per accelerator, never whole-server), else 1."""
    if per_device and metric_row(metric).scales_with_devices:
        return float(run_accelerators(run) or 1)
    return 1.0


def _per_accel_caveat(caveat: Optional[str], base: float, cand: float) -> Optional[str]:
    if base == cand == 1.0:
        return caveat
    note = f"per accelerator: values / {base:g} vs / {cand:g} accelerators"
    return f"{caveat}; {note}" if caveat else note


def _group_outcomes(runs: Sequence[RunData], group: Group, options: CompareOptions,
                    judged: Sequence[Sequence[Judged]], recompute: Sequence[bool],
                    prompts: Optional[str] = None, per_device: bool = False) -> list[Pending]:
    """Undecided outcomes of one group: (candidate run index, metric, outcome, caveat, validity grades).

    A disqualified point of either side (with --strict: any failed check) makes the group's tests not
    comparable; qualifying breaches qualify them.
    """
    base_run = runs[0]
    base_members = group.members[0]
    base_scen = [base_run.results.scenarios[j] for j in base_members]
    out: list[Pending] = []
    for ci in range(1, len(runs)):
        cand_run = runs[ci]
        cand_members = group.members[ci]
        cand_scen = [cand_run.results.scenarios[j] for j in cand_members]
        difference = _parameter_difference(base_scen, cand_scen)
        invalid = _grades([judged[0][j] for j in base_members], [judged[ci][j] for j in cand_members], options.strict)
        if invalid.reason:
            difference = invalid.reason
        if prompts and not options.allow_prompt_difference:
            difference = difference or f"{prompts}: pass --allow-prompt-difference to compare anyway"
        capped = any(base_run.samples[j].capped for j in base_members) or any(
            cand_run.samples[j].capped for j in cand_members)
        caveat = "per-request data capped (first requests only)" if capped else None
        if prompts and options.allow_prompt_difference:
            caveat = f"{caveat}; {prompts}" if caveat else prompts
        repeated = len(base_members) > 1 or len(cand_members) > 1  # the repeat is then the unit of every test
        outcome: Union[stats.Outcome, pooled.Repeats]
        for metric in PER_REQUEST_COMPARED:
            base_pool, cand_pool = pool(base_run, base_members, metric), pool(cand_run, cand_members, metric)
            if metric_row(metric).origin == "sskj" and not base_pool.size and not cand_pool.size:
                continue  # computed on neither side (no per-request data): no test to report
            base_n, cand_n = _devices(base_run, metric, per_device), _devices(cand_run, metric, per_device)
            refusal = difference or invalid.of(metric).reason
            if refusal:
                outcome = stats.not_comparable(pooled.MODERATED_MEANS if repeated else stats.MANN_WHITNEY,
                                               refusal)
            elif repeated:
                outcome = pooled.per_request_repeats(
                    [base_run.samples[j].metric(metric) / base_n for j in base_members],
                    [cand_run.samples[j].metric(metric) / cand_n for j in cand_members])
            else:
                outcome = stats.compare_latency(
                    base_pool / base_n, cand_pool / cand_n, alpha=options.alpha, n_resamples=options.n_resamples,
                    confidence=options.confidence, seed=options.seed, unit=metric_row(metric).unit,
                )
            out.append((ci, metric, outcome, _per_accel_caveat(caveat, base_n, cand_n), invalid.of(metric)))
        if repeated or per_device:  # across chips: a verdict, even on one run
            for repeat_metric in _repeat_metrics(per_device):
                base_n, cand_n = _devices(base_run, repeat_metric, per_device), _devices(cand_run, repeat_metric,
                                                                                       per_device)
                base_values = _repeat_values(base_scen, repeat_metric, recompute[0]) / base_n
                cand_values = _repeat_values(cand_scen, repeat_metric, recompute[ci]) / cand_n
                if metric_row(repeat_metric).origin == "sskj" and not base_values.size and not cand_values.size:
                    continue  # measured on neither side (no per-request data): no test to report
                test = pooled.MODERATED if repeated else stats.WELCH
                refusal = difference or invalid.of(repeat_metric).reason
                if refusal:
                    outcome = stats.not_comparable(test, refusal)
                elif repeated:
                    outcome = pooled.repeats(test, base_values, cand_values)
                else:
                    outcome = stats.compare_means_welch(base_values, cand_values, confidence=options.confidence)
                out.append((ci, repeat_metric, outcome, _per_accel_caveat(None, base_n, cand_n),
                            invalid.of(repeat_metric)))
    return out


# speculative methods' usual spelling; the engines' words come from their rows' labels (catalog/engines.py)
METHOD_LABELS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "MTP"}
PRETTY = {**label_words(), **METHOD_LABELS}
CONFIGURATIONS_DIFFER = "(configurations differ)"


def pretty(name: str) -> str:
    """`vllm-dspark` -> `vLLM-DSpark`: known engine and method words in their usual spelling."""
    return "-".join(PRETTY.get(part.lower(), part) for part in name.split("-"))


def display_names(runs: Sequence[RunData], labels: Sequence[str]) -> list[str]:
    """Seed-002 names (`SGLang`, `vLLM`; `DSpark` for an engine named after its method, `vllm-dspark`;
    a speculative run whose engine does not name its method gets ` + <method>`) when the runs are one model with and without a speculative variant and the names
    tell the runs apart; else the labels."""
    if not one_model_with_speculative_variant(runs):
        return list(labels)
    names = []
    for run, label in zip(runs, labels):
        name = pretty(label.split(" (")[0])
        method = run.results.config.spec_method
        engine_words = run.engine.lower().split("-")
        if is_speculative(run) and method and method.lower() not in engine_words:
            name += f" + {pretty(method)}"
        elif is_speculative(run) and method and len(engine_words) > 1 and label.split(" (")[0] == run.engine:
            name = pretty(method)  # vllm-dspark running dspark: the team says "DSpark"
        names.append(name)
    return names if len(set(names)) == len(names) else list(labels)


def default_title(runs: Sequence[RunData], labels: Sequence[str], matrix: Optional[str] = None) -> str:
    """`<A> vs <B> vs <C> [<matrix name>] (<hardware>)`, the hardware when every run records the same."""
    hardware = {r.results.metadata.hardware for r in runs}
    title = " vs ".join(display_names(runs, labels))
    if matrix:
        title += f" {matrix}"
    if len(hardware) == 1 and None not in hardware:
        title += f" ({hardware.pop()})"
    counts = [run_accelerators(r) for r in runs]
    if None not in counts and len(set(counts)) > 1:
        title += " (" + " vs ".join(map(str, counts)) + " accelerators)"
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

    judged = [judge_points(run, options.validity) for run in runs]
    compared, differences = config_differences(runs, labels)
    prompts = prompt_refusal(differences)
    per_device = devices_differ(runs)
    pending: list[tuple[int, int, MetricName, stats.Outcome, Optional[str], Grades]] = []
    found = [(gi, found) for gi, group in enumerate(groups)
             for found in _group_outcomes(runs, group, options, judged, recompute, prompts, per_device is not None)]
    tested = pooled.pool([((ci, metric), item) for _, (ci, metric, item, _, _) in found], confidence=options.confidence)
    for (gi, (ci, metric, _, caveat, invalid)), outcome in zip(found, tested):
        pending.append((gi, ci, metric, outcome, caveat, invalid))
    same = [(p[0], p[1], pooled.source(p[2])) for p in pending]  # a derived metric's test with its source's p: once
    decided = stats.decide([p[3] for p in pending], [metric_row(p[2]).higher_is_better for p in pending],
                           alpha=options.alpha, min_change=options.min_change, same=same)
    tests_by_group: dict[int, list[StatTest]] = {}
    for (gi, ci, metric, _, caveat, invalid), outcome in zip(pending, decided):
        tests_by_group.setdefault(gi, []).append(_stat_test(labels[ci], metric, outcome, caveat, invalid))

    scenarios = []
    speculative = [is_speculative(run) for run in runs]
    for gi, group in enumerate(groups):
        rows = [
            table_row(run, labels[ri], run.results.scenarios[j],
                      scenario_status(run.results.scenarios[j], spec, recompute[ri]), recompute[ri], speculative[ri])
            for ri, run in enumerate(runs) for j in group.members[ri]
        ]
        if options.validity:
            points = [judged[ri][j] for ri in range(len(runs)) for j in group.members[ri]]
            rows = [r.model_copy(update={"validity": p.validity, **graded(p.validity, p.thresholds)})
                    for r, p in zip(rows, points)]
        bounds = draft_bounds(runs, labels, group.members)
        scenarios.append(ScenarioComparison(
            name=group.name, concurrency=group.key[0] or None, input_len=group.key[1], output_len=group.key[2],
            rows=rows, tests=with_bound_caveats(tests_by_group.get(gi, []), bounds, labels[0]), draft_bounds=bounds,
        ))

    infos = []
    names = display_names(runs, labels)
    for i, (run, label) in enumerate(zip(runs, labels)):
        meta, config = run.results.metadata, run.results.config
        infos.append(RunInfo(
            label=label, path=run.path, baseline=i == 0, engine=run.engine, chip=run.chip, hardware=meta.hardware,
            model=meta.model, experiment=meta.experiment, run_id=meta.run_id, phase=meta.phase, client=meta.client,
            git_commit=meta.git_commit, spec_method=config.spec_method, spec_tokens=config.spec_tokens,
            recorded_slo=run.results.slo, slo_recomputed=recompute[i], display_name=names[i],
            speculative_flags=speculative_flags(server_command(config), meta.model) if is_speculative(run) else None,
        ))
    differ = any(not d.expected for d in differences)
    title = options.title or default_title(runs, labels, options.matrix)
    return ComparisonDoc(
        title=f"{title} {CONFIGURATIONS_DIFFER}" if differ else title,
        compared=compared, config_differences=differences, configurations_differ=differ,
        baseline=labels[0], runs=infos, slo=spec,
        settings=Settings(
            alpha=options.alpha, min_change=options.min_change, confidence=options.confidence,
            bootstrap_resamples=options.n_resamples, seed=options.seed,
            family_size=stats.family_size(same, decided),
            validity=list(options.validity), strict=options.strict,
            run_to_run=run_to_run(groups),
        ),
        scenarios=scenarios, unmatched=unmatched, itl_not_comparable=itl_note(runs, labels),
        draft_bound_unpaired=unpaired(runs, labels),
        throughput_basis=per_device,
    )


def run_to_run(groups: Sequence[Group]) -> RunToRun:
    """`tested`: every matched shape was repeated on some side (the repeat is the unit of its tests);
    `ignored`: none was (per-request tests within one run); `partly`: some were."""
    repeated = [any(len(m) > 1 for m in g.members) for g in groups]
    if repeated and all(repeated):
        return "tested"
    return "partly" if any(repeated) else "ignored"


def judge_points(run: RunData, overrides: Sequence[str] = ()) -> list[Judged]:
    """Every scenario of a run with its thresholds (recorded, then `--validity` overrides) and its validity
    (judged again from the recorded values when there are overrides)."""
    recorded = run.results.validity_thresholds
    thresholds = parse_thresholds(overrides, recorded) or DEFAULT_THRESHOLDS
    return [Judged(s, regrade(s.validity, s, thresholds) if overrides else s.validity, thresholds)
            for s in run.results.scenarios]


# --------------------------------------------------------------------------- run order


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


