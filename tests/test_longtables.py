"""Long tables in the HTML pages (render/longtables.py, assets/longtables.js): the first rows drawn at load, the
others packed and put back on demand; in a real browser, a report of 300 scenarios."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.render.packing import unpack
from sskj_results.render.longtables import LONG_TABLE_ROWS, SHOWN_ROWS, fold_long_tables
from tests.test_html import browser, open_page  # noqa: F401  (the same chromium, as a fixture)

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _table(n: int, tid: str = "") -> str:
    rows = "".join(f'<tr><td class="right" data-v="{i}">{i}</td><td>&lt;tr row {i}</td></tr>' for i in range(n))
    return f'<table class="sortable"{tid}><thead><tr><th>n</th><th>text</th></tr></thead><tbody>{rows}</tbody></table>'


def _unpack(packed: str) -> Any:
    return json.loads(unpack(packed).decode("utf-8"))


def test_a_long_table_keeps_its_first_rows_and_packs_the_others_in_order() -> None:
    body = "<p>a</p>" + _table(LONG_TABLE_ROWS) + _table(300, ' id="results-table"') + _table(600)
    out, packed = fold_long_tables(body)
    assert packed is not None
    rest = _unpack(packed)
    assert [len(r) for r in rest] == [300 - SHOWN_ROWS, 600 - SHOWN_ROWS]  # the short table is not folded
    assert out.count("<tr>") == 1 + LONG_TABLE_ROWS + 1 + SHOWN_ROWS + 1 + SHOWN_ROWS  # header rows included
    assert '<table data-long="0" data-rows="300" class="sortable" id="results-table">' in out
    assert '<table data-long="1" data-rows="600" class="sortable">' in out
    assert rest[0][0] == f'<tr><td class="right" data-v="{SHOWN_ROWS}">{SHOWN_ROWS}</td><td>&lt;tr row {SHOWN_ROWS}</td></tr>'
    assert rest[1][-1].startswith('<tr><td class="right" data-v="599">')
    assert "The first 100 of 600 rows are drawn." in out and '<button type="button" data-long="1">' in out
    # nothing lost: the rows drawn and the rows packed are the table's rows
    assert fold_long_tables(_table(10)) == (_table(10), None)


def _report_of(tmp_path: Path, scenarios: int) -> Path:
    sys.path.insert(0, str(BENCH))
    try:
        from make_raw import file_name, make_run
    finally:
        sys.path.remove(str(BENCH))
    raw = tmp_path / "raw"
    raw.mkdir()
    for n in range(scenarios):
        i, o = 64 + 16 * (n // 10), 16
        (raw / file_name("sglang", n % 10 + 1, i, o)).write_text(
            json.dumps(make_run("sglang", n % 10 + 1, i, o, 0.05, 0)) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "o"), "--chip", "cpu",
                                       "--model", "tiny"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run,) = [p for p in (tmp_path / "o").iterdir() if p.is_dir()]
    result = CliRunner().invoke(main, ["report", str(run), "--no-plots", "--html"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return run / "report.html"


@pytest.mark.browser
@pytest.mark.slow  # 300 raw files imported and a report of 300 scenarios opened in chromium (about 30 s)
def test_a_report_of_300_scenarios_draws_100_rows_then_every_row_on_demand(browser: Any, tmp_path: Path) -> None:
    page = _report_of(tmp_path, 300)
    text = page.read_text(encoding="utf-8")
    assert 'id="sskj-rows"' in text and 'data-rows="300"' in text
    driver = browser
    seen = open_page(driver, page)
    assert not [m for m in seen["console"] if m["level"] == "SEVERE"], seen["console"]
    count = "return document.querySelectorAll('#results-table tbody tr').length"
    assert driver.execute_script(count) == SHOWN_ROWS
    assert driver.execute_script("return document.body.getAttribute('data-long-tables')") == "folded"
    # a filter of the results table: every row first, then the filter over all of them
    driver.execute_script("""
        const box = document.querySelector('#results-filters [data-filter="scenario"]');
        box.value = 'c3_'; box.dispatchEvent(new Event(box.tagName === 'INPUT' ? 'input' : 'change'));""")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and driver.execute_script(count) != 300:
        time.sleep(0.2)
    assert driver.execute_script(count) == 300
    assert driver.find_element("id", "results-count").text == "30 of 300 rows"
    # another long table: a click on a header sorts over every row
    other = "document.querySelector('table[data-long]')"
    assert driver.execute_script(f"return {other} !== null")
    driver.execute_script(f"window.__t = {other}; window.__t.tHead.rows[0].cells[0].click();")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and driver.execute_script("return window.__t.tBodies[0].rows.length") != 300:
        time.sleep(0.2)
    assert driver.execute_script("return window.__t.tBodies[0].rows.length") == 300
    assert driver.execute_script("return window.__t.tHead.rows[0].cells[0].classList.contains('sorted-asc')")
    texts = driver.execute_script("return Array.from(window.__t.tBodies[0].rows, r => r.cells[0].textContent)")
    collator = "return arguments[0].slice().sort((a, b) => a.localeCompare(b, undefined, {numeric: true}))"
    assert texts == driver.execute_script(collator, texts)  # sorted over all 300 rows, not the first 100


def test_a_long_list_folds_and_a_folded_tables_sort_values_are_the_numbers_shown() -> None:
    items = "".join(f"<li>c{i}, completeness: ✖ 1 of 3 requests failed</li>" for i in range(400))
    out, packed = fold_long_tables(f"<ul>{items}</ul><ul><li>short</li></ul>")
    assert packed is not None and _unpack(packed) == [[f"<li>c{i}, completeness: ✖ 1 of 3 requests failed</li>"
                                                       for i in range(SHOWN_ROWS, 400)]]
    assert out.startswith('<ul data-long="0" data-rows="400"><li>c0,') and out.count("<li>") == SHOWN_ROWS + 1
    assert "The first 100 of 400 items are drawn." in out and out.endswith("<ul><li>short</li></ul>")
    rows = "".join(f'<tr><td class="right" data-v="{i + 0.123456789!r}">{i + 0.123456789:.2f}</td>'
                   f'<td class="right" data-v="inf">inf</td></tr>' for i in range(300))
    out, packed = fold_long_tables(f"<table><thead><tr><th>x</th></tr></thead><tbody>{rows}</tbody></table>")
    assert '<td class="right" data-v="0.12">0.12</td><td class="right" data-v="inf">inf</td>' in out
    assert packed is not None and _unpack(packed)[0][-1].startswith('<tr><td class="right" data-v="299.12">299.12</td>')
