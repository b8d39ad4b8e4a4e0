"""The metric engine: per-request latencies and their statistics. Pure numpy, no I/O.

Definitions (the reference clients' own, see docs/METRICS.md):

* statistics on seconds, then x1000: ``numpy.mean``, ``numpy.std`` (ddof 0),
  ``numpy.percentile`` with the default linear method — so values equal the
  clients' printed numbers whenever the inputs are the same;
* only successful requests enter latency statistics;
* TTFT per request as the client measured it;
* E2E per request: the client's latency when written (vLLM), else
  ``ttft + sum(itls)`` (arrival of the last streamed chunk);
* TPOT per request: ``(e2e - ttft) / (output_tokens - 1)`` for more than one output token;
* ITL: all gaps between streamed chunks of all requests, pooled;
* goodput: requests that succeeded with TTFT and TPOT strictly below the SLO's
  thresholds, as a share of all requests and as a rate over the duration;
* prefill rate per request: input tokens / TTFT (tok/s), requests with output
  whose input length and TTFT are known;
* steady-state output throughput: output tokens per second over the window in
  which every concurrency slot is busy (docs/METRICS.md).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import chain
from typing import Callable, Iterable, Mapping, Optional, Sequence

import numpy as np

STATS = ("mean", "p50", "p90", "p95", "p99", "std")
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


def summarize(seconds: np.ndarray, only: Optional[Iterable[str]] = None,
              scale: float = 1000.0) -> dict[str, Optional[float]]:
    """mean, p50, p90, p95, p99, std (ms) and count of a sample given in seconds; None when empty.

    With `only`, just those statistics are computed (the others are None): a
    percentile's value does not depend on which others are asked for. With
    `scale=1` the sample is summarised in its own unit (a rate in tok/s).
    """
    n = int(seconds.size)
    if n == 0:
        return {**{k: None for k in STATS}, "count": 0}
    wanted = STATS if only is None else frozenset(only)
    out: dict[str, Optional[float]] = {k: None for k in STATS}
    keys = [k for k in PERCENTILES if k in wanted]
    if keys:
        qs = percentiles(seconds, [PERCENTILES[k] for k in keys])
        for key, value in zip(keys, qs):
            out[key] = float(value * scale)
    if "mean" in wanted:
        out["mean"] = float(np.mean(seconds) * scale)
    if "std" in wanted:
        out["std"] = float(np.std(seconds) * scale)
    out["count"] = n
    return out


def percentiles(sample: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """``np.percentile(sample, qs)`` (linear method), the same values, from one partition of a copy.

    numpy partitions at the sample's extremes and at both neighbours of every
    percentile, one selection each: several passes over the largest sample
    (the pooled ITL gaps). Here a copy is partitioned at the lower neighbours
    only; the upper one is the least value between its lower neighbour and the
    next one, and the interpolation is numpy's own (``_lerp``). A sample that
    is not 1-d float64 or holds NaN is left to numpy.
    """
    n = int(sample.size)
    if sample.dtype != np.float64 or sample.ndim != 1 or n < 2 or bool(np.isnan(sample).any()):
        return np.asarray(np.percentile(sample, qs))
    q = np.true_divide(np.asarray(qs, dtype=np.float64), 100)
    if not bool(np.all((q >= 0) & (q <= 1))):
        return np.asarray(np.percentile(sample, qs))  # numpy names the bad percentile
    virtual = (n - 1) * q
    lower = np.floor(virtual)
    last = virtual >= n - 1  # numpy takes the maximum there, for both neighbours
    low = np.where(last, n - 1, lower).astype(np.intp)
    kth = np.unique(low)
    part = sample.copy()
    part.partition(kth)
    a = part[low]
    b = a.copy()
    for i, j in enumerate(low):
        if last[i]:
            continue
        upper = kth[np.searchsorted(kth, j, side="right")] if j < kth[-1] else n
        b[i] = part[j + 1] if upper == j + 1 else part[j + 1:upper].min()
    gamma = virtual - lower
    diff = b - a
    out = np.add(a, diff * gamma)
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


@dataclass(frozen=True)
class PerRequest:
    """Per-request values of the successful requests, in seconds (ITL pooled)."""

    ttft: np.ndarray
    e2e: np.ndarray
    tpot: np.ndarray  # only requests with more than one output token
    itl: np.ndarray  # pooled gaps
    e2e_from_latencies: bool


def itl_sums(flat: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sum of each request's gaps from the flattened gaps and per-request counts."""
    sums = np.zeros(counts.size, dtype=np.float64)
    nonempty = counts > 0
    if flat.size and nonempty.any():
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        sums[nonempty] = np.add.reduceat(flat, starts[nonempty])
    return sums


def per_request(
    ttfts: np.ndarray,
    output_lens: np.ndarray,
    itl_flat: np.ndarray,
    itl_counts: np.ndarray,
    success: np.ndarray,
    latencies: Optional[np.ndarray] = None,
) -> tuple[PerRequest, np.ndarray, np.ndarray]:
    """Per-request TTFT/E2E/TPOT/ITL of successful requests.

    Returns the PerRequest of successful requests plus, for every request,
    its E2E and TPOT in seconds (NaN where undefined) for raw_requests.
    """
    sums = itl_sums(itl_flat, itl_counts)
    e2e_all = latencies.astype(np.float64) if latencies is not None else ttfts + sums
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot_all = np.where(output_lens > 1, (e2e_all - ttfts) / (output_lens - 1), np.nan)
    tpot_all = np.where(success, tpot_all, np.nan)
    ok_tpot = success & (output_lens > 1)
    if not itl_flat.size or success.all():
        itl = itl_flat  # every gap counts: no copy of the largest array
    else:
        itl = itl_flat[np.repeat(success, itl_counts)]
    result = PerRequest(
        ttft=ttfts[success],
        e2e=e2e_all[success],
        tpot=tpot_all[ok_tpot],
        itl=itl,
        e2e_from_latencies=latencies is not None,
    )
    return result, np.where(success, e2e_all, np.nan), tpot_all


def request_itl_means(itl_flat: np.ndarray, itl_counts: np.ndarray) -> np.ndarray:
    """Mean gap of each request in seconds (NaN without gaps)."""
    sums = itl_sums(itl_flat, itl_counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(itl_counts > 0, sums / np.maximum(itl_counts, 1), np.nan)


def good_requests(
    success: np.ndarray, ttft_s: np.ndarray, tpot_s: np.ndarray, ttft_limit_ms: float, tpot_limit_ms: float
) -> int:
    """Requests that succeeded with TTFT and TPOT strictly below the limits (the goodput count).

    TTFT and TPOT are per request, in seconds; a request with one output token
    has no TPOT (NaN) and is judged on TTFT alone.
    """
    ttft_ok = ttft_s * 1000 < ttft_limit_ms
    tpot_ok = np.isnan(tpot_s) | (tpot_s * 1000 < tpot_limit_ms)
    return int(np.count_nonzero(success & ttft_ok & tpot_ok))


def slo_attainment(
    success: np.ndarray, ttft_s: np.ndarray, tpot_s: np.ndarray, ttft_limit_ms: float, tpot_limit_ms: float
) -> Optional[float]:
    """Goodput share: good requests (`good_requests`) over all requests, failed ones included; None without requests."""
    n = int(success.size)
    if n == 0:
        return None
    return float(good_requests(success, ttft_s, tpot_s, ttft_limit_ms, tpot_limit_ms) / n)


def goodput_rate(good: Optional[int], duration_s: Optional[float]) -> Optional[float]:
    """Goodput rate, req/s: good requests over the client's benchmark duration; None when either is unknown."""
    if good is None or duration_s is None or not duration_s > 0:
        return None
    return float(good / duration_s)


def flatten_gaps(itls: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Flatten a list of per-request gap lists into (flat float64 array, counts)."""
    counts = np.fromiter(map(len, itls), dtype=np.int64, count=len(itls))
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.float64), counts
    packed = bytearray(8 * total)
    offset = 0
    pack = struct.pack_into
    try:
        # each request's gaps packed as doubles in one C call: half the time of numpy reading them one at a time
        for gaps in itls:
            if gaps:
                pack(f"{len(gaps)}d", packed, offset, *gaps)
                offset += 8 * len(gaps)
    except (struct.error, OverflowError, TypeError):
        # a gap that is not a float: numpy reads them all and decides, as it always did (the same values and errors)
        return np.fromiter(chain.from_iterable(itls), dtype=np.float64, count=total), counts
    return np.frombuffer(packed, dtype=np.float64), counts


# --------------------------------------------------------------------------- per-request metrics sskj computes

# The per-request columns of a scenario's successful requests, as `raw_requests[]` names them (the inputs the
# registry's rows declare: contract/metrics.py, REQUEST_INPUTS): float arrays of one length, NaN where unknown.
RequestColumns = Mapping[str, np.ndarray]
Derivation = Callable[[RequestColumns], np.ndarray]
_DERIVED: dict[str, Derivation] = {}


def per_request_metric(name: str) -> Callable[[Derivation], Derivation]:
    """Register the computation a registry row names as its `derive` (contract/metrics.py)."""
    def register(fn: Derivation) -> Derivation:
        _DERIVED[name] = fn
        return fn
    return register


def derived_values(name: str, columns: RequestColumns) -> np.ndarray:
    """The known per-request values of the computation registered as `name` (unknown ones left out)."""
    return _DERIVED[name](columns)


@dataclass(frozen=True)
class WindowValue:
    """A metric's value over a window of a scenario's run (`summary="window"`), the window in seconds from the first
    request sent, and its share of the run (first request sent to last finished)."""

    value: float
    start_s: float
    length_s: float
    share: float


# a window metric's computation: the successful requests' columns and the scenario's concurrency slots (None: not a
# fixed number of slots) -> its value and window, or None when unknown
Windowing = Callable[[RequestColumns, Optional[int]], Optional[WindowValue]]
_WINDOWED: dict[str, Windowing] = {}


def window_metric(name: str) -> Callable[[Windowing], Windowing]:
    """Register the computation a window row names as its `derive` (contract/metrics.py, `summary="window"`)."""
    def register(fn: Windowing) -> Windowing:
        _WINDOWED[name] = fn
        return fn
    return register


def fixed_slots(concurrency: Optional[int], request_rate: Optional[float]) -> Optional[int]:
    """The concurrency slots of a closed-loop run (a new request sent as one finishes): its concurrency when no finite
    request rate paces the sending; None otherwise (then no window of busy slots is defined)."""
    if concurrency is None or concurrency < 1 or (request_rate is not None and np.isfinite(request_rate)):
        return None
    return int(concurrency)


def window_value(name: str, columns: RequestColumns, slots: Optional[int]) -> Optional[WindowValue]:
    """The value and window of the computation registered as `name`; None when unknown."""
    return _WINDOWED[name](columns, slots)


def derivations() -> frozenset[str]:
    """Names of every registered computation (per request and over a window)."""
    return frozenset(_DERIVED) | frozenset(_WINDOWED)


@per_request_metric("prefill_tok_s")
def prefill_rate(columns: RequestColumns) -> np.ndarray:
    """Prefill rate per request, tok/s: input tokens / TTFT of the requests with output whose input length and
    TTFT are known (a TTFT of 0 has no rate)."""
    tokens, output, ttft_ms = columns["input_tokens"], columns["output_tokens"], columns["ttft_ms"]
    known = (output > 0) & np.isfinite(tokens) & (tokens >= 0) & np.isfinite(ttft_ms) & (ttft_ms > 0)
    return tokens[known] / (ttft_ms[known] / 1000)


@window_metric("steady_output_throughput")
def steady_output_throughput(columns: RequestColumns, slots: Optional[int]) -> Optional[WindowValue]:
    """Output tokens per second over the window in which all `slots` concurrency slots are busy: from the
    slots-th request sent (the last slot filled) to the first request that finishes after the last one was sent
    (the first slot that is not filled again). A request's tokens arrive at its first token (send + TTFT) and
    evenly from there to its end (send + E2E); those in [start, end) of the window count. None without a fixed
    number of slots, with a request whose send time, latency or (with output) TTFT is unknown, with fewer requests
    than slots, or when the window is empty."""
    start, e2e = columns["start_ms"] / 1000, columns["e2e_ms"] / 1000
    ttft, tokens = columns["ttft_ms"] / 1000, columns["output_tokens"]
    if slots is None or start.size < slots:
        return None
    output = np.nan_to_num(tokens) > 0
    if not (np.isfinite(start).all() and np.isfinite(e2e).all() and np.isfinite(tokens).all()
            and np.isfinite(ttft[output]).all()):
        return None
    end = start + e2e
    last_sent = float(np.max(start))
    opened, closed = float(np.sort(start)[slots - 1]), float(np.min(end[end > last_sent], initial=np.inf))
    if not closed > opened or not np.isfinite(closed):
        return None
    first = start + np.where(output, ttft, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(tokens > 1, (end - first) / np.maximum(tokens - 1, 1), 0.0)
    spread = output & (gap > 0)
    counted = np.where(output & ~spread & (first >= opened) & (first < closed), tokens, 0.0)
    safe = np.where(spread, gap, 1.0)
    low = np.clip(np.ceil((opened - first) / safe), 0, tokens - 1)
    high = np.clip(np.ceil((closed - first) / safe) - 1, -1, tokens - 1)
    counted = counted + np.where(spread, np.maximum(high - low + 1, 0), 0.0)
    length, span = closed - opened, float(np.max(end) - np.min(start))
    return WindowValue(value=float(counted.sum() / length), start_s=opened, length_s=length,
                       share=min(length / span, 1.0))
