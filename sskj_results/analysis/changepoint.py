"""The maths of history's change-point rule on one series of log values (docs/HISTORY.md). Pure: arrays in, arrays out.

* ``outlier_mask``: single-run outliers, runs that differ from the median of up to ``reach`` runs before them
  **and** from the median of up to ``reach`` runs after them, in the same direction, by more than a threshold;
* ``scan``: for every boundary ``b`` of the values left (run ``b`` the first after it), the windows of up to
  ``window`` values before it (none before ``start``) and from it on, their means and medians, and Student's t of
  the difference of means with the pooled standard deviation of the two windows about their own means: the noise
  of the runs either side, without the step between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def sliding_medians(z: np.ndarray, full: int) -> Optional[np.ndarray]:
    """median(z[i:i + full]) for every i (None when z is shorter than `full`)."""
    return np.median(sliding_window_view(z, full), axis=1) if z.size >= full and full > 0 else None


def _window_medians(z: np.ndarray, lo: np.ndarray, hi: np.ndarray, full: int,
                    medians: Optional[np.ndarray] = None) -> np.ndarray:
    """median(z[lo[i]:hi[i]]) for every i; windows of length `full` read from the sliding medians (`medians`, when
    given, those of z), the others one by one."""
    out = np.full(lo.size, np.nan)
    sizes = hi - lo
    if medians is None:
        medians = sliding_medians(z, full)
    if medians is not None:
        whole = sizes == full
        out[whole] = medians[lo[whole]]
    for i in np.flatnonzero((sizes != full) & (sizes > 0)):
        out[i] = np.median(z[lo[i]:hi[i]])
    return out


def _apart(d1: np.ndarray, d2: np.ndarray, threshold: float) -> np.ndarray:
    return ((d1 > threshold) & (d2 > threshold)) | ((d1 < -threshold) & (d2 < -threshold))


def outlier_mask(y: np.ndarray, threshold: float, reach: int = 3) -> np.ndarray:
    """True at the runs that stand apart, in the same direction by more than `threshold`, from the median of up to
    `reach` runs before them and from the median of up to `reach` runs after them; the first run from the median of
    the runs after it and from the second run (too early for a step: a change needs runs before it). The last run
    never (see `last_apart`). A step is no outlier: its first run agrees with the runs after it; nor is the middle
    of three or more runs apart the same way (an excursion, not a single run)."""
    n = y.size
    out = np.zeros(n, dtype=bool)
    if n < 3:
        return out
    idx = np.arange(1, n - 1)
    before = _window_medians(y, np.maximum(idx - reach, 0), idx, reach)
    after = _window_medians(y, idx + 1, np.minimum(idx + 1 + reach, n), reach)
    # the middle of three or more runs apart the same way is no single-run outlier: its neighbours stand apart too
    up = (y[idx - 1] - before > threshold) & (y[idx + 1] - after > threshold)
    down = (y[idx - 1] - before < -threshold) & (y[idx + 1] - after < -threshold)
    out[idx] = _apart(y[idx] - before, y[idx] - after, threshold) & ~(up | down)
    out[0] = bool(_apart(np.array([y[0] - np.median(y[1:1 + reach])]), np.array([y[0] - y[1]]), threshold)[0])
    return out


def last_apart(y: np.ndarray, threshold: float, reach: int = 3) -> bool:
    """The last run stands apart from the median of up to `reach` runs before it and from the run before it: a step
    or a single-run outlier, which only the next run can tell."""
    if y.size < 3:
        return False
    return bool(_apart(np.array([y[-1] - np.median(y[-1 - reach:-1])]), np.array([y[-1] - y[-2]]), threshold)[0])


@dataclass
class Scan:
    """Per boundary b (index into the values): the windows [lo, b) and [b, hi), their sizes, the difference of their
    means and medians (after - before), the pooled standard deviation and t. NaN where a window is too short."""

    lo: np.ndarray
    hi: np.ndarray
    n1: np.ndarray
    n2: np.ndarray
    d_mean: np.ndarray
    d_median: np.ndarray
    sd: np.ndarray
    t: np.ndarray


def scan(z: np.ndarray, start: int, window: int, min_before: int, min_after: int,
         within: Optional[float] = None, medians: Optional[np.ndarray] = None) -> Scan:
    """Every boundary from start + min_before to len(z) - min_after; the others are NaN. `medians`: z's
    sliding medians of `window` values, when already known."""
    m = z.size
    b = np.arange(m)
    lo = np.maximum(b - window, start)
    hi = np.minimum(b + window, m)
    n1, n2 = b - lo, hi - b
    ok = (n1 >= min_before) & (n2 >= min_after) & (b >= start)
    zc = z - (float(np.median(z)) if m else 0.0)  # centred: sums of squares without cancellation
    s = np.r_[0.0, np.cumsum(zc)]
    q = np.r_[0.0, np.cumsum(zc * zc)]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean1 = (s[b] - s[lo]) / n1
        mean2 = (s[hi] - s[b]) / n2
        ss = np.clip(q[b] - q[lo] - n1 * mean1 ** 2, 0.0, None) + np.clip(q[hi] - q[b] - n2 * mean2 ** 2, 0.0, None)
        sd = np.sqrt(ss / (n1 + n2 - 2))
        if within:
            sd = np.maximum(sd, within)
        d_mean = mean2 - mean1
        t = d_mean / (sd * np.sqrt(1.0 / n1 + 1.0 / n2))
    d_median = np.full(m, np.nan)
    if ok.any():
        sel = np.flatnonzero(ok)
        if medians is None:
            medians = sliding_medians(z, window)
        d_median[sel] = (_window_medians(z, sel, hi[sel], window, medians)
                         - _window_medians(z, lo[sel], sel, window, medians))
    nan = ~ok
    for arr in (d_mean, sd, t):
        arr[nan] = np.nan
    return Scan(lo, hi, n1, n2, d_mean, d_median, sd, t)

