"""The objects a metric of the registry is recorded as besides a number (contract/metrics.py): a distribution over
requests (`summary="distribution"`), a window of the run (`summary="window"`), and the fields of results.json and
comparison.json each row adds."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from pydantic import Field

from .base import _Model
from .metrics import Metric


class Distribution(_Model):
    """Statistics of a per-request metric sskj computes, in the metric's unit (contract/metrics.py, docs/METRICS.md)."""

    mean: Optional[float] = Field(description="Arithmetic mean.")
    p50: Optional[float] = Field(description="50th percentile (median), numpy linear interpolation.")
    p90: Optional[float] = Field(description="90th percentile, numpy linear interpolation.")
    p95: Optional[float] = Field(description="95th percentile, numpy linear interpolation.")
    p99: Optional[float] = Field(description="99th percentile, numpy linear interpolation.")
    std: Optional[float] = Field(description="Population standard deviation (ddof 0).")
    count: int = Field(ge=0, description="Number of requests behind the statistics (0: none, every statistic null).")


class Window(_Model):
    """The part of a scenario's run a metric is measured over (its definition says which: docs/METRICS.md)."""

    start_s: float = Field(ge=0, description="Where the window starts, seconds after the scenario's first request "
                                             "was sent.")
    length_s: float = Field(ge=0, description="The window's length, s.")
    share: float = Field(ge=0, le=1, description="The window's length over the run's: from the first request sent "
                                                 "to the last one finished.")


def metric_fields(rows: Iterable[Metric], annotation: Any, default: Any = ...) -> dict[str, Any]:
    """Fields for `create_model`, one per registry row, each with the row's description."""
    return {m.name: (annotation, Field(default=default, description=m.description)) for m in rows}


def window_fields(rows: Iterable[Metric]) -> dict[str, Any]:
    """Fields for `create_model` of each window row (`summary="window"`): its value (`<name>`, null when unknown)
    and its window (`<name>_window`)."""
    fields: dict[str, Any] = {}
    for m in rows:
        fields[m.name] = (Optional[float], Field(default=None, ge=0, description=m.description))
        fields[f"{m.name}_window"] = (Optional[Window], Field(
            default=None, description=f"The window `{m.name}` is measured over; null when it is unknown."))
    return fields


def window_record(name: str, found: Any) -> dict[str, Any]:
    """A window row's two fields from its computation's result (analysis/metrics.py: WindowValue; None: unknown)."""
    if found is None:
        return {name: None, f"{name}_window": None}
    return {name: found.value, f"{name}_window": Window(start_s=found.start_s, length_s=found.length_s,
                                                       share=found.share)}
