"""`sskj-results collect` timed against reading and parsing the same results.json files.

Phases, each measured in a fresh child process and run in alternation for
several rounds:

* floor     — read every results.json and ``orjson.loads`` it (the objects are dropped);
* collect   — ``sskj-results collect RUNS --out runs.parquet`` with no cache
              beside the output (removed first): every run is read, validated and tabled;
* recollect — the same command again on the unchanged tree (the cache is used);
* csv       — ``sskj-results collect RUNS --out runs.csv --no-cache``.

The tree is synthetic and deterministic: ``--runs`` run directories of
``--scenarios`` scenarios with ``--requests`` per-request entries each,
built from the real run tests/data/compare/runs/vllm/results.json (every
value of a scenario is kept; names, concurrency and run ids vary).

    python benchmarks/bench_collect.py [--runs 2000] [--scenarios 20] [--requests 50] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE.parent / "tests" / "data" / "compare" / "runs" / "vllm" / "results.json"
PHASES = ("floor", "collect", "recollect", "csv")


def make_runs(root: Path, runs: int, scenarios: int, requests: int) -> dict[str, Any]:
    """Write the synthetic tree: root/<experiment>/results/<run id>/results.json."""
    template = json.loads(TEMPLATE.read_text(encoding="utf-8"))
    base = next(s for s in template["scenarios"] if len(s["raw_requests"]) > 1)
    request = base["raw_requests"][0]
    total = 0
    for r in range(runs):
        data = copy.deepcopy(template)
        data["metadata"]["run_id"] = f"20260101-{r:06d}"
        data["metadata"]["experiment"] = f"bench_exp{r % 10}"
        data["raw_files"] = []
        data["scenarios"] = []
        for i in range(scenarios):
            s = copy.deepcopy(base)
            s["name"] = f"c{i + 1}_i{s['input_len']}_o{s['output_len']}"
            s["concurrency"] = i + 1
            s["output_token_throughput"] = round(100.0 + r * 0.01 + i, 4)
            s["raw_requests"] = [dict(request, request_id=str(k), ttft_ms=round(request["ttft_ms"] + k * 0.5, 3))
                                 for k in range(requests)]
            s["latencies"]["ttft_ms"]["count"] = requests
            data["scenarios"].append(s)
        directory = root / f"bench_exp{r % 10}" / "results" / data["metadata"]["run_id"]
        directory.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        (directory / "results.json").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return {"runs": runs, "scenarios": scenarios, "requests": requests, "bytes": total}


# ---------------------------------------------------------------- child side


def _floor(runs: Path) -> dict[str, Any]:
    import orjson

    files = sorted(runs.rglob("results.json"))
    for file in files:
        orjson.loads(file.read_bytes())
    return {"files": len(files)}


def _cli(args: list[str]) -> None:
    from sskj_results.cli import main

    try:
        main.main(args=args, prog_name="sskj-results", standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"sskj-results {' '.join(args)}: exit {exc.code}") from None


def _child(phase: str, runs: Path, work: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    if phase == "floor":
        import orjson  # noqa: F401
    else:
        import pandas  # noqa: F401
        import pyarrow.parquet  # noqa: F401

        import sskj_results.cli.collect_cmd  # noqa: F401
        import sskj_results.render.collect  # noqa: F401
    t1 = time.perf_counter()
    extra: dict[str, Any] = {}
    if phase == "floor":
        extra = _floor(runs)
    elif phase == "collect":
        out = work / "runs.parquet"
        for p in (out, work / ".runs.parquet.cache.parquet"):
            p.unlink(missing_ok=True)
        t1 = time.perf_counter()
        _cli(["collect", str(runs), "--out", str(out)])
    elif phase == "recollect":
        _cli(["collect", str(runs), "--out", str(work / "runs.parquet")])
    elif phase == "csv":
        _cli(["collect", str(runs), "--out", str(work / "runs.csv"), "--no-cache"])
    t2 = time.perf_counter()
    return {"seconds": t2 - t1, "imports_s": t1 - t0, **extra}


# ---------------------------------------------------------------- parent side


def _run_child(phase: str, runs: Path, work: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", phase, "--tree", str(runs), "--work", str(work)],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed:\n{proc.stdout}\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("pandas", "pyarrow", "pydantic", "orjson"):
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - a version we cannot read is only left out
            pass
    return out


def run_benchmark(work: Path, runs: int, scenarios: int, requests: int, rounds: int) -> dict[str, Any]:
    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    t0 = time.perf_counter()
    data = make_runs(tree, runs, scenarios, requests)
    print(f"wrote {runs} runs ({data['bytes'] / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    _run_child("floor", tree, work)  # warm the page cache once
    samples: dict[str, list[dict[str, Any]]] = {p: [] for p in PHASES}
    for r in range(1, rounds + 1):
        for phase in PHASES:
            result = _run_child(phase, tree, work)
            samples[phase].append(result)
            print(f"round {r}: {phase:10s} {result['seconds']:7.3f} s", file=sys.stderr)
    med = {p: statistics.median(s["seconds"] for s in samples[p]) for p in PHASES}
    return {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "system": platform.platform(), **_versions()},
        "dataset": data,
        "rounds": rounds,
        "median_s": med,
        "ratios": {
            "collect_over_floor": med["collect"] / med["floor"],
            "recollect_over_collect": med["recollect"] / med["collect"],
            "csv_over_floor": med["csv"] / med["floor"],
        },
        "samples": samples,
    }


def _report(fig: dict[str, Any]) -> str:
    d, med, ratios = fig["dataset"], fig["median_s"], fig["ratios"]
    lines = [f"{d['runs']} runs x {d['scenarios']} scenarios x {d['requests']} requests, {d['bytes'] / 1e6:.1f} MB, "
             f"{fig['rounds']} round(s); median seconds:"]
    lines += [f"  {p:10s} {med[p]:8.3f} s" for p in PHASES]
    lines += [f"  collect / floor       {ratios['collect_over_floor']:.2f}",
              f"  recollect / collect   {ratios['recollect_over_collect']:.3f}",
              f"  csv / floor           {ratios['csv_over_floor']:.2f}"]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="run directories (default 2000)")
    parser.add_argument("--scenarios", type=int, default=20, help="scenarios per run (default 20)")
    parser.add_argument("--requests", type=int, default=50, help="per-request entries per scenario (default 50)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the alternating phases (default 3)")
    parser.add_argument("--work", type=Path, help="working directory (default: a temporary one, removed after)")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.tree, args.work)))
        return 0
    if min(args.runs, args.scenarios, args.rounds) < 1 or args.requests < 0:
        parser.error("--runs, --scenarios and --rounds must be at least 1, --requests at least 0")
    temp = None
    work = args.work
    if work is None:
        temp = tempfile.mkdtemp(prefix="sskj-bench-collect-")
        work = Path(temp)
    try:
        work.mkdir(parents=True, exist_ok=True)
        figures = run_benchmark(work.resolve(), args.runs, args.scenarios, args.requests, args.rounds)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    print(_report(figures))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
