"""How many repeats a stated change needs, at the run-to-run noise past runs of the setup showed
(`sskj-results compare --plan CHANGE RUN_DIR...`). Pure: loaded runs in, lines out; no I/O.

Per metric, the log of each repeat's value (the trimmed geometric mean of its requests, or its throughput)
about its shape's mean, pooled over every repeated shape of every given run: one run-to-run variance s² with its degrees of
freedom (the noise model of docs/COMPARE.md with the prior's d0 infinite). A future comparison of the same
grid with n repeats per side has se = s * sqrt(2 / n) and, pooled over its scenarios, scenarios * (2n - 2)
degrees of freedom; it finds a change c with 80 % power when its minimum detectable change (Holm's threshold
for a lone change among shapes x metrics hypotheses, beyond --min-change) is at most c.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..contract.metrics import PER_REQUEST_COMPARED, metric
from .rundata import RunData
from .pooled import source, trimmed_log_mean
from .stats import minimum_detectable_change

PLANNED = PER_REQUEST_COMPARED + ("output_token_throughput",)
MAX_REPEATS = 20


@dataclass(frozen=True)
class Plan:
    """The repeats one metric needs: None when even MAX_REPEATS do not reach the change."""

    metric: str
    sd: float  # run-to-run standard deviation of a repeat's log value (0.03 ~ 3 %)
    df: int  # its degrees of freedom (repeats less shapes, summed)
    shapes: int  # repeated shapes it was measured on
    repeats: Optional[int]
    mdc: float  # the MDC at `repeats` (or at MAX_REPEATS)


def _repeat_values(run: RunData, members: Sequence[int], name: str) -> np.ndarray:
    if name in PER_REQUEST_COMPARED:  # compare's estimator: a repeat's trimmed geometric mean (pooled)
        values = [math.exp(trimmed_log_mean(v)) for j in members
                  if (v := run.samples[j].metric(name)).size and v.min() > 0]
    else:
        values = [float(v) for j in members if (v := getattr(run.results.scenarios[j], name)) is not None]
    return np.array([v for v in values if v > 0], dtype=float)


def plan_repeats(runs: Sequence[RunData], change: float, *, alpha: float, min_change: float) -> list[Plan]:
    """Per metric measured with repeats in the runs, the repeats a comparison of their grid needs to find
    `change` (a fraction) with 80 % power; empty when no shape was repeated."""
    from .compare import shape_key  # the matching key of compare

    ss: dict[str, float] = {}
    dfs: dict[str, int] = {}
    shapes: dict[str, set[tuple[int, int, int, float]]] = {}
    grid: set[tuple[int, int, int, float]] = set()
    for run in runs:
        by_shape: dict[tuple[int, int, int, float], list[int]] = {}
        for j, s in enumerate(run.results.scenarios):
            by_shape.setdefault(shape_key(s), []).append(j)
        grid.update(by_shape)
        for key, members in by_shape.items():
            for name in PLANNED:
                logs = np.log(_repeat_values(run, members, name))
                if logs.size < 2:
                    continue
                ss[name] = ss.get(name, 0.0) + float(((logs - logs.mean()) ** 2).sum())
                dfs[name] = dfs.get(name, 0) + logs.size - 1
                shapes.setdefault(name, set()).add(key)
    family = max(len(grid), 1) * len({source(m) for m in PLANNED})  # the prefill rate is TTFT's hypothesis
    plans = []
    for name in PLANNED:
        if not dfs.get(name):
            continue
        sd = math.sqrt(ss[name] / dfs[name])
        needed, mdc = None, math.inf
        for n in range(2, MAX_REPEATS + 1):
            mdc = minimum_detectable_change(sd * math.sqrt(2 / n), max(len(grid), 1) * (2 * n - 2),
                                            alpha=alpha / family, min_change=min_change) if sd > 0 else min_change
            if mdc <= change:
                needed = n
                break
        plans.append(Plan(name, sd, dfs[name], len(shapes[name]), needed, mdc))
    return plans


def plan_lines(plans: Sequence[Plan], change: float, runs: int) -> list[str]:
    """The plan in words, one line per metric."""
    if not plans:
        return [f"no shape was repeated in the {runs} run(s): their run-to-run noise is unknown; "
                "measure with REPEATS=3 at least once to plan"]
    lines = []
    for p in plans:
        noise = (f"{metric(p.metric).label}: run-to-run noise {p.sd * 100:.1f} % a repeat "
                 f"({p.df} degrees of freedom over {p.shapes} shape(s) of {runs} run(s))")
        if p.repeats is None:
            lines.append(f"{noise}; {MAX_REPEATS} repeats per side do not find a {change * 100:g} % change "
                         f"with 80 % power (MDC {p.mdc * 100:.1f} %)")
        else:
            lines.append(f"{noise}; REPEATS={p.repeats} finds a {change * 100:g} % change with 80 % power "
                         f"(MDC {p.mdc * 100:.1f} %)")
    return lines
