#!/usr/bin/env python3
"""The HTML pages at scale: report.html, comparison.html and history.html, their sizes and their time to usable.

    .venv/bin/python benchmarks/bench_pages.py [--scenarios 20000] [--runs 10000] [--rounds 3] [--work DIR]
        [--reuse-import] [--screenshots DIR] [--no-browser] [--json OUT]

Builds, each by the `sskj-results` command a user runs (in a child process):

* report.html      of one run of `--scenarios` scenarios, 3 requests each (bench_scale.py's raw files of
                   `sglang.bench_serving --output-details`, imported by `import-legacy`, then `report --html`);
* comparison.html  of that run and a second run of the same scenarios (a copy of its run directory with its own
                   run id: every scenario matched, 2 x `--scenarios` rows);
* history.html     of `--runs` runs of 20 scenarios over 10 setups (bench_history.py's table, `history --html`).

Then opens each page `--rounds` times in headless Chromium (Debian's /usr/bin/chromium and /usr/bin/chromedriver
through selenium, the options of tests/test_html.py), alternating with a fixed reference page (below), and times

* **usable**: from the start of navigation (the page's own performance.now()) to the moment both the page's first
  table has a body row and its first figure's SVG (plotly's `.main-svg`) is in the document; the browser paints
  them in the next frame. A script given to the browser before the page (DevTools
  Page.addScriptToEvaluateOnNewDocument) notes both moments as the nodes are inserted;
* the reference: a page that does not depend on this code (REFERENCE: 1 MB of inline script declaring and
  summing 120,000 numbers, a table of 2,000 rows, an SVG line of 2,000 points drawn by script), timed the same way.

The ratio usable / reference (medians over the rounds) is what `make bench` records (benchmarks/record.py): the
machine is shared, and the same browser on the same load times both. Absolute times are printed beside.
Screenshots at 900 and 1400 px wide of each page (its top, and its first figure at the top of the window; after
every figure of it is drawn) go to `--screenshots`.

Targets (issue 46): report.html of 20,000 scenarios <= 10 MB and usable <= 5 s; history.html of 10,000 runs
<= 2 MB and <= 3 s. docs/PERFORMANCE.md has the latest figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")  # as tests/test_html.py
PAGES = ("report", "comparison", "history")
TARGETS = {"report": (10_000_000, 5.0), "history": (2_000_000, 3.0)}  # bytes, seconds (issue 46, at full scale)
WIDTHS = (900, 1400)

# Noted by the browser before the page runs: when the first table row and the first figure's SVG are inserted.
OBSERVER = """
(function () {
  var T = window.__sskjUsable = {};
  function look(node) {
    if (node.nodeType !== 1) { return; }
    var now = performance.now();
    if (T.table === undefined && (node.matches("table tbody tr") || node.querySelector("table tbody tr"))) {
      T.table = now;
    }
    if (T.figure === undefined && (node.matches(".main-svg, svg.reference") ||
                                   node.querySelector(".main-svg, svg.reference"))) {
      T.figure = now;
    }
  }
  var observer = new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      for (var j = 0; j < records[i].addedNodes.length; j++) { look(records[i].addedNodes[j]); }
    }
    if (T.table !== undefined && T.figure !== undefined) { observer.disconnect(); }
  });
  observer.observe(document, {childList: true, subtree: true});
})();
"""


def reference_page() -> str:
    """The fixed reference load: the same on every commit (it uses nothing of sskj)."""
    numbers = ",".join(f"{(k * 7919) % 100003 / 7.0:.4f}" for k in range(120_000))
    rows = "".join(f"<tr><td>scenario {k}</td><td>{k * 3 % 997}</td><td>{k * 0.37:.2f}</td></tr>"
                   for k in range(2_000))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>reference</title></head><body>"
            f"<table><thead><tr><th>a</th><th>b</th><th>c</th></tr></thead><tbody>{rows}</tbody></table>"
            f"<div id='fig'></div><script>var v=[{numbers}];var s=0,p=[];for(var i=0;i<v.length;i++){{s+=v[i];}}"
            "for(i=0;i<2000;i++){p.push(i/2+','+(v[i]%400).toFixed(1));}"
            "var svg=document.createElementNS('http://www.w3.org/2000/svg','svg');svg.setAttribute('class',"
            "'reference');svg.setAttribute('width','1000');svg.setAttribute('height','400');"
            "var l=document.createElementNS('http://www.w3.org/2000/svg','polyline');l.setAttribute('points',"
            "p.join(' '));l.setAttribute('fill','none');l.setAttribute('stroke','#1f77b4');svg.appendChild(l);"
            "document.getElementById('fig').appendChild(svg);document.title='reference '+s.toFixed(0);</script>"
            "</body></html>\n")


# ---------------------------------------------------------------- building the pages


def _cli(args: list[str]) -> float:
    """Run `sskj-results ARGS` in a child; its wall time."""
    cli = Path(sys.executable).with_name("sskj-results")
    start = time.perf_counter()
    done = subprocess.run([str(cli), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"sskj-results {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def _second_run(first: Path, second: Path) -> None:
    """A copy of run directory `first` as another run of the same scenarios (its own run id)."""
    shutil.copytree(first, second)
    path = second / "results.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    meta = doc["metadata"]
    meta["run_id"] = f"{meta.get('run_id') or 'run'}-b"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def build_pages(work: Path, scenarios: int, runs: int, reuse: bool = False, log: Any = print) -> dict[str, Any]:
    """The three pages under `work`; {page: its path}, and how long each step took. `reuse`: the run imported
    before under `work` (by a previous call) is used again, as it is (to measure a change of the pages alone)."""
    from bench_history import make_table
    from bench_scale import write_raw

    steps: dict[str, float] = {}
    out = work / "import"
    if not (reuse and len(list(out.rglob("results.json"))) == 1):
        start = time.perf_counter()
        raw = work / "raw"
        shutil.rmtree(raw, ignore_errors=True)
        write_raw(raw, scenarios, 50)
        steps["raw_files_s"] = time.perf_counter() - start
        log(f"{scenarios} raw files written in {steps['raw_files_s']:.1f} s")
        shutil.rmtree(out, ignore_errors=True)
        steps["import_s"] = _cli(["import-legacy", str(raw), "--out", str(out), "--chip", "bench", "--model",
                                  "bench-model"])
    else:
        log(f"the run imported before in {out} is used again")
    first = next(p.parent for p in sorted(out.rglob("results.json")))
    steps["report_html_s"] = _cli(["report", str(first), "--html", "--no-plots"])
    log(f"report --html in {steps['report_html_s']:.1f} s")
    second = work / "second"
    shutil.rmtree(second, ignore_errors=True)
    _second_run(first, second)
    cmp = work / "cmp"
    steps["compare_html_s"] = _cli(["compare", str(first), str(second), "--out", str(cmp), "--no-plots", "--html"])
    log(f"compare --html in {steps['compare_html_s']:.1f} s")
    table = work / "runs.parquet"
    make_table(table, runs, 20, 10)
    steps["history_html_s"] = _cli(["history", str(table), "--html", "--out", str(work / "hist")])
    log(f"history --html in {steps['history_html_s']:.1f} s")
    (work / "reference.html").write_text(reference_page(), encoding="utf-8")
    paths = {"report": first / "report.html", "comparison": cmp / "comparison.html",
             "history": work / "hist" / "history.html", "reference": work / "reference.html"}
    return {"paths": paths, "steps": steps}


# ---------------------------------------------------------------- in the browser


def _driver() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from tests.test_html import CHROME_ARGS  # the browser tests' options

    options = webdriver.ChromeOptions()
    for arg in (*CHROME_ARGS, "--window-size=1400,1800"):
        options.add_argument(arg)
    options.binary_location = str(CHROMIUM)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER})
    return driver


def usable_ms(driver: Any, page: Path, timeout: float = 120.0) -> float:
    """Open `page`: ms from navigation start until its first table row and its first figure are in the document."""
    driver.get("about:blank")
    driver.get(page.as_uri())  # returns after the load event
    deadline, times = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        times = driver.execute_script("return window.__sskjUsable || {};")
        if "table" in times and "figure" in times:
            return float(max(times["table"], times["figure"]))
        time.sleep(0.02)
    raise SystemExit(f"{page}: no table and figure within {timeout:.0f} s in chromium (seen: {times})")


def _plots_ready(driver: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.execute_script("return document.body.getAttribute('data-plots')") == "ready":
            return
        time.sleep(0.05)
    raise SystemExit("the figures were not drawn within the time allowed")


def screenshots(driver: Any, paths: dict[str, Path], where: Path) -> list[str]:
    """Each page at 900 and 1400 px wide, its figures drawn: its top and its first figure; the files written."""
    where.mkdir(parents=True, exist_ok=True)
    written = []
    for width in WIDTHS:
        driver.set_window_size(width, 1800)
        for name in PAGES:
            driver.get(paths[name].as_uri())
            _plots_ready(driver)
            for part, script in (("top", "window.scrollTo(0, 0);"),
                                 ("figures", "document.querySelector('.plot').scrollIntoView();")):
                driver.execute_script(script)
                time.sleep(0.3)  # the last frame painted
                shot = where / f"{name}_{width}_{part}.png"
                driver.save_screenshot(str(shot))
                written.append(str(shot))
    driver.set_window_size(1400, 1800)
    return written


def browser_figures(paths: dict[str, Path], rounds: int, shots: Optional[Path]) -> dict[str, Any]:
    """Per page: the usable times of each round and their median, and the reference's in the same rounds."""
    driver = _driver()
    times: dict[str, list[float]] = {name: [] for name in (*PAGES, "reference")}
    try:
        usable_ms(driver, paths["reference"])  # the browser's own start-up work: not in any figure
        for _ in range(rounds):
            for name in ("reference", *PAGES):
                times[name].append(usable_ms(driver, paths[name]))
        written = screenshots(driver, paths, shots) if shots else []
    finally:
        driver.quit()
    median = {name: statistics.median(values) for name, values in times.items()}
    return {"usable_ms": median, "usable_rounds_ms": times, "screenshots": written,
            "ratios": {f"{name}_usable_over_reference": median[name] / median["reference"] for name in PAGES}}


# ---------------------------------------------------------------- main


def run_benchmark(work: Path, scenarios: int, runs: int, rounds: int, browser: bool,
                  shots: Optional[Path], reuse: bool = False) -> dict[str, Any]:
    load = os.getloadavg()
    built = build_pages(work, scenarios, runs, reuse)
    paths = built["paths"]
    result: dict[str, Any] = {
        "scenarios": scenarios, "runs": runs, "rounds": rounds, "load_average": load, "steps": built["steps"],
        "bytes": {name: paths[name].stat().st_size for name in PAGES},
    }
    result["ratios"] = {f"{name}_html_mb": result["bytes"][name] / 1e6 for name in PAGES}
    if browser:
        figures = browser_figures(paths, rounds, shots)
        result["browser"] = figures
        result["ratios"].update(figures["ratios"])
        result["load_average_after"] = os.getloadavg()
    return result


def summary(result: dict[str, Any]) -> str:
    lines = [f"{'page':12s} {'bytes':>12s} {'usable ms':>10s} {'/ reference':>12s}   target"]
    browser = result.get("browser")
    for name in PAGES:
        size, seconds = TARGETS.get(name, (None, None))
        target = f"<= {size / 1e6:.0f} MB, <= {seconds:.0f} s" if size and seconds else ""
        if browser:
            ms = browser["usable_ms"][name]
            lines.append(f"{name:12s} {result['bytes'][name]:12,d} {ms:10.0f} "
                         f"{browser['ratios'][name + '_usable_over_reference']:12.2f}   {target}")
        else:
            lines.append(f"{name:12s} {result['bytes'][name]:12,d}   {target}")
    if browser:
        lines.append(f"{'reference':12s} {'':12s} {browser['usable_ms']['reference']:10.0f}")
        lines.append(f"load average {result['load_average'][0]:.1f} before, {result['load_average_after'][0]:.1f} after")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, default=20_000, help="scenarios of the run of report.html")
    ap.add_argument("--runs", type=int, default=10_000, help="runs of history.html")
    ap.add_argument("--rounds", type=int, default=3, help="times each page is opened")
    ap.add_argument("--work", type=Path, default=None, help="keep the files here (default: a temporary directory)")
    ap.add_argument("--reuse-import", action="store_true",
                    help="with --work: use the run an earlier call imported there again (the pages alone)")
    ap.add_argument("--screenshots", type=Path, default=None, help="save screenshots at 900 and 1400 px here")
    ap.add_argument("--no-browser", action="store_true", help="only build the pages and report their sizes")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    browser = not args.no_browser
    if browser and not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        sys.exit("the browser timing needs Debian's chromium and chromium-driver (/usr/bin/chromium, "
                 "/usr/bin/chromedriver); --no-browser builds the pages only")
    with tempfile.TemporaryDirectory(prefix="sskj-pages-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        result = run_benchmark(work, args.scenarios, args.runs, args.rounds, browser, args.screenshots,
                               args.reuse_import)
    print(summary(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
