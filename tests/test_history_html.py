"""history.html in a real browser (chromium through selenium, as tests/test_html.py): drawn offline, filtered,
fitted at 1400 and 900 px; the screenshots are written to SSKJ_SHOTS (default /tmp/newuser_shots) to be looked at."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sskj_results.analysis.history import history
from sskj_results.render.history import write_history

from .test_history import frame, planted, run_rows
from .test_html import SHOTS, browser, open_page  # noqa: F401  (browser: the fixture)


def two_setups():
    rows = planted().to_dict("records")
    for i in range(6):
        rows += run_rows(i, "0.9.0" if i < 3 else "0.9.1", {(64, "ttft_ms_p95"): 180.0 + i,
                                                            (64, "output_token_throughput"): 2500.0 - i},
                         engine="vllm", stamp=f"--0{i + 1}-15", precision="month-day")
    return frame([{k: (None if v is None or v != v else v) for k, v in r.items()} for r in rows])


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("history")
    write_history(history(two_setups()), out, True, "History of the planted runs")
    return out / "history.html"


def figures(driver: Any) -> list[dict[str, Any]]:
    return driver.execute_script("""
        return Array.from(document.querySelectorAll('#history-figures div.plot')).map(div => ({
            id: div.id, traces: (div.data || []).length, width: div.getBoundingClientRect().width,
            svg: div.querySelector('.main-svg') ? div.querySelector('.main-svg').getBoundingClientRect().width : 0,
            marks: Array.from(div.querySelectorAll('.scatterlayer .trace')).length}));""")


def wait_ready(driver: Any) -> None:
    time.sleep(0.3)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and driver.execute_script(
            "return document.body.getAttribute('data-plots')") != "ready":
        time.sleep(0.1)


@pytest.mark.browser
@pytest.mark.slow
def test_history_page_draws_offline_filters_and_fits(browser: Any, page: Path) -> None:  # noqa: F811
    browser.set_window_size(1400, 1800)
    seen = open_page(browser, page)
    assert [r for r in seen["requests"] if not r.startswith("file:")] == []
    assert [m for m in seen["console"] if m["level"] == "SEVERE"] == []
    drawn = figures(browser)
    # sglang: ttft, tpot, throughput; vllm: ttft, throughput
    assert len(drawn) == 5 and all(f["traces"] >= 1 for f in drawn)
    ttft = drawn[0]
    assert ttft["traces"] == 4  # two shapes, the regression's mark and the +45 % run's (an outlier)
    # built in the browser from the compact data: the values, the hover text of each drawn run, the marks
    line, mark = browser.execute_script("""const d = document.getElementById(arguments[0]).data;
        return [{y: d[1].y, text: d[1].text}, {name: d[2].name, x: d[2].x, text: d[2].text}];""", ttft["id"])
    hist = history(two_setups())
    first = hist.series[0]
    c64 = [s for s in hist.series if (s.setup, s.metric) == (first.setup, first.metric)][1]
    assert line["y"] == [float(f"{v:.4g}") for v in c64.values.tolist()]
    run = c64.runs[0]
    assert line["text"][0] == (f"{run.run_id}<br>{run.timestamp}<br>engine {run.get('engine_version')}"
                               f"<br>image {run.get('image')}")
    (change,) = c64.changes
    assert mark["name"] == "regression" and mark["x"] == [change.index]
    assert f"<br>{c64.runs[change.index].run_id}<br>" in mark["text"][0]
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SHOTS / "history_1400.png"))
    browser.execute_script("""const s = document.querySelector('[data-hfilter="engine"]');
        s.value = 'vllm'; s.dispatchEvent(new Event('change'));""")
    wait_ready(browser)
    assert len(figures(browser)) == 2
    assert browser.find_element("id", "history-count").text == "figures 2 of 2"
    browser.execute_script("""const s = document.querySelector('[data-hfilter="engine"]');
        s.value = ''; s.dispatchEvent(new Event('change'));""")
    wait_ready(browser)
    browser.set_window_size(900, 1800)
    wait_ready(browser)
    width = browser.execute_script("return document.documentElement.clientWidth")
    for f in figures(browser):
        assert f["svg"] <= f["width"] + 1 <= width
    assert browser.save_screenshot(str(SHOTS / "history_900.png"))
    text = browser.find_element("id", "section-changes").text
    assert "regression" in text and "engine version 0.5.0 → 0.5.1" in text


@pytest.mark.browser
@pytest.mark.slow
def test_the_lines_values_read_back_in_the_browser_are_the_4_digit_values(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    """The y values travel as integers less a prediction, in 7-bit groups (render/history.py values_packed): what
    plotly draws and shows on hover is each point's value at 4 significant digits, as the page carried before
    (plain integers times 10**e), for binned lines, small and large magnitudes, zeros and integers of over 32 bits."""
    import numpy as np

    from sskj_results.render.history import figure_data

    rng = np.random.default_rng(46)
    rows = []
    for i in range(400):
        rows += run_rows(i, "a" if i < 200 else "b", {
            (1, "ttft_ms_p95"): 0.0123 * rng.uniform(0.9, 1.1),
            (64, "ttft_ms_p95"): float(rng.choice([0.0, 3.7e7])) * rng.uniform(0.5, 1.5) + 1e-3,  # 1e-3 .. 5.6e7
            (8, "output_token_throughput"): 2500.0 * rng.uniform(0.97, 1.03) * (1.3 if i >= 200 else 1.0)})
    hist = history(frame(rows))
    data = figure_data(hist)
    big = max(abs(v) for f in data["figures"] for line in f["lines"] for v in line["y"])
    assert big > 2 ** 40  # a line's integers need more than 32 bits
    write_history(hist, tmp_path, True, "values")
    browser.set_window_size(1400, 1800)
    open_page(browser, tmp_path / "history.html")
    wait_ready(browser)
    drawn = browser.execute_script("""return Array.from(document.querySelectorAll('#history-figures div.plot'))
        .map(div => [div.id, div.data.filter(t => t.hovertemplate.startsWith('%{y}')).map(t => [t.x, t.y])]);""")
    assert len(drawn) == len(data["figures"]) >= 2
    by_id = {f["id"]: f for f in data["figures"]}
    for fid, traces in drawn:
        lines = by_id[fid]["lines"]
        assert len(traces) == len(lines)
        for (x, y), line in zip(traces, lines):
            e = line["e"]
            before = [v / 10.0 ** -e if e < 0 else v * 10.0 ** e for v in line["y"]]  # the earlier page's reading
            assert x == line["x"] and y == before and y == [float(f"{v:.4g}") for v in y]
