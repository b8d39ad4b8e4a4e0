"""Readers of raw client outputs, one per format, detected from content.

* ``sglang-bench-serving``: ``python -m sglang.bench_serving --output-file F
  [--output-details]`` (0.3 … 0.5.x), one run per line; keys vary by version.
* ``vllm-bench-serve``: ``vllm bench serve --save-result [--save-detailed]
  [--append-result]`` and the older ``benchmarks/benchmark_serving.py``, one
  object, or one per line; ``vllm bench sweep serve`` ``run=N.json`` files.

A reader turns one JSON object into a RawRun: the client's own statistics
(ms) and, when the file has them, per-request arrays. Lengths, concurrency
and request rate come from the client's keys first, then from the file name,
then from the per-request data or the token totals (said in ``notes``).
docs/METRICS.md lists every accepted key spelling and the order of sources.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

import numpy as np

from ..analysis.metrics import flatten_gaps, per_request
from ..contract.clientinfo import Acceptance, ClientExtras, ClientFingerprint
from .inputs import read_inputs
from .clientprint import file_acceptance, file_extras, file_fingerprint, saved_texts
from .filenames import NameHints, prompts_in_name
from .plausible import flag_token_counts, plausible_duration, refuse_negative
from .streaming import NOT_STREAMED, set_aside, stream_mode
from .runfacts import _recorded_chip, _started
from .rawkeys import (
    _COMPLETED,
    client_version,
    engine_of,
    engine_version,
    server_identity,
    _DURATION,
    _FAILED,
    _SENT,
    VLLM,
    RunError,
    _array,
    _client_stats,
    _first_int,
    _first_number,
    _int,
    _number,
    detect_format,
)

# vLLM's benchmark wrote mean and median E2E swapped from the change that added E2E
# (vLLM PR #7759, Aug 2024) until its fix (vLLM PR #9984, Nov 2024)
E2E_SWAP_FIXED = datetime(2024, 11, 6)


# ---------------------------------------------------------------- runs


@dataclass(frozen=True)
class ReadOptions:
    """What the user said on the command line about every run (wins over everything else)."""

    input_len: Optional[int] = None
    output_len: Optional[int] = None
    client_impl: Optional[str] = None  # python | rust: the load client where the file cannot tell (clientprint.py)


@dataclass
class Details:
    """Per-request arrays (seconds), aligned by request index."""

    input_lens: np.ndarray
    output_lens: np.ndarray
    ttfts: np.ndarray
    itl_flat: np.ndarray
    itl_counts: np.ndarray
    errors: list[str]
    success: np.ndarray
    latencies: Optional[np.ndarray] = None
    # the per-request inputs read from raw lists (contract/metrics.py: READ_INPUTS), in their columns' units
    extra: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class RawRun:
    """One benchmark run as the client wrote it."""

    format: str
    line: int
    concurrency: Optional[int]
    input_len: int
    output_len: int
    client: dict[str, dict[str, float]]
    success: int
    failed: Optional[int]  # None: unknown (the client wrote only its completed requests)
    duration_s: Optional[float] = None
    request_throughput: Optional[float] = None
    input_throughput: Optional[float] = None
    output_throughput: Optional[float] = None
    total_throughput: Optional[float] = None
    derived: dict[str, str] = field(default_factory=dict)
    accept_length: Optional[float] = None
    num_prompts: Optional[int] = None
    request_rate: Optional[float] = None
    dataset_name: Optional[str] = None
    request_format: Optional[str] = None
    model: Optional[str] = None
    details: Optional[Details] = None
    # whether the client streamed (None: the run cannot tell), how that is known, and the client's own values of
    # the metrics a run without streaming does not measure (streaming.py)
    streaming: Optional[bool] = None
    streaming_source: Optional[str] = None
    unmeasured: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # other statistics the client wrote (p25, p99.99, min, max …), per metric
    client_extra: dict[str, dict[str, float]] = field(default_factory=dict)
    # the run's start as the client recorded it (naive local time), and where it came from
    started: Optional[datetime] = None
    started_precision: str = "second"  # "second", or "day" for a date without a time (`20250312`)
    engine: Optional[str] = None  # the serving engine named by the run's `backend`, when it names one
    # the server the run itself names (`framework`, `server_info`): outranks `backend`, the request format
    server_engine: Optional[str] = None
    server_engine_source: Optional[str] = None
    engine_version: Optional[str] = None  # the server's version as the run records it, and the key it came from
    engine_version_source: Optional[str] = None
    client_version: Optional[str] = None
    empty_outputs: Optional[int] = None
    lengths_averaged: tuple[str, ...] = ()
    # the client's own totals over successful requests, and its random-length spread (validity checks)
    total_input_tokens: Optional[float] = None
    total_output_tokens: Optional[float] = None
    total_output_tokens_retokenized: Optional[float] = None  # sglang: its generated texts tokenized again
    random_range_ratio: Optional[float] = None
    fixed_output_len: Optional[int] = None  # a dataset's fixed output length (sglang `sharegpt_output_len`)
    index: Optional[int] = None  # position in a JSON array of runs (the file's or line's), else None
    # the chip the run itself records (e.g. `--metadata gpu=...`), normalized, and the key and text it came from
    chip: Optional[str] = None
    chip_source: Optional[tuple[str, str]] = None
    # the load client, the acceptance and the newer clients' extra keys as the run says (clientprint.py)
    client_print: Optional[ClientFingerprint] = None
    acceptance: Optional[Acceptance] = None
    client_extras: Optional[ClientExtras] = None
    generated_texts: Optional[list[str]] = None  # the successful requests' saved outputs (plausibility checks)


def _request_rate(data: dict[str, Any], notes: list[str]) -> Optional[float]:
    """req/s; None for unlimited (inf). Newer sglang writes "trace" for trace-timestamp replays."""
    value = data.get("request_rate")
    if isinstance(value, str) and value.strip().lower() not in ("inf", "infinity", "+inf"):
        try:
            float(value)
        except ValueError:
            notes.append(f"request rate {value!r} (not a number): recorded as null")
            return None
    rate = _number(data, "request_rate")
    if rate is not None and rate <= 0:
        notes.append(f"request rate {rate:g} is not positive: recorded as null")
        return None
    return rate


def _model_name(data: dict[str, Any]) -> Optional[str]:
    """The model as the client recorded it: vllm's model_id, or newer sglang's server_info.model_path."""
    for key in ("model_id", "model"):
        if isinstance(data.get(key), str) and data[key].strip():
            return str(data[key])
    info = data.get("server_info")
    if isinstance(info, dict):
        for key in ("model_path", "served_model_name"):
            if isinstance(info.get(key), str) and info[key].strip():
                return str(info[key])
    return None


@dataclass
class _Arrays:
    """The per-request arrays a run has (any subset), checked for equal lengths."""

    n: Optional[int] = None
    input_lens: Optional[np.ndarray] = None
    output_lens: Optional[np.ndarray] = None
    errors: Optional[list[str]] = None
    success: Optional[np.ndarray] = None
    details: Optional[Details] = None
    missing: tuple[str, ...] = ()
    latencies: Optional[np.ndarray] = None


def _arrays(data: dict[str, Any], completed: Optional[int], notes: list[str]) -> _Arrays:
    """Per-request arrays: full details when timing and outcome are all there, else what there is."""
    has = {k: isinstance(data.get(k), list) for k in ("input_lens", "output_lens", "ttfts", "itls", "errors", "latencies")}
    for key in ("input_lens", "output_lens", "ttfts", "itls", "errors"):
        if key in data and data[key] is not None and not has[key]:
            raise RunError(f"{key}: expected a list, got {type(data[key]).__name__}")
    if not any(has.values()):
        return _Arrays()
    out = _Arrays()
    lengths: dict[str, int] = {}
    if has["input_lens"]:
        out.input_lens = _array(data, "input_lens", int)
        lengths["input_lens"] = len(out.input_lens)
    if has["output_lens"]:
        out.output_lens = _array(data, "output_lens", int)
        lengths["output_lens"] = len(out.output_lens)
    ttfts = None
    if has["ttfts"]:
        ttfts = _array(data, "ttfts", float)
        lengths["ttfts"] = len(ttfts)
    itls = data.get("itls") if has["itls"] else None
    if itls is not None:
        for i, gaps in enumerate(itls):
            if not isinstance(gaps, list):
                raise RunError(f"itls[{i}]: expected a list of numbers, got {type(gaps).__name__}")
        lengths["itls"] = len(itls)
    if has["errors"]:
        errors = data["errors"]
        if not all(isinstance(e, str) or e is None for e in errors):
            raise RunError("errors: expected a list of strings (\"\" for success)")
        lengths["errors"] = len(errors)
        unknown = sum(1 for e in errors if e is None)
        if unknown:  # null is not "": the client did not say whether the request succeeded
            notes.append(f"errors: {unknown} of {len(errors)} entries are null (outcome unknown, not counted as "
                         "successes): the per-request outcome is not used")
            has["errors"] = False
        else:
            out.errors = list(errors)
    latencies = None
    if has["latencies"]:
        latencies = out.latencies = _array(data, "latencies", float)
        lengths["latencies"] = len(latencies)
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise RunError(f"per-request arrays have different lengths ({shown})")
    out.n = next(iter(lengths.values()))
    if out.errors is not None:
        out.success = np.array([e == "" for e in out.errors], dtype=bool)
    elif completed is not None and completed == out.n:
        out.success = np.ones(out.n, dtype=bool)  # every request of the arrays completed
    missing = [k for k in ("input_lens", "output_lens", "ttfts", "itls", "errors") if not has[k]]
    out.missing = tuple(missing)
    timing = ttfts is not None and itls is not None and out.output_lens is not None and out.success is not None
    if not timing:
        notes.append(
            f"per-request data incomplete (no {', '.join(missing) or 'outcome per request'}): statistics are the client's own; "
            "what the missing arrays would give is not recorded"
        )
        return out
    assert ttfts is not None and itls is not None and out.output_lens is not None and out.success is not None
    try:
        flat, counts = flatten_gaps(itls)
    except (TypeError, ValueError):
        raise RunError("itls: expected lists of numbers (seconds)") from None
    success = out.success
    if np.any(~np.isfinite(ttfts[success])) or np.any(ttfts[success] < 0):
        raise RunError("ttfts: a successful request has a negative or non-finite TTFT")
    if flat.size and (np.any(~np.isfinite(flat)) or np.any(flat < 0)):
        raise RunError("itls: negative or non-finite gap")
    input_lens = out.input_lens if out.input_lens is not None else np.full(out.n, -1, dtype=np.int64)
    errors = out.errors if out.errors is not None else [""] * out.n
    if out.errors is None:
        notes.append("no per-request errors in the file: every request counted as successful (completed = requests)")
    out.details = Details(
        input_lens=input_lens, output_lens=out.output_lens, ttfts=ttfts, itl_flat=flat, itl_counts=counts,
        errors=errors, success=success, latencies=latencies, extra=read_inputs(data, out.n),
    )
    return out


def _length_keys(data: dict[str, Any], which: str) -> Optional[int]:
    """The requested length from the run's keys (random_*, or plain input_len/output_len)."""
    random_key = f"random_{which}_len"
    dataset = data.get("dataset_name")
    if dataset in (None, "random", "random-ids") or (isinstance(dataset, str) and dataset.startswith("random")):
        value = _int(data, random_key)
        if value is not None:
            return value
    elif which == "output":
        # sharegpt/other datasets: random_* keys describe nothing that ran
        value = _int(data, "sharegpt_output_len")
        if value is not None:
            return value
    for key in (f"{which}_len", f"{which}_tokens", f"fixed_{which}_len"):
        if key in data and not isinstance(data.get(key), (list, dict)):
            value = _int(data, key)
            if value is not None:
                return value
    return None


def _concurrency(data: dict[str, Any], arrays: _Arrays, hints: NameHints, rate: Optional[float],
                 notes: list[str], prompts_from_name: Optional[int] = None) -> Optional[int]:
    """The concurrency cap: the run's max_concurrency, else the file name's (unless it is num_prompts), else
    null for an open-loop run (finite rate) or all requests at once (unlimited rate)."""
    if prompts_from_name is not None and "max_concurrency" not in data:
        # a layout from before sglang.bench_serving had --max-concurrency: no cap, and the name's number is the
        # prompt count, never a concurrency
        if rate is None:
            notes.append(f"no concurrency cap: the run's layout predates --max-concurrency (no max_concurrency key) and "
                         f"its rate is unlimited; the file name's {prompts_from_name} is the prompt count, not a "
                         "concurrency: concurrency recorded as null (unlimited)")
        else:
            notes.append(f"the file name's {prompts_from_name} is the prompt count, not a concurrency; the run is "
                         f"rate-limited ({rate:g} req/s) without a concurrency cap: an open-loop run")
        return None
    if prompts_from_name is not None:
        hints = dataclasses.replace(hints, concurrency=None)
        notes.append(f"the file name's {prompts_from_name} is the prompt count (sglang.bench_serving's default name), "
                     "not a concurrency")
    concurrency = _int(data, "max_concurrency")
    if concurrency is not None:
        if hints.concurrency is not None and hints.concurrency != concurrency:
            notes.append(f"file name says concurrency {hints.concurrency} but the client recorded {concurrency}; "
                         f"using {concurrency}")
        if concurrency < 1:
            raise RunError(f"max_concurrency must be at least 1, got {concurrency}")
        return concurrency
    num_prompts = _first_int(data, _SENT)
    sent = num_prompts
    if sent is None:
        completed, failed = _first_int(data, _COMPLETED), _first_int(data, _FAILED)
        if arrays.n is not None:
            sent = arrays.n
        elif completed is not None:
            sent = completed + (failed or 0)
    if prompts_from_name is not None:
        sent = prompts_from_name
    named = hints.concurrency
    if named is not None and hints.convention != "pattern" and sent is not None and named == sent:
        notes.append(
            f"the file name's {named} equals the requests sent (sglang.bench_serving's default name "
            "{backend}_{MMDD}_{num_prompts}_{in}_{out}): not a concurrency"
        )
        named = None
    if named is not None and rate is None:
        if named < 1:
            raise RunError(f"concurrency from the file name must be at least 1, got {named}")
        notes.append("no max_concurrency recorded: concurrency taken from the file name")
        return named
    if rate is not None:
        if named is not None:
            notes.append(f"file name says {named}, but the run is rate-limited ({rate:g} req/s) without a "
                         "max_concurrency: recorded as an open-loop run, not a concurrency")
        return None
    if not sent:
        raise RunError("no max_concurrency in the run, no finite request_rate and no request count")
    notes.append(f"no max_concurrency recorded and unlimited request rate: all {sent} requests sent at once, "
                 f"concurrency recorded as {sent}")
    return sent


def _lengths(data: dict[str, Any], arrays: _Arrays, hints: NameHints, options: ReadOptions, success: int,
             notes: list[str]) -> tuple[int, int, tuple[str, ...]]:
    """(input_len, output_len, averaged) in the order: options, run keys, file name, per-request median,
    token totals / completed (recorded as averages)."""
    values: dict[str, int] = {}
    averaged: list[str] = []
    for which, given, hinted, lens, total_key in (
        ("input", options.input_len, hints.input_len, arrays.input_lens, "total_input_tokens"),
        ("output", options.output_len, hints.output_len, arrays.output_lens, "total_output_tokens"),
    ):
        from_keys = _length_keys(data, which)
        if given is not None:
            if from_keys is not None and from_keys != given:
                notes.append(f"--{which}-len {given} given, the client recorded {from_keys}; using {given}")
            values[which] = given
            notes.append(f"{which} length {given} given on the command line")
            continue
        if from_keys is not None:
            if hinted is not None and hinted != from_keys:
                notes.append(f"file name says {which}_len {hinted} but the client recorded {from_keys}; using {from_keys}")
            values[which] = from_keys
            continue
        if hinted is not None:
            values[which] = hinted
            notes.append(f"{which} length taken from the file name")
            continue
        ok = arrays.success
        if lens is not None and ok is not None and ok.any():
            values[which] = int(round(float(np.median(lens[ok]))))
            label = "prompt" if which == "input" else "output"
            notes.append(f"{which} length inferred as the median {label} length of successful requests")
            continue
        total = _number(data, total_key)
        if total is not None and success > 0:
            average = total / success
            values[which] = int(round(average))
            averaged.append(f"{which}_len")
            notes.append(f"{which} length unknown (not in the run, the file name or per-request data): recorded as the "
                         f"average {total_key} / completed = {average:.6g}")
            continue
        raise RunError(f"{which} length unknown: not in the run, the file name, per-request data or token totals "
                       f"(give --{which}-len)")
    return values["input"], values["output"], tuple(averaged)


def _accept_length(data: dict[str, Any], fmt: str) -> Optional[float]:
    value = _first_number(data, "accept_length", "spec_decode_acceptance_length")
    if value is not None:
        return value
    drafts = _number(data, "spec_decode_num_drafts")
    accepted = _number(data, "spec_decode_accepted_tokens")
    if drafts and accepted is not None:
        return 1.0 + accepted / drafts
    return None


def _fix_e2e_swap(run: RawRun, data: dict[str, Any], arrays: _Arrays) -> None:
    """vLLM's benchmark wrote mean_e2el_ms = median and median_e2el_ms = mean (2024, PR #7759 to #9984)."""
    e2e = run.client.get("e2e_ms", {})
    if run.format != VLLM or "mean" not in e2e or "p50" not in e2e or "mean_e2el_ms" not in data:
        return
    mean, median = e2e["mean"], e2e["p50"]
    if mean == median:
        return
    reason = None
    if arrays.latencies is not None and arrays.success is not None:
        lat = arrays.latencies[arrays.success] * 1000  # the client's E2E statistics are over all successes
        if lat.size:
            true_mean, true_median = float(np.mean(lat)), float(np.median(lat))

            def near(a: float, b: float) -> bool:
                return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)

            if near(mean, true_median) and near(median, true_mean) and not near(mean, true_mean):
                reason = "they are inconsistent with the per-request latencies"
            else:
                return  # the per-request data decides: not swapped
    p50 = _number(data, "p50_e2el_ms")
    if reason is None and p50 is not None:
        # the file's own p50 is the true median: it says which of the two is which
        if abs(p50 - mean) <= 1e-9 * max(abs(p50), 1.0) and abs(p50 - median) > 1e-9 * max(abs(p50), 1.0):
            reason = "its own p50_e2el_ms equals mean_e2el_ms"
        else:
            return
    details = run.details
    if reason is None and details is not None and details.latencies is None:
        # E2E approximated as ttft + sum(itls) (a few ms low): used only when it is clearly on one side
        approx = per_request(details.ttfts, details.output_lens, details.itl_flat, details.itl_counts,
                             details.success)[0].e2e * 1000
        if approx.size >= 3:
            a_mean, a_median = float(np.mean(approx)), float(np.median(approx))
            straight = abs(mean - a_mean) + abs(median - a_median)
            crossed = abs(mean - a_median) + abs(median - a_mean)
            if crossed < 0.5 * straight:
                reason = "they are inconsistent with the per-request data (ttft + sum of itls)"
            elif straight < 0.5 * crossed:
                return
    if reason is None:
        # compared as the wall-clock date the run recorded (an aware time in its own zone)
        if run.started is None or run.started.replace(tzinfo=None) >= E2E_SWAP_FIXED:
            return
        reason = f"the run is dated {run.started:%Y-%m-%d}, before vLLM's fix (PR #9984)"
    e2e["mean"], e2e["p50"] = median, mean
    run.derived["latencies.e2e_ms.mean"] = "swapped_back"
    run.derived["latencies.e2e_ms.p50"] = "swapped_back"
    run.notes.append(
        "mean_e2el_ms and median_e2el_ms swapped back: vLLM's benchmark wrote them swapped between its PRs #7759 and "
        f"#9984 (2024) and {reason}"
    )


def read_run(data: dict[str, Any], line: int, hints: NameHints = NameHints(),
             options: ReadOptions = ReadOptions()) -> RawRun:
    """Normalize one client result object. Raises RunError with what is wrong."""
    fmt = detect_format(data)
    if fmt is None:
        raise RunError("not a sglang.bench_serving or vllm bench serve result (none of their keys)")
    notes: list[str] = []
    nested = data.get("details")
    if isinstance(nested, dict) and any(isinstance(nested.get(k), list) for k in ("ttfts", "input_lens", "output_lens")):
        # forks keep the per-request arrays under "details"
        data = {**data, **{k: v for k, v in nested.items() if k not in data}}
    completed = _first_int(data, _COMPLETED)
    arrays = _arrays(data, completed, notes)
    details = arrays.details
    if details is not None:
        flag_token_counts(details.output_lens, details.itl_counts, details.success, notes)
    client_failed = _first_int(data, _FAILED)
    num_prompts = _first_int(data, _SENT)
    prompts_from_name: Optional[int] = None
    if arrays.success is not None:
        success = int(arrays.success.sum())
        failed = int(arrays.success.size - success)
        if completed is not None and completed != success:
            notes.append(f"client says completed={completed}, per-request errors say {success} succeeded")
    else:
        if completed is None:
            raise RunError("no `completed` count and no per-request outcome (errors)")
        success = completed
        failed = None
        if client_failed is not None:
            failed = client_failed
        elif num_prompts is not None and num_prompts >= completed:
            failed = num_prompts - completed
            if failed:
                notes.append(f"failed = num_prompts - completed = {num_prompts} - {completed} (the client wrote no failure count)")
        elif (named := prompts_in_name(hints, completed, _int(data, "max_concurrency"))) is not None:
            prompts_from_name, how = named
            failed = prompts_from_name - completed
            notes.append(f"failed = {prompts_from_name} - {completed} = {failed}, derived from the file name: the run "
                         f"records no request or failure count, and {how}")
        else:
            notes.append("failed count unknown: the file records only completed requests (no failure count, no request "
                         "count, no per-request errors): recorded as null, not 0")
    if success == 0:
        total = success + (failed or 0)
        errors = arrays.errors or []
        first = next((e for e in errors if e), "")
        if not first:
            for key in ("error", "errors"):
                if isinstance(data.get(key), str) and data[key]:
                    first = data[key]
        reason = f"; first error: {first.strip().splitlines()[0][:300]}" if first.strip() else ""
        counted = f"0 of {total} requests succeeded" if total else "0 requests succeeded (completed: 0; no request count)"
        raise RunError(f"{counted}{reason}")
    client, extra = _client_stats(data, notes)
    total_out = _number(data, "total_output_tokens")
    per_output = total_out / success if total_out is not None and success else None
    if details is not None:
        streaming, evidence = stream_mode(client, details.output_lens, details.itl_counts, details.success, fmt,
                                          per_output)
    else:
        streaming, evidence = stream_mode(client, None, None, None, fmt, per_output)
    unmeasured = set_aside(client, extra) if streaming is False else {}
    refuse_negative(data, skip=NOT_STREAMED if streaming is False else ())
    rate = _request_rate(data, notes)
    if prompts_from_name is not None and num_prompts is None:
        num_prompts = prompts_from_name
    concurrency = _concurrency(data, arrays, hints, rate, notes, prompts_from_name)
    input_len, output_len, averaged = _lengths(data, arrays, hints, options, success, notes)
    duration = plausible_duration(data, _DURATION, notes)
    backend = data.get("backend") if isinstance(data.get("backend"), str) else None
    run = RawRun(
        format=fmt, line=line, concurrency=concurrency, input_len=input_len, output_len=output_len,
        client=client, client_extra=extra, success=success, failed=failed, duration_s=duration,
        # early-2024 vLLM benchmark_serving.py wrote it as request_inthroughput
        request_throughput=_first_number(data, "request_throughput", "request_inthroughput"),
        input_throughput=_first_number(data, "input_throughput", "input_token_throughput"),
        output_throughput=_first_number(data, "output_throughput", "output_token_throughput"),
        # vllm bench serve and older sglang: total_token_throughput; newer sglang: total_throughput
        total_throughput=_first_number(data, "total_token_throughput", "total_throughput"),
        accept_length=_accept_length(data, fmt),
        num_prompts=num_prompts if num_prompts is not None else (arrays.n if arrays.n is not None else None),
        request_rate=rate,
        dataset_name=data.get("dataset_name") if isinstance(data.get("dataset_name"), str) else None,
        request_format=backend, model=_model_name(data), details=details, notes=notes,
        engine=engine_of(backend or ""), lengths_averaged=averaged,
    )
    run.started, run.started_precision = _started(data, notes)
    run.server_engine, run.server_engine_source = server_identity(data)
    (run.engine_version, run.engine_version_source), run.client_version = engine_version(data), client_version(data)
    _fix_e2e_swap(run, data, arrays)
    run.chip, run.chip_source = _recorded_chip(data)
    run.client_print, contradiction = file_fingerprint(data, fmt, run.client_version, options.client_impl)
    notes.extend([contradiction] if contradiction else [])
    run.acceptance = file_acceptance(data, fmt, run.accept_length)
    run.client_extras = file_extras(data, details.success if details is not None else None)
    run.generated_texts = saved_texts(data, arrays.success)
    goodput = _first_number(data, "request_goodput", "request_goodput:")
    if goodput is not None:
        notes.append(f"the client's request goodput: {goodput:g} req/s (requests meeting its --goodput thresholds)")
    burstiness = _number(data, "burstiness")
    if burstiness is not None and burstiness != 1.0 and rate is not None:
        notes.append(f"request arrivals: gamma process with burstiness {burstiness:g} (1 is Poisson)")
    total_input = _number(data, "total_input_tokens")
    total_output = _number(data, "total_output_tokens")
    run.total_input_tokens, run.total_output_tokens = total_input, total_output
    run.total_output_tokens_retokenized = _number(data, "total_output_tokens_retokenized")
    run.random_range_ratio = _number(data, "random_range_ratio")
    run.fixed_output_len = _int(data, "sharegpt_output_len")
    if run.input_throughput is None and total_input is not None and duration:
        run.input_throughput = total_input / duration
        run.derived["input_token_throughput"] = "derived"
    if run.output_throughput is None and total_output is not None and duration:
        run.output_throughput = total_output / duration
        run.derived["output_token_throughput"] = "derived"
    if run.total_throughput is None and run.input_throughput is not None and run.output_throughput is not None:
        run.total_throughput = run.input_throughput + run.output_throughput
        run.derived["total_token_throughput"] = "derived"
    if run.request_throughput is None and duration:
        run.request_throughput = success / duration
        run.derived["request_throughput"] = "derived"
    if arrays.output_lens is not None and arrays.success is not None:
        empty = int(np.count_nonzero(arrays.success & (arrays.output_lens == 0)))
        run.empty_outputs = empty
        if empty:
            notes.append(
                f"{empty} of {success} successful requests returned 0 output tokens: counted as successes, excluded from "
                "the statistics computed from per-request data; the client's own statistics include them"
            )
    run.streaming, run.streaming_source, run.unmeasured = streaming, f"file: {evidence}", unmeasured
    if streaming is False:
        notes.append(f"not streamed (the client ran with --disable-stream: {evidence}): TTFT, TPOT and ITL are not "
                     "measured (null; the client's own values are kept in `unmeasured`); E2E, throughput and "
                     "counts are")
    return run
