"""Figures: PNG files, lazy matplotlib, axis choices, the comparison's set of plots."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.render import plots
from sskj_results.cli import main
from sskj_results.render.plots import CdfLine, Curve, Point

RUNS = Path(__file__).parent / "data" / "compare" / "runs"
PNG = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def curves() -> list[Curve]:
    out = []
    for label, scale in (("sglang", 1.0), ("vllm", 0.8)):
        for shape in ((1000, 256), (4000, 512)):
            pts = tuple(Point(c, 100.0 * c * scale, 10.0 + c / 4, 200.0 * c) for c in (2, 8, 32, 128))
            out.append(Curve(label, shape[0], shape[1], pts))
    return out


def test_importing_the_library_loads_neither_matplotlib_nor_scipy():
    code = ("import sys, sskj_results.analysis.compare, sskj_results.render.report, sskj_results.render.publish, sskj_results.analysis.stats, "
            "sskj_results.render.plots, "
            "sskj_results.cli.report_cmd; "
            "print(sorted(m for m in ('matplotlib', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_throughput_vs_interactivity_writes_a_readable_png(tmp_path):
    path = plots.throughput_vs_interactivity(curves(), tmp_path / "p.png", "Output throughput vs interactivity")
    assert path == tmp_path / "p.png"
    width, height = png_size(path)
    assert width >= 1000 and height >= 400  # two panels side by side at 110 dpi


def test_latency_vs_concurrency_with_and_without_threshold(tmp_path):
    assert png_size(plots.latency_vs_concurrency(curves(), "ttft_p95_ms", 3000.0, tmp_path / "a.png", "t"))
    assert png_size(plots.latency_vs_concurrency(curves(), "tpot_mean_ms", None, tmp_path / "b.png", "t"))
    # a threshold far above the data is named above the panel instead of squashing it
    assert png_size(plots.latency_vs_concurrency(curves(), "tpot_mean_ms", 1e6, tmp_path / "c.png", "t"))


def test_cdfs(tmp_path):
    rng = np.random.default_rng(0)
    lines = [CdfLine("a (n=100)", rng.lognormal(5, 0.3, 100), rng.lognormal(2, 0.2, 100)),
             CdfLine("b (n=0)", np.empty(0), np.empty(0))]
    assert png_size(plots.latency_cdfs(lines, tmp_path / "cdf.png", "CDF", 3000.0, 50.0))


def test_nothing_to_draw_returns_none(tmp_path):
    empty = [Curve("a", 1, 1, (Point(2, None, None, None),))]
    assert plots.throughput_vs_interactivity(empty, tmp_path / "x.png", "t") is None
    assert plots.latency_vs_concurrency(empty, "ttft_p95_ms", 1.0, tmp_path / "y.png", "t") is None
    assert plots.latency_cdfs([CdfLine("a", np.empty(0), np.empty(0))], tmp_path / "z.png", "t") is None
    assert not list(tmp_path.iterdir())


def axes():
    from matplotlib.figure import Figure

    return Figure().subplots()


def test_wide_ranges_get_a_log_axis_and_narrow_ones_start_at_zero():
    ax = axes()
    plots._scale(ax, "y", [1.0, 5000.0])
    assert ax.get_yscale() == "log"
    ax = axes()
    plots._scale(ax, "y", [250.0, 270.0])
    assert ax.get_yscale() == "linear"
    assert ax.get_ylim() == pytest.approx((0.0, 270.0 * 1.12))


def test_threshold_is_drawn_only_near_the_data():
    assert plots._threshold_in_view([100.0, 1200.0], 3000.0)
    assert not plots._threshold_in_view([10.0, 200.0], 3000.0)


def test_legend_columns_fit_the_figure():
    assert plots._legend_columns(["a", "b", "c"], 16.0) == 3
    many = [f"vllm (phase{i}_vllm_ngram_long_label)" for i in range(8)]
    assert 1 <= plots._legend_columns(many, 10.8) < 8


def test_compare_writes_the_plot_set(tmp_path, monkeypatch):
    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "vllm_ngram", "--out", "out", "--cdf", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "wrote out/comparison.md and out/comparison.json and 5 plot(s) in out\n"
    names = sorted(p.name for p in Path("out").glob("*.png"))
    # the first two matched scenarios in reading order (c2 before c16)
    assert names == ["cdf_c2_i128_o32.png", "cdf_c2_i256_o64.png", "throughput_vs_interactivity.png",
                     "tpot_mean_vs_concurrency.png", "ttft_p95_vs_concurrency.png"]
    md = Path("out/comparison.md").read_text(encoding="utf-8")
    for name in names:
        assert f"]({name})" in md
        png_size(Path("out") / name)
    assert md.index("## Statistical verdicts") < md.index("## Plots") < md.index("## Runs")


@pytest.mark.parametrize(("cdf", "count"), [("all", 6), ("0", 0)])
def test_cdf_option(tmp_path, monkeypatch, cdf, count):
    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "--out", "out", "--cdf", cdf])
    assert result.exit_code == 0, result.output
    assert len(list(Path("out").glob("cdf_*.png"))) == count
