"""A comparison across chips and device counts: the same grid on 8 H200 devices and on 4 of 8 H20 devices
(`TP=4 DEVICES=0,1,2,3`), each with its power trace (docs/COMPARE.md, *Across chips*)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.analysis.rundata import load_run_data
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.render.publish import write_comparison
from sskj_results.render.report import render_comparison, section_text

from .conftest import RAW
from .test_energy import _nvidia_csv

END = datetime(2026, 7, 8, 12, 0, 30).astimezone().timestamp()
TIMES = [END - 10 + 0.5 * i for i in range(24)]


def _run(root: Path, chip: str, tp: int, devices: str | None, watts: dict[int, float],
         throughputs: tuple[float, ...]) -> Path:
    """A run of shape c2_i128_o32 measured three times (repeats) and c8_i256_o64 once, with the client's output
    throughput of the repeats set to `throughputs` and the power of repeat i `watts` + i W per device."""
    run = root / chip
    meta: dict[str, object] = {"experiment": "e", "model": "m", "engine": "sglang", "chip": chip, "run_id": "r1"}
    if devices:
        meta["devices"] = devices
    write_metadata(run, meta, {"server_args": f"python -m sglang.launch_server --model-path m --tp {tp}"},
                   detect=False)
    for sub in ("raw_outputs", "client_stats", "gpu_logs"):
        (run / sub).mkdir()
    data = json.loads((RAW / "vllm_0705_2_128_32.jsonl").read_text().splitlines()[0])
    stems = []
    for i, value in enumerate(throughputs):
        stems.append(f"{chip}_rep{i + 1}")
        (run / "raw_outputs" / f"{stems[-1]}.jsonl").write_text(json.dumps(dict(data, output_throughput=value)) + "\n")
    stems.append(f"{chip}_wide")
    (run / "raw_outputs" / f"{stems[-1]}.jsonl").write_text((RAW / "vllm_0705_8_256_64.jsonl").read_text())
    for stem in stems:
        (run / "client_stats" / f"{stem}.json").write_text(json.dumps(
            {"ended_at": datetime.fromtimestamp(END).astimezone().isoformat(timespec="seconds")}))
        extra = float(stems.index(stem))
        (run / "gpu_logs" / f"{stem}.csv").write_text(_nvidia_csv({d: w + extra for d, w in watts.items()}, TIMES))
    parse_run_dir(run)
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("chips")
    h200 = _run(root, "nvidia_h200", 8, None, {d: 700.0 for d in range(8)}, (200.0, 201.0, 202.0))
    # 4 of 8 devices served; the other four draw power too and must not be counted
    h20 = _run(root, "nvidia_h20", 4, "CUDA_VISIBLE_DEVICES=0,1,2,3",
               {d: 300.0 if d < 4 else 90.0 for d in range(8)}, (150.0, 150.5, 151.0))
    return h200, h20


def test_verdicts_are_per_accelerator_when_device_counts_differ(runs: tuple[Path, Path]) -> None:
    doc = build_comparison([load_run_data(p) for p in runs])
    assert doc.title.endswith("(8 vs 4 accelerators)")
    assert doc.throughput_basis is not None and "whole-server throughput is not compared" in doc.throughput_basis
    accel = next(d for d in doc.config_differences if d.setting == "accelerators")
    assert list(accel.values.values()) == ["8", "4"] and accel.axis == "chip"
    repeated = next(s for s in doc.scenarios if s.name == "c2_i128_o32")
    tests = {t.metric: t for t in repeated.tests}
    assert "output_token_throughput" not in tests  # 8 devices against 4: no whole-server verdict
    per_accel = tests["output_throughput_per_accel"]
    # geometric means of the repeats (docs/COMPARE.md): 201 / 8 and 150.5 / 4 to 1e-4
    assert (per_accel.baseline_value, per_accel.candidate_value) == (pytest.approx(201.0 / 8, rel=1e-4),
                                                                     pytest.approx(150.5 / 4, rel=1e-4))
    assert per_accel.verdict == "faster"  # fewer tokens per second, more per device
    energy = tests["joules_per_output_token"]
    # by hand: 8 x (700, 701, 702) W against 4 x (300, 301, 302) W over the same duration and output tokens
    assert energy.ratio == pytest.approx(4 * 301.0 / (8 * 701.0), rel=1e-4)
    assert energy.verdict == "faster"  # less energy per output token
    single = {t.metric: t for t in next(s for s in doc.scenarios if s.name == "c8_i256_o64").tests}
    assert single["output_throughput_per_accel"].verdict == "insufficient samples"  # one run each: said, not guessed
    md = render_comparison(doc)
    section = section_text(md, "per-accelerator")
    assert "Accelerator counts differ (8 vs 4): whole-server throughput is not compared" in section
    row = next(line for line in section.splitlines() if line.startswith("| sglang @ nvidia_h20 ") and "c2_i128_o32_r2" in line)
    assert [c.strip() for c in row.split("|")[2:5]] == ["c2_i128_o32_r2", "4", "37.6"]
    assert "and on output throughput per accelerator, goodput and energy per output token" in section_text(md, "verdicts")


def test_no_whole_server_verdict_on_any_row_that_scales_with_the_devices(runs: tuple[Path, Path]) -> None:
    from sskj_results.contract.metrics import metric

    base, cand = load_run_data(runs[0]), load_run_data(runs[1])
    doc = build_comparison([base, cand])
    for s in cand.results.scenarios:
        s.accelerators = None  # the same runs compared whole-server: the reference values
    whole = {(sc.name, t.metric): t for sc in build_comparison([base, cand]).scenarios for t in sc.tests}
    scaled = [(sc.name, t) for sc in doc.scenarios for t in sc.tests if metric(t.metric).scales_with_devices]
    assert {t.metric for _, t in scaled} >= {"prefill_tok_s", "request_goodput"}
    assert "output_token_throughput" not in {t.metric for _, t in scaled}  # replaced by its per-accelerator row
    assert {(name, t.metric) for name, t in scaled} - set(whole) <= {("c8_i256_o64", "request_goodput")}
    for name, t in scaled:  # every verdict of such a row is on the values per accelerator, 8 vs 4
        assert "per accelerator: values / 8 vs / 4 accelerators" in (t.reason or ""), (name, t.metric)
        if (name, t.metric) not in whole:
            continue  # one run each: whole servers get no goodput test to compare with
        ref = whole[(name, t.metric)]
        assert t.baseline_value == pytest.approx(ref.baseline_value / 8), (name, t.metric)
        assert t.candidate_value == pytest.approx(ref.candidate_value / 4), (name, t.metric)
    prefill = next(t for name, t in scaled if name == "c8_i256_o64" and t.metric == "prefill_tok_s")
    assert prefill.ratio == pytest.approx(whole[("c8_i256_o64", "prefill_tok_s")].ratio * 2)
    basis = doc.throughput_basis or ""
    assert "per accelerator (each side's values / its accelerators)" in basis
    assert all(metric(m).words in basis for m in ("prefill_tok_s", "request_goodput", "steady_output_throughput"))


def test_same_device_counts_keep_the_whole_server_verdict(runs: tuple[Path, Path]) -> None:
    doc = build_comparison([load_run_data(runs[0]), load_run_data(runs[0])], CompareOptions())
    metrics = {t.metric for s in doc.scenarios for t in s.tests}
    assert doc.throughput_basis is None and "output_token_throughput" in metrics
    assert "output_throughput_per_accel" not in metrics and "(8 vs" not in doc.title


def test_the_frontier_figure_is_drawn(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out = write_comparison(list(runs), tmp_path / "cmp", html=True)
    assert tmp_path / "cmp" / "frontier_per_accelerator.png" in out.plots
    page = (tmp_path / "cmp" / "comparison.html").read_text()
    assert "Output throughput per accelerator vs interactivity" in page and "SLO TPOT mean" in page


def test_an_unknown_count_compares_whole_servers(runs: tuple[Path, Path]) -> None:
    base, cand = load_run_data(runs[0]), load_run_data(runs[1])
    for s in cand.results.scenarios:
        s.accelerators = None  # a run parsed from a command sskj does not understand
    doc = build_comparison([base, cand])
    metrics = {t.metric for s in doc.scenarios for t in s.tests}
    assert doc.throughput_basis is None and "accelerators)" not in doc.title
    assert "output_token_throughput" in metrics and "output_throughput_per_accel" not in metrics
