"""The key spellings of the clients' raw files: which client wrote a run, its statistics and counts.

docs/METRICS.md lists every accepted spelling; readers.py assembles them into a RawRun.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

import numpy as np

from ..catalog.engines import ENGINES_KNOWN_BY_NAME, alias_engine, info_rows, version_keys

SGLANG = "sglang-bench-serving"
VLLM = "vllm-bench-serve"

# <stat>_<metric>[_<unit>], e.g. mean_ttft_ms, median_e2e_latency_ms, p99_tpot_ms, p99.9_itl_ms, p99_latency_ms;
# the unit suffix is `_ms` (both clients), `_s` (seconds), or none (forks and parsers of the clients' printed
# tables, whose every latency line says "(ms)"), e.g. mean_ttft, median_request_latency
_METRICS_RE = r"ttft|tpot|itl|tbt|e2e_latency|e2el|e2e|request_latency|latency"
_STATS_RE = r"mean|avg|average|median|std|stdev|min|max|p\d+(?:[._]\d+)?"
_STAT_KEY = re.compile(rf"^({_STATS_RE})_({_METRICS_RE})(_ms|_s)?$")
# <metric>_<stat>[_<unit>] (forks): ttft_mean_ms, tpot_p99, e2e_latency_median_ms
_STAT_KEY_AFTER = re.compile(rf"^({_METRICS_RE})_({_STATS_RE})(_ms|_s)?$")
# percentile_<metric>_<N>[_ms], as some forks write them
_PCT_KEY = re.compile(rf"^percentile_({_METRICS_RE})_(\d+(?:[._]\d+)?)(_ms|_s)?$")
_METRIC = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "tbt": "itl_ms", "e2e_latency": "e2e_ms", "e2el": "e2e_ms",
           "e2e": "e2e_ms", "request_latency": "e2e_ms", "latency": "e2e_ms"}
_STAT = {"mean": "mean", "avg": "mean", "average": "mean", "median": "p50", "std": "std", "stdev": "std", "p50": "p50",
         "p90": "p90", "p95": "p95", "p99": "p99", "p99.9": "p99_9", "p99_9": "p99_9"}
# the spellings of E2E, best first: when a file has two, the first present wins per statistic
_E2E_ORDER = ("e2e_latency", "e2el", "e2e", "request_latency", "latency")
# unit suffixes, best first: a statistic written twice (mean_ttft_ms and mean_ttft) is taken from the first
_UNITS = {"_ms": (0, 1.0), "_s": (1, 1000.0), "": (2, 1.0)}
_VLLM_MARKERS = ("model_id", "burstiness", "endpoint_type", "tokenizer_id", "mean_e2el_ms", "date", "best_of",
                 "use_beam_search", "request_inthroughput", "request_goodput", "request_goodput:")
_SGLANG_MARKERS = ("mean_e2e_latency_ms", "random_input_len", "sharegpt_output_len", "total_output_tokens_retokenized")
_TIMING = ("ttfts", "itls")
# counts, each in the spellings the clients and forks wrote, first present wins
_COMPLETED = ("completed", "successful_requests", "completed_requests")
_FAILED = ("failed", "failed_requests")
_SENT = ("num_prompts", "total_requests")
_DURATION = ("duration", "benchmark_duration", "duration_s", "benchmark_duration_s")


def engine_of(text: str) -> Optional[str]:
    """The engine a raw file's request format or framework name means: an engine row's name or alias
    (catalog/engines.py), else one of the engines without a row (`ENGINES_KNOWN_BY_NAME`); None for a generic
    or unknown word (openai, openai-chat name no engine)."""
    low = text.strip().lower()
    return alias_engine(low) or ENGINES_KNOWN_BY_NAME.get(low)


class RunError(ValueError):
    """One run (line/object) cannot be imported; the message says why."""


def detect_format(data: dict[str, Any]) -> Optional[str]:
    """Which client wrote this object, from its keys."""
    if any(k in data for k in _VLLM_MARKERS) or any(k.endswith("_e2el_ms") for k in data):
        return VLLM
    if any(k in data for k in _SGLANG_MARKERS) or any(k in data for k in _COMPLETED) and "backend" in data:
        return SGLANG
    if any(k in data for k in _COMPLETED) and any(_stat_key(k) for k in data):
        return VLLM if any(k.endswith("_e2el_ms") for k in data) else SGLANG
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


def _first_int(data: dict[str, Any], keys: tuple[str, ...]) -> Optional[int]:
    """The first of keys that holds a whole number."""
    for key in keys:
        value = _int(data, key)
        if value is not None:
            return value
    return None


def _first_number(data: dict[str, Any], *keys: str) -> Optional[float]:
    """The first of keys that holds a number."""
    for key in keys:
        value = _number(data, key)
        if value is not None:
            return value
    return None


def _stat_key(key: str) -> Optional[tuple[str, str, str]]:
    """(stat, metric, unit suffix) of a client statistic key, in any accepted spelling; None for other keys."""
    match = _STAT_KEY.match(key)
    if match:
        return match.group(1), match.group(2), match.group(3) or ""
    match = _STAT_KEY_AFTER.match(key)
    if match:
        return match.group(2), match.group(1), match.group(3) or ""
    match = _PCT_KEY.match(key)
    if match:
        return f"p{match.group(2)}", match.group(1), match.group(3) or ""
    return None


def _client_stats(data: dict[str, Any], notes: Optional[list[str]] = None
                  ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """The client's statistics per metric, in ms: (home fields, other statistics)."""
    stats: dict[str, dict[str, float]] = {}
    extra: dict[str, dict[str, float]] = {}
    rank: dict[tuple[str, str], tuple[int, int]] = {}
    unitless: list[str] = []
    seconds: list[str] = []
    for key in data:
        parts = _stat_key(key)
        if parts is None:
            continue
        value = _number(data, key)
        if value is None:
            continue
        stat_raw, metric_raw, unit = parts
        unit_rank, scale = _UNITS[unit]
        value *= scale
        metric = _METRIC[metric_raw]
        stat = _STAT.get(stat_raw.replace("_", "."), None)
        order = (unit_rank, _E2E_ORDER.index(metric_raw) if metric_raw in _E2E_ORDER else 0)
        if stat is None:
            name = {"avg": "mean", "average": "mean", "stdev": "std"}.get(stat_raw, stat_raw.replace("_", "."))
            slot = (metric, "extra:" + name)
            if slot in rank and rank[slot] <= order:
                continue
            rank[slot] = order
            extra.setdefault(metric, {})[name] = value
            continue
        slot = (metric, stat)
        if slot in rank and rank[slot] <= order:
            continue
        rank[slot] = order
        stats.setdefault(metric, {})[stat] = value
        if unit == "":
            unitless.append(key)
        elif unit == "_s":
            seconds.append(key)
    if notes is not None and unitless:
        notes.append(f"statistics without a unit in their key ({', '.join(sorted(unitless)[:6])}"
                     f"{', …' if len(unitless) > 6 else ''}) read as milliseconds, the unit of every latency both "
                     "clients print and write")
    if notes is not None and seconds:
        notes.append(f"statistics in seconds ({', '.join(sorted(seconds)[:6])}{', …' if len(seconds) > 6 else ''}) "
                     "converted to milliseconds")
    return stats, extra


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
        if np.any(arr >= 2.0 ** 63):
            raise RunError(f"{key}: a token count of 2^63 or more is not a real count")
        return arr.astype(np.int64)
    return arr



# ---------------------------------------------------------------- the server a run measured, and versions

# keys whose text names the server (not the request format): top level, then a nested `metadata` object
SERVER_KEYS = ("framework", "server_framework", "inference_engine", "serving_engine")


def _text(value: Any) -> Optional[str]:
    return value.strip()[:200] if isinstance(value, str) and value.strip() else None


def _engine_name(text: str) -> str:
    """How runs name their server in a `framework` key (vLLM's `--metadata framework=…`, wrappers)."""
    return engine_of(text) or text.strip().lower()


def _server_info_entries(info: Any) -> list[tuple[Optional[str], dict[str, Any]]]:
    """(role, entry) of sglang's `server_info`: one server's /get_server_info, or a prefill/decode pair (lists)."""
    if not isinstance(info, dict):
        return []
    roles = [role for role in ("prefill", "decode") if role in info]
    if not roles:
        return [(None, info)]
    out: list[tuple[Optional[str], dict[str, Any]]] = []
    for role in roles:
        part = info[role]
        for entry in part if isinstance(part, list) else [part]:
            if isinstance(entry, dict):
                out.append((role, entry))
    return out


def server_identity(data: dict[str, Any]) -> tuple[Optional[str], Optional[str]]:
    """(engine, key) of the server the run itself names: a `framework` key (vLLM's --metadata, wrappers), else
    sglang's `server_info` (its /get_server_info, which only an SGLang server answers). `backend` is the request
    format, not the server: it is not read here."""
    places: list[tuple[str, Any]] = [("", data)]
    if isinstance(data.get("metadata"), dict):
        places.append(("metadata.", data["metadata"]))
    for prefix, place in places:
        for key in SERVER_KEYS:
            text = _text(place.get(key))
            if text is not None and re.fullmatch(r"[A-Za-z][\w.+-]{0,63}", text):
                return _engine_name(text), f"{prefix}{key}: {text}"
    for row in info_rows():
        entries = _server_info_entries(data.get(row.info_key))
        if any(_text(e.get("version")) or _text(e.get("model_path")) for _, e in entries):
            return row.name, f"{row.info_key} ({row.name}'s {row.info_path})"
    return None, None


def engine_version(data: dict[str, Any]) -> tuple[Optional[str], Optional[str]]:
    """(version, key) of the server as the run records it: sglang's `server_info.version` (a prefill/decode pair
    gives both: `0.5.5.post3 (prefill) / 0.5.6 (decode)` when they differ), vLLM's `server_config.vllm_version`."""
    key, entries = next(((row.info_key, found) for row in info_rows()
                         if (found := _server_info_entries(data.get(row.info_key)))), ("", []))
    per_role: dict[Optional[str], list[str]] = {}
    for role, entry in entries:
        version = _text(entry.get("version"))
        if version is not None and version not in per_role.setdefault(role, []):
            per_role[role].append(version)
    per_role = {role: v for role, v in per_role.items() if v}
    if per_role:
        every = {v for versions in per_role.values() for v in versions}
        if len(every) == 1:
            return next(iter(every)), f"{key}.version"
        shown = " / ".join(f"{', '.join(v)} ({role})" if role else ", ".join(v) for role, v in per_role.items())
        return shown, f"{key}.version"
    config = data.get("server_config")
    if isinstance(config, dict):
        for key in (*version_keys(), "engine_version", "version"):
            version = _text(config.get(key))
            if version is not None:
                return version, f"server_config.{key}"
    for key in ("engine_version", "server_version"):
        version = _text(data.get(key))
        if version is not None:
            return version, key
    return None, None


# keys under which a client (or a wrapper around it) records its own version
CLIENT_VERSION_KEYS = ("client_version", "benchmark_version", "bench_version", "tool_version")


def client_version(data: dict[str, Any]) -> Optional[str]:
    """The benchmark client's version as the run records it (never the server's `server_info.version`)."""
    for key in CLIENT_VERSION_KEYS:
        version = _text(data.get(key))
        if version is not None:
            return version
    return None
