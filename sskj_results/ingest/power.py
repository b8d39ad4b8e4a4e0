"""A scenario's accelerators, power samples and benchmark window -> its per-accelerator and energy figures.

* accelerators: from the phase's own record (`accelerators_of`): the devices given (metadata.devices), else
  nodes x gpus_per_node of a multi-node run, else tp x dp of the server command (config.tp, the command's
  data-parallel flag: catalog/engines.py `data_parallel`);
* power samples: ``gpu_logs/<stem>.csv`` (nvidia-smi CSV with `timestamp`, `index` and `power.draw` columns) or
  ``gpu_logs/<stem>.xpu-smi.log`` (xpu-smi tables, one per ``### <ISO time>`` line, a row per device:
  ``| <index> ... <N>W / <N>W ...``);
* the benchmark window: client_stats/<stem>.json's `ended_at` minus the client's duration_s, else vLLM's
  `date` (written when the benchmark ended) minus duration_s (to the millisecond; vLLM's to the second).

The maths is analysis/energy.py's; docs/METRICS.md#energy defines the figures.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..analysis.energy import MAX_GAP_S, PowerSamples, cost_per_million, interactivity, per_accelerator, \
    per_output_token, window_energy
from ..analysis.configdiff import server_command
from ..catalog.engines import data_parallel
from ..contract.chipinfo import PowerRecord, WindowSource
from ..contract.errors import RawFormatError
from ..contract.models import Config, Metadata, Scenario
from .rawkeys import VLLM
from .readers import RawRun
from .sidecars import read_side_text

_DEVICE_IDS = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*$")


def accelerators_of(metadata: Metadata, config: Config) -> tuple[Optional[int], Optional[str], tuple[int, ...]]:
    """(count, how it was found, the device indices that served the phase on the sampled node; () when unknown)."""
    given = (metadata.devices or "").partition("=")[2]
    if _DEVICE_IDS.match(given):
        ids = tuple(int(x) for x in given.split(","))
        return len(ids) * (metadata.nodes or 1), "devices", ids
    if metadata.nodes and metadata.nodes > 1:
        if metadata.gpus_per_node:
            return metadata.nodes * metadata.gpus_per_node, "nodes x gpus_per_node", ()
        return None, None, ()
    if config.tp is None:
        return None, None, ()
    command = server_command(config)
    dp = data_parallel(command) if command else None
    if dp is None:
        return config.tp, "tp", tuple(range(config.tp))
    return config.tp * dp, "tp x dp", tuple(range(config.tp * dp))


_STAMP_LEN = len("2026/07/08 12:00:00.000")


def _epoch_naive(stamps: list[str]) -> np.ndarray:
    """`YYYY/MM/DD HH:MM:SS.fff` local times (nvidia-smi's) -> seconds since the epoch, vectorised; the local UTC
    offset of the first sample holds for all (a clock change during a scenario is not undone). Raises ValueError
    for another form."""
    if stamps and min(map(len, stamps)) == max(map(len, stamps)) == _STAMP_LEN:
        raw = np.array(stamps, dtype=f"S{_STAMP_LEN}")  # fixed width: the separators are columns of one byte array
        chars = raw.view(np.uint8).reshape(len(raw), _STAMP_LEN)
        if not (np.all(chars[:, [4, 7]] == ord("/")) and np.all(chars[:, 10] == ord(" "))):
            raise ValueError(f"{stamps[0]!r} is not YYYY/MM/DD HH:MM:SS.fff")
        chars[:, [4, 7]] = ord("-")
        moments = raw.astype("datetime64[ms]")
    else:
        iso = np.char.replace(np.char.replace(np.char.strip(np.array(stamps, dtype=str)), "/", "-"), " ", "T")
        moments = iso.astype("datetime64[ms]")
    seconds = (moments - np.datetime64(0, "ms")).astype(np.float64) / 1000.0
    first = datetime.fromtimestamp(seconds[0], tz=timezone.utc).replace(tzinfo=None)
    offset = first.timestamp() - seconds[0]  # the local time read as UTC, back to the epoch
    return seconds + offset


def _floats(cells: list[str]) -> np.ndarray:
    """Numbers of a column; `[N/A]`, `[Not Supported]` and other words are NaN."""
    try:
        return np.array(cells, dtype=np.float64)
    except ValueError:
        out = np.full(len(cells), np.nan)
        for i, cell in enumerate(cells):
            try:
                out[i] = float(cell.strip().removesuffix("W").strip())
            except ValueError:
                pass
        return out


def _index_of(header: list[str], name: str) -> Optional[int]:
    for i, cell in enumerate(header):
        if cell.strip().lower().split(" [")[0] == name:
            return i
    return None


def _columns(text: str, name: str) -> tuple[list[str], list[list[str]]]:
    """(header, the body's columns) of an nvidia-smi CSV. Its own form (`a, b, c` lines, no quotes) is split in
    one pass over the text; anything else goes through the csv module, short lines (blank, or cut off when the
    sampler stopped) left out."""
    head, _, body = text.partition("\n")
    header = next(csv.reader([head]), [])
    width = len(header)
    body = body.rstrip("\n")
    if width and body and '"' not in body and "\r" not in body:
        flat = body.replace("\n", ", ").split(", ")
        if len(flat) == width * (body.count("\n") + 1):
            return header, [flat[i::width] for i in range(width)]
    try:
        rows = [r for r in csv.reader(io.StringIO(body, newline="")) if len(r) == width]
    except csv.Error as exc:
        raise RawFormatError(f"{name}: not readable as CSV ({exc})") from None
    return header, [[r[i] for r in rows] for i in range(width)]


def nvidia_power_samples(text: str, name: str) -> PowerSamples:
    """The power samples of an nvidia-smi CSV (header first). Raises RawFormatError naming the file when a
    timestamp, index or power.draw column is missing or a timestamp does not read."""
    header, columns = _columns(text, name)
    cols = {key: _index_of(header, key) for key in ("timestamp", "index", "power.draw")}
    missing = [key for key, i in cols.items() if i is None]
    if missing:
        raise RawFormatError(f"{name}:1: no {', '.join(missing)} column; the sampler must query "
                             "timestamp,index,power.draw (scripts/common/lib.sh: lib::start_accel_sampler)")
    stamps, indices, watts = (columns[int(cols[k])] for k in ("timestamp", "index", "power.draw"))  # type: ignore[arg-type]
    if not stamps:
        raise RawFormatError(f"{name}: no samples")
    try:
        times = _epoch_naive(stamps)
    except ValueError as exc:
        raise RawFormatError(f"{name}: a timestamp is not `YYYY/MM/DD HH:MM:SS.fff` ({exc})") from None
    devices = _floats(indices)
    if not np.all(np.isfinite(devices)):
        raise RawFormatError(f"{name}: a device index is not a number")
    return PowerSamples("nvidia-smi", times, devices.astype(np.int64), _floats(watts))


_XPU_ROW = re.compile(r"^\|\s*(\d+)\s")
_XPU_POWER = re.compile(r"(\d+(?:\.\d+)?)\s*W\s*/\s*\d+(?:\.\d+)?\s*W")
_XPU_MEM = re.compile(r"\d+(?:\.\d+)?\s*MiB\s*/\s*\d+(?:\.\d+)?\s*MiB")


def _sampler_time(text: str) -> Optional[float]:
    """The xpu-smi sampler's `date +%Y-%m-%dT%H:%M:%S%z` (any ISO-8601 time too), seconds since the epoch."""
    for form in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"):  # Python 3.10's fromisoformat reads no +0800
        try:
            return datetime.strptime(text, form).timestamp()
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def xpu_power_samples(text: str, name: str) -> PowerSamples:
    """The power samples of an xpu-smi log: each `### <ISO time>` block's device rows (`| <index> ...` with
    `N MiB / N MiB`); a row without `N W / N W` has no power (NaN)."""
    times: list[float] = []
    devices: list[int] = []
    power: list[float] = []
    now: Optional[float] = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("###"):
            now = _sampler_time(line[3:].strip())
            if now is None:
                raise RawFormatError(f"{name}:{number}: {line[3:].strip()[:40]!r} is not an ISO-8601 time")
            continue
        row = _XPU_ROW.match(line)
        if row is None or not _XPU_MEM.search(line):
            continue
        if now is None:
            raise RawFormatError(f"{name}:{number}: a device row before any `### <time>` line")
        found = _XPU_POWER.search(line)
        times.append(now)
        devices.append(int(row.group(1)))
        power.append(float(found.group(1)) if found else math.nan)
    if not times:
        raise RawFormatError(f"{name}: no device rows (`| N ... N MiB / N MiB`)")
    return PowerSamples("xpu-smi", np.array(times), np.array(devices, dtype=np.int64), np.array(power))


def read_power_samples(run_dir: Path, stem: str) -> Optional[PowerSamples]:
    """The scenario's power samples (gpu_logs/<stem>.csv, else .xpu-smi.log); None when neither exists."""
    csv_path = run_dir / "gpu_logs" / f"{stem}.csv"
    xpu_path = run_dir / "gpu_logs" / f"{stem}.xpu-smi.log"
    if csv_path.is_file():
        return nvidia_power_samples(read_side_text(csv_path, "accelerator log"), f"gpu_logs/{csv_path.name}")
    if xpu_path.is_file():
        return xpu_power_samples(read_side_text(xpu_path, "accelerator log"), f"gpu_logs/{xpu_path.name}")
    return None


def benchmark_window(run: RawRun, run_dir: Path, stem: str) -> tuple[Optional[tuple[float, float]],
                                                                      Optional[WindowSource], Optional[str]]:
    """((start, end) in seconds since the epoch, its source, why unknown)."""
    if run.duration_s is None or not run.duration_s > 0:
        return None, None, "the client recorded no benchmark duration"
    stats = run_dir / "client_stats" / f"{stem}.json"
    if stats.is_file():
        try:
            data: Any = json.loads(read_side_text(stats, "config file"))
            end = datetime.fromisoformat(str(data["ended_at"])).timestamp()
            return (end - run.duration_s, end), "client_stats", None
        except (ValueError, KeyError, TypeError, RawFormatError):
            pass  # an unreadable record: the run's own time, below
    if run.format == VLLM and run.started is not None and run.started_precision == "second":
        end = run.started.timestamp()
        return (end - run.duration_s, end), "vllm-date", None
    return None, None, "no record of when the benchmark ran (client_stats/ has no ended_at; sglang's client " \
        "writes no time)"


def per_accel_figures(scenario: Scenario, metadata: Metadata, config: Config) -> tuple[int, ...]:
    """Fill a scenario's accelerators, per-accelerator throughputs, interactivity and cost (from its recorded values);
    return the devices that served it."""
    count, how, served = accelerators_of(metadata, config)
    scenario.accelerators, scenario.accelerators_source = count, how
    scenario.output_throughput_per_accel = per_accelerator(scenario.output_token_throughput, count)
    scenario.total_throughput_per_accel = per_accelerator(scenario.total_token_throughput, count)
    scenario.interactivity = interactivity(scenario.latencies.tpot_ms.mean)
    scenario.cost_per_million_output_tokens = cost_per_million(metadata.price_per_accel_hour, count,
                                                               scenario.output_token_throughput)
    return served


def chip_figures(scenario: Scenario, run: RawRun, run_dir: Optional[Path], stem: Optional[str], runs_in_file: int,
                 metadata: Metadata, config: Config, warnings: list[str]) -> None:
    """Fill a scenario's accelerators, per-accelerator figures, interactivity, energy figures and power record."""
    served = per_accel_figures(scenario, metadata, config)
    if run_dir is None or stem is None or runs_in_file != 1:
        return
    try:
        samples = read_power_samples(run_dir, stem)
    except (RawFormatError, ValueError, OverflowError, OSError) as exc:  # a bad log costs the energy, not the scenario
        bad = str(exc) if isinstance(exc, RawFormatError) else f"gpu_logs/{stem}.*: not readable ({exc})"
        warnings.append(f"{bad}; energy not recorded")
        scenario.power = PowerRecord(valid=False, reason=bad, max_gap_limit_s=MAX_GAP_S)
        return
    if samples is None:
        return
    window, source, why = benchmark_window(run, run_dir, stem)
    record: dict[str, Any] = {"sampler": samples.sampler, "window_source": source, "max_gap_limit_s": MAX_GAP_S}
    if window is None:
        scenario.power = PowerRecord(valid=False, reason=why, **record)
        return
    record.update(window_start=datetime.fromtimestamp(window[0]).astimezone().isoformat(timespec="milliseconds"),
                  window_s=window[1] - window[0])
    if not served:
        scenario.power = PowerRecord(valid=False, reason="which devices served the phase is unknown (no DEVICES, "
                                     "tp or single node recorded)", **record)
        return
    energy = window_energy(samples, window[0], window[1], served)
    scenario.power = PowerRecord(valid=energy.energy_j is not None, reason=energy.reason, devices=list(energy.devices),
                                 samples=energy.samples, max_gap_s=energy.max_gap_s, **record)
    output_tokens = _output_tokens(run)
    scenario.energy_j = energy.energy_j
    scenario.joules_per_output_token, scenario.output_tokens_per_kwh = per_output_token(energy.energy_j, output_tokens)


def _output_tokens(run: RawRun) -> Optional[float]:
    """The successful requests' output tokens: per request when the client wrote them, else its total."""
    if run.details is not None:
        return float(run.details.output_lens[run.details.success].sum())
    return run.total_output_tokens
