"""Energy of a scenario from power samples, and the figures per accelerator (docs/METRICS.md#energy).

Pure: arrays and numbers in, numbers and reasons out; no I/O (ingest/power.py reads the samplers' logs).

Energy is the integral of each served device's power over the benchmark window (trapezoids between samples,
the power at the window's edges interpolated), summed over the devices that served the phase. It is unknown,
with the reason, unless the samples are fit for it: every served device has samples on or before the window's
start and on or after its end, no two consecutive samples of a device within the window lie more than
`MAX_GAP_S` apart, and every sample of a served device inside the window reports its power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

MAX_GAP_S = 5.0  # longest gap between two samples of a device inside the window (the run loop samples every 1 s)
J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class PowerSamples:
    """Samples of one sampler: seconds since the epoch, device index and power (W; NaN: not reported) per sample."""

    sampler: str  # nvidia-smi, xpu-smi
    times: np.ndarray
    devices: np.ndarray
    power_w: np.ndarray


@dataclass(frozen=True)
class Energy:
    """A scenario's energy, or why it is unknown."""

    energy_j: Optional[float]
    reason: Optional[str]  # why energy_j is None
    devices: tuple[int, ...]  # the devices counted (served), sorted
    max_gap_s: Optional[float]  # the longest gap between samples of a counted device within the window
    samples: int  # samples of the counted devices inside the window (edges included)


def _device_energy(t: np.ndarray, p: np.ndarray, start: float, end: float) -> float:
    """Trapezoid integral of p(t) over [start, end]; t sorted, brackets the window, p finite."""
    inside = (t > start) & (t < end)
    ts = np.concatenate(([start], t[inside], [end]))
    ps = np.concatenate(([np.interp(start, t, p)], p[inside], [np.interp(end, t, p)]))
    return float(np.sum((ts[1:] - ts[:-1]) * (ps[1:] + ps[:-1])) / 2.0)


def window_energy(samples: PowerSamples, start: float, end: float, served: Sequence[int],
                  max_gap_s: float = MAX_GAP_S) -> Energy:
    """Energy (J) of the served devices over [start, end] (seconds since the epoch), or None with the reason."""
    devices = tuple(sorted(set(int(d) for d in served)))
    if not devices:
        return Energy(None, "which devices served the phase is unknown", devices, None, 0)
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return Energy(None, "the benchmark window is empty or unknown", devices, None, 0)
    order = np.lexsort((samples.times, samples.devices))
    dev, t, p = samples.devices[order], samples.times[order], samples.power_w[order]
    bounds = np.searchsorted(dev, np.array(devices), side="left"), np.searchsorted(dev, np.array(devices), side="right")
    total, worst, count = 0.0, 0.0, 0
    missing = [d for d, lo, hi in zip(devices, *bounds) if hi == lo]
    if missing:
        return Energy(None, f"device(s) {', '.join(map(str, missing))} served the phase but were not sampled "
                      f"({samples.sampler})", devices, None, 0)
    for d, lo, hi in zip(devices, *bounds):
        td, pd = t[lo:hi], p[lo:hi]
        if td[0] > start:
            return Energy(None, f"device {d}: samples start {td[0] - start:.1f} s after the benchmark window",
                          devices, None, 0)
        if td[-1] < end:
            return Energy(None, f"device {d}: samples end {end - td[-1]:.1f} s before the benchmark window ends",
                          devices, None, 0)
        first = int(np.searchsorted(td, start, side="right")) - 1  # last sample on or before the start
        last = int(np.searchsorted(td, end, side="left"))  # first sample on or after the end
        tw, pw = td[first:last + 1], pd[first:last + 1]
        gap = float(np.max(np.diff(tw))) if tw.size > 1 else 0.0
        worst = max(worst, gap)
        if gap > max_gap_s:
            return Energy(None, f"device {d}: a gap of {gap:.1f} s between power samples (limit {max_gap_s:g} s)",
                          devices, worst, 0)
        if not np.all(np.isfinite(pw)):
            return Energy(None, f"{samples.sampler} reported no power for device {d}", devices, worst, 0)
        total += _device_energy(tw, pw, start, end)
        count += int(tw.size)
    return Energy(total, None, devices, worst, count)


def per_accelerator(value: Optional[float], accelerators: Optional[int]) -> Optional[float]:
    """A whole-server figure divided by the accelerators that served it; None when either is unknown."""
    if value is None or not accelerators:
        return None
    return value / accelerators


def interactivity(tpot_mean_ms: Optional[float]) -> Optional[float]:
    """Tokens per second a user sees: 1000 / TPOT mean (ms); None when unknown or not positive."""
    if tpot_mean_ms is None or not math.isfinite(tpot_mean_ms) or tpot_mean_ms <= 0:
        return None
    return 1000.0 / tpot_mean_ms


def per_output_token(energy_j: Optional[float], output_tokens: Optional[float]) -> tuple[Optional[float], Optional[float]]:
    """(J per output token, output tokens per kWh); None when energy or a positive token count is unknown."""
    if energy_j is None or not output_tokens or output_tokens <= 0 or energy_j <= 0:
        return None, None
    return energy_j / output_tokens, output_tokens * J_PER_KWH / energy_j


def cost_per_million(price_per_accel_hour: Optional[float], accelerators: Optional[int],
                     output_throughput: Optional[float]) -> Optional[float]:
    """The user's price per accelerator-hour -> price per million output tokens at this throughput."""
    if price_per_accel_hour is None or not accelerators or not output_throughput or output_throughput <= 0:
        return None
    return price_per_accel_hour * accelerators / (output_throughput * 3600.0) * 1e6
