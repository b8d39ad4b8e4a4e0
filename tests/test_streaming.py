"""Runs without streaming (sglang.bench_serving --disable-stream) import, honestly: E2E, throughput and counts as
the client wrote them; TTFT, TPOT and ITL not measured (null), the client's values kept in `unmeasured`; the mode
recorded, from the file or the run loop's record of the command (docs/METRICS.md, "Streaming").

The lines follow a real sglang.bench_serving 0.5.4 `--disable-stream` output against an OpenAI-compatible server
(tests/e2e/test_client_modes.py makes them with the real client): TTFT a few microseconds over the latency (the
client reads the clock for the latency before it parses the one response), TPOT negative float noise, ITL 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.catalog.clients import client_streams
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Scenario
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.ingest.rawkeys import RunError
from sskj_results.ingest.readers import read_run
from sskj_results.ingest.streaming import command_streaming
from sskj_results.run.client_info import client_record, write_client_info

LAT = [0.0273, 0.0270, 0.0346, 0.0201, 0.0255, 0.0288, 0.0312, 0.0190]


def _stats(run: dict[str, Any], word: str, ms: np.ndarray) -> None:
    run[f"mean_{word}_ms"] = float(np.mean(ms))
    run[f"median_{word}_ms"] = float(np.median(ms))
    run[f"std_{word}_ms"] = float(np.std(ms))
    run[f"p99_{word}_ms"] = float(np.percentile(ms, 99))


def nostream_line(details: bool = True, out_len: int = 8) -> dict[str, Any]:
    """One line of `sglang.bench_serving --disable-stream [--output-details]` (0.5.4 keys)."""
    latency = np.array(LAT)
    ttft = latency + 0.00002  # read a few microseconds after the latency
    n = len(LAT)
    run: dict[str, Any] = {
        "backend": "vllm", "dataset_name": "random-ids", "request_rate": float("inf"), "max_concurrency": 2,
        "sharegpt_output_len": None, "random_input_len": 32, "random_output_len": out_len, "random_range_ratio": 1.0,
        "duration": 0.1457, "completed": n, "total_input_tokens": 32 * n, "total_output_tokens": out_len * n,
        "total_output_tokens_retokenized": out_len * n, "request_throughput": n / 0.1457,
        "input_throughput": 32 * n / 0.1457, "output_throughput": out_len * n / 0.1457, "concurrency": 1.47,
        "accept_length": None,
    }
    _stats(run, "e2e_latency", latency * 1000)
    _stats(run, "ttft", ttft * 1000)
    _stats(run, "tpot", (latency - ttft) / (out_len - 1) * 1000)
    _stats(run, "itl", np.zeros(1))
    run["p95_itl_ms"] = 0.0
    if details:
        run.update(input_lens=[32] * n, output_lens=[out_len] * n, ttfts=ttft.tolist(), itls=[[] for _ in range(n)],
                   generated_texts=["x"] * n, errors=[""] * n)
    return run


def _import(tmp_path: Path, *runs: dict[str, Any]) -> tuple[Any, list[Scenario]]:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    (raw / "sglang_nostream.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "out"), "--chip", "cpu",
                                       "--model", "tiny"])
    scenarios = [s for d in sorted((tmp_path / "out").glob("*/")) if (d / "results.json").is_file()
                 for s in load_run(d).scenarios]
    return result, scenarios


@pytest.mark.parametrize("details", [True, False], ids=["details", "summary"])
def test_a_run_without_streaming_imports_with_ttft_tpot_itl_not_measured(tmp_path: Path, details: bool) -> None:
    line = nostream_line(details)
    assert line["median_tpot_ms"] < 0  # the noise that was refused as "negative"
    result, (s,) = _import(tmp_path, line)
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.output
    assert s.streaming is False and s.streaming_source is not None and s.streaming_source.startswith("file: ")
    # measured, exactly as the client wrote them
    assert (s.latencies.e2e_ms.mean, s.latencies.e2e_ms.p50, s.latencies.e2e_ms.p99) == (
        line["mean_e2e_latency_ms"], line["median_e2e_latency_ms"], line["p99_e2e_latency_ms"])
    assert s.request_throughput == line["request_throughput"] and s.output_token_throughput == line["output_throughput"]
    assert s.success == 8 and s.duration_s == line["duration"]
    # not measured: null, the client's own values kept aside
    for metric, word in (("ttft_ms", "ttft"), ("tpot_ms", "tpot"), ("itl_ms", "itl")):
        stats = getattr(s.latencies, metric)
        assert (stats.mean, stats.p50, stats.p95, stats.p99, stats.std, stats.count) == (None,) * 6, metric
        assert s.unmeasured[metric]["mean"] == line[f"mean_{word}_ms"]
        assert s.unmeasured[metric]["p50"] == line[f"median_{word}_ms"]
    assert s.unmeasured["itl_ms"]["p95"] == 0.0
    assert s.slo_status.overall == "❔" and s.slo_attainment is None and s.request_goodput is None
    assert s.interactivity is None
    assert all(r.ttft_ms is None and r.tpot_ms is None and r.itl_ms is None and r.e2e_ms for r in s.raw_requests)
    assert len(s.raw_requests) == (8 if details else 0)
    assert any(n.startswith("not streamed (the client ran with --disable-stream") for n in s.notes)


def test_a_set_holding_a_run_without_streaming_imports_every_file(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    fixture = Path(__file__).parent / "data" / "raw" / "vllm_0705_2_128_32.jsonl"
    (raw / fixture.name).write_bytes(fixture.read_bytes())
    result, scenarios = _import(tmp_path, nostream_line())
    assert result.exit_code == 0, result.output
    assert sorted((s.source.file.rsplit("/", 1)[-1], s.streaming) for s in scenarios if s.source) == [
        ("sglang_nostream.jsonl", False), ("vllm_0705_2_128_32.jsonl", True)]


def test_a_streamed_run_keeps_its_timing_and_its_refusal_of_truly_negative_values() -> None:
    line = nostream_line()
    line["itls"] = [[0.001] * 7 for _ in LAT]  # streamed: gaps between chunks
    with pytest.raises(RunError, match=r"mean_tpot_ms: -0\.00285714 is negative, and a latency statistic"):
        read_run(line, 1)
    line["mean_tpot_ms"] = -1.0
    summary = nostream_line(details=False)
    summary.update(mean_ttft_ms=5.0, median_ttft_ms=5.0, p99_ttft_ms=6.0, mean_tpot_ms=-1.0)  # TTFT below E2E
    with pytest.raises(RunError, match="mean_tpot_ms: -1 is negative"):
        read_run(summary, 1)


@pytest.mark.parametrize("value,refused", [(-0.00009, False), (-0.0002, True), (0.0, False)])
def test_float_noise_around_zero_is_not_negative(value: float, refused: bool) -> None:
    """0.1 µs: well under a microsecond, far above float rounding of millisecond latencies."""
    line = nostream_line()
    line["itls"] = [[0.001] * 7 for _ in LAT]
    for word in ("tpot",):
        for stat in ("mean", "median", "std", "p99"):
            line[f"{stat}_{word}_ms"] = value if stat != "std" else 0.0
    if refused:
        with pytest.raises(RunError, match="is negative"):
            read_run(line, 1)
    else:
        run = read_run(line, 1)
        assert run.streaming is True and run.client["tpot_ms"]["mean"] == value


def test_streamed_outputs_in_one_chunk_each_are_streamed_not_unmeasured() -> None:
    """No gaps, but the first token came before the last (TTFT below E2E): streamed, in one chunk per request."""
    line = nostream_line()
    line.update(mean_ttft_ms=5.0, median_ttft_ms=5.0, p99_ttft_ms=6.0, mean_tpot_ms=2.0, median_tpot_ms=2.0,
                p99_tpot_ms=3.0)
    line["ttfts"] = [0.005] * len(LAT)
    run = read_run(line, 1)
    assert run.streaming is True and run.unmeasured == {}
    assert run.client["ttft_ms"]["mean"] == 5.0


def test_the_recorded_command_decides_where_the_file_cannot_tell() -> None:
    line = nostream_line(details=False)
    for key in ("mean_e2e_latency_ms", "median_e2e_latency_ms", "std_e2e_latency_ms", "p99_e2e_latency_ms"):
        del line[key]  # TTFT without E2E statistics: the file cannot tell
    line.update(mean_tpot_ms=0.0, median_tpot_ms=0.0, p99_tpot_ms=0.0)
    run = read_run(line, 1)
    assert run.streaming is None and "ttft_ms" in run.client
    command_streaming(run, {"streaming": False})
    assert run.streaming is False and run.streaming_source == \
        "command: the recorded client command ran without streaming (--disable-stream)"
    assert "ttft_ms" not in run.client and run.unmeasured["ttft_ms"]["mean"] == line["mean_ttft_ms"]
    # a file that says otherwise wins, noted
    streamed = read_run({**nostream_line(), "itls": [[0.001] * 7 for _ in LAT], "median_tpot_ms": 1.0,
                         "mean_tpot_ms": 1.0, "p99_tpot_ms": 1.0}, 1)
    command_streaming(streamed, {"streaming": False})
    assert streamed.streaming is True and any("but the raw run says otherwise" in n for n in streamed.notes)


def test_the_client_record_says_whether_the_client_streams() -> None:
    assert client_streams("sglang", "") is True
    assert client_streams("sglang", "--disable-stream --extra-request-body '{\"a\": 1}'") is False
    assert client_streams("vllm", "") is True
    assert client_streams("sglang", "'unclosed") is None
    record = client_record("sglang", "sglang.bench_serving", "python", "0.5.4", "1", "0", "--disable-stream")
    assert record["streaming"] is False
    assert client_record("vllm", "", "python", "", "0", "", "")["streaming"] is True


def test_parse_records_the_mode_from_the_loops_record_of_the_client_command(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r",
                         "client": "sglang.bench_serving"}, {"server_args": "python -m vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    for stem, line, extra in (("cpu_vllm_1130_2_32_8", nostream_line(), "--disable-stream"),
                              ("cpu_vllm_1130_4_32_8", {**nostream_line(), "max_concurrency": 4}, "")):
        (run / "raw_outputs" / f"{stem}.jsonl").write_text(json.dumps(line) + "\n")
        write_client_info(run, stem, client="sglang", module="sglang.bench_serving", impl="python", version="0.5.4",
                          seed="1", warmup_requests="0", extra=extra)
    parse_run_dir(run)
    by_conc = {s.concurrency: s for s in load_run(run).scenarios}
    agreed, contradicted = by_conc[2], by_conc[4]
    assert agreed.streaming is False
    assert agreed.streaming_source == "command: the recorded client command ran without streaming (--disable-stream)"
    assert agreed.latencies.tpot_ms.mean is None and agreed.unmeasured["tpot_ms"]["mean"] < 0
    # the record says it streamed, the file holds no gaps and TTFT = E2E: the run's own data is recorded, noted
    assert contradicted.streaming is False and contradicted.streaming_source.startswith("file: ")
    assert any("the recorded client command streamed (client_info), but the raw run says otherwise" in n
               for n in contradicted.notes)


@pytest.mark.parametrize("over_ms,streaming", [(0.0, False), (0.9, False), (1.1, None), (-0.01, True)])
def test_a_ttft_at_most_1_ms_over_the_e2e_is_the_mark_of_no_streaming(over_ms: float, streaming: Any) -> None:
    """The client reads the TTFT after parsing the one response: up to 1 ms later; further over decides nothing."""
    line = nostream_line(details=False)
    for stat in ("mean", "median", "p99"):
        line[f"{stat}_ttft_ms"] = line[f"{stat}_e2e_latency_ms"] + over_ms
    line.update(mean_tpot_ms=0.0, median_tpot_ms=0.0, p99_tpot_ms=0.0)
    assert read_run(line, 1).streaming is streaming
