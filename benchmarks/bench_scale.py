#!/usr/bin/env python3
"""import-legacy and report --html at scale: 20,000 small raw files in one directory, one run of 20,000 scenarios.

    .venv/bin/python benchmarks/bench_scale.py [--files 20000] [--per-shape 50] [--small 200] [--work DIR] [--json OUT]

Writes `--files` raw files of `sglang.bench_serving --output-details` (one JSON line each, the client's own
keys, 3 requests each, by benchmarks/make_raw.py's `make_run`) into one directory: distinct scenarios,
`--per-shape` concurrencies (1, 2, ...) for each of files / per-shape (input, output) shapes. Then, each
phase in a fresh child process whose clock starts after its modules are imported:

* import_1     `import-legacy` of a directory holding one of the files;
* import_small `import-legacy` of a directory holding `--small` of them (the same first ones);
* import_all   `import-legacy` of all of them: one run directory of `--files` scenarios;
* report_html  `report RUN --html --no-plots` on that run directory (report.md and report.html; the page's size).

Linear means: import_all - F <= 2 x files x t, where t is the cost of one more file and F the cost of an
import that does not depend on how many files it reads (run directory, report.md, README, lock); both come
from the straight line through import_1 and import_small: t = (import_small - import_1) / (small - 1),
F = import_1 - t. The issue's target (import within 2x of files x the time of one file) compares with the
time of one file, t; against import_1 itself (F counted once per file) the bound is looser still and is
printed too. Target for the page: report_html <= 30 s. docs/PERFORMANCE.md has the latest figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHIP, MODEL = "bench", "bench-model"
PHASES = ("import_1", "import_small", "import_all", "report_html")


# ---------------------------------------------------------------- the raw files


def shape_of(k: int) -> tuple[int, int]:
    """(input, output) of the k-th shape: 20 inputs by as many outputs as needed, all small."""
    return 128 + 64 * (k % 20), 16 + 8 * (k // 20)


def write_raw(out: Path, files: int, per_shape: int) -> list[Path]:
    """`files` raw files, each its own scenario (concurrency, input, output); returns them in name order."""
    sys.path.insert(0, str(HERE))
    from make_raw import file_name, make_run

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(files):
        shape, conc = divmod(n, per_shape)
        i, o = shape_of(shape)
        path = out / file_name("sglang", conc + 1, i, o)
        # the client appends json.dumps(result) + "\n" (bare Infinity); scale 0.05: 3 requests a file
        path.write_text(json.dumps(make_run("sglang", conc + 1, i, o, 0.05, 0)) + "\n", encoding="utf-8")
        paths.append(path)
    return sorted(paths)


def subset(paths: list[Path], count: int, where: Path) -> Path:
    """A directory holding the first `count` raw files (hard links); a previous run's is replaced."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    for path in paths[:count]:
        os.link(path, where / path.name)
    return where


# ---------------------------------------------------------------- child side


def _cli(args: list[str]) -> None:
    from sskj_results.cli import main

    try:
        main.main(args=args, prog_name="sskj-results", standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"sskj-results {' '.join(args)}: exit {exc.code}") from None


def _child(phase: str, raw: Path, out: Path) -> dict[str, Any]:
    import sskj_results.cli  # noqa: F401  (the modules the phase runs: not its time)
    import sskj_results.cli.import_cmd  # noqa: F401
    import sskj_results.cli.report_cmd  # noqa: F401
    import sskj_results.ingest.legacy  # noqa: F401
    import sskj_results.render.html  # noqa: F401
    import sskj_results.render.publish  # noqa: F401

    extra: dict[str, Any] = {}
    start, cpu = time.perf_counter(), time.process_time()
    if phase == "report_html":
        _cli(["report", str(out), "--html", "--no-plots"])
        extra["page_bytes"] = (out / "report.html").stat().st_size
        extra["report_md_bytes"] = (out / "report.md").stat().st_size
    else:
        _cli(["import-legacy", str(raw), "--out", str(out), "--chip", CHIP, "--model", MODEL])
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"phase": phase, "seconds": seconds, "cpu_s": cpu_s, "peak_rss_mb": peak, **extra}


# ---------------------------------------------------------------- parent side


def _run_child(phase: str, raw: Path, out: Path) -> dict[str, Any]:
    import subprocess

    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", phase, "--raw", str(raw),
                           "--out", str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return dict(json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1]))


def _log(line: str) -> None:
    print(line, flush=True)


def run_benchmark(work: Path, files: int, per_shape: int, small: int, log: Any = _log) -> dict[str, Any]:
    raw = work / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    start = time.perf_counter()
    paths = write_raw(raw, files, per_shape)
    log(f"wrote {files} raw files ({sum(p.stat().st_size for p in paths) / 1e6:.1f} MB) in "
        f"{time.perf_counter() - start:.1f} s to {raw}")
    inputs = {"import_1": subset(paths, 1, work / "raw_1"), "import_small": subset(paths, small, work / "raw_small"),
              "import_all": raw}
    results: dict[str, dict[str, Any]] = {}
    for phase in ("import_1", "import_small", "import_all"):
        out = work / f"out_{phase}"
        shutil.rmtree(out, ignore_errors=True)
        results[phase] = _run_child(phase, inputs[phase], out)
        log(f"{phase:12s} {results[phase]['seconds']:8.2f} s  (CPU {results[phase]['cpu_s']:.2f} s, "
            f"peak RSS {results[phase]['peak_rss_mb']:.0f} MB)")
    runs = [p for p in (work / "out_import_all").iterdir() if p.is_dir()]
    if len(runs) != 1:
        raise SystemExit(f"import_all wrote {len(runs)} run directories, expected one: {runs}")
    results["report_html"] = _run_child("report_html", raw, runs[0])
    page = results["report_html"]
    log(f"report_html  {page['seconds']:8.2f} s  (CPU {page['cpu_s']:.2f} s, peak RSS {page['peak_rss_mb']:.0f} MB), "
        f"report.html {page['page_bytes'] / 1e6:.2f} MB, report.md {page['report_md_bytes'] / 1e6:.2f} MB")
    linear = {}
    for clock in ("seconds", "cpu_s"):  # wall time, and CPU time (steadier on a machine other jobs share)
        t1, ts, tn = (results[p][clock] for p in ("import_1", "import_small", "import_all"))
        per_file = (ts - t1) / (small - 1)
        fixed = t1 - per_file
        linear[clock] = {"per_file_s": per_file, "fixed_s": fixed,
                         "import_over_linear": (tn - fixed) / (files * per_file) if per_file > 0 else None,
                         "import_over_files_x_import_1": tn / (files * t1)}
    return {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "system": platform.platform(), "python": platform.python_version()},
        "files": files, "per_shape": per_shape, "shapes": -(-files // per_shape), "small": small,
        "phases": results,
        "linear": linear,
        "html_target_s": 30.0,
    }


def _report(fig: dict[str, Any]) -> str:
    lines = [f"{fig['files']} files ({fig['shapes']} shapes x {fig['per_shape']} concurrencies), import_small of "
             f"{fig['small']}:"]
    for clock, name in (("seconds", "wall"), ("cpu_s", "CPU")):
        lin = fig["linear"][clock]
        ratio = "n/a (no cost per file measured)" if lin["import_over_linear"] is None else f"{lin['import_over_linear']:.2f}"
        lines += [f"  {name}: one file {lin['per_file_s'] * 1000:.2f} ms, an import {lin['fixed_s']:.3f} s besides; "
                  f"import_all - fixed = {ratio} x (files x one file) (target <= 2); "
                  f"import_all = {lin['import_over_files_x_import_1']:.3f} x (files x import_1)"]
    page = fig["phases"]["report_html"]
    lines.append(f"  report --html {page['seconds']:.2f} s (CPU {page['cpu_s']:.2f} s), target <= "
                 f"{fig['html_target_s']:.0f} s; report.html {page['page_bytes'] / 1e6:.2f} MB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20000, help="raw files, one scenario each (default 20000)")
    parser.add_argument("--per-shape", type=int, default=50, help="concurrencies per (input, output) shape (default 50)")
    parser.add_argument("--small", type=int, default=200, help="files of the small import (default 200)")
    parser.add_argument("--work", type=Path, help="working directory (default: a temporary one, removed after)")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--raw", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.raw, args.out)))
        return 0
    if not 2 <= args.small <= args.files or args.per_shape < 1:
        parser.error("give 2 <= --small <= --files and --per-shape >= 1")
    temp = None if args.work else tempfile.mkdtemp(prefix="sskj-scale-")
    work = (args.work or Path(str(temp))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        figures = run_benchmark(work, args.files, args.per_shape, args.small)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    print(_report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
