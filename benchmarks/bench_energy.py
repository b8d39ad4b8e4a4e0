"""Energy from a night's power samples, timed against reading the same CSV.

A synthetic nvidia-smi log in the run loop's format (scripts/common/lib.sh: lib::start_accel_sampler:
``timestamp, index, utilization.gpu, memory.used, memory.total, power.draw``, nounits) of ``--devices`` devices
sampled every ``--interval`` seconds for ``--hours`` hours. Phases, alternated for ``--rounds`` rounds:

* read   — what the import already does with a gpu_logs/ CSV: its text (``read_side_text``) through
           ``csv.reader`` into rows;
* energy — the power samples from the same file (``ingest/power.read_power_samples``: read, rows, timestamps,
           devices, power) and the energy of every device over the night less a minute at each end
           (``analysis/energy.window_energy``).

The budget (issue 37): energy within 1.5x read, in CPU seconds (median of the rounds: a shared machine's wall
time measures its neighbours too; both are printed); the exit status is 1 when it is not.

    python benchmarks/bench_energy.py [--devices 8] [--hours 10] [--interval 1] [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

BUDGET = 1.5


def write_log(path: Path, devices: int, hours: float, interval: float) -> tuple[float, float, int]:
    """The CSV; (first sample, last sample) in seconds since the epoch and the number of rows."""
    start = datetime(2026, 7, 8, 20, 0, 0).timestamp()
    steps = int(hours * 3600 / interval) + 1
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]"]
    for k in range(steps):
        t = start + k * interval
        stamp = datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        for d in range(devices):
            lines.append(f"{stamp}, {d}, {(k + d) % 100}, 70000, 143771, {300 + (k * 7 + d * 13) % 400}.{k % 100:02d}")
    path.write_text("\n".join(lines) + "\n")
    return start, start + (steps - 1) * interval, steps * devices


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--hours", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from sskj_results.analysis.energy import window_energy
    from sskj_results.ingest.power import read_power_samples
    from sskj_results.ingest.sidecars import read_side_text

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        (run / "gpu_logs").mkdir()
        log = run / "gpu_logs" / "night.csv"
        first, last, rows = write_log(log, args.devices, args.hours, args.interval)
        size = log.stat().st_size
        times: dict[str, list[float]] = {"read": [], "energy": []}  # CPU seconds (the machine may be shared)
        walls: dict[str, list[float]] = {"read": [], "energy": []}
        energy = None
        for _ in range(args.rounds):
            t0, w0 = time.process_time(), time.perf_counter()
            parsed = list(csv.reader(io.StringIO(read_side_text(log, "accelerator log"), newline="")))
            times["read"].append(time.process_time() - t0)
            walls["read"].append(time.perf_counter() - w0)
            assert len(parsed) == rows + 1
            t0, w0 = time.process_time(), time.perf_counter()
            samples = read_power_samples(run, "night")
            assert samples is not None
            energy = window_energy(samples, first + 60, last - 60, range(args.devices))
            times["energy"].append(time.process_time() - t0)
            walls["energy"].append(time.perf_counter() - w0)
            assert energy.energy_j is not None, energy.reason
    read, compute = statistics.median(times["read"]), statistics.median(times["energy"])
    ratio = compute / read
    result = {
        "devices": args.devices, "hours": args.hours, "interval_s": args.interval, "rows": rows,
        "csv_mib": round(size / 2**20, 1),
        "read_cpu_s": round(read, 3), "energy_cpu_s": round(compute, 3), "ratio": round(ratio, 3), "budget": BUDGET,
        "read_wall_s": round(statistics.median(walls["read"]), 3),
        "energy_wall_s": round(statistics.median(walls["energy"]), 3),
        "energy_kwh": round((energy.energy_j or 0) / 3.6e6, 3) if energy else None,
        "python": platform.python_version(), "rounds": args.rounds,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if ratio > BUDGET:
        print(f"energy took {ratio:.2f}x the read, over the budget of {BUDGET}x", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
