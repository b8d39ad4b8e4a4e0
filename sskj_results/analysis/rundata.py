"""A loaded run as the analysis and rendering layers see it.

`RunData` holds a run's results (per-request lists released) and per scenario
the arrays of its successful requests; plus the helpers every view of runs
shares: labels, the reference SLO, marks, and a table row per scenario.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ..contract.comparison_models import Row
from ..contract.errors import ResultsError
from ..contract.io import load_run
from ..contract.figures import window_record
from ..contract.metrics import CHIP_NAMES, METRICS, REQUEST_COLUMNS, SECTION_METRICS, WINDOW_METRICS, Metric, metric
from ..contract.models import (
    Distribution, RawRequest, Results, Scenario, SloSpec, SloStatus, Validity, ValidityThresholds,
)
from .metrics import derived_values, fixed_slots, summarize, window_value
from .grades import breaches, grade_of, partial_breaches, unreliable_of
from .slo import resolve_slo, slo_status

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class RequestSamples:
    """Per-request values of the successful requests of one scenario, by metric name (contract/metrics.py):
    every distribution of the registry with a per-request value, in its unit (ms, tok/s). A metric sskj
    derives (`derive`) is computed from `columns` when first asked for."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    recorded: int = 0
    failed: int = 0
    capped: bool = False
    first_error: Optional[str] = None
    columns: Mapping[str, np.ndarray] = field(default_factory=dict)

    def knows(self, m: Metric) -> bool:
        """The scenario's raw_requests recorded every per-request input the metric reads (`inputs`) for some
        successful request: a run parsed before an input existed knows nothing of the metrics that read it."""
        return all(name in self.columns and bool(np.isfinite(self.columns[name]).any()) for name in m.inputs)

    def metric(self, name: str) -> np.ndarray:
        """The values of that metric (empty when the scenario has none)."""
        found = self.values.get(name)
        if found is None:
            derive = metric(name).derive
            found = derived_values(derive, self.columns) if derive and self.columns else _EMPTY
            self.values[name] = found
        return found


_EMPTY = np.zeros(0)


def _column(requests: Sequence[RawRequest], attr: str) -> np.ndarray:
    """One field of every request as floats, NaN where unknown (a negative count is unknown too)."""
    values = np.array([getattr(r, attr) for r in requests], dtype=float)  # None -> NaN
    return np.where(values < 0, np.nan, values) if attr.endswith("_tokens") else values


def request_samples(scenario: Scenario) -> RequestSamples:
    """Arrays of the successful requests' per-request metrics (missing values dropped per metric)."""
    ok = [r for r in scenario.raw_requests if r.success]
    first_error = next((r.error or "(no error text)" for r in scenario.raw_requests if not r.success), None)

    def column(attr: str) -> np.ndarray:
        return np.fromiter((v for r in ok if (v := getattr(r, attr)) is not None), dtype=float)

    values = {m.name: column(m.request_field) for m in METRICS if m.request_field and m.compared}
    columns = {name: _column(ok, name) for name in REQUEST_COLUMNS} if ok else {}
    return RequestSamples(
        values=values, recorded=len(scenario.raw_requests), failed=len(scenario.raw_requests) - len(ok),
        capped=scenario.raw_requests_capped, first_error=first_error, columns=columns,
    )


@dataclass
class RunData:
    """A loaded run: its results (per-request lists dropped) and per-scenario arrays."""

    path: str
    results: Results
    samples: list[RequestSamples] = field(default_factory=list)
    _positions: dict[int, int] = field(default_factory=dict, repr=False, compare=False)

    def samples_of(self, scenario: Scenario) -> Optional[RequestSamples]:
        """The per-request arrays of one of this run's scenarios (None for a scenario of another run)."""
        if not self._positions:
            self._positions.update((id(s), i) for i, s in enumerate(self.results.scenarios))
        i = self._positions.get(id(scenario))
        return self.samples[i] if i is not None and i < len(self.samples) else None

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

_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[Any, ...]:
    """A scenario name's sort key with its numbers compared as numbers: c4_i512_o256 before c16_i512_o256."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


def in_reading_order(scenarios: Sequence[Scenario]) -> list[Scenario]:
    """Scenarios as a report lists them: by name, its numbers as numbers (concurrency, input, output, repeat)."""
    return sorted(scenarios, key=lambda s: natural_key(s.name))


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """Unique, short labels: engine; `@ chip` when chips differ; then, for runs still alike, their phase, run id
    and directory name, each added only while needed; `#N` last. Never a path: the comparison's Runs table
    (its provenance) gives each run's."""
    chips_differ = len({r.chip for r in runs}) > 1
    bases = [r.engine + (f" @ {r.chip or 'unknown chip'}" if chips_differ else "") for r in runs]
    labels = list(bases)
    added: list[list[str]] = [[] for _ in runs]

    def dups(values: list[str]) -> set[int]:
        return {i for i, v in enumerate(values) if values.count(v) > 1}

    for qualifier in (lambda r: r.results.metadata.phase, lambda r: r.results.metadata.run_id, lambda r: r.dir_name):
        clash = dups(labels)
        if not clash:
            break
        if len({qualifier(runs[i]) for i in clash}) == 1:
            continue  # the same for every run alike: tells nothing apart
        for i in clash:
            q = qualifier(runs[i])
            if q and q not in added[i]:
                added[i].append(q)
                labels[i] = f"{bases[i]} ({', '.join(added[i])})"
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

def table_row(run: RunData, label: str, scenario: Scenario, status: SloStatus, recomputed: bool = False,
              speculative: bool = False) -> Row:
    """A scenario as a table row; its goodput is null when its marks were recomputed against another SLO
    (`speculative`: the run decodes speculatively, configdiff.is_speculative)."""
    lat = scenario.latencies
    distributions: dict[str, Any] = {m.name: recorded_or_computed(run, scenario, m) for m in SECTION_METRICS}
    for m in WINDOW_METRICS:
        distributions.update(window_recorded_or_computed(run, scenario, m))
    return Row(
        run=label, engine=run.engine, chip=run.chip, scenario=scenario.name, repeat=scenario.repeat,
        concurrency=scenario.concurrency, input_len=scenario.input_len, output_len=scenario.output_len,
        request_throughput=scenario.request_throughput, output_token_throughput=scenario.output_token_throughput,
        ttft_p95_ms=lat.ttft_ms.p95, ttft_p99_ms=lat.ttft_ms.p99, tpot_mean_ms=lat.tpot_ms.mean,
        tpot_p95_ms=lat.tpot_ms.p95, tpot_p99_ms=lat.tpot_ms.p99, e2e_p99_ms=lat.e2e_ms.p99, slo_status=status,
        slo_attainment=None if recomputed else scenario.slo_attainment,
        request_goodput=None if recomputed else scenario.request_goodput,
        speculative=speculative, accept_length=scenario.accept_length, acceptance=scenario.acceptance,
        validity=scenario.validity, **graded(scenario.validity, run.results.validity_thresholds),
        prompt_source=scenario.prompt_source,
        accelerators=scenario.accelerators, **{name: getattr(scenario, name) for name in CHIP_NAMES},
        **distributions,
    )


def recorded_or_computed(run: RunData, scenario: Scenario, m: Metric) -> Optional[Distribution]:
    """A scenario distribution of the registry as recorded; a run parsed before the metric existed records none,
    then it is computed from the scenario's raw_requests (all of them: not when capped), and is unknown when they
    never recorded one of its inputs."""
    recorded = getattr(scenario, m.name)
    if recorded is not None:
        return recorded
    samples = run.samples_of(scenario)
    if samples is None or samples.capped or not samples.recorded or not samples.knows(m):
        return None
    return Distribution.model_validate(summarize(samples.metric(m.name), scale=1.0))


def window_recorded_or_computed(run: RunData, scenario: Scenario, m: Metric) -> dict[str, Any]:
    """A window row's value and window as recorded; for a run parsed before the metric existed, computed from the
    scenario's raw_requests (all of them: not when capped) when they recorded every input it reads, else unknown."""
    if getattr(scenario, m.name) is not None:
        return {m.name: getattr(scenario, m.name), f"{m.name}_window": getattr(scenario, f"{m.name}_window")}
    samples = run.samples_of(scenario)
    if samples is None or samples.capped or not samples.recorded or not samples.knows(m):
        return window_record(m.name, None)
    slots = fixed_slots(scenario.concurrency, scenario.request_rate)
    return window_record(m.name, window_value(m.derive or m.name, samples.columns, slots))


def graded(validity: Optional[Validity], thresholds: Optional[ValidityThresholds]) -> dict[str, Any]:
    """A Row's grade fields (validity_grade, qualifying, disqualifying, partial, unreliable) of a validity block."""
    qualifying, disqualifying = breaches(validity, thresholds)
    partial = partial_breaches(validity)
    return {"validity_grade": grade_of(validity, qualifying, disqualifying, partial),
            "qualifying": qualifying, "disqualifying": disqualifying, "partial": partial,
            "unreliable": unreliable_of(partial)}

def mean_known(values: Sequence[Optional[float]]) -> Optional[float]:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None
