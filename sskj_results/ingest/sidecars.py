"""Side files the shell writes next to raw outputs, and what parse makes of them.

* ``server_metrics/<stem>.before.prom`` / ``.after.prom``: GET /metrics of a
  server before and after the scenario of raw file <stem>; the change of the
  acceptance counters its engine row names (catalog/engines.py `Counters`)
  gives that scenario's acceptance length.
* ``gpu_logs/<stem>.csv``: accelerator samples taken during the scenario
  (CSV with a header: nvidia-smi --query-gpu … --format=csv).
* ``gpu_logs/<stem>.xpu-smi.log``: Kunlun xpu-smi status tables, one per
  sample, each after a ``### <timestamp>`` line.
* ``server_metrics/<stem>.reset.http``: the answer to the prefix-cache reset
  before the scenario (``curl -i``: status line, headers, body); empty when
  the server could not be reached. A reset counts only when the status is 2xx
  and the body does not say ``{"success": false}`` (what vLLM answers when it
  refuses).
* ``skipped_after_oom.csv``: scenarios skipped after a server death/OOM.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional, cast

from ..catalog.engines import Counters, acceptance_counters
from ..contract.errors import RawFormatError
from ..contract.clientinfo import Acceptance
from ..contract.models import AcceleratorSummary, PromptMethod, SkippedScenario
from ..contract.io import describe_os_error, display_name, one_line, open_checked, read_text_checked

if TYPE_CHECKING:  # numpy loads only where an accelerator log is summarised (the run loop's planner reads this module too)
    import numpy as np


def read_side_text(path: Path, kind: str) -> str:
    """A side file's text (undecodable bytes replaced), bounded by its kind's size
    limit; special files are refused. Raises RawFormatError naming the file."""
    try:
        return read_text_checked(path, kind)
    except OSError as exc:
        raise RawFormatError(f"{display_name(path)}: cannot read: {describe_os_error(exc)}") from None


def read_metrics(path: Path) -> str:
    """server_metrics/<stem>.*.prom text (see read_side_text)."""
    return read_side_text(path, "server metrics")

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_NUMBER = re.compile(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?")


def prometheus_counters(text: str) -> dict[str, float]:
    """Sum of every sample of each metric name (over label sets) in Prometheus text format."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if not math.isfinite(value):  # NaN/+Inf samples say nothing about a count
            continue
        totals[match.group(1)] = totals.get(match.group(1), 0.0) + value
    return totals


def _drafted(counters: Counters, b: dict[str, float], a: dict[str, float]) -> Optional[tuple[float, float]]:
    """(1 + accepted / drafts, drafts) over the interval; None when nothing was drafted (not speculative)."""
    if counters.drafts not in a or counters.accepted not in a:
        return None
    drafts = a[counters.drafts] - b.get(counters.drafts, 0.0)
    accepted = a[counters.accepted] - b.get(counters.accepted, 0.0)
    if not (drafts > 0 and accepted >= 0):
        return None
    value = 1.0 + accepted / drafts
    return (value, drafts) if math.isfinite(value) else None


def accept_length_between(before: str, after: str) -> Optional[float]:
    """1 + accepted / drafts over the interval, from the first engine row's drafting counters present; None
    when nothing was drafted (not speculative)."""
    b, a = prometheus_counters(before), prometheus_counters(after)
    for counters in acceptance_counters("drafted"):
        found = _drafted(counters, b, a)
        if found is not None:
            return found[0]
    return None


def acceptance_counter_names() -> list[str]:
    """The engine rows' acceptance counters, as a message names them (`vllm:spec_decode_*`,
    `sglang:spec_verify_calls_total`)."""
    return [counters.acceptance_name for style in ("drafted", "verified") for counters in acceptance_counters(style)]


_POSITION = re.compile(r'position="(\d{1,3})"')


def _per_position(before: str, after: str, drafts: float, prefix: str) -> Optional[list[float]]:
    """Accepted tokens per draft position (counter PREFIX, samples labelled position="k") over the interval /
    drafting steps (positions 0..k-1); None without them."""
    if not prefix:
        return None

    def by_position(text: str) -> dict[int, float]:
        out: dict[int, float] = {}
        for line in text.splitlines():
            match = _SAMPLE.match(line)
            if not match or not match.group(1).startswith(prefix):
                continue
            position = _POSITION.search(match.group(2) or "")
            try:
                value = float(match.group(3))
            except ValueError:
                continue
            if position and math.isfinite(value):
                out[int(position.group(1))] = out.get(int(position.group(1)), 0.0) + value
        return out

    b, a = by_position(before), by_position(after)
    if not a or sorted(a) != list(range(len(a))):
        return None
    rates = [(a[k] - b.get(k, 0.0)) / drafts for k in sorted(a)]
    return rates if all(math.isfinite(r) and r >= 0 for r in rates) else None


def acceptance_between(before: str, after: str) -> Optional[Acceptance]:
    """The scenario's acceptance from the server's /metrics before and after it, by the engine rows' counters:
    1 + accepted / drafting steps (with the per-position rates where the engine counts them), else generation
    tokens / verification steps (every scheduler, data-parallel ones too). None when nothing was drafted."""
    b, a = prometheus_counters(before), prometheus_counters(after)
    for counters in acceptance_counters("drafted"):
        found = _drafted(counters, b, a)
        if found is None:
            continue
        value, drafts = found
        positions = _per_position(before, after, drafts, counters.accepted_per_position)
        return Acceptance(length=value, source="server_metrics", weighting="token", scope="scenario",
                          draft_length=len(positions) if positions else None, per_position=positions, reliable=True,
                          note=f"{counters.acceptance_name} counters over the scenario")
    for counters in acceptance_counters("verified"):
        if counters.verify_calls not in a or counters.generation_tokens not in a:
            continue
        calls = a[counters.verify_calls] - b.get(counters.verify_calls, 0.0)
        tokens = a[counters.generation_tokens] - b.get(counters.generation_tokens, 0.0)
        if not (calls > 0 and tokens >= calls) or not math.isfinite(tokens / calls):
            continue
        return Acceptance(length=tokens / calls, source="server_metrics", weighting="token", scope="scenario",
                          reliable=True,
                          note=f"{counters.generation_tokens} / {counters.verify_calls} over the scenario")
    return None


def _column(header: list[str], *needles: str) -> Optional[int]:
    for i, name in enumerate(header):
        low = name.strip().lower()
        if all(n in low for n in needles):
            return i
    return None


def _value(cell: str) -> float:
    match = _NUMBER.search(cell)
    return float(match.group(0)) if match else float("nan")


def summarize_gpu_log(path: Path) -> Optional[AcceleratorSummary]:
    """Mean/max utilization, memory and power over the samples of one scenario's CSV."""
    text = read_side_text(path, "accelerator log")
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r and any(c.strip() for c in r)]
    except csv.Error as exc:
        raise RawFormatError(f"{display_name(path)}: not readable as CSV ({exc})") from None
    if not rows:
        return None
    header, body = rows[0], rows[1:]
    util = _column(header, "util")
    if util is None:
        util = _column(header, "usage")
    mem = _column(header, "memory", "used")
    if mem is None:
        mem = _column(header, "mem")
    power = _column(header, "power")
    device = _column(header, "index")
    if device is None:
        device = _column(header, "device")
    if util is None and mem is None and power is None:
        raise RawFormatError(f"{path}:1: no utilization, memory or power column in header {header!r}")
    import numpy as np

    def col(i: Optional[int]) -> np.ndarray:
        if i is None:
            return np.zeros(0)
        values = np.array([_value(r[i]) if i < len(r) else np.nan for r in body], dtype=np.float64)
        return values[np.isfinite(values)]

    def stat(values: np.ndarray, fn: str) -> Optional[float]:
        return float(getattr(np, fn)(values)) if values.size else None

    u, m, p = col(util), col(mem), col(power)
    devices = len({r[device].strip() for r in body if device < len(r)}) if device is not None else None
    return AcceleratorSummary(
        samples=len(body), devices=devices,
        util_mean_pct=stat(u, "mean"), util_max_pct=stat(u, "max"),
        mem_used_mean_mib=stat(m, "mean"), mem_used_max_mib=stat(m, "max"),
        power_mean_w=stat(p, "mean"), power_max_w=stat(p, "max"),
    )


_XPU_MEM = re.compile(r"(\d+(?:\.\d+)?)\s*MiB\s*/\s*\d+(?:\.\d+)?\s*MiB")
_XPU_POWER = re.compile(r"(\d+(?:\.\d+)?)\s*W\s*/\s*\d+(?:\.\d+)?\s*W")
_XPU_UTIL = re.compile(r"(\d+(?:\.\d+)?)\s*%")


def summarize_xpu_log(path: Path) -> Optional[AcceleratorSummary]:
    """Utilization, memory and power from xpu-smi status tables (one device per row with `NMiB / NMiB`)."""
    snapshots: list[list[str]] = []
    for line in read_side_text(path, "accelerator log").splitlines():
        if line.startswith("###"):
            snapshots.append([])
        elif _XPU_MEM.search(line):
            if not snapshots:
                snapshots.append([])
            snapshots[-1].append(line)
    rows = [row for snap in snapshots for row in snap]
    if not rows:
        return None
    import numpy as np

    def grab(pattern: re.Pattern[str], last: bool = False) -> np.ndarray:
        values = []
        for row in rows:
            found = pattern.findall(row)
            if found:
                values.append(float(found[-1] if last else found[0]))
        return np.array(values, dtype=np.float64)

    mem, power, util = grab(_XPU_MEM), grab(_XPU_POWER), grab(_XPU_UTIL, last=True)

    def stat(values: np.ndarray, fn: str) -> Optional[float]:
        return float(getattr(np, fn)(values)) if values.size else None

    return AcceleratorSummary(
        samples=sum(1 for snap in snapshots if snap), devices=max(len(snap) for snap in snapshots),
        util_mean_pct=stat(util, "mean"), util_max_pct=stat(util, "max"),
        mem_used_mean_mib=stat(mem, "mean"), mem_used_max_mib=stat(mem, "max"),
        power_mean_w=stat(power, "mean"), power_max_w=stat(power, "max"),
    )


def read_skipped(path: Path) -> list[SkippedScenario]:
    """skipped_after_oom.csv (scenario,concurrency,input_len,output_len,reason,log_excerpt)."""
    name_shown = display_name(path)
    out: list[SkippedScenario] = []
    reader = csv.DictReader(io.StringIO(read_side_text(path, "skipped-scenario list"), newline=""))
    try:
        if not reader.fieldnames or "scenario" not in reader.fieldnames:
            raise RawFormatError(f"{name_shown}:1: expected a header with scenario,concurrency,input_len,output_len,reason,log_excerpt")
        for number, row in enumerate(reader, start=2):
            def num(key: str, low: int) -> Optional[int]:
                text = str(row.get(key) or "").strip()
                if not text:
                    return None
                if not (text.isascii() and text.isdigit()) or len(text) > 18 or int(text) < low:
                    raise RawFormatError(f"{name_shown}:{number}: {key} must be a whole number >= {low}, "
                                         f"got {one_line(text[:40])!r}")
                return int(text)

            name = str(row.get("scenario") or "").strip()
            if not name:
                raise RawFormatError(f"{name_shown}:{number}: empty scenario name")
            excerpt = row.get("log_excerpt")
            out.append(SkippedScenario(
                scenario=name, concurrency=num("concurrency", 1), input_len=num("input_len", 0),
                output_len=num("output_len", 0), reason=str(row.get("reason") or "unknown").strip() or "unknown",
                log_excerpt=excerpt if isinstance(excerpt, str) and excerpt else None,
            ))
    except csv.Error as exc:
        raise RawFormatError(f"{name_shown}: not readable as CSV ({exc})") from None
    return out


_STATUS_LINE = re.compile(r"^HTTP/[0-9.]+ (\d{3})")


def cache_reset(path: Path) -> tuple[Optional[bool], Optional[str]]:
    """Did the reset answered in server_metrics/<stem>.reset.http take effect? (None when there is no such file),
    and why not."""
    if not path.is_file():
        return None, None
    text = read_side_text(path, "server metrics")
    status: Optional[int] = None
    body = text
    while (match := _STATUS_LINE.match(body)) is not None:  # `100 Continue` and the like come first
        status = int(match.group(1))
        head, sep, body = body.partition("\r\n\r\n") if "\r\n\r\n" in body else body.partition("\n\n")
        if not sep:
            body = ""
    if status is None:
        return False, "no answer (the server could not be reached)"
    if not 200 <= status < 300:
        return False, f"HTTP {status}: {one_line(body.strip())[:200]}"
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("success") is False:
        return False, f"HTTP {status} with {one_line(body.strip())[:200]} (the server refused)"
    return True, None


def sidecar_paths(run_dir: Path, stem: str) -> list[Path]:
    """The side files that belong to raw file <stem>, those that exist."""
    candidates = [
        run_dir / "server_metrics" / f"{stem}.before.prom",
        run_dir / "server_metrics" / f"{stem}.after.prom",
        run_dir / "server_metrics" / f"{stem}.reset.http",
        run_dir / "gpu_logs" / f"{stem}.csv",
        run_dir / "gpu_logs" / f"{stem}.xpu-smi.log",
        run_dir / "client_stats" / f"{stem}.json",  # read by evidence.py (validity)
        run_dir / "client_info" / f"{stem}.json",  # the client's fingerprint (run/client_info.py)
        run_dir / "prompts" / f"{stem}.json",  # prompt_method_of
    ]
    return [p for p in candidates if p.is_file()]


def sidecar_digest(paths: list[Path]) -> Optional[str]:
    if not paths:
        return None
    digest = hashlib.sha256()
    for p in paths:
        digest.update(p.name.encode("utf-8", errors="surrogateescape"))
        with open_checked(p, "accelerator log") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def prompt_method_of(run_dir: Path, stem: str, warnings: list[str]) -> tuple[Optional[PromptMethod], Optional[str]]:
    """The prompt method and prompt source the run loop recorded in prompts/<stem>.json (None when absent; a bad
    file is a warning)."""
    from ..catalog.clients import PROMPT_METHODS

    path = run_dir / "prompts" / f"{stem}.json"
    if not path.is_file():
        return None, None
    try:
        data = json.loads(read_text_checked(path, "config file"))
    except (ValueError, OSError, RawFormatError) as exc:
        warnings.append(f"prompts/{stem}.json: not readable ({exc}); prompt method unknown")
        return None, None
    method = data.get("method") if isinstance(data, dict) else None
    if method not in PROMPT_METHODS:
        warnings.append(f"prompts/{stem}.json: method {method!r} is not one of {', '.join(PROMPT_METHODS)}; "
                        "prompt method unknown")
        return None, None
    source = data.get("source")
    return cast(PromptMethod, method), source if isinstance(source, str) and source else None
