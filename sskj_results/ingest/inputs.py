"""The per-request inputs the metric registry reads from a raw file's own per-request lists (contract/metrics.py:
READ_INPUTS): one column each, in the column's unit, for ingest/readers.py's per-request details."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contract.metrics import READ_INPUTS


def read_inputs(data: dict[str, Any], n: int) -> dict[str, np.ndarray]:
    """The per-request inputs the registry reads from raw lists (contract/metrics.py: READ_INPUTS), each from the
    first of its lists the run has, scaled to its column's unit (and from its earliest value when `relative`);
    a value that is no number is unknown (NaN), and a list of another length than the run's requests is not read:
    the metrics that need it are unknown, the run is imported as before."""
    found: dict[str, np.ndarray] = {}
    for r in READ_INPUTS:
        values = next((data[k] for k in r.raw if isinstance(data.get(k), list)), None)
        if values is None or len(values) != n:
            continue
        try:  # numbers and nulls (NaN) in one pass
            column = np.array(values, dtype=np.float64)
        except (TypeError, ValueError):
            column = np.array([v if isinstance(v, (int, float)) else np.nan for v in values], dtype=np.float64)
        if column.ndim != 1:
            continue
        column[~np.isfinite(column)] = np.nan
        if r.relative and np.isfinite(column).any():
            column = column - np.nanmin(column)
        found[r.name] = column * r.scale
    return found

