"""Import, compare and re-parse timed against the parse-only floor.

Phases, each measured in a fresh child process (so that peak RSS is per
phase) and run in alternation for several rounds:

* floor    — read every raw file line by line, replace the bare ``Infinity``
             by ``null``, ``orjson.loads`` each line (the objects are dropped);
* import   — ``sskj-results import-legacy RAW --out OUT --chip bench``
             (the click command, called in the child);
* compare  — ``sskj-results compare <sglang run> <vllm run> --no-plots``;
* reparse  — ``sskj-results parse RUN`` on a run directory whose raw_outputs/
             were all parsed before (every file is skipped by content hash).

Times are of the phase itself: the child imports the modules it needs
first (their import time is reported apart). Peak RSS is the child's own
high-water mark, imports included. ``compare`` with plots and
``sskj-results --help`` (a fresh interpreter each time) are measured once
per round too.

    python benchmarks/bench_import.py [--scale 1] [--rounds 3] [--raw DIR] [--work DIR] [--json out.json]

Without --raw, the synthetic seed-000 grid is written by make_raw.py into the
work directory (a temporary one unless --work is given).
"""

from __future__ import annotations

import argparse
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
PHASES = ("floor", "import", "compare", "reparse")
CHIP = "bench"


# ---------------------------------------------------------------- child side


def _peak_rss_mb() -> float:
    """This process's peak resident set size (VmHWM), MB."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _rss_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _floor(raw: Path) -> dict[str, Any]:
    import orjson

    lines = 0
    for path in sorted(raw.iterdir()):
        if path.suffix not in (".jsonl", ".json"):
            continue
        with path.open("rb") as handle:
            for line in handle:
                if line.isspace():
                    continue
                orjson.loads(line.replace(b"Infinity", b"null"))
                lines += 1
    return {"lines": lines}


def _cli(args: list[str]) -> None:
    from sskj_results.cli import main

    try:
        main.main(args=args, prog_name="sskj-results", standalone_mode=False)
    except SystemExit as exc:  # a click command may exit explicitly
        if exc.code not in (0, None):
            raise RuntimeError(f"sskj-results {' '.join(args)}: exit {exc.code}") from None


def _preload(phase: str) -> None:
    """Import what the phase runs, so that its time is the work alone."""
    if phase == "floor":
        import orjson  # noqa: F401
        return
    import sskj_results.cli  # noqa: F401
    if phase in ("import", "reparse"):
        import sskj_results.cli.import_cmd  # noqa: F401
        import sskj_results.ingest.legacy  # noqa: F401
        import sskj_results.render.publish  # noqa: F401  (report.md of every run directory written)
        import sskj_results.ingest.parse_run  # noqa: F401
        import sskj_results.ingest.rebuild  # noqa: F401
    else:
        import sskj_results.cli.report_cmd  # noqa: F401
        import sskj_results.analysis.compare  # noqa: F401
        import sskj_results.analysis.stats  # noqa: F401
        if phase == "compare_plots":
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
            import sskj_results.render.plots  # noqa: F401


def _cpu_s() -> float:
    return time.process_time()  # user + system CPU of every thread of this process


def _child(phase: str, raw: Path, work: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    _preload(phase)
    t1 = time.perf_counter()
    imports = t1 - t0
    rss_before = _rss_mb()
    cpu0 = _cpu_s()
    extra: dict[str, Any] = {}
    if phase == "floor":
        extra = _floor(raw)
    elif phase == "import":
        out = work / "import_out"
        shutil.rmtree(out, ignore_errors=True)
        t1, cpu0 = time.perf_counter(), _cpu_s()  # the removal above is not the import's work
        _cli(["import-legacy", str(raw), "--out", str(out), "--chip", CHIP])
    elif phase in ("compare", "compare_plots"):
        runs = _setup_runs(work)
        out = work / f"{phase}_out"
        shutil.rmtree(out, ignore_errors=True)
        t1, cpu0 = time.perf_counter(), _cpu_s()
        args = ["compare", str(runs["sglang"]), str(runs["vllm"]), "--out", str(out)]
        _cli(args + (["--no-plots"] if phase == "compare" else []))
    elif phase == "reparse":
        _cli(["parse", str(work / "parsed_run")])
    else:
        raise SystemExit(f"unknown phase {phase}")
    t2 = time.perf_counter()
    return {"phase": phase, "seconds": t2 - t1, "cpu_s": _cpu_s() - cpu0, "imports_s": imports,
            "peak_rss_mb": _peak_rss_mb(), "rss_after_imports_mb": rss_before, **extra}


def _setup_runs(work: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((work / "setup_import").iterdir()):
        for engine in ("sglang", "vllm"):
            if path.name.startswith(f"{CHIP}_{engine}_"):
                found[engine] = path
    return found


# ---------------------------------------------------------------- parent side


def _run_child(phase: str, raw: Path, work: Path) -> dict[str, Any]:
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", phase, "--raw", str(raw), "--work", str(work)],
        capture_output=True, text=True, env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"phase {phase} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    last = [line for line in proc.stdout.splitlines() if line.startswith("{")][-1]
    return dict(json.loads(last))


def _help_seconds() -> float:
    """Wall time of `sskj-results --help` in a fresh interpreter."""
    script = Path(sys.executable).with_name("sskj-results")
    cmd = [str(script), "--help"] if script.exists() else [sys.executable, "-c",
                                                          "import sys; from sskj_results.cli import main; sys.argv[0]='sskj-results'; main()", "--help"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("numpy", "orjson", "pydantic", "scipy"):
        try:
            module = __import__(name)
            out[name] = str(getattr(module, "__version__", "?"))
        except ImportError:
            out[name] = "not installed"
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _dataset(raw: Path) -> dict[str, Any]:
    files = [p for p in sorted(raw.iterdir()) if p.suffix in (".jsonl", ".json")]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "dir": str(raw)}


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _setup(raw: Path, work: Path) -> None:
    """The two imported runs compared, and a run directory parsed once (for the re-parse)."""
    from sskj_results.ingest.legacy import Platform, import_legacy
    from sskj_results.ingest.parse_run import parse_run_dir
    from sskj_results.ingest.metadata import write_metadata

    shutil.rmtree(work / "setup_import", ignore_errors=True)
    import_legacy(raw, work / "setup_import", Platform(chip=CHIP))
    run = work / "parsed_run"
    shutil.rmtree(run, ignore_errors=True)
    write_metadata(run, {"experiment": "bench_reparse", "model": "synthetic", "engine": "mixed", "chip": CHIP,
                         "run_id": "bench"}, {"server_args": "not recorded: synthetic raw outputs"}, detect=False)
    (run / "raw_outputs").mkdir()
    for path in sorted(raw.iterdir()):
        if path.suffix in (".jsonl", ".json"):
            _link_or_copy(path, run / "raw_outputs" / path.name)
    outcome = parse_run_dir(run)
    if outcome.files_read == 0 or outcome.problems:
        raise SystemExit(f"setup parse of {run} failed: {[str(p) for p in outcome.problems]}")


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def run_benchmark(raw: Optional[Path], work: Path, scale: float, rounds: int, plots: bool = True,
                  log: Any = print) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    scale_used: Optional[float] = None  # None: a given directory of raw outputs
    if raw is None:
        scale_used = scale
        sys.path.insert(0, str(HERE))
        from make_raw import write_all

        raw = work / "raw"
        shutil.rmtree(raw, ignore_errors=True)
        log(f"writing synthetic raw outputs (scale {scale}) to {raw}")
        write_all(raw, scale=scale)
    raw = raw.resolve()
    data = _dataset(raw)
    log(f"{data['files']} files, {data['bytes'] / 1e6:.1f} MB; setting up runs in {work}")
    _setup(raw, work)
    samples: dict[str, list[dict[str, Any]]] = {p: [] for p in (*PHASES, "compare_plots")}
    helps: list[float] = []
    for r in range(1, rounds + 1):
        for phase in PHASES:
            result = _run_child(phase, raw, work)
            samples[phase].append(result)
            log(f"round {r}: {phase:8s} {result['seconds']:7.3f} s  peak RSS {result['peak_rss_mb']:7.1f} MB")
        if plots:
            result = _run_child("compare_plots", raw, work)
            samples["compare_plots"].append(result)
            log(f"round {r}: compare with plots {result['seconds']:7.3f} s")
        helps.append(_help_seconds())
    med = {p: _median([s["seconds"] for s in samples[p]]) for p in samples if samples[p]}
    rss = {p: _median([s["peak_rss_mb"] for s in samples[p]]) for p in samples if samples[p]}
    base = {p: _median([s["rss_after_imports_mb"] for s in samples[p]]) for p in samples if samples[p]}
    imports = {p: _median([s["imports_s"] for s in samples[p]]) for p in samples if samples[p]}
    cpu = {p: _median([s["cpu_s"] for s in samples[p]]) for p in samples if samples[p]}
    ratios = {
        "import_over_floor": med["import"] / med["floor"],
        # compare and re-parse over the floor, not over the import: a faster import must not read as a slower compare
        "compare_over_floor": med["compare"] / med["floor"],
        "reparse_over_floor": med["reparse"] / med["floor"],
        "import_rss_over_floor_rss": rss["import"] / rss["floor"],
    }
    figures: dict[str, Any] = {
        "date": datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "cpu": _cpu_model(), "system": platform.platform(), **_versions()},
        "scale": scale_used,
        "rounds": rounds,
        "dataset": data,
        "median_s": med,
        "median_cpu_s": cpu,
        "module_imports_s": imports,
        "peak_rss_mb": rss,
        "rss_after_imports_mb": base,
        "ratios": ratios,
        "help_s": _median(helps),
        "samples": samples,
    }
    if plots:
        figures["compare_plots_extra_s"] = med["compare_plots"] - med["compare"]
    return figures


def _report(fig: dict[str, Any]) -> str:
    med, rss, ratios = fig["median_s"], fig["peak_rss_mb"], fig["ratios"]
    source = f"synthetic scale {fig['scale']}" if fig["scale"] is not None else fig["dataset"]["dir"]
    lines = [
        f"{fig['dataset']['files']} raw files, {fig['dataset']['bytes'] / 1e6:.1f} MB ({source}), "
        f"{fig['rounds']} round(s); median seconds (peak RSS MB):",
    ]
    for phase in (*PHASES, "compare_plots"):
        if phase in med:
            lines.append(f"  {phase:14s} {med[phase]:8.3f} s   {rss[phase]:8.1f} MB   "
                         f"(CPU {fig['median_cpu_s'][phase]:.3f} s; module imports {fig['module_imports_s'][phase]:.3f} s)")
    lines += [
        f"  import / floor          {ratios['import_over_floor']:.2f}",
        f"  compare / floor         {ratios['compare_over_floor']:.2f}",
        f"  re-parse / floor        {ratios['reparse_over_floor']:.3f}",
        f"  import RSS / floor RSS  {ratios['import_rss_over_floor_rss']:.2f}",
        f"  sskj-results --help     {fig['help_s']:.3f} s",
    ]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, help="directory of raw outputs (default: generate the synthetic grid)")
    parser.add_argument("--work", type=Path, help="working directory (default: a temporary one, removed after)")
    parser.add_argument("--scale", type=float, default=1.0, help="request-count scale of the synthetic grid (default 1)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the alternating phases (default 3)")
    parser.add_argument("--no-plots", action="store_true", help="skip the compare-with-plots measurement")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.raw, args.work)))
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    temp = None
    work = args.work
    if work is None:
        temp = tempfile.mkdtemp(prefix="sskj-bench-")
        work = Path(temp)
    try:
        figures = run_benchmark(args.raw, work.resolve(), args.scale, args.rounds, plots=not args.no_plots)
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
