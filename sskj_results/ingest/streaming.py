"""Whether a raw run streamed its responses, and what a run that did not stream did not measure.

Without streaming (`sglang.bench_serving --disable-stream`) a client sees one response per request: it sets TTFT
to the whole latency, records no inter-token gaps, and its TPOT, (latency - TTFT) / (tokens - 1), comes out as 0
or float noise around it (a real 0.5.4 file: `median_tpot_ms: -0.00151298`). E2E, throughput and counts are
measured as with streaming; TTFT, TPOT and ITL are not. `vllm bench serve` has no such mode: its request
functions always stream.

How a run is known not to have streamed (docs/METRICS.md, "Streaming"): the run loop's record of the client
command (client_info/<stem>.json `streaming`, ingest/clientprint.py) where there is one; else what the file
holds: every successful request of more than one output token without gaps in `itls`, and the client's TTFT
statistics equal to its E2E ones (or a few microseconds over them). A streamed run has gaps, or a TTFT below its
E2E.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..catalog.clients import STREAM_OFF_FLAGS
from .rawkeys import VLLM

# how much later than the latency a client without streaming may read its TTFT (ms): the parsing of one response
PARSE_MS = 1.0
# the metrics a run without streaming does not measure (its client writes them all the same)
NOT_STREAMED = ("ttft_ms", "tpot_ms", "itl_ms")
NOT_MEASURED = ("not measured: the client did not stream (TTFT is the whole latency, no gaps between tokens); the "
                "client's own values are kept in `unmeasured`")


def _not_below(a: float, b: float) -> bool:
    """a >= b, to float noise."""
    return a >= b - 1e-9 * max(abs(a), abs(b), 1e-12)


def stream_mode(client: dict[str, dict[str, float]], output_lens: Optional[np.ndarray],
                itl_counts: Optional[np.ndarray], success: Optional[np.ndarray],
                fmt: Optional[str] = None, tokens_per_output: Optional[float] = None) -> tuple[Optional[bool], str]:
    """(streamed, the evidence in words) of one raw run: True, False, or None when the run cannot tell.

    `client` is the client's statistics per metric (ms); the arrays are the per-request ones when the file has
    them (None otherwise), `fmt` the raw format, `tokens_per_output` the client's output tokens per successful
    request (its totals). Where every output is one token, a TTFT equal to the E2E says nothing: the one token is
    the first and the last, streamed or not. Without streaming the client's TTFT is the latency itself, or a
    few microseconds more (sglang's completions request reads the clock for the latency before it parses the one
    response, then for the TTFT); with streaming the first token comes before the last, a TTFT below the E2E."""
    ttft, e2e = client.get("ttft_ms", {}), client.get("e2e_ms", {})
    common = [stat for stat in ttft if stat in e2e and stat != "std"]  # std: no order between the two
    below = any(not _not_below(ttft[s], e2e[s]) for s in common)
    late = bool(common) and not below and all(ttft[s] - e2e[s] <= PARSE_MS for s in common)
    gaps: Optional[bool] = None
    if output_lens is not None and itl_counts is not None and success is not None:
        multi = success & (output_lens > 1)
        if multi.any():
            gaps = bool(np.any(itl_counts[multi] > 0))
    if gaps:
        return True, "the requests' itls hold gaps between streamed chunks"
    one_token = (gaps is None and output_lens is not None and success is not None
                 and not np.any(success & (output_lens > 1))) or (
        output_lens is None and tokens_per_output is not None and tokens_per_output <= 1)
    if one_token and not below:
        if fmt == VLLM and STREAM_OFF_FLAGS["vllm"] is None:
            return True, "vllm bench serve has no mode without streaming (its request functions always stream)"
        return None, "every output is one token: its TTFT is its E2E whether the run streamed or not"
    if below:
        return True, "the client's TTFT statistics are below its E2E ones (the first token came before the last)"
    stats = f"the client's TTFT statistics ({', '.join(common)}) are its E2E ones, or at most {PARSE_MS:g} ms more"
    if late and gaps is False:
        return False, f"no successful request of more than one output token has a gap in itls, and {stats}"
    if late:
        return False, stats
    if gaps is False:
        return False, "no successful request of more than one output token has a gap in itls"
    if fmt == VLLM and STREAM_OFF_FLAGS["vllm"] is None:
        return True, "vllm bench serve has no mode without streaming (its request functions always stream)"
    return None, "the run holds neither per-request gaps nor both TTFT and E2E statistics"


def set_aside(client: dict[str, dict[str, float]], extra: dict[str, dict[str, float]]
              ) -> dict[str, dict[str, float]]:
    """The client's statistics of the metrics a run without streaming does not measure, taken out of `client`
    and `extra` (in place) and returned, per metric, as the client wrote them (ms; extra statistics by name)."""
    kept: dict[str, dict[str, float]] = {}
    for metric in NOT_STREAMED:
        values = {**extra.pop(metric, {}), **client.pop(metric, {})}
        if values:
            kept[metric] = values
    return kept


def command_streaming(run: Any, record: Optional[dict[str, Any]]) -> None:
    """The run loop's record of the client command (client_info/<stem>.json `streaming`) says whether the run
    streamed: it decides where the file could not tell or agrees, and a contradiction is noted. `run` is a
    readers.RawRun (which imports this module), changed in place."""
    value = record.get("streaming") if record is not None else None
    if not isinstance(value, bool):
        return
    said = "ran without streaming (--disable-stream)" if not value else "streamed"
    if run.streaming is None or run.streaming == value:
        run.streaming, run.streaming_source = value, f"command: the recorded client command {said}"
        if not value and not run.unmeasured:
            run.unmeasured = set_aside(run.client, run.client_extra)
            run.notes.append("not streamed (the recorded client command): TTFT, TPOT and ITL are not measured (null); "
                             "the client's own values are kept in `unmeasured`")
        return
    run.notes.append(f"the recorded client command {said} (client_info), but the raw run says otherwise "
                     f"({run.streaming_source}): the run's own data is recorded")
