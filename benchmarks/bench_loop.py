#!/usr/bin/env python3
"""The run loop's cost: `sskj-results` process starts and wall time of every shipped experiment's dry
run, and the harness overhead per scenario of a real run (grid wall time minus client time).

    .venv/bin/python benchmarks/bench_loop.py [--json OUT] [--only NAME] [--scenarios N]

Every figure is also given as a ratio to `python -c pass` measured in the same run, so that figures
taken on a loaded or a faster machine can be compared. Starts are counted by a wrapper put in front of
`sskj-results` (SSKJ_RESULTS_BIN); phases and scenarios are counted from the dry run's own output.

The real run drives the shell loop against tests/fakes/fake_openai_server.py (an OpenAI-compatible
server) and the fake `sglang.bench_serving` of tests/fakes/pymods, whose client time is recorded by
`sskj-results run-client` in client_stats/<stem>.json: what remains is the loop's own time (planning,
records, parse, cache reset, /metrics, warmup). The grid runs from the phase's first step to the end of
the last run-client (the wrapper logs each start's begin and end); the phase's end (parse, report,
report.html, validate), paid once per phase, is given apart and amortised over the scenarios. The
ownership check of the engine's port (run/ownership.py: twice per scenario in run-client) is also timed
alone against the fake engine. Targets (issue: a fast run loop): at most 2 starts per
scenario + 5 per phase, a dry run of any shipped experiment within 5 s, harness overhead within 1 s
per scenario, ownership checks within 0.1 s per scenario. docs/PERFORMANCE.md has the latest figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAKES = REPO / "tests" / "fakes"
PLATFORM_OF = {"cpu": "cpu", "h200": "nvidia_h200", "h20": "nvidia_h20", "pro6000": "nvidia_rtx6000d",
               "p800": "kunlun_p800"}
COUNTER = """#!/usr/bin/env bash
start="$(date +%s.%N)"
"${SSKJ_COUNT_REAL:?}" "$@"
rc=$?
printf '%s %s %s\\n' "${1:-}" "${start}" "$(date +%s.%N)" >>"${SSKJ_COUNT_FILE:?}"
exit "${rc}"
"""


def python_pass() -> float:
    times = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def real_bin() -> str:
    for candidate in (Path(sys.executable).parent / "sskj-results", REPO / ".venv" / "bin" / "sskj-results"):
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("sskj-results")
    if not found:
        sys.exit("sskj-results is not installed: make venv")
    return found


def counting_env(work: Path, base: dict[str, str]) -> tuple[dict[str, str], Path]:
    wrapper = work / "sskj-results-counter"
    wrapper.write_text(COUNTER)
    wrapper.chmod(0o755)
    count = work / "calls.txt"
    env = dict(base, SSKJ_RESULTS_BIN=str(wrapper), SSKJ_COUNT_REAL=real_bin(), SSKJ_COUNT_FILE=str(count))
    return env, count


def timed_calls(count: Path) -> list[tuple[str, float, float]]:
    """(command, start, end) of every `sskj-results` start, in the order they ended."""
    rows = []
    for line in count.read_text().splitlines() if count.is_file() else []:
        command, start, end = line.rsplit(" ", 2)
        rows.append((command, float(start), float(end)))
    return rows


def calls(count: Path) -> list[str]:
    return [command for command, _, _ in timed_calls(count)]


def dry_run(exp: Path, work: Path) -> dict[str, object]:
    platform = PLATFORM_OF[exp.parent.name]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SSKJ_", "SLURM_"))
            and k not in ("PLATFORM", "RESUME", "RUN_ID", "RESULT_ROOT", "NNODES")}
    env, count = counting_env(work, base)
    env.update(DRY_RUN="1", PLATFORM=platform, RUN_ID="20261201-120000", RESULT_ROOT=str(work / "run"))
    start = time.perf_counter()
    proc = subprocess.run(["bash", str(exp / "run_bench.sh")], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{exp}: dry run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    phases = len(re.findall(r"^# phase \d+:", proc.stdout, re.M))
    scenarios = len(re.findall(r"^# scenario ", proc.stdout, re.M))
    made = calls(count)
    return {"experiment": f"{exp.parent.name}/{exp.name}", "platform": platform, "phases": phases,
            "scenarios": scenarios, "starts": len(made), "budget": 2 * scenarios + 5 * max(phases, 1),
            "wall_s": round(wall, 2), "by_command": {c: made.count(c) for c in sorted(set(made))}}


FAKE_START_SERVER = """#!/usr/bin/env bash
set -euo pipefail
EXPERIMENT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
source {lib}
build_server_cmd() {{
  lib::engine_launcher "${{PHASE_ENGINE}}" VLLM_SERVER_DEV_MODE=1 || return 1
  SERVER_CMD=("${{LIB_LAUNCHER[@]}}" {server} --model "${{MODEL_PATH}}" --host "${{SERVER_HOST}}" --port "${{PORT}}")
}}
main() {{ bench::server_main "${{EXPERIMENT_DIR}}" build_server_cmd "$@"; }}
main "$@"
"""
FAKE_RUN_BENCH = """#!/usr/bin/env bash
set -euo pipefail
EXPERIMENT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
source {lib}
main() {{ bench::run_experiment "${{EXPERIMENT_DIR}}" vllm; }}
main "$@"
"""


def real_run(work: Path, scenarios: int) -> dict[str, object]:
    exp = work / "exp_loop"
    exp.mkdir()
    lib = REPO / "scripts" / "common" / "adaptive_bench_lib.sh"
    (exp / "start_server.sh").write_text(FAKE_START_SERVER.format(lib=lib, server=FAKES / "fake_openai_server.py"))
    (exp / "run_bench.sh").write_text(FAKE_RUN_BENCH.format(lib=lib))
    concurrencies = " ".join(str(i) for i in range(1, scenarios + 1))
    (exp / "config.env").write_text(textwrap.dedent(f"""\
        MODEL_PATH="fake-model"
        CONCURRENCIES="{concurrencies}"
        SHAPES="16x8"
        MIN_PROMPTS="4"
        PROMPTS_PER_CONCURRENCY="1"
        WARMUP_REQUESTS="1"
        PROMPT_METHOD="client-random-text"
        STOP_GRACE_S="5"
        HEALTH_TIMEOUT_S="60"
        """))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SSKJ_", "SLURM_", "FAKE_"))
            and k not in ("PLATFORM", "RESUME", "RUN_ID", "RESULT_ROOT", "NNODES", "DRY_RUN", "PORT")}
    base.update(PATH=f"{FAKES / 'bin'}:{Path(sys.executable).parent}:{base.get('PATH', '/usr/bin:/bin')}",
                PYTHONPATH=str(FAKES / "pymods"), CLIENT_PYTHON=sys.executable, ENGINE_PYTHON=sys.executable)
    env, count = counting_env(work, base)
    run_dir = work / "run"
    env.update(PLATFORM="cpu", RUN_ID="20261201-130000", RESULT_ROOT=str(run_dir), PORT=str(free_port()))
    start = time.perf_counter()
    proc = subprocess.run(["bash", str(exp / "run_bench.sh")], env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"real run failed ({proc.returncode}): {proc.stderr[-3000:]}")
    stats = [json.loads(p.read_text()) for p in sorted((run_dir / "client_stats").glob("*.json"))]
    client = sum(s["wall_s"] for s in stats)
    timed = timed_calls(count)
    made = [command for command, _, _ in timed]
    # The grid: from the phase's first step (which plans scenario 1) to the end of the last run-client
    # (which records the last scenario); the phase's end (parse, report, report.html, validate) apart.
    first_step = min(start for command, start, _ in timed if command == "step")
    last_client = max(end for command, _, end in timed if command == "run-client")
    grid = last_client - first_step
    phase_end = sum(end - start for command, start, end in timed if command == "phase-end")
    n = max(len(stats), 1)
    return {"scenarios": len(stats), "starts": len(made), "budget": 2 * len(stats) + 5 + 3,
            "by_command": {c: made.count(c) for c in sorted(set(made))}, "run_wall_s": round(wall, 2),
            "grid_wall_s": round(grid, 2), "client_wall_s": round(client, 2), "phase_end_s": round(phase_end, 2),
            "overhead_per_scenario_s": round((grid - client) / n, 3),
            "overhead_with_phase_end_s": round((grid - client + phase_end) / n, 3)}


def ownership_cost(reps: int = 30) -> dict[str, object]:
    """Wall time of one ownership check (sskj_results.run.ownership.check, as run-client makes it before and after
    every client and wait-health once per phase) against the fake engine, in this process: median and max."""
    sys.path.insert(0, str(REPO))
    from sskj_results.run.ownership import check

    port = free_port()
    engine = subprocess.Popen([sys.executable, str(FAKES / "fake_openai_server.py"), "--port", str(port),
                               "--reuse-port"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not check(port, engine.pid).ok:
            if time.monotonic() > deadline:
                sys.exit("ownership benchmark: the fake engine never listened")
            time.sleep(0.1)
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            found = check(port, engine.pid)
            times.append(time.perf_counter() - start)
            assert found.ok is True, found.message
    finally:
        engine.kill()
        engine.wait()
    processes = sum(1 for e in os.listdir("/proc") if e.isdigit())
    median = statistics.median(times)
    return {"check_median_s": round(median, 4), "check_max_s": round(max(times), 4),
            "per_scenario_s": round(2 * median, 4), "processes": processes}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="Also write the figures as JSON here.")
    parser.add_argument("--only", help="Only the dry runs of experiments whose name holds this text.")
    parser.add_argument("--scenarios", type=int, default=8, help="Scenarios of the real run (0: none).")
    args = parser.parse_args()
    base = python_pass()
    out: dict[str, object] = {"python_pass_s": round(base, 4), "dry_runs": [], "real_run": None}
    experiments = sorted(p.parent for p in REPO.glob("experiments/*/*/run_bench.sh")
                         if p.parent.parent.name in PLATFORM_OF and (not args.only or args.only in str(p)))
    for exp in experiments:
        with tempfile.TemporaryDirectory() as tmp:
            row = dry_run(exp, Path(tmp))
        row["wall_over_python_pass"] = round(float(row["wall_s"]) / base, 1)  # type: ignore[arg-type]
        out["dry_runs"].append(row)  # type: ignore[union-attr]
        print(f"dry run {row['experiment']:<40} phases {row['phases']} scenarios {row['scenarios']:>3} "
              f"starts {row['starts']:>3} (budget {row['budget']:>3})  {row['wall_s']:>6} s "
              f"= {row['wall_over_python_pass']} x python -c pass", flush=True)
    if args.scenarios > 0:
        with tempfile.TemporaryDirectory() as tmp:
            real = real_run(Path(tmp), args.scenarios)
        real["overhead_over_python_pass"] = round(float(real["overhead_per_scenario_s"]) / base, 1)  # type: ignore[arg-type]
        real["with_phase_end_over_python_pass"] = round(float(real["overhead_with_phase_end_s"]) / base, 1)  # type: ignore[arg-type]
        out["real_run"] = real
        print(f"real run (fake engine): {real['scenarios']} scenarios, starts {real['starts']} (budget "
              f"{real['budget']}), grid {real['grid_wall_s']} s, client {real['client_wall_s']} s, overhead "
              f"{real['overhead_per_scenario_s']} s per scenario = {real['overhead_over_python_pass']} x python -c pass; "
              f"phase end {real['phase_end_s']} s, with it {real['overhead_with_phase_end_s']} s per scenario = "
              f"{real['with_phase_end_over_python_pass']} x python -c pass")
        print(f"  starts by command: {real['by_command']}")
        own = ownership_cost()
        out["ownership"] = own
        print(f"ownership check: median {own['check_median_s']} s, max {own['check_max_s']} s over "
              f"{own['processes']} processes; 2 per scenario = {own['per_scenario_s']} s (target 0.1 s)")
    print(f"python -c pass: {base:.4f} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
