"""Readers of raw client outputs, one per format, detected from content.

* ``sglang-bench-serving``: ``python -m sglang.bench_serving --output-file F
  [--output-details]`` (0.4.0 … 0.5.x), one run per line; keys vary by version.
* ``vllm-bench-serve``: ``vllm bench serve --save-result [--save-detailed]
  [--append-result]``, one object, or one per line.

A reader turns one JSON object into a RawRun: the client's own statistics
(ms) and, when the file has them, per-request arrays. It never guesses chip
or engine; lengths and concurrency come from the client's keys, else from the
file name, else from the per-request data (said in ``notes``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .metrics import flatten_gaps

SGLANG = "sglang-bench-serving"
VLLM = "vllm-bench-serve"

# <stat>_<metric>_ms, e.g. mean_ttft_ms, median_e2e_latency_ms, p99_tpot_ms, p99.9_itl_ms
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e_latency|e2el)_ms$")
_METRIC = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e_latency": "e2e_ms", "e2el": "e2e_ms"}
_STAT = {"mean": "mean", "median": "p50", "std": "std", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
_VLLM_MARKERS = ("model_id", "burstiness", "endpoint_type", "tokenizer_id", "mean_e2el_ms", "date")
_SGLANG_MARKERS = ("mean_e2e_latency_ms", "random_input_len", "sharegpt_output_len", "total_output_tokens_retokenized")
_ARRAYS = ("input_lens", "output_lens", "ttfts", "itls", "errors")


class RunError(ValueError):
    """One run (line/object) cannot be imported; the message says why."""


@dataclass(frozen=True)
class NameHints:
    """What a file name following a convention says about its run."""

    engine: Optional[str] = None
    chip: Optional[str] = None
    mmdd: Optional[str] = None
    concurrency: Optional[int] = None
    input_len: Optional[int] = None
    output_len: Optional[int] = None
    convention: Optional[str] = None  # "legacy" | "new" | None


_NAME = re.compile(r"^(?P<prefix>.+?)_(?P<mmdd>\d{4})_(?P<c>\d+)_(?P<i>\d+)_(?P<o>\d+)(?:_r\d+)?$")


def name_hints(stem: str) -> NameHints:
    """`{backend}_{MMDD}_{c}_{in}_{out}` (legacy) or `{chip}_{engine}_{MMDD}_{c}_{in}_{out}` (new)."""
    match = _NAME.match(stem)
    if not match:
        return NameHints()
    prefix = match.group("prefix")
    mmdd, concurrency = match.group("mmdd"), int(match.group("c"))
    input_len, output_len = int(match.group("i")), int(match.group("o"))
    if "_" in prefix:
        chip, engine = prefix.rsplit("_", 1)
        return NameHints(engine=engine, chip=chip, mmdd=mmdd, concurrency=concurrency,
                         input_len=input_len, output_len=output_len, convention="new")
    return NameHints(engine=prefix, mmdd=mmdd, concurrency=concurrency,
                     input_len=input_len, output_len=output_len, convention="legacy")


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


@dataclass
class RawRun:
    """One benchmark run as the client wrote it."""

    format: str
    line: int
    concurrency: int
    input_len: int
    output_len: int
    client: dict[str, dict[str, float]]
    success: int
    failed: int
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
    streaming: bool = True
    notes: list[str] = field(default_factory=list)


def detect_format(data: dict[str, Any]) -> Optional[str]:
    """Which client wrote this object, from its keys."""
    if any(k in data for k in _VLLM_MARKERS) or any(k.endswith("_e2el_ms") for k in data):
        return VLLM
    if any(k in data for k in _SGLANG_MARKERS) or "completed" in data and "backend" in data:
        return SGLANG
    return None


def _number(data: dict[str, Any], key: str) -> Optional[float]:
    """A finite number, None when absent/null/non-finite ("inf" strings included); wrong types raise."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise RunError(f"{key}: expected a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunError(f"{key}: expected a number, got {type(value).__name__}")
    return float(value) if math.isfinite(value) else None


def _int(data: dict[str, Any], key: str) -> Optional[int]:
    value = _number(data, key)
    if value is None:
        return None
    if value != int(value) or value < 0:
        raise RunError(f"{key}: expected a non-negative whole number, got {value:g}")
    return int(value)


def _first_number(data: dict[str, Any], *keys: str) -> Optional[float]:
    """The first of keys that holds a number."""
    for key in keys:
        value = _number(data, key)
        if value is not None:
            return value
    return None


def _request_rate(data: dict[str, Any], notes: list[str]) -> Optional[float]:
    """req/s; None for unlimited (inf). Newer sglang writes "trace" for trace-timestamp replays."""
    value = data.get("request_rate")
    if isinstance(value, str) and value.strip().lower() not in ("inf", "infinity", "+inf"):
        try:
            float(value)
        except ValueError:
            notes.append(f"request rate {value!r} (not a number): recorded as null")
            return None
    return _number(data, "request_rate")


def _model_name(data: dict[str, Any]) -> Optional[str]:
    """The model as the client recorded it: vllm's model_id, or newer sglang's server_info.model_path."""
    if isinstance(data.get("model_id"), str):
        return str(data["model_id"])
    info = data.get("server_info")
    if isinstance(info, dict) and isinstance(info.get("model_path"), str):
        return str(info["model_path"])
    return None


def _client_stats(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    stats: dict[str, dict[str, float]] = {}
    for key in data:
        match = _STAT_KEY.match(key)
        if not match or match.group(1) not in _STAT:
            continue
        value = _number(data, key)
        if value is not None:
            stats.setdefault(_METRIC[match.group(2)], {})[_STAT[match.group(1)]] = value
    return stats


def _array(data: dict[str, Any], key: str, kind: type) -> np.ndarray:
    values = data[key]
    if not isinstance(values, list):
        raise RunError(f"{key}: expected a list, got {type(values).__name__}")
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        bad = next((i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(v, (int, float))), 0)
        raise RunError(f"{key}[{bad}]: expected a number, got {values[bad]!r}") from None
    if arr.ndim != 1:
        raise RunError(f"{key}: expected a flat list of numbers")
    if kind is int:
        if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.floor(arr)):
            raise RunError(f"{key}: expected non-negative whole numbers")
        return arr.astype(np.int64)
    return arr


def _details(data: dict[str, Any]) -> Optional[Details]:
    present = [k for k in _ARRAYS if k in data]
    if not present:
        return None
    missing = [k for k in _ARRAYS if k not in data]
    if missing:
        raise RunError(f"per-request arrays incomplete: has {', '.join(present)} but not {', '.join(missing)}")
    errors = data["errors"]
    if not isinstance(errors, list) or not all(isinstance(e, str) or e is None for e in errors):
        raise RunError("errors: expected a list of strings (\"\" for success)")
    errors = ["" if e is None else e for e in errors]
    itls = data["itls"]
    if not isinstance(itls, list):
        raise RunError(f"itls: expected a list of lists, got {type(itls).__name__}")
    for i, gaps in enumerate(itls):
        if not isinstance(gaps, list):
            raise RunError(f"itls[{i}]: expected a list of numbers, got {type(gaps).__name__}")
    try:
        flat, counts = flatten_gaps(itls)
    except (TypeError, ValueError):
        raise RunError("itls: expected lists of numbers (seconds)") from None
    arrays = {
        "input_lens": _array(data, "input_lens", int),
        "output_lens": _array(data, "output_lens", int),
        "ttfts": _array(data, "ttfts", float),
    }
    latencies = _array(data, "latencies", float) if isinstance(data.get("latencies"), list) else None
    lengths = {k: len(v) for k, v in arrays.items()}
    lengths.update(itls=len(itls), errors=len(errors))
    if latencies is not None:
        lengths["latencies"] = len(latencies)
    if len(set(lengths.values())) != 1:
        shown = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise RunError(f"per-request arrays have different lengths ({shown})")
    success = np.array([e == "" for e in errors], dtype=bool)
    ttfts = arrays["ttfts"]
    if np.any(~np.isfinite(ttfts[success])) or np.any(ttfts[success] < 0):
        raise RunError("ttfts: a successful request has a negative or non-finite TTFT")
    if flat.size and (np.any(~np.isfinite(flat)) or np.any(flat < 0)):
        raise RunError("itls: negative or non-finite gap")
    return Details(
        input_lens=arrays["input_lens"], output_lens=arrays["output_lens"], ttfts=ttfts,
        itl_flat=flat, itl_counts=counts, errors=errors, success=success, latencies=latencies,
    )


def _shape(data: dict[str, Any], fmt: str, details: Optional[Details], hints: NameHints,
           notes: list[str]) -> tuple[int, int, int]:
    """(concurrency, input_len, output_len) from the client's keys, the file name, or the data."""
    concurrency = _int(data, "max_concurrency")
    input_len = _int(data, "random_input_len")
    output_len = _int(data, "random_output_len")
    if data.get("dataset_name") not in (None, "random", "random-ids"):
        # sharegpt/other datasets: random_* keys describe nothing that ran
        input_len = output_len = None
        output_len = _int(data, "sharegpt_output_len")
    for label, value, hinted in (("concurrency", concurrency, hints.concurrency),
                                 ("input_len", input_len, hints.input_len),
                                 ("output_len", output_len, hints.output_len)):
        if value is not None and hinted is not None and value != hinted:
            notes.append(f"file name says {label} {hinted} but the client recorded {value}; using {value}")
    if concurrency is None:
        concurrency = hints.concurrency
        if concurrency is None:
            n = len(details.errors) if details else _int(data, "num_prompts") or _int(data, "completed")
            if not n:
                raise RunError("no max_concurrency in the run and none in the file name")
            concurrency = n
            notes.append(f"no max_concurrency recorded (rate-limited run): concurrency set to the {n} requests sent")
        else:
            notes.append("no max_concurrency recorded: concurrency taken from the file name")
    ok = details.success if details is not None else None
    if input_len is None:
        if hints.input_len is not None:
            input_len = hints.input_len
            notes.append("input length taken from the file name")
        elif details is not None and ok is not None and ok.any():
            input_len = int(round(float(np.median(details.input_lens[ok]))))
            notes.append("input length inferred as the median prompt length of successful requests")
        else:
            raise RunError("input length unknown: not in the run, the file name or per-request data")
    if output_len is None:
        if hints.output_len is not None:
            output_len = hints.output_len
            notes.append("output length taken from the file name")
        elif details is not None and ok is not None and ok.any():
            output_len = int(round(float(np.median(details.output_lens[ok]))))
            notes.append("output length inferred as the median output length of successful requests")
        else:
            raise RunError("output length unknown: not in the run, the file name or per-request data")
    if concurrency < 1:
        raise RunError(f"max_concurrency must be at least 1, got {concurrency}")
    return concurrency, input_len, output_len


def _accept_length(data: dict[str, Any], fmt: str) -> Optional[float]:
    if fmt == SGLANG:
        value = _number(data, "accept_length")
        return value
    value = _number(data, "spec_decode_acceptance_length")
    if value is not None:
        return value
    drafts = _number(data, "spec_decode_num_drafts")
    accepted = _number(data, "spec_decode_accepted_tokens")
    if drafts and accepted is not None:
        return 1.0 + accepted / drafts
    return None


def read_run(data: dict[str, Any], line: int, hints: NameHints = NameHints()) -> RawRun:
    """Normalize one client result object. Raises RunError with what is wrong."""
    fmt = detect_format(data)
    if fmt is None:
        raise RunError("not a sglang.bench_serving or vllm bench serve result (none of their keys)")
    notes: list[str] = []
    details = _details(data)
    concurrency, input_len, output_len = _shape(data, fmt, details, hints, notes)
    completed = _int(data, "completed")
    if details is not None:
        success = int(details.success.sum())
        failed = int(details.success.size - success)
        if completed is not None and completed != success:
            notes.append(f"client says completed={completed}, per-request errors say {success} succeeded")
    else:
        if completed is None:
            raise RunError("no `completed` count and no per-request arrays")
        success = completed
        client_failed = _int(data, "failed")
        num_prompts = _int(data, "num_prompts")
        if client_failed is not None:
            failed = client_failed
        elif num_prompts is not None and num_prompts >= completed:
            failed = num_prompts - completed
        else:
            failed = 0
            notes.append("failed count unknown: run without --output-details records only completed requests")
    if success == 0:
        first = next((e for e in details.errors if e), "") if details is not None else ""
        reason = f"; first error: {first}" if first else ""
        raise RunError(f"zero successful requests ({failed} failed){reason}")
    duration = _number(data, "duration")
    run = RawRun(
        format=fmt, line=line, concurrency=concurrency, input_len=input_len, output_len=output_len,
        client=_client_stats(data), success=success, failed=failed, duration_s=duration,
        request_throughput=_number(data, "request_throughput"),
        input_throughput=_number(data, "input_throughput"),
        output_throughput=_number(data, "output_throughput"),
        # vllm bench serve and older sglang: total_token_throughput; newer sglang: total_throughput
        total_throughput=_first_number(data, "total_token_throughput", "total_throughput"),
        accept_length=_accept_length(data, fmt),
        num_prompts=_int(data, "num_prompts") if "num_prompts" in data else (len(details.errors) if details else None),
        request_rate=_request_rate(data, notes),
        dataset_name=data.get("dataset_name") if isinstance(data.get("dataset_name"), str) else None,
        request_format=data.get("backend") if isinstance(data.get("backend"), str) else None,
        model=_model_name(data),
        details=details, notes=notes,
    )
    total_input = _number(data, "total_input_tokens")
    total_output = _number(data, "total_output_tokens")
    if run.input_throughput is None and total_input is not None and duration:
        run.input_throughput = total_input / duration
        run.derived["input_token_throughput"] = "derived"
    if run.total_throughput is None and run.input_throughput is not None and run.output_throughput is not None:
        run.total_throughput = run.input_throughput + run.output_throughput
        run.derived["total_token_throughput"] = "derived"
    if run.output_throughput is None and total_output is not None and duration:
        run.output_throughput = total_output / duration
        run.derived["output_token_throughput"] = "derived"
    if run.request_throughput is None and duration:
        run.request_throughput = success / duration
        run.derived["request_throughput"] = "derived"
    if details is not None:
        ok = details.success
        multi = ok & (details.output_lens > 1)
        if multi.any() and not np.any(details.itl_counts[multi] > 0):
            run.streaming = False
            notes.append(
                "no streamed chunks (client ran with --disable-stream): TTFT equals E2E; TPOT and ITL are not measured"
            )
    return run
