"""`make bench`: the benchmarks' ratios, appended to a committed record, judged against budgets and earlier entries.

Runs a few minutes of the benchmarks at reduced sizes, each in its own process:

* bench_import.py  --scale 1 --rounds 3   — import / floor (wall and CPU), peak RSS / floor's, compare / import,
                                             re-parse / import (the sizes of docs/PERFORMANCE.md's budgets);
* bench_collect.py --rounds 3             — collect / floor, re-collect / collect (2,000 runs);
* bench_energy.py  --hours 2              — energy / reading the CSV (CPU);
* bench_pages.py   --scenarios 2000 --runs 10000 --rounds 3
                                          — the sizes of report.html and comparison.html of 2,000 scenarios and of
                                             history.html of 10,000 runs (MB), and each page's time to usable in
                                             headless Chromium over a fixed reference page's in the same browser.

Only ratios and page sizes are recorded and judged (never absolute times alone: the machine is shared and its load
varies; the load average at the start is recorded beside them). One JSON line per run is appended to
benchmarks/results/record.jsonl with the commit it measured (`+dirty` when the tree had changes). A ratio is named
when it is over its budget (docs/PERFORMANCE.md) or clearly worse than before: more than WORSE times the median of
the same ratio in the last PREVIOUS entries. Exit 1 when any ratio is named, 0 otherwise.

    python benchmarks/record.py [--no-append] [--record FILE] [--only import,collect,energy,pages]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
RECORD = HERE / "results" / "record.jsonl"
WORSE = 1.25  # "clearly worse": a quarter above the recent median (the load alone moves a ratio by about 10-15 %)
PREVIOUS = 5
# ratio -> (budget, which way is worse); budgets from docs/PERFORMANCE.md
BUDGETS: dict[str, float] = {
    "import_over_floor_cpu": 1.5,
    "import_over_floor": 1.5,
    "import_rss_over_floor_rss": 1.5,
    # compare <= the import's own budget, re-parse <= a tenth of it (compare <= 1 x import and re-parse <= 0.1 x import
    # when the import is at its budget of 1.5 x the floor)
    "compare_over_floor": 1.5,
    "reparse_over_floor": 0.15,
    "collect_over_floor": 2.0,
    "recollect_over_collect": 0.5,
    "energy_over_read_cpu": 1.5,
    # pages (bench_pages.py): history.html of 10,000 runs <= 2 MB; usable <= 3 s (history) and <= 5 s (report.html
    # of 20,000 scenarios: here 2,000) over the reference page's 0.3-0.45 s on this machine
    "history_html_mb": 2.0,
    "history_usable_over_reference": 8.0,
    "report_usable_over_reference": 12.0,
    "comparison_usable_over_reference": 12.0,
}
PAGES = ["--scenarios", "2000", "--runs", "10000", "--rounds", "3"]


def _run(args: list[str], out: Path) -> dict[str, Any]:
    cmd = [sys.executable, *args, "--json", str(out)]
    print("$ " + " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    if not out.is_file():
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise SystemExit(f"{args[0]} wrote no figures (exit {proc.returncode}):\n{tail}")
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def _import(work: Path) -> dict[str, float]:
    fig = _run([str(HERE / "bench_import.py"), "--scale", "1", "--rounds", "3", "--no-plots"], work / "import.json")
    cpu = fig["median_cpu_s"]
    ratios = {k: float(v) for k, v in fig["ratios"].items()}
    ratios["import_over_floor_cpu"] = cpu["import"] / cpu["floor"]
    return ratios


def _collect(work: Path) -> dict[str, float]:
    fig = _run([str(HERE / "bench_collect.py"), "--rounds", "3"], work / "collect.json")
    return {k: float(v) for k, v in fig["ratios"].items() if k in BUDGETS}


def _energy(work: Path) -> dict[str, float]:
    fig = _run([str(HERE / "bench_energy.py"), "--hours", "2", "--rounds", "3"], work / "energy.json")
    return {"energy_over_read_cpu": float(fig["ratio"])}


def _pages(work: Path) -> dict[str, float]:
    browser = Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists()
    if not browser:
        print("no /usr/bin/chromium and /usr/bin/chromedriver: the pages' sizes only, not their load", flush=True)
    fig = _run([str(HERE / "bench_pages.py"), *PAGES, *([] if browser else ["--no-browser"])], work / "pages.json")
    return {k: float(v) for k, v in fig["ratios"].items()}


BENCHES: dict[str, Callable[[Path], dict[str, float]]] = {"import": _import, "collect": _collect, "energy": _energy,
                                                          "pages": _pages}


def commit_of(repo: Path) -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, check=False).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def read_record(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{number}: not a JSON line ({exc.msg}); mend or remove that line") from None
    return entries


def judge(ratios: dict[str, float], previous: list[dict[str, Any]], budgets: Optional[dict[str, float]] = None,
          worse: float = WORSE, window: int = PREVIOUS) -> list[str]:
    """One line per ratio over its budget or more than `worse` x the median of its last `window` recorded values."""
    budgets = BUDGETS if budgets is None else budgets
    named = []
    for key, value in sorted(ratios.items()):
        budget = budgets.get(key)
        if budget is not None and value > budget:
            named.append(f"{key} {value:.3f} is over its budget of {budget}")
        earlier = [e["ratios"][key] for e in previous if isinstance(e.get("ratios"), dict) and key in e["ratios"]]
        earlier = earlier[-window:]
        if earlier:
            median = statistics.median(earlier)
            if median > 0 and value > worse * median:
                named.append(f"{key} {value:.3f} is {value / median:.2f}x the median of its last {len(earlier)} "
                             f"recorded values ({median:.3f}): clearly worse")
    return named


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, default=RECORD, help=f"the record (default {RECORD.relative_to(HERE.parent)})")
    parser.add_argument("--no-append", action="store_true", help="judge the ratios, append nothing")
    parser.add_argument("--only", default=",".join(BENCHES), help="benchmarks to run (default: all)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}")
    previous = read_record(args.record)
    load = os.getloadavg()[0]
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sskj-bench-") as tmp:
        for name in names:
            ratios.update(BENCHES[name](Path(tmp)))
    entry = {
        "commit": commit_of(HERE.parent),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "load_average_1m": round(load, 2),
        "nproc": os.cpu_count(),
        "ratios": {k: round(v, 4) for k, v in sorted(ratios.items())},
    }
    named = judge(ratios, previous)
    print(f"\nratios of {entry['commit']} (load average {load:.1f} at the start):")
    for key, value in sorted(ratios.items()):
        budget = BUDGETS.get(key)
        print(f"  {key:34s} {value:8.3f}" + (f"   budget {budget}" if budget is not None else ""))
    if not args.no_append:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        with args.record.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")
        print(f"appended to {args.record}")
    if named:
        print("\nnamed:\n" + "\n".join(f"  {line}" for line in named))
        return 1
    print("no ratio over its budget or clearly worse than the last entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
