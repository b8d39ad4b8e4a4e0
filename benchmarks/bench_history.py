"""`sskj-results history` over a large collected table: its time and the size of history.html.

The table is synthetic and deterministic, with the columns of the runs table (analysis/runtable.py, as
`sskj-results collect` writes them): ``--runs`` runs of ``--scenarios`` scenarios each (one row per scenario),
spread over ``--setups`` setups (chip x engine), the engine version changing every 40 runs of a setup, TTFT P95
stepping +15 % at one version (0.1.2: a regression in every TTFT series), a few percent of noise everywhere. Each round runs the command in a fresh
process (module imports included), with --html; its wall time and its CPU time (user + system: what the
machine's other jobs do not inflate) are reported.

    python benchmarks/bench_history.py [--runs 10000] [--scenarios 20] [--setups 10] [--rounds 1] [--json out.json]
        [--browser]

--browser also opens the page written, ``--rounds`` times, in headless Chromium (Debian's /usr/bin/chromium and
/usr/bin/chromedriver through selenium, as tests/test_html.py) and times it from the start of navigation (the
page's own performance clock) to "usable": the first trend figure drawn, and to the first page of figures drawn;
the machine's load average is reported beside (it is shared).

Targets (issue 38): at most 10 s, history.html under 10 MB; issue 46: history.html of 10,000 runs at most 2 MB and
usable within 3 s. Figures: docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sskj_results.analysis.runtable import COLUMNS, to_frame  # noqa: E402

CHIPS = ("NVIDIA H200", "NVIDIA H20", "RTX PRO 6000D", "Kunlun P800", "cpu")
ENGINES = ("sglang", "vllm")


def make_table(out: Path, runs: int, scenarios: int, setups: int, seed: int = 38) -> int:
    """Write the synthetic table as Parquet; the number of rows."""
    rng = np.random.default_rng(seed)
    n = runs * scenarios
    run = np.repeat(np.arange(runs), scenarios)
    scen = np.tile(np.arange(scenarios), runs)
    setup = run % setups
    nth = run // setups  # the run's place in its setup
    version = nth // 40
    step = np.where(version >= 12, 1.15, 1.0)  # from version 0.1.2 on, TTFT is 15 % slower
    conc = 2 ** (scen % 10)
    data: dict[str, Any] = {c.name: [None] * n for c in COLUMNS}
    data["results_file"] = [f"/runs/s{s}/r{r:05d}/results.json" for s, r in zip(setup, run)]
    data["run_dir"] = [f"/runs/s{s}/r{r:05d}" for s, r in zip(setup, run)]
    data["run_id"] = [f"r{r:05d}" for r in run]
    stamp = {r: time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(1_760_000_000 + 3600 * int(r)))
             for r in range(runs)}
    data["timestamp"] = [stamp[int(r)] for r in run]
    data["timestamp_precision"] = ["second"] * n
    data["experiment"] = ["bench"] * n
    data["model"] = ["deepseek-ai/DeepSeek-V4"] * n
    data["chip"] = [CHIPS[s % len(CHIPS)] for s in setup]
    data["engine"] = [ENGINES[(s // len(CHIPS)) % len(ENGINES)] for s in setup]
    data["tp"] = [8 + (s // (len(CHIPS) * len(ENGINES))) for s in setup]
    data["engine_version"] = [f"0.{v // 10}.{v % 10}" for v in version]
    data["image"] = [f"registry/engine:0.{v // 10}.{v % 10}" for v in version]
    data["concurrency"] = conc.tolist()
    data["input_len"] = np.where(scen < 10, 1024, 8192).tolist()
    data["output_len"] = np.where(scen < 10, 256, 1024).tolist()
    data["scenario"] = [f"c{c}_i{i}_o{o}" for c, i, o in zip(conc, data["input_len"], data["output_len"])]
    noise = lambda: 1 + rng.uniform(-0.03, 0.03, n)  # noqa: E731
    data["ttft_ms_p95"] = (50.0 * conc * step * noise()).tolist()
    data["tpot_ms_mean"] = (10.0 + conc * 0.1 * noise()).tolist()
    data["output_token_throughput"] = (100.0 * conc * noise()).tolist()
    to_frame(data).to_parquet(out)
    return n


CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")  # as tests/test_html.py
# the first figure's svg drawn, and the first page of figures (body[data-plots] is set once they are drawn)
USABLE = """return [document.querySelector('#history-figures .plot .main-svg') ? performance.now() : null,
                    document.body.getAttribute('data-plots') === 'ready' ? performance.now() : null];"""


def browser_times(page: Path, rounds: int) -> dict[str, Any]:
    """Open `page` `rounds` times in headless Chromium: ms from navigation start to the first figure drawn
    ("usable") and to the first page of figures drawn, and the page's DOMContentLoaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from tests.test_html import CHROME_ARGS  # the browser tests' options

    options = webdriver.ChromeOptions()
    for arg in (*CHROME_ARGS, "--window-size=1400,1800"):
        options.add_argument(arg)
    options.binary_location = str(CHROMIUM)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    usable, figures, dom = [], [], []
    try:
        for _ in range(rounds):
            driver.get("about:blank")
            driver.get(page.as_uri())  # returns after the load event
            first = ready = None
            deadline = time.monotonic() + 120
            while (first is None or ready is None) and time.monotonic() < deadline:
                a, b = driver.execute_script(USABLE)
                first, ready = first if first is not None else a, ready if ready is not None else b
                time.sleep(0.005)
            if first is None or ready is None:
                sys.exit(f"{page}: no figure drawn within 120 s in chromium")
            usable.append(first)
            figures.append(ready)
            dom.append(driver.execute_script(
                "return performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd;"))
    finally:
        driver.quit()
    return {"usable_ms": min(usable), "usable_rounds_ms": usable, "first_page_ms": min(figures),
            "dom_content_loaded_ms": min(dom), "chromium": CHROMIUM.name}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--scenarios", type=int, default=20)
    ap.add_argument("--setups", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--browser", action="store_true", help="also time the page in headless chromium")
    args = ap.parse_args()
    if args.browser and not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        sys.exit("--browser needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)")
    cli = Path(sys.executable).with_name("sskj-results")
    with tempfile.TemporaryDirectory(prefix="sskj-history-") as tmp:
        table = Path(tmp) / "runs.parquet"
        rows = make_table(table, args.runs, args.scenarios, args.setups)
        times, cpu = [], []
        for _ in range(args.rounds):
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run([str(cli), "history", str(table), "--html", "--out", f"{tmp}/h"],
                                  capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
            if done.returncode != 0:
                sys.exit(f"history failed: {done.stderr.strip()}")
        page = Path(tmp) / "h" / "history.html"
        result = {"runs": args.runs, "scenarios": args.scenarios, "rows": rows, "setups": args.setups,
                  "seconds": min(times), "rounds": times, "cpu_seconds": min(cpu), "html_bytes": page.stat().st_size,
                  "md_bytes": (Path(tmp) / "h" / "history.md").stat().st_size, "summary": done.stdout.strip(),
                  "python": platform.python_version(), "load_average": os.getloadavg()}
        if args.browser:
            result["browser"] = browser_times(page, args.rounds)
            result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
