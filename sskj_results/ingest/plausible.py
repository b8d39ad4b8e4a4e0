"""Numbers a raw run cannot hold: refused (a negative throughput, statistic or token total) or flagged (a zero
duration, a request with fewer output tokens than the chunks it streamed).

A refusal is a RunError naming the key and what to do; a flag is a note that starts with FLAG, which
`import-legacy` and `parse` also print as a warning naming the file and line (docs/METRICS.md).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .rawkeys import _METRIC, RunError, _number, _stat_key

FLAG = "impossible value: "

# the clients' rates, every spelling (readers.py reads them); none of them can be negative
THROUGHPUT_KEYS = (
    "request_throughput", "request_inthroughput", "input_throughput", "input_token_throughput", "output_throughput",
    "output_token_throughput", "total_token_throughput", "total_throughput", "request_goodput",
    "max_output_tokens_per_s",
)
TOTAL_KEYS = ("total_input_tokens", "total_output_tokens", "total_output_tokens_retokenized")
# a latency statistic above minus this (ms: 0.1 µs) is float noise around 0, not a negative value
NOISE_MS = 1e-4
_UNIT_MS = {"_s": 1000.0}
_FIX = ("correct it or remove the key (an absent key is unknown), or measure the run again")


def refuse_negative(data: dict[str, Any], skip: tuple[str, ...] = ()) -> None:
    """A negative throughput, latency statistic or token total: the run is refused, naming the key.

    Not refused: the statistics of the metrics in `skip` (a run without streaming does not measure TTFT, TPOT or
    ITL: its client writes TPOT as float noise around 0, streaming.py), and a latency statistic within float noise
    of zero (above -NOISE_MS: a difference of two clock readings that should be equal)."""
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value < 0:
            continue
        parts = _stat_key(key)
        if key in THROUGHPUT_KEYS:
            what = "a throughput"
        elif key in TOTAL_KEYS:
            what = "a token total"
        elif parts is not None:
            if _METRIC[parts[1]] in skip or value * _UNIT_MS.get(parts[2], 1.0) > -NOISE_MS:
                continue
            what = "a latency statistic"
        else:
            continue
        raise RunError(f"{key}: {value:g} is negative, and {what} cannot be: the file is damaged or was edited; {_FIX}")


def plausible_duration(data: dict[str, Any], keys: tuple[str, ...], notes: list[str]) -> Optional[float]:
    """The run's duration in seconds: negative is refused; 0 is flagged and recorded as unknown (null), since a run
    that completed requests took time, and the rates derived from it are then not computed."""
    for key in keys:
        value = _number(data, key)
        if value is None:
            continue
        if value < 0:
            raise RunError(f"{key}: {value:g} s is negative; a benchmark's duration cannot be: {_FIX}")
        if value == 0:
            notes.append(f"{FLAG}{key}: 0 s for a run that completed requests; recorded as unknown (null), the rates "
                         "derived from it are not computed; the client's own rates are kept as written")
            return None
        return value
    return None


def flag_token_counts(output_lens: np.ndarray, itl_counts: np.ndarray, success: np.ndarray, notes: list[str]) -> None:
    """A successful request whose output_lens[i] is below the chunks it streamed (itls[i] gaps + the first): each
    chunk carries at least one token, so its token count is wrong; flagged with the first such request."""
    bad = np.flatnonzero(success & (itl_counts > 0) & (output_lens < itl_counts + 1))
    if not bad.size:
        return
    i = int(bad[0])
    gaps, tokens = int(itl_counts[i]), int(output_lens[i])
    others = f" (and {bad.size - 1} more request(s) like it)" if bad.size > 1 else ""
    notes.append(f"{FLAG}output_lens[{i}] = {tokens} beside {gaps} gaps in itls[{i}]: a request that streamed "
                 f"{gaps + 1} chunks has at least {gaps + 1} output tokens{others}; its token counts are in doubt (the "
                 "client's TPOT and output throughput rest on them): imported as written, flagged")
