"""report.html and comparison.html: the page's content (no browser), then the page in a real browser.

The browser tests drive Debian's chromium through chromedriver (selenium):
no console error, no request but the file itself, one table row per run per
scenario, every plot drawn, a legend click hides a run, hovering a point
shows its scenario. `make test` installs chromium when it is missing; on a
machine without it those tests are skipped with the reason.
"""

from __future__ import annotations

import base64
import gzip
import html as htmlmod
import json
import os
import re
import shutil
import time
from importlib import resources
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.render.figures import CDF_POINTS, cdf_points
from sskj_results.render.markdown_html import inline, markdown_blocks, split_sections
from sskj_results.render.html import plotly_js_packed
from sskj_results.render.packing import ALPHABET, decode, encode, pack, unpack

RUNS = Path(__file__).parent / "data" / "compare" / "runs"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROME_ARGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",  # benchmarks use them too
               "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync")
SCREENSHOT = Path("/tmp/sskj_html_screenshot.png")
MAX_BYTES = 2_500_000  # small enough to mail
LONG_TITLE = ("DeepSeek-V4-Flash on 8x H200 143GB: SGLang 0.5.23 vs vLLM 0.33.0 vs vLLM 0.33.0 with ngram speculative "
              "decoding, FP8 KV cache")


def run_cli(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """comparison.html of the three real runs (7 matched scenarios x 3 runs = 21 rows) and report.html of one."""
    root = tmp_path_factory.mktemp("pages")
    for name in ("sglang", "vllm", "vllm_ngram"):
        shutil.copytree(RUNS / name, root / name)
    out = run_cli("compare", str(root / "sglang"), str(root / "vllm"), str(root / "vllm_ngram"),
                  "--out", str(root / "cmp"), "--no-plots", "--html")
    assert out.stdout.endswith(f"wrote {root / 'cmp' / 'comparison.html'}\n")
    # a matrix title as a team writes one: long enough to wrap at 900 px
    run_cli("compare", str(root / "sglang"), str(root / "vllm"), str(root / "vllm_ngram"), "--out", str(root / "long"),
            "--no-plots", "--html", "--title", LONG_TITLE)
    rep = run_cli("report", str(root / "vllm"), "--no-plots", "--html")
    assert rep.stdout == f"wrote {root / 'vllm' / 'report.md'}\nwrote {root / 'vllm' / 'report.html'}\n"
    return {"comparison": root / "cmp" / "comparison.html", "report": root / "vllm" / "report.html",
            "comparison_md": root / "cmp" / "comparison.md", "report_md": root / "vllm" / "report.md",
            "comparison_json": root / "cmp" / "comparison.json", "long_title": root / "long" / "comparison.html"}


def section_ids(page: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"><h2>', page)


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def embedded_data(page: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="sskj-data">(.*?)</script>', page, re.S)
    assert match
    return json.loads(match.group(1))


# --------------------------------------------------------------------------- the page, without a browser


def test_sections_are_the_markdowns_plus_plots(pages):
    for kind, before in (("comparison", "runs"), ("report", "provenance")):
        page = pages[kind].read_text(encoding="utf-8")
        _, sections = split_sections(pages[f"{kind}_md"].read_text(encoding="utf-8"))
        expected = [slug(name) for name, _ in sections]
        expected.insert(expected.index(before), "plots")  # --no-plots: the Markdown has no Plots section
        assert section_ids(page) == expected


def test_comparison_table_has_one_row_per_run_per_scenario(pages):
    page = pages["comparison"].read_text(encoding="utf-8")
    doc = json.loads(pages["comparison_json"].read_text(encoding="utf-8"))
    rows = [r for s in doc["scenarios"] for r in s["rows"]]
    trs = re.findall(r'<tr data-scenario="([^"]*)" data-engine="([^"]*)" data-chip="([^"]*)" data-slo="([^"]*)" '
                     r'data-run="([^"]*)">(.*?)</tr>', page)
    assert len(trs) == len(rows) == 21
    table = page[page.index('id="results-table"'):]
    headers = re.findall(r"<th class=\"[a-z]+\">(.*?)</th>", table[: table.index("</thead>")])
    # one chip, and every Backend label names its engine: the seed-002 columns (Engine and Chip only when they
    # tell rows apart, and Engine not when the Backend label already says it), the speculative run's Accept len,
    # and the Valid column every table that shows a point has
    assert headers == ["Scenario", "Backend", "Conc", "Input", "Output", "Req/s", "OutTok/s", "TTFT P95(ms)",
                       "TTFT P99(ms)", "TPOT Mean(ms)", "TPOT P95(ms)", "TPOT P99(ms)", "E2E P99(ms)", "SLO",
                       "Accept len", "Valid"]
    for (scenario, engine, chip, slo, run, cells), row in zip(trs, rows):
        assert (scenario, engine, run, slo) == (row["scenario"], row["engine"], htmlmod.escape(row["run"]),
                                                row["slo_status"]["overall"])
        texts = dict(zip(headers, re.findall(r"<td[^>]*>(.*?)</td>", cells)))
        assert texts["TTFT P95(ms)"] == f"{row['ttft_p95_ms']:.2f}"
        assert texts["OutTok/s"] == f"{row['output_token_throughput']:.2f}"
        assert texts["Backend"] == htmlmod.escape(row["run"]) and texts["SLO"] == row["slo_status"]["overall"]
        # these fixtures record no acceptance: the ngram phase's is unknown (never 0), the others not speculative
        assert texts["Accept len"] == ("unknown ✖" if row["speculative"] else "-")


def test_page_is_self_contained_and_small(pages):
    for kind in ("comparison", "report"):
        page = pages[kind].read_text(encoding="utf-8")
        assert "Content-Security-Policy" in page and "connect-src 'none'" in page
        assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", page)
        assert not re.search(r"https?://", page.replace("http://www.w3.org/2000/svg", "")[: page.index('id="plotly-gz"')])
        assert pages[kind].stat().st_size < MAX_BYTES


def _groups(data: bytes) -> list[int]:
    """The 13-bit groups of `data` (the last padded with zero bits), bit by bit: what base 91 writes."""
    bits = "".join(f"{b:08b}" for b in data)
    bits += "0" * (-len(bits) % 13)
    return [int(bits[i:i + 13], 2) for i in range(0, len(bits), 13)]


def test_the_inlined_plotly_is_the_packages_own():
    version, packed = plotly_js_packed()
    original = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    assert unpack(packed) == original
    # a script's text of printable ASCII only (base 91): no `<` (so no `</script` or `<!--`), no control character
    gz = decode(packed)  # zopfli's gzip where installed (render/plotly_js.py), else gzip -9's
    assert gzip.decompress(gz) == original and len(gz) <= len(gzip.compress(original, compresslevel=9, mtime=0))
    assert set(packed) == set(ALPHABET) | set(" ") and not set(packed) & set("<>&\r\n\t\0")
    assert packed.startswith(f"{len(gz)} ") and len(packed) == len(f"{len(gz)} ") + -(-len(gz) * 8 // 13) * 2
    assert len(packed) < 0.93 * len(base64.b64encode(gz))  # 16 characters for 13 bytes; base64: 4 for 3
    for n in range(40):  # every length of a last group, the largest and smallest bytes
        for data in (bytes(range(250, 256)) * 7, b"\0" * 40, b"<!--</script>\r\n" * 3):
            assert unpack(pack(data[:n])) == data[:n]
            assert encode(data[:n]) == f"{n} " + "".join(ALPHABET[v % 91] + ALPHABET[v // 91] for v in _groups(data[:n]))
    for bad in ("not base 91 <", "12 ab", "1 a", "1 a<", "4 abc\u00e9"):
        with pytest.raises(ValueError, match="not base-91 text"):
            unpack(bad)
    assert f"plotly.js v{version}".encode() in original[:400]


def test_figures_carry_the_tables_values(pages):
    data = embedded_data(pages["comparison"].read_text(encoding="utf-8"))
    assert [f["id"] for f in data["figures"]] == ["fig-tput", "fig-ttft", "fig-tpot"]
    doc = json.loads(pages["comparison_json"].read_text(encoding="utf-8"))
    ttft = next(f for f in data["figures"] if f["id"] == "fig-ttft")
    sglang = [t for t in ttft["data"] if t["name"] == "sglang" and t["customdata"] and t["customdata"][0][0] == "c2_i128_o32"]
    assert sglang, "sglang's input-128 curve"
    row = next(r for s in doc["scenarios"] for r in s["rows"] if r["run"] == "sglang" and r["scenario"] == "c2_i128_o32")
    assert sglang[0]["y"][0] == row["ttft_p95_ms"] and sglang[0]["x"][0] == 2
    slo = [t for t in ttft["data"] if t["legendgroup"] == "slo"]
    assert slo and all(t["y"] == [doc["slo"]["ttft_p95_ms"]] * 2 for t in slo)
    assert [c["name"] for c in data["cdfs"]] == [s["name"] for s in doc["scenarios"]
                                                 if any(r["run"] for r in s["rows"])][: len(data["cdfs"])]


def test_cdf_points_are_samples_at_even_ranks():
    values = np.arange(1000, 0, -1, dtype=float)
    xs, ys = cdf_points(values)
    assert len(xs) == CDF_POINTS and xs[0] == 1.0 and xs[-1] == 1000.0 and ys[-1] == 1.0
    assert set(xs) <= set(values.tolist()) and xs == sorted(xs)
    small_x, small_y = cdf_points(np.array([3.0, 1.0, 2.0, np.nan]))
    assert small_x == [1.0, 2.0, 3.0] and small_y == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert cdf_points(np.empty(0)) == ([], [])


def test_markdown_subset():
    assert inline("a `x|y` and **faster** <b>") == "a <code>x|y</code> and <strong>faster</strong> &lt;b&gt;"
    assert inline("`` a`b ``") == "<code>a`b</code>"
    blocks = markdown_blocks(["- one", "- two", "", "| A | B |", "|---|---:|", "| x \\| y | 1.5 |", "",
                              "```text", "cmd <arg>", "```", "### Sub", "para line", "second"])
    assert "<ul><li>one</li><li>two</li></ul>" in blocks
    assert '<td>x | y</td><td class="right" data-v="1.5">1.5</td>' in blocks
    assert "<pre><code>cmd &lt;arg&gt;</code></pre>" in blocks
    assert "<h3>Sub</h3>" in blocks and "<p>para line second</p>" in blocks


def test_hostile_names_stay_text(tmp_path):
    data = json.loads((RUNS / "vllm" / "results.json").read_text(encoding="utf-8"))
    data["metadata"]["experiment"] = "x</script><script>alert(1)</script>"
    data["scenarios"][0]["name"] = "<img src=x onerror=alert(2)>"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(json.dumps(data), encoding="utf-8")
    run_cli("report", str(tmp_path / "run"), "--no-plots", "--html")
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert page.count("<script") == 3  # the data, the packed plotly.js, the page's own script
    assert embedded_data(page)["cdfs"]


def test_no_html_without_the_flag(tmp_path):
    shutil.copytree(RUNS / "vllm", tmp_path / "vllm")
    run_cli("report", str(tmp_path / "vllm"), "--no-plots")
    assert not (tmp_path / "vllm" / "report.html").exists()


# --------------------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (make test installs them)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (*CHROME_ARGS, "--window-size=1400,1800"):
        options.add_argument(arg)
    options.binary_location = str(CHROMIUM)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, path: Path) -> dict[str, Any]:
    """Load the page, wait for its plots; returns console messages and every request the page made."""
    driver.get_log("browser")
    driver.get_log("performance")
    driver.get(path.as_uri())
    deadline = time.monotonic() + 90
    state = None
    while time.monotonic() < deadline:
        state = driver.execute_script("return document.body && document.body.getAttribute('data-plots')")
        if state:
            break
        time.sleep(0.2)
    assert state == "ready", f"plots not drawn: {state}"
    messages = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
    requests = [m["params"]["request"]["url"] for m in messages if m["method"] == "Network.requestWillBeSent"]
    return {"console": driver.get_log("browser"), "requests": requests,
            "resources": driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")}


def assert_plots_drawn(driver: Any, expected: int) -> None:
    drawn = driver.execute_script("""
        return Array.from(document.querySelectorAll('div.plot')).map(div => ({
            id: div.id, traces: (div.data || []).length, svg: div.querySelectorAll('.main-svg').length,
            points: div.querySelectorAll('.scatterlayer .trace path, .scatterlayer .trace .point').length}));""")
    assert len(drawn) == expected
    for plot in drawn:
        assert plot["traces"] > 0 and plot["svg"] > 0 and plot["points"] > 0, plot


@pytest.mark.browser
def test_the_browser_decodes_what_pack_writes(browser):
    """assets/common.js sskjDecode gives back the bytes render/packing.py encoded, at every length of a last group
    and over every byte value; text outside the form is an error, not other bytes."""
    common = (resources.files("sskj_results.render") / "assets" / "common.js").read_text(encoding="utf-8")
    samples = [bytes((i * 37 + 11) % 256 for i in range(n)) for n in range(30)] + [bytes(range(256)) * 5]
    browser.get("about:blank")
    out = browser.execute_script(common + "\nreturn arguments[0].map(function (t) { return Array.from(sskjDecode(t)); });",
                                 [encode(d) for d in samples])
    assert [bytes(o) for o in out] == samples
    errors = browser.execute_script(common + "\nreturn arguments[0].map(function (t) { try { sskjDecode(t); return ''; }"
                                     " catch (e) { return String(e); } });", ["3 ab<c", "5 ab"])
    assert "outside its alphabet" in errors[0] and "cut short" in errors[1]


def test_comparison_page_in_a_browser(browser, pages, tmp_path):
    seen = open_page(browser, pages["comparison"])
    assert seen["console"] == []
    assert seen["requests"] == [pages["comparison"].as_uri()]
    assert seen["resources"] == []

    rows = browser.execute_script("return document.querySelectorAll('#results-table tbody tr').length")
    assert rows == 21
    assert_plots_drawn(browser, 4)  # three curves figures and the CDF

    # filters: engine, then SLO mark; the count follows
    browser.execute_script("""
        const s = document.querySelector('select[data-filter=engine]'); s.value = 'vllm';
        s.dispatchEvent(new Event('change'));""")
    visible = browser.execute_script(
        "return Array.from(document.querySelectorAll('#results-table tbody tr')).filter(r => r.style.display !== 'none')"
        ".map(r => r.dataset.engine)")
    assert visible == ["vllm"] * 14
    assert browser.find_element("id", "results-count").text == "14 of 21 rows"
    browser.execute_script("""
        const s = document.querySelector('select[data-filter=engine]'); s.value = '';
        s.dispatchEvent(new Event('change'));""")

    # sorting: a click on OutTok/s orders the rows by it
    heads = browser.find_elements("css selector", "#results-table thead th")
    col = [h.text for h in heads].index("OutTok/s")
    heads[col].click()
    values = browser.execute_script(
        "return Array.from(document.querySelectorAll('#results-table tbody tr'))"
        ".map(r => parseFloat(r.cells[arguments[0]].dataset.v))", col)
    assert values == sorted(values) and len(values) == 21

    # hover a point: the tooltip names its scenario and values
    from selenium.webdriver.common.action_chains import ActionChains

    point = browser.find_element("css selector", "#fig-ttft .scatterlayer .trace .points path")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", point)
    ActionChains(browser).move_to_element(point).perform()
    deadline = time.monotonic() + 10
    hover = ""
    while time.monotonic() < deadline and "scenario" not in hover:
        hover = browser.execute_script("const h = document.querySelector('#fig-ttft .hoverlayer'); "
                                       "return h ? h.textContent : ''")
        time.sleep(0.2)
    assert re.search(r"scenario c\d+_i\d+_o\d+", hover) and "TTFT P95" in hover, hover

    # a click on a run's legend entry hides that run in every panel
    toggle = browser.find_element("css selector", "#fig-ttft .legend .traces .legendtoggle")
    toggle.click()
    deadline = time.monotonic() + 10
    hidden: list[Any] = []
    while time.monotonic() < deadline:
        hidden = browser.execute_script(
            "const d = document.getElementById('fig-ttft').data; "
            "return d.filter(t => t.legendgroup === d[0].legendgroup).map(t => t.visible)")
        if hidden and all(v == "legendonly" for v in hidden):
            break
        time.sleep(0.2)
    assert hidden and all(v == "legendonly" for v in hidden), hidden
    toggle.click()

    # the CDF list redraws the CDF figure for another scenario
    names = browser.execute_script("return Array.from(document.querySelectorAll('#cdf-select option')).map(o => o.text)")
    assert len(names) >= 2
    browser.execute_script("""
        const s = document.getElementById('cdf-select'); s.value = '1'; s.dispatchEvent(new Event('change'));""")
    title = browser.execute_script("return document.getElementById('fig-cdf').layout.title.text")
    assert names[1] in title

    assert browser.get_log("browser") == []
    plots = browser.find_element("id", "plots")
    browser.execute_script("arguments[0].scrollIntoView()", plots)
    time.sleep(0.5)
    shot = tmp_path / "comparison.png"
    assert browser.save_screenshot(str(shot))
    shutil.copyfile(shot, SCREENSHOT)


@pytest.mark.browser
def test_report_page_in_a_browser(browser, pages, tmp_path):
    seen = open_page(browser, pages["report"])
    assert seen["console"] == []
    assert seen["requests"] == [pages["report"].as_uri()]
    assert seen["resources"] == []
    rows = browser.execute_script("return document.querySelectorAll('#results-table tbody tr').length")
    data = json.loads(pages["report"].with_name("results.json").read_text(encoding="utf-8"))
    assert rows == len(data["scenarios"])
    assert_plots_drawn(browser, 4)
    assert browser.save_screenshot(str(tmp_path / "report.png"))


# Noted before the page runs: which figures have their SVG when the page's script first yields after drawing one.
FIRST_FIGURE = """
(function () {
  var observer = new MutationObserver(function () {
    var drawn = Array.prototype.map.call(document.querySelectorAll('div.plot'), function (d) {
      return d.querySelector('.main-svg') ? d.id : null; }).filter(function (id) { return id; });
    if (drawn.length) { window.__sskjFirstDrawn = drawn; observer.disconnect(); }
  });
  observer.observe(document, {childList: true, subtree: true});
})();
"""


@pytest.mark.browser
def test_the_first_figure_is_on_screen_before_the_others_are_drawn(browser, pages):
    """page.js draws one figure a task: when the page first yields with a figure drawn, it is the first figure
    alone (a curves figure of 12 panels takes seconds at 20,000 scenarios; the page answers between them); then
    every figure is drawn."""
    script = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": FIRST_FIGURE})
    try:
        open_page(browser, pages["comparison"])
        assert browser.execute_script("return window.__sskjFirstDrawn") == ["fig-tput"]
        assert_plots_drawn(browser, 4)
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})


SHOTS = Path(os.environ.get("SSKJ_SHOTS", "/tmp/newuser_shots"))  # the screenshots, to be looked at
FIT_SCRIPT = """
    const rect = el => { const r = el.getBoundingClientRect();
                         return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
    const plots = Array.from(document.querySelectorAll('div.plot')).map(div => {
        const svg = div.querySelector('.main-svg').getBoundingClientRect();
        return {id: div.id, box_w: div.clientWidth, box_h: div.clientHeight, svg_w: svg.width, svg_h: svg.height,
                right: div.getBoundingClientRect().right, box: rect(div),
                title: rect(div.querySelector('.gtitle')), modebar: rect(div.querySelector('.modebar')),
                title_lines: div.querySelectorAll('.gtitle tspan').length || 1,
                panel_titles: Array.from(div.querySelectorAll('.annotation')).map(rect)};
    });
    const heads = Array.from(document.querySelectorAll('#results-table thead th'));
    const slo = heads.find(th => th.textContent === 'SLO').getBoundingClientRect();
    const box = document.getElementById('results-table').parentElement.getBoundingClientRect();
    return {plots: plots, width: document.documentElement.clientWidth, slo_right: slo.right, box_right: box.right,
            heads: heads.map(th => th.textContent)};
"""


def resized(driver: Any, width: int) -> dict[str, Any]:
    """Resize the window, wait for page.js to redraw the figures, return their geometry and the table's."""
    driver.set_window_size(width, 1800)
    time.sleep(0.3)  # the page redraws 150 ms after the last resize event
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and driver.execute_script(
            "return document.body.getAttribute('data-plots')") != "ready":
        time.sleep(0.1)
    return driver.execute_script(FIT_SCRIPT)


@pytest.mark.browser
@pytest.mark.parametrize("name", ["comparison", "report", "long_title"])
def test_figures_fit_their_boxes_at_every_width(browser, pages, name):
    """Each figure takes its box's width and the height of its panels at 1400, 1200 and 900 px (none wider
    or taller than its box: no panel cut, no title over the next figure); the SLO column in view at 1400 px;
    each figure's title under the mode bar (the toolbar), inside its box, wrapped when it is longer."""
    SHOTS.mkdir(exist_ok=True)
    browser.set_window_size(1400, 1800)
    open_page(browser, pages[name])
    heights = {}
    titles: dict[int, int] = {}
    for width in (1400, 1200, 900):
        seen = resized(browser, width)
        assert len(seen["plots"]) == 4
        for plot in seen["plots"]:
            assert plot["svg_w"] <= plot["box_w"] and plot["svg_h"] <= plot["box_h"], (width, plot)
            assert plot["box_w"] >= 0.9 * (width - 80) and plot["right"] <= seen["width"], (width, plot)
            # the title: under the mode bar (the toolbar), inside the box, above the panels' own titles
            title, bar = plot["title"], plot["modebar"]
            assert bar["bottom"] > bar["top"] and bar["right"] > bar["left"], (width, plot)  # the toolbar is there
            assert title["top"] >= bar["bottom"] or title["right"] <= bar["left"], (width, plot)
            assert plot["box"]["left"] <= title["left"] and title["right"] <= plot["box"]["right"], (width, plot)
            assert all(title["bottom"] <= p["top"] for p in plot["panel_titles"]), (width, plot)
            titles[width] = max(titles.get(width, 1), plot["title_lines"])
        heights[width] = {p["id"]: p["box_h"] for p in seen["plots"]}
        if width == 1400:
            assert seen["slo_right"] <= seen["box_right"], seen
        assert "Engine" not in seen["heads"]  # the Backend label names the engine
        assert "Valid" in seen["heads"]  # report and comparison alike
        if name == "long_title" and width == 900:
            assert titles[width] == 2, titles  # 150 characters do not fit one line at 900 px
        browser.execute_script("document.getElementById('plots').scrollIntoView()")
        time.sleep(0.2)
        assert browser.save_screenshot(str(SHOTS / f"{name}_{width}.png"))
    # three panels a row at 1400 px, two at 900 px: the curves figures grow a row
    assert heights[900]["fig-ttft"] > heights[1400]["fig-ttft"]
    assert titles[900] >= titles[1400], titles  # narrower: as many title lines or more
    assert browser.get_log("browser") == []


def test_log_ticks_label_several_values_in_a_narrow_range():
    from sskj_results.render.figures import log_ticks

    assert log_ticks([90.0, 3000.0]) == ([100.0, 200.0, 500.0, 1000.0, 2000.0], ["100", "200", "500", "1,000", "2,000"])
    assert log_ticks([1.0, 1e6])[0] == [1.0, 10.0, 100.0, 1000.0, 1e4, 1e5, 1e6]  # 1-2-5 would be 19 labels
    assert log_ticks([]) == ([], [])


def test_interactivity_axis_starts_at_zero_and_narrow_placements_are_given(pages):
    data = embedded_data(pages["comparison"].read_text(encoding="utf-8"))
    tput = next(f for f in data["figures"] if f["id"] == "fig-tput")
    panels = len([k for k in tput["layout"] if k.startswith("xaxis")])
    assert all(tput["layout"][f"xaxis{i or ''}"]["rangemode"] == "tozero" for i in ([0] + list(range(2, panels + 1))))
    places = tput["layout"]["meta"]["places"]
    assert sorted(places) == ["1", "2", "3"][:min(3, panels)]
    assert places["1"]["height"] > places[str(min(3, panels))]["height"]
    ttft = next(f for f in data["figures"] if f["id"] == "fig-ttft")
    if ttft["layout"]["yaxis"]["type"] == "log":
        assert len(ttft["layout"]["yaxis"]["tickvals"]) >= 3


def test_report_html_has_the_valid_column_of_report_md(pages, tmp_path):
    text = pages["report"].read_text(encoding="utf-8")
    head = re.search(r'<table class="sortable results" id="results-table"><thead><tr>(.*?)</tr>', text).group(1)
    assert re.findall(r">([^<]+)</th>", head)[-2:] == ["SLO", "Valid"]
    assert "Valid" in pages["report_md"].read_text(encoding="utf-8").splitlines()[
        next(i for i, line in enumerate(pages["report_md"].read_text(encoding="utf-8").splitlines())
             if line.startswith("| Scenario"))]


# --------------------------------------------------------------------------- what a page draws at most


def test_evenly_keeps_the_first_and_the_last() -> None:
    from sskj_results.render.figures import evenly

    assert evenly(list(range(10)), 4) == [0, 3, 6, 9]
    assert evenly(list(range(3)), 5) == [0, 1, 2]
    assert evenly(list(range(400)), 12)[0] == 0 and evenly(list(range(400)), 12)[-1] == 399
    assert len(set(evenly(list(range(13)), 12))) == 12


@pytest.fixture
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caps of render/figures.py and render/html.py made small enough for the 8-scenario test run."""
    from sskj_results.render import figures, html as page_mod

    for module in (figures, page_mod):
        monkeypatch.setattr(module, "MAX_PANELS", 2)
        monkeypatch.setattr(module, "CDF_MAX_LINES", 2)
    monkeypatch.setattr(page_mod, "FILTER_MAX_OPTIONS", 3)


def test_a_report_page_over_the_caps_draws_evenly_spaced_ones_and_says_so(small_caps, tmp_path):
    shutil.copytree(RUNS / "vllm", tmp_path / "vllm")
    run_cli("report", str(tmp_path / "vllm"), "--no-plots", "--html")
    text = (tmp_path / "vllm" / "report.html").read_text(encoding="utf-8")
    data = embedded_data(text)
    # 3 shapes, 2 panels: the first and the last shape
    for figure in data["figures"]:
        titles = [a["text"] for a in figure["layout"]["annotations"]]
        assert titles == ["<b>input 64 / output 16 tokens</b>", "<b>input 256 / output 64 tokens</b>"], titles
        assert figure["layout"]["meta"]["shapes"] == [2, 3]
        assert [t["showlegend"] for t in figure["data"] if t["legendgroup"] != "slo"] == [True, False]  # one entry a run
    # every shape has its CDF; 4 concurrencies (and 3 repeats) drawn as 2 lines: the first and the last
    assert [c["name"] for c in data["cdfs"]] == ["i64_o16", "i128_o32", "i256_o64"]
    legend = [t["name"] for t in data["cdfs"][1]["data"] if t["legendgroup"] != "slo" and t["showlegend"]]
    assert [name.split(" (n=")[0] for name in legend] == ["concurrency 2", "concurrency 32"], legend
    assert data["cdfs"][1]["layout"]["title"]["text"].endswith(" — 2 of 4 lines (evenly spaced)")
    assert re.search(r'<p class="hint cap" id="plots-cap">(.*?)</p>', text).group(1) == (
        "Drawn: 2 of 3 input/output shapes in each curves figure (at most 2); at most 2 lines in a CDF figure "
        "(2 figure(s) have more: up to 4). Where there are more, those drawn are evenly spaced over the ordered "
        "list, the first and the last included; every scenario is in the table.")
    # the table keeps every scenario; 8 scenario names are over the 3 a list shows: a text box filters them
    assert len(re.findall(r"<tr data-scenario=", text)) == 8
    assert ('<label>Scenario <input type="search" data-filter="scenario" data-match="contains" '
            'placeholder="contains… (8 values)" title="more than 3 values: the rows whose scenario contains the '
            'text typed here"></label>') in text
    assert '<select data-filter="engine"><option value="">all</option><option value="vllm">vllm</option>' in text


def test_the_cdf_list_over_its_cap_is_said_in_its_count(monkeypatch, tmp_path):
    from sskj_results.render import html as page_mod

    monkeypatch.setattr(page_mod, "CDF_MAX_FIGURES", 2)
    shutil.copytree(RUNS / "vllm", tmp_path / "vllm")
    run_cli("report", str(tmp_path / "vllm"), "--no-plots", "--html")
    text = (tmp_path / "vllm" / "report.html").read_text(encoding="utf-8")
    assert [c["name"] for c in embedded_data(text)["cdfs"]] == ["i64_o16", "i256_o64"]
    assert '<span class="count">2 of 3 shapes</span>' in text
    assert "Drawn: CDFs of 2 of 3 shapes (at most 2)." in text


def test_a_page_under_the_caps_says_nothing_about_them(pages):
    text = pages["report"].read_text(encoding="utf-8")
    assert 'id="plots-cap"' not in text and '<span class="count">3 shapes</span>' in text
    assert '<select data-filter="scenario">' in text


@pytest.mark.browser
def test_the_text_box_filter_keeps_the_rows_that_contain_the_text(browser, small_caps, tmp_path):
    shutil.copytree(RUNS / "vllm", tmp_path / "vllm")
    run_cli("report", str(tmp_path / "vllm"), "--no-plots", "--html")
    seen = open_page(browser, tmp_path / "vllm" / "report.html")
    assert seen["console"] == []
    browser.find_element("css selector", "input[data-filter=scenario]").send_keys("I128")
    visible = browser.execute_script(
        "return Array.from(document.querySelectorAll('#results-table tbody tr'))"
        ".filter(r => r.style.display !== 'none').map(r => r.dataset.scenario)")
    assert sorted(visible) == ["c16_i128_o32", "c2_i128_o32", "c32_i128_o32", "c8_i128_o32"]
    assert browser.find_element("id", "results-count").text == "4 of 8 rows"
    assert_plots_drawn(browser, 4)
