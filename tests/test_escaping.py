"""Hostile values in every output format: Markdown, HTML, CSV (issue 27, items 3 and 4)."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.escape import csv_text, md_cell, md_code, md_fence, md_text, one_line
from sskj_results.contract.io import load_run
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.run_dir import provenance_readme
from sskj_results.render.markdown_html import markdown_blocks, split_sections
from sskj_results.render.report import section_text, sections

from .conftest import RAW

GOOD = "vllm_0705_4_64_16.jsonl"
BREAKS = ["\v", "\r", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\n"]
HOSTILE = ('<img src="https://t.example/p.gif"> [click](https://evil.example) ![x](https://evil.example/i.png) '
           "a | b\n| not | a table |\n## Fake section\n<section id=\"sskj-data\">x</section>")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def run_with(tmp_path: Path, description: str, name: str = "run", **meta: str) -> Path:
    run = tmp_path / name
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1",
                         "description": description, **meta}, {"server_args": "vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    shutil.copy(RAW / GOOD, run / "raw_outputs" / GOOD)
    assert invoke("parse", str(run)).exit_code == 0
    return run


def section_ids(page: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"><h2>', page)


# ---------------------------------------------------------------- the escaping functions


def test_markdown_escaping_functions() -> None:
    for brk in BREAKS + ["\n"]:
        assert one_line(f"a{brk}b") == "a b"
    assert md_text('<img src=x> [a](u) ![i](v) `c` *e* x|y \\') == \
        '\\<img src=x> [a\\](u) ![i\\](v) \\`c\\` \\*e\\* x\\|y \\\\'
    assert md_text("a <= b < 3") == "a <= b < 3"  # not a tag
    assert md_cell("a|b\n## h") == "a\\|b ## h"
    assert md_cell("`x|y` <b>") == "`x\\|y` \\<b>"  # inside code only the pipe
    assert md_code("a`b\nc") == "`` a`b c ``"
    assert md_fence("x\n```\n## y") == ["````", "x", "```", "## y", "````"]


def test_csv_formula_neutralising() -> None:
    for start in ("=", "+", "-", "@", "\t", "\r"):
        assert csv_text(f"{start}x") == f"'{start}x"
    assert csv_text("--enable-chunked-prefill") == "'--enable-chunked-prefill"
    assert csv_text("vllm serve m") == "vllm serve m"


# ---------------------------------------------------------------- 3. the converter always advances


@pytest.mark.parametrize("brk", BREAKS, ids=[repr(b) for b in BREAKS])
def test_converter_advances_on_every_line_break(brk: str) -> None:
    text = f"# T\n\n## S\n\nbefore{brk}| a | b |{brk}## x{brk}after\n| only | a pipe line |\n\n- item\n"
    title, sections = split_sections(text)
    # only \n ends a line of Markdown (\r\n holds one): the others stay inside their line
    assert title == "T" and [name for name, _ in sections] == ["S"] + (["x\r"] if "\n" in brk else [])
    html = "".join(markdown_blocks(lines) for _, lines in sections)
    assert "<p>| only | a pipe line |</p>" in html and "<li>item</li>" in html


def test_converter_fences_hold_section_lines() -> None:
    text = "# T\n\n## S\n\n````text\nx\n```\n## not a section\n````\n\nafter\n"
    _, sections = split_sections(text)
    assert [name for name, _ in sections] == ["S"]
    assert markdown_blocks(sections[0][1]) == "<pre><code>x\n```\n## not a section</code></pre>\n<p>after</p>"


def test_report_html_returns_on_every_hostile_description(tmp_path: Path) -> None:
    """The real command in its own process, under a timeout: a value holding each kind of line break,
    a `|` line without a separator row and `\\n## ` never hangs it."""
    description = "Word" + "".join(f"{b}| x{i} | y |" for i, b in enumerate(BREAKS)) + "\n## Fake\n" + HOSTILE
    run = run_with(tmp_path, description)
    done = subprocess.run([sys.executable, "-m", "sskj_results", "report", str(run), "--html", "--no-plots"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    page = (run / "report.html").read_text(encoding="utf-8")
    md = (run / "report.md").read_text(encoding="utf-8")
    shown = [s for s in sections("report") if section_text(md, s.id)]
    expected = [re.sub(r"[^a-z0-9]+", "-", s.title.lower()) for s in sections("report")
                if s in shown or s.id == "plots"]  # the page draws its figures in Plots
    assert section_ids(page) == expected  # no fake section
    assert page.count('id="sskj-data"') == 1
    assert "<img" not in page.split("<script")[0]  # shown as text
    assert "&lt;img src=&quot;https://t.example/p.gif&quot;&gt;" in page
    assert 'href="https://evil.example"' not in page
    assert [line for line in md.splitlines() if line.startswith("## ")] == [f"## {s.title}" for s in shown]
    assert {"summary", "results", "notes", "warnings", "provenance"} <= {s.id for s in shown}
    row = next(line for line in md.split("\n") if line.startswith("| description"))
    assert "\\<img" in row and "[click\\](https" in row and "a \\| b" in row and "\r" not in row
    assert len(re.findall(r"(?<!\\)\|", row)) == 3  # one row of two cells


def test_section_ids_never_take_the_pages_own(tmp_path: Path) -> None:
    from sskj_results.render.html import _section_ids

    assert _section_ids(["sskj data", "Results", "results", "fig cdf"]) == ["sskj-data-2", "results", "results-2",
                                                                             "section-fig-cdf"]


# ---------------------------------------------------------------- 4. Markdown of reports, comparisons and imports


def test_comparison_md_escapes_labels_used_as_headers(tmp_path: Path) -> None:
    a = run_with(tmp_path, "a", "a", phase="p|1\n## Fake <b>x</b>")
    b = run_with(tmp_path, "b", "b", phase="p2")
    write_metadata(b, {}, {"max_num_seqs": "64"}, detect=False)
    out = tmp_path / "cmp"
    result = invoke("compare", str(a), str(b), "--out", str(out), "--no-plots", "--html")
    assert result.exit_code == 0, result.output
    md = (out / "comparison.md").read_text(encoding="utf-8")
    outside_code = re.sub(r"`[^`]*`", "", md)  # inside inline code `<b>` is text
    assert "\n## Fake" not in md and not re.search(r"(?<!\\)<b>", outside_code)
    header = next(line for line in md.split("\n") if line.startswith("| Setting"))
    assert "vllm (p\\|1 ## Fake \\<b>x\\</b>) (baseline)" in header
    assert len(re.findall(r"(?<!\\)\|", header)) == 5  # Setting, two runs, Compared
    page = (out / "comparison.html").read_text(encoding="utf-8")
    assert "<b>x</b>" not in page and page.count('id="sskj-data"') == 1


def test_import_readme_escapes_file_names_and_commands(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    name = "vllm_0705_4_64_16 <img src=x> | [a](b).jsonl"
    shutil.copy(RAW / GOOD, raw / name)
    out = tmp_path / "out"
    result = invoke("import-legacy", str(raw), "--out", str(out), "--chip", "cpu", "--engine", "vllm", "--model",
                    "m", "--server-args", "vllm serve m\n```\n## x")
    assert result.exit_code == 0, result.output
    target = next(p for p in out.iterdir() if not p.name.startswith("."))
    text = (target / "README.md").read_text(encoding="utf-8")
    assert [line for line in text.split("\n") if line.startswith("#")] == [
        f"# Provenance of {target.name}", "## Source files"]
    readme = provenance_readme(load_run(target), [], "sskj-results import-legacy raw\n```\n## x")
    assert "````\nsskj-results import-legacy raw\n```\n## x\n````" in readme  # verbatim, in a fence it cannot close
    assert "<img" not in text.replace("\\<img", "")
    row = next(line for line in text.split("\n") if "jsonl" in line and line.startswith("|"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 5


# ---------------------------------------------------------------- 4. CSV


def test_collect_csv_quotes_line_breaks_and_neutralises_formulas(tmp_path: Path) -> None:
    runs = []
    for i in range(8):
        run = run_with(tmp_path, f"d{i}\rsecond half\nthird", f"r{i}")
        raw = run / "raw_outputs" / GOOD  # a measurement of its own (collect counts one raw run once)
        raw.write_bytes(raw.read_bytes() + b"\n" * (i + 1))
        assert invoke("parse", str(run)).exit_code == 0
        write_metadata(run, {}, {"extra_args": "--enable-chunked-prefill", "server_args": "=HYPERLINK(\"x\")"},
                       detect=False)
        runs.append(run)
    out = tmp_path / "t.csv"
    result = invoke("collect", str(tmp_path), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = out.read_bytes().decode("utf-8")
    records = list(csv.reader(io.StringIO(data, newline="")))
    assert len(records) == 9 and len({len(r) for r in records}) == 1  # the header and 8 rows, same width
    header = records[0]
    for r in records[1:]:
        assert r[header.index("description")].endswith("\rsecond half\nthird")  # read back whole
        assert r[header.index("extra_args")] == "'--enable-chunked-prefill"
        assert r[header.index("server_args")] == "'=HYPERLINK(\"x\")"
    cells = [c for r in records[1:] for c in r]
    assert not any(c.startswith(("=", "+", "@", "\t", "\r")) for c in cells)
    assert not any(c.startswith("-") and not re.fullmatch(r"-[0-9.e+-]+", c) for c in cells)  # numbers stay numbers
    assert load_run(runs[0]).config.extra_args == "--enable-chunked-prefill"


# ---------------------------------------------------------------- 9. a symlinked plots directory


def test_a_symlinked_plots_directory_is_not_written_through(tmp_path: Path) -> None:
    run = run_with(tmp_path, "d")
    outside = tmp_path / "outside"
    outside.mkdir()
    (run / "plots").symlink_to(outside)
    result = invoke("report", str(run))
    assert result.exit_code == 1
    assert f"{run / 'plots'}: a symbolic link; plots are written only inside the run directory" in result.output
    assert list(outside.iterdir()) == []
