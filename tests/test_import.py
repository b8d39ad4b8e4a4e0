"""Import of raw client outputs: fidelity to the client's own numbers, formats, bad input, parse."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.contract.io import load_run
from sskj_results.ingest.metadata import write_metadata
from sskj_results.contract.models import Scenario
from sskj_results.ingest.rawio import loads_lenient
from sskj_results.ingest.rawkeys import RunError
from sskj_results.ingest.filenames import name_hints
from sskj_results.ingest.readers import read_run
from sskj_results.analysis.validate import validate_path

from .conftest import RAW

STAT_KEY = re.compile(r"^(mean|median|std|p\d+)_(ttft|tpot|itl|e2e_latency|e2el)_ms$")
METRIC = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e_latency": "e2e_ms", "e2el": "e2e_ms"}
STAT = {"mean": "mean", "median": "p50", "std": "std", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
SCALARS = {
    "request_throughput": "request_throughput", "input_throughput": "input_token_throughput",
    "output_throughput": "output_token_throughput", "total_token_throughput": "total_token_throughput",
    "duration": "duration_s",
}


def _import(raw_dir: Path, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["import-legacy", str(raw_dir), "--out", str(out), "--chip", "cpu",
                                     "--accelerator", "CPU", "--hardware", "2x CPU core", *extra])


def _scenarios(out: Path) -> list[Scenario]:
    found: list[Scenario] = []
    for run in sorted(out.iterdir()):
        found.extend(load_run(run).scenarios)
    return found


def _raw_lines(path: Path) -> list[dict[str, Any]]:
    return [loads_lenient(line) for line in path.read_bytes().splitlines() if line.strip()]


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)


@pytest.mark.parametrize("fixture", sorted(p.name for p in RAW.iterdir() if p.suffix in (".json", ".jsonl")))
def test_every_client_statistic_is_reproduced(tmp_path: Path, fixture: str) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / fixture, raw / fixture)
    result = _import(raw, tmp_path / "out", "--engine", "vllm")
    assert result.exit_code == 0, result.output
    scenarios = _scenarios(tmp_path / "out")
    originals = _raw_lines(raw / fixture)
    assert len(scenarios) == len(originals)
    checked = 0
    for scenario, data in zip(sorted(scenarios, key=lambda s: s.source.line), originals):
        lat = scenario.latencies
        for key, value in data.items():
            m = STAT_KEY.match(key)
            if m and value is not None and m.group(1) in STAT:
                ours = getattr(getattr(lat, METRIC[m.group(2)]), STAT[m.group(1)])
                assert close(ours, value), (key, ours, value)
                assert f"latencies.{METRIC[m.group(2)]}.{STAT[m.group(1)]}" not in scenario.reconstructed
                checked += 1
            if key in SCALARS and value is not None:
                assert close(getattr(scenario, SCALARS[key]), value), key
                checked += 1
        errors = data["errors"]
        assert scenario.success == sum(e == "" for e in errors)
        assert scenario.failed == sum(e != "" for e in errors)
        assert scenario.success == data["completed"]
        assert len(scenario.raw_requests) == len(errors)
    assert checked >= 20


def test_reconstructed_values_follow_the_client_definitions(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / "vllm_0705_3_8500_8.jsonl", raw)
    assert _import(raw, tmp_path / "out").exit_code == 0
    (scenario,) = _scenarios(tmp_path / "out")
    data = _raw_lines(raw / "vllm_0705_3_8500_8.jsonl")[0]
    ok = np.array([e == "" for e in data["errors"]])
    ttfts = np.array(data["ttfts"])[ok]
    assert scenario.latencies.ttft_ms.p90 == pytest.approx(np.percentile(ttfts, 90) * 1000, rel=1e-12)
    assert scenario.latencies.ttft_ms.p95 == pytest.approx(np.percentile(ttfts, 95) * 1000, rel=1e-12)
    assert scenario.reconstructed["latencies.ttft_ms.p95"] == "per_request"
    assert scenario.reconstructed["latencies.e2e_ms.p90"] == "ttft_plus_itls"
    assert scenario.reconstructed["latencies.tpot_ms.p95"] == "ttft_plus_itls"
    gaps = np.concatenate([np.array(g) for g, good in zip(data["itls"], ok) if good])
    assert scenario.latencies.itl_ms.p90 == pytest.approx(np.percentile(gaps, 90) * 1000, rel=1e-12)
    assert scenario.latencies.ttft_ms.count == 7
    failed = [r for r in scenario.raw_requests if not r.success]
    assert len(failed) == 5 and all(r.error == "Bad Request" and r.ttft_ms is None for r in failed)
    assert scenario.slo_status.overall == "❌"
    assert scenario.slo_attainment == 0.0


def test_vllm_bench_serve_per_request_latencies_used(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / "vllmbench_c8_128_32.json", raw)
    result = _import(raw, tmp_path / "out", "--engine", "vllm")
    assert result.exit_code == 0
    (scenario,) = _scenarios(tmp_path / "out")
    assert (scenario.concurrency, scenario.input_len, scenario.output_len) == (8, 128, 32)
    assert "input length inferred as the median prompt length of successful requests" in scenario.notes
    assert "latencies.e2e_ms.p90" not in scenario.reconstructed  # the client wrote p90_e2el_ms
    data = json.loads((raw / "vllmbench_c8_128_32.json").read_text())
    assert scenario.raw_requests[3].e2e_ms == pytest.approx(data["latencies"][3] * 1000)
    assert scenario.source.format == "vllm-bench-serve"
    assert scenario.request_rate is None  # "inf": unlimited


def test_every_imported_run_validates_and_has_provenance(tmp_path: Path, raw_dir: Path) -> None:
    result = _import(raw_dir, tmp_path / "out", "--model", "tiny")
    assert result.exit_code == 0, result.output
    # vllmbench_c8_128_32.json fits no name convention: its own backend key says vllm
    runs = sorted((tmp_path / "out").iterdir())
    assert [r.name.split("_")[1] for r in runs] == ["vllm"]
    for run in runs:
        assert all(report.valid for report in validate_path(run)), run
        readme = (run / "README.md").read_text()
        for scenario in load_run(run).scenarios:
            assert scenario.source is not None and scenario.source.line >= 1
            assert Path(scenario.source.file).name in readme
            assert scenario.source.sha256 in readme
    vllm = load_run(runs[0])
    assert [s.name for s in vllm.scenarios] == ["c4_i64_o16", "c2_i128_o32", "c8_i128_o32", "c8_i256_o64", "c3_i8500_o8"]
    assert vllm.metadata.chip == "cpu" and vllm.metadata.engine == "vllm"


def test_a_dry_run_announces_the_chip_the_import_then_records(tmp_path: Path) -> None:
    """No chip given, but every file name names one: neither the dry run nor the import speaks of 'unknown'."""
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", raw / "cpu_vllm_0705_2_128_32.jsonl")
    out = tmp_path / "o"
    dry = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(out), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "chip unknown" not in dry.output and "no chip given" not in dry.output
    assert f"would write run folder {out}/cpu_vllm_0705: engine vllm, model unknown, chip cpu" in dry.output
    done = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(out)])
    assert done.exit_code == 0 and "no chip given" not in done.output
    assert load_run(out / "cpu_vllm_0705").metadata.chip == "cpu"


def test_without_a_chip_the_chip_is_unknown_and_said_once(tmp_path: Path, raw_dir: Path) -> None:
    result = CliRunner().invoke(main, ["import-legacy", str(raw_dir), "--out", str(tmp_path / "o"), "--model", "tiny"])
    assert result.exit_code == 0, result.output
    assert result.output.count("no chip given") == 1
    (run,) = (tmp_path / "o").iterdir()
    meta = load_run(run).metadata
    assert (meta.chip, meta.hardware) == ("unknown", "unknown") and run.name.startswith("unknown_vllm_")
    (report,) = validate_path(run)
    assert report.valid
    assert any(p.severity == "warning" and f"sskj-results metadata {run} --chip" in p.message for p in report.problems)


def test_platform_file_gives_chip(tmp_path: Path, raw_dir: Path) -> None:
    env = tmp_path / "nvidia_h200.env"
    env.write_text('# H200\nCHIP="nvidia_h200"\nACCELERATOR="NVIDIA H200"\nHARDWARE="8x NVIDIA H200 143GB"\nX=$(rm -rf /)\n')
    result = CliRunner().invoke(main, ["import-legacy", str(raw_dir), "--out", str(tmp_path / "o"),
                                       "--platform", str(env), "--engine", "sglang", "--model", "tiny"])
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "o").iterdir()
    meta = load_run(run).metadata
    assert (meta.chip, meta.accelerator, meta.hardware, meta.engine) == ("nvidia_h200", "NVIDIA H200", "8x NVIDIA H200 143GB", "sglang")
    assert run.name.startswith("nvidia_h200_sglang_")


# ---------------------------------------------------------------- synthetic edge cases


def sglang_run(n: int = 6, out_len: int = 4, **overrides: Any) -> dict[str, Any]:
    rng = np.random.default_rng(n)
    ttfts = (0.05 + rng.random(n) * 0.01).tolist()
    itls = [(0.01 + rng.random(out_len - 1) * 0.001).tolist() for _ in range(n)]
    run: dict[str, Any] = {
        "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": 2,
        "random_input_len": 32, "random_output_len": out_len, "duration": 1.0, "completed": n,
        "total_input_tokens": 32 * n, "total_output_tokens": out_len * n, "request_throughput": float(n),
        "input_throughput": 32.0 * n, "output_throughput": float(out_len * n),
        "mean_ttft_ms": float(np.mean(ttfts) * 1000), "median_ttft_ms": float(np.median(ttfts) * 1000),
        "p99_ttft_ms": float(np.percentile(ttfts, 99) * 1000),
        "input_lens": [32] * n, "output_lens": [out_len] * n, "ttfts": ttfts, "itls": itls,
        "generated_texts": ["x"] * n, "errors": [""] * n,
    }
    run.update(overrides)
    return run


def write_jsonl(path: Path, runs: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in runs]  # json.dumps writes bare Infinity
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bare_infinity_and_missing_keys(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [sglang_run()])
    assert "Infinity" in (raw / "sglang_0101_2_32_4.jsonl").read_text()
    assert _import(raw, tmp_path / "out").exit_code == 0
    (s,) = _scenarios(tmp_path / "out")
    assert s.request_rate is None
    assert s.latencies.e2e_ms.mean is not None and s.reconstructed["latencies.e2e_ms.mean"] == "ttft_plus_itls"
    assert s.total_token_throughput == pytest.approx(32 * 6 + 24)
    assert s.reconstructed["total_token_throughput"] == "derived"


def test_one_token_outputs_have_no_tpot(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    run = sglang_run(out_len=1, itls=[[] for _ in range(6)], output_lens=[1] * 6)
    write_jsonl(raw / "sglang_0101_2_32_1.jsonl", [run])
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 0, result.output
    (s,) = _scenarios(tmp_path / "out")
    assert s.latencies.tpot_ms.mean is None and s.latencies.tpot_ms.count == 0
    assert all(r.tpot_ms is None for r in s.raw_requests)
    assert s.slo_status.tpot_mean_ok is None and s.slo_status.overall == "❔"  # not measurable: unknown, not failed
    assert not any("--disable-stream" in n for n in s.notes)


def test_no_details_uses_client_values_only(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    run = sglang_run()
    for key in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        run.pop(key)
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [run])
    assert _import(raw, tmp_path / "out").exit_code == 0
    (s,) = _scenarios(tmp_path / "out")
    assert s.raw_requests == [] and s.latencies.ttft_ms.p95 is None
    assert s.latencies.ttft_ms.p99 == run["p99_ttft_ms"]
    assert any("failed count unknown" in n for n in s.notes)


def test_disable_stream_is_noted(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    run = sglang_run(itls=[[] for _ in range(6)])
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [run])
    assert _import(raw, tmp_path / "out").exit_code == 0
    (s,) = _scenarios(tmp_path / "out")
    assert any("--disable-stream" in n for n in s.notes)
    assert s.streaming is False and s.streaming_source.startswith("file: no successful request")
    assert s.latencies.ttft_ms.mean is None and s.latencies.ttft_ms.p95 is None and s.latencies.ttft_ms.count is None
    assert s.unmeasured["ttft_ms"] == {"mean": run["mean_ttft_ms"], "p50": run["median_ttft_ms"], "p99": run["p99_ttft_ms"]}
    assert all(r.ttft_ms is None and r.tpot_ms is None and r.itl_ms is None and r.e2e_ms is not None
               for r in s.raw_requests)
    assert s.slo_attainment is None and s.request_goodput is None and s.prefill_tok_s.count == 0


def test_mixed_detail_and_summary_lines_in_one_file(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    bare = sglang_run(max_concurrency=4)
    for key in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        bare.pop(key)
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [sglang_run(), bare, sglang_run(n=7)])  # two measurements
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 0
    names = [s.name for s in _scenarios(tmp_path / "out")]
    assert names == ["c2_i32_o4", "c2_i32_o4_r2", "c4_i32_o4"]
    assert "file name says concurrency 2 but the client recorded 4" in result.output


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", "not valid JSON"),
        (json.dumps(sglang_run(ttfts="soon")), "ttfts: expected a list, got str"),
        (json.dumps(sglang_run(ttfts=[0.1] * 5)), "per-request arrays have different lengths (input_lens=6, output_lens=6, ttfts=5, itls=6, errors=6)"),
        (json.dumps(sglang_run(errors=["boom"] * 6)), "0 of 6 requests succeeded; first error: boom"),
        (json.dumps(sglang_run(max_concurrency="two")), "max_concurrency: expected a number, got 'two'"),
        (json.dumps({"hello": 1}), "not a sglang.bench_serving or vllm bench serve result"),
        ("[1, 2]", "[0]: expected a JSON object (one run), got int"),
    ],
)
def test_bad_runs_are_skipped_with_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [sglang_run(), line, sglang_run(n=7)])  # two measurements
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 1
    column = ":2" if line == "{not json" else ""  # a JSON syntax error gives line:column
    assert f"skipped: {raw}/sglang_0101_2_32_4.jsonl:2{column}: {message}" in result.output
    assert "Traceback" not in result.output
    assert len(_scenarios(tmp_path / "out")) == 2
    run = load_run(next((tmp_path / "out").iterdir()))
    assert run.skipped and run.skipped[0].reason.startswith("not imported: sglang_0101_2_32_4.jsonl:2:")


def test_truncated_last_line(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    text = json.dumps(sglang_run()) + "\n" + json.dumps(sglang_run())[:200]
    (raw / "sglang_0101_2_32_4.jsonl").write_text(text)
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 1
    assert "sglang_0101_2_32_4.jsonl:2:201: not valid JSON" in result.output and "truncated" in result.output


def test_strict_stops_and_writes_nothing(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [sglang_run(), "{oops"])
    result = _import(raw, tmp_path / "out", "--strict")
    assert result.exit_code == 1
    assert result.output.strip().endswith("(--strict: stopped at the first bad run)")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_binary_and_empty_files(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "sglang_0101_2_32_4.jsonl").write_bytes(b"\x00\xff\x10garbage\n")
    (raw / "vllm_0101_2_32_4.json").write_bytes(b"")
    write_jsonl(raw / "vllm_0101_4_32_4.jsonl", [sglang_run(max_concurrency=4)])
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 1
    assert "sglang_0101_2_32_4.jsonl:1:1: not valid JSON" in result.output
    assert "vllm_0101_2_32_4.json: empty file: no runs" in result.output
    assert "Traceback" not in result.output


def test_vllm_append_result_pretty_and_spec_decode(tmp_path: Path) -> None:
    base = json.loads((RAW / "vllmbench_c8_128_32.json").read_text())
    spec = dict(base, spec_decode_num_drafts=100, spec_decode_accepted_tokens=250, **{"request_goodput:": None})
    spec.pop("request_goodput")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.json").write_text(json.dumps(base) + "\n" + json.dumps(spec) + "\n")
    (raw / "b.json").write_text(json.dumps(dict(base, max_concurrency=4, p25_ttft_ms=1.0, p99_9_ttft_ms=2.0), indent=2))
    result = _import(raw, tmp_path / "out", "--engine", "vllm")
    assert result.exit_code == 0, result.output
    scenarios = sorted(_scenarios(tmp_path / "out"), key=lambda s: (s.source.file, s.source.line))
    assert [s.accept_length for s in scenarios] == [None, 3.5, None]
    assert [s.source.line for s in scenarios] == [1, 2, 1]
    assert scenarios[2].concurrency == 4


def test_name_hints() -> None:
    assert name_hints("sglang_0707_32_512_256").engine == "sglang"
    new = name_hints("nvidia_h200_vllm-dspark_0707_32_512_256")
    assert (new.chip, new.engine, new.concurrency, new.input_len, new.output_len) == ("nvidia_h200", "vllm-dspark", 32, 512, 256)
    assert name_hints("results").engine is None


def test_read_run_rejects_negative_gap() -> None:
    with pytest.raises(RunError, match="itls: negative or non-finite gap"):
        read_run(sglang_run(itls=[[-0.1, 0.1, 0.1]] * 6), 1)


# ---------------------------------------------------------------- parse RUN_DIR


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "python -m vllm.entrypoints.openai.api_server --model m"}, detect=False)
    (run / "raw_outputs").mkdir()
    return run


def test_parse_is_idempotent_and_skips_unchanged_files(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / "cpu_vllm_0705_2_128_32.jsonl")
    first = parse_run_dir(run)
    before = (run / "results.json").read_bytes()
    second = parse_run_dir(run)
    assert (first.files_read, second.files_read, second.files_reused) == (1, 0, 1)
    assert (run / "results.json").read_bytes() == before
    shutil.copy(RAW / "vllm_0705_8_256_64.jsonl", run / "raw_outputs" / "cpu_vllm_0705_8_256_64.jsonl")
    third = parse_run_dir(run)
    assert (third.files_read, third.files_reused) == (1, 1)
    assert [s.name for s in third.results.scenarios] == ["c2_i128_o32", "c8_i256_o64"]
    assert load_run(run).metadata.experiment == "e"


def test_parse_sidecars(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    stem = "cpu_vllm_0705_2_128_32"
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / f"{stem}.jsonl")
    (run / "server_metrics").mkdir()
    (run / "server_metrics" / f"{stem}.before.prom").write_text(
        '# TYPE vllm:spec_decode_num_drafts_total counter\n'
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 100.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 50.0\n')
    (run / "server_metrics" / f"{stem}.after.prom").write_text(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="tiny"} 298.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="tiny"} 539.0\n')
    (run / "gpu_logs").mkdir()
    (run / "gpu_logs" / f"{stem}.csv").write_text(
        "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
        "2026/07/07 10:00:00.000, 0, 50, 1000, 300.5\n2026/07/07 10:00:00.000, 1, 70, 3000, 400.5\n")
    (run / "skipped_after_oom.csv").write_text(
        'scenario,concurrency,input_len,output_len,reason,log_excerpt\nc64_i128_o32,64,128,32,server died,"CUDA out of memory, tried"\n')
    outcome = parse_run_dir(run)
    (s,) = outcome.results.scenarios
    assert s.accept_length == pytest.approx(1 + 489 / 198)
    assert s.reconstructed["accept_length"] == "server_metrics"
    assert s.accelerator_usage.samples == 2 and s.accelerator_usage.util_max_pct == 70
    assert s.accelerator_usage.power_mean_w == pytest.approx(350.5) and s.accelerator_usage.devices == 2
    assert outcome.results.skipped[0].log_excerpt == "CUDA out of memory, tried"
    # a changed side file makes the raw file be read again
    (run / "server_metrics" / f"{stem}.after.prom").write_text('vllm:spec_decode_num_drafts_total 100\nvllm:spec_decode_num_accepted_tokens_total 50\n')
    again = parse_run_dir(run)
    assert again.files_read == 1 and again.results.scenarios[0].accept_length is None


def test_parse_cli_reports_bad_file_and_keeps_good(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / "cpu_vllm_0705_2_128_32.jsonl")
    (run / "raw_outputs" / "cpu_vllm_0705_4_128_32.jsonl").write_text('{"backend": "vllm", "completed": ')
    result = CliRunner().invoke(main, ["parse", str(run)])
    assert result.exit_code == 1
    assert f"skipped: {run}/raw_outputs/cpu_vllm_0705_4_128_32.jsonl:1:34: not valid JSON" in result.output
    results = load_run(run)
    assert [s.name for s in results.scenarios] == ["c2_i128_o32"]
    assert results.skipped[0].scenario == "c4_i128_o32"


def test_parse_without_results_json(tmp_path: Path) -> None:
    (tmp_path / "raw_outputs").mkdir()
    result = CliRunner().invoke(main, ["parse", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {tmp_path}/results.json: no results.json; create it first")


def test_parse_slo_tier_recomputes_status(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    shutil.copy(RAW / "vllm_0705_8_256_64.jsonl", run / "raw_outputs" / "cpu_vllm_0705_8_256_64.jsonl")
    assert CliRunner().invoke(main, ["parse", str(run)]).exit_code == 0
    assert load_run(run).scenarios[0].slo_status.overall == "✅"
    result = CliRunner().invoke(main, ["parse", str(run), "--slo-ttft-p95-ms", "50", "--slo-tpot-mean-ms", "10"])
    assert result.exit_code == 0
    after = load_run(run)
    assert after.slo.tier is None and after.scenarios[0].slo_status.overall == "❌"
    result = CliRunner().invoke(main, ["parse", str(run), "--slo-tier", "S9"])
    assert result.exit_code == 1 and "unknown SLO tier 'S9'" in result.output


def test_parse_summarizes_xpu_smi_snapshots(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    stem = "p800_sglang_0705_2_128_32"
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / f"{stem}.jsonl")
    (run / "gpu_logs").mkdir()
    table = (
        "### 2026-07-08T12:00:0{t}+0800\n"
        "| XPU-SMI        Driver Version: 5.0.21.21    XRE Version: 5.0.21.21   |\n"
        "| 0  P800  OAM  |  40C  {p0}W / 400W |  {m0}MiB / 98304MiB |  {u0}% |\n"
        "| 1  P800  OAM  |  41C  {p1}W / 400W |  {m1}MiB / 98304MiB |  {u1}% |\n"
    )
    (run / "gpu_logs" / f"{stem}.xpu-smi.log").write_text(
        table.format(t=0, p0=100, m0=1000, u0=10, p1=200, m1=2000, u1=30)
        + table.format(t=1, p0=300, m0=3000, u0=50, p1=400, m1=4000, u1=90))
    (s,) = parse_run_dir(run).results.scenarios
    usage = s.accelerator_usage
    assert (usage.samples, usage.devices) == (2, 2)
    assert (usage.util_mean_pct, usage.util_max_pct) == (45.0, 90.0)
    assert (usage.mem_used_mean_mib, usage.mem_used_max_mib) == (2500.0, 4000.0)
    assert (usage.power_mean_w, usage.power_max_w) == (250.0, 400.0)


def test_reparse_quick_check_and_no_rewrite(tmp_path: Path) -> None:
    import os

    run = _run_dir(tmp_path)
    raw = run / "raw_outputs" / "cpu_vllm_0705_2_128_32.jsonl"
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", raw)
    parse_run_dir(run)
    results_file = run / "results.json"
    stamp = results_file.stat().st_mtime_ns
    os.utime(results_file, ns=(stamp - 10**9, stamp - 10**9))
    again = parse_run_dir(run)
    assert (again.files_read, again.files_reused) == (0, 1)
    assert results_file.stat().st_mtime_ns == stamp - 10**9  # unchanged run: not rewritten
    # same bytes, new mtime: hashed again, still reused, mtime recorded
    st = raw.stat()
    os.utime(raw, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
    touched = parse_run_dir(run)
    assert (touched.files_read, touched.files_reused) == (0, 1)
    assert load_run(run).raw_files[0].mtime_ns == st.st_mtime_ns + 5 * 10**9
    # different content of the same size: read again
    data = bytearray(raw.read_bytes())
    data[data.index(b'"max_concurrency": 2')+19] = ord("3")
    raw.write_bytes(bytes(data))
    changed = parse_run_dir(run)
    assert changed.files_read == 1 and changed.results.scenarios[0].concurrency == 3


def test_parse_reads_an_unchanged_results_json_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`parse` first checks that results.json loads (a damaged one is rebuilt), then merges into it: the run loaded
    by the check is the one parse takes, while the file is unchanged; a file changed in between is read again."""
    import os

    from sskj_results.contract import io as contract_io

    run = _run_dir(tmp_path)
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / "cpu_vllm_0705_2_128_32.jsonl")
    parse_run_dir(run)
    reads: list[Path] = []
    real = contract_io.read_json_text
    monkeypatch.setattr(contract_io, "read_json_text", lambda path: reads.append(path) or real(path))
    result = CliRunner().invoke(main, ["parse", str(run)])
    assert result.exit_code == 0, result.output
    assert reads == [run / "results.json"]  # once, not once for the check and once for the merge
    reads.clear()
    checked = load_run(run, hand_on=True)
    results_file = run / "results.json"
    stamp = results_file.stat().st_mtime_ns
    os.utime(results_file, ns=(stamp + 10**9, stamp + 10**9))  # changed since: read again
    assert load_run(run) is not checked and len(reads) == 2
    checked = load_run(run, hand_on=True)
    assert load_run(run) is checked and load_run(run) is not checked  # taken once, by the next load
    assert len(reads) == 4


def test_scenario_name_format(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / "cpu_vllm_0705_2_128_32.jsonl")
    shutil.copy(RAW / "vllm_0705_8_256_64.jsonl", run / "raw_outputs" / "cpu_vllm_0705_8_256_64.jsonl")
    assert CliRunner().invoke(main, ["parse", str(run)]).exit_code == 0
    assert [s.name for s in load_run(run).scenarios] == ["c2_i128_o32", "c8_i256_o64"]
    # unchanged raw files: the new names alone make parse rewrite results.json
    result = CliRunner().invoke(main, ["parse", str(run), "--name-format", "chat_c{concurrency}_in{input_len}_out{output_len}"])
    assert result.exit_code == 0, result.output
    assert [s.name for s in load_run(run).scenarios] == ["chat_c2_in128_out32", "chat_c8_in256_out64"]
    assert CliRunner().invoke(main, ["parse", str(run)]).exit_code == 0  # the recorded format is kept
    assert load_run(run).scenarios[0].name == "chat_c2_in128_out32"
    result = CliRunner().invoke(main, ["parse", str(run), "--name-format", "c{conc}"])
    assert result.exit_code == 1 and "scenario name format 'c{conc}' is invalid" in result.output
    result = CliRunner().invoke(main, ["parse", str(run), "--name-format", "chat"])
    assert result.exit_code == 1
    assert "scenario name format 'chat' gives 'chat' to two shapes (2, 128, 32) and (8, 256, 64)" in result.output
    assert load_run(run).scenarios[0].name == "chat_c2_in128_out32"  # a failed parse changes nothing


def test_newer_sglang_keys(tmp_path: Path) -> None:
    """Newer sglang.bench_serving: total_throughput, p90/p95 of every metric, "trace" rate, server_info."""
    raw = tmp_path / "raw"
    raw.mkdir()
    run = sglang_run(request_rate="trace", total_throughput=123.0, p90_ttft_ms=55.5, p95_ttft_ms=56.5,
                     server_info={"model_path": "/data/models/DeepSeek-V4-Flash", "version": "0.5.23"},
                     cached_tokens=[0] * 6, tag=None)
    write_jsonl(raw / "sglang_0101_2_32_4.jsonl", [run])
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 0, result.output
    (s,) = _scenarios(tmp_path / "out")
    assert s.total_token_throughput == 123.0 and "total_token_throughput" not in s.reconstructed
    assert (s.latencies.ttft_ms.p90, s.latencies.ttft_ms.p95) == (55.5, 56.5)
    assert s.request_rate is None and "request rate 'trace' (not a number): recorded as null" in s.notes
    assert load_run(next((tmp_path / "out").iterdir())).metadata.model == "/data/models/DeepSeek-V4-Flash"


def test_several_models_make_one_run_each(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    base = json.loads((RAW / "vllmbench_c8_128_32.json").read_text())
    (raw / "vllm_0101_8_128_32.json").write_text(json.dumps(dict(base, model_id="model-a")))
    (raw / "vllm_0101_4_128_32.json").write_text(json.dumps(dict(base, model_id="model-b", max_concurrency=4)))
    result = _import(raw, tmp_path / "out")
    assert result.exit_code == 0
    runs = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert runs == ["cpu_vllm_model-a_20261130-052815", "cpu_vllm_model-b_20261130-052815"]  # one run per model


def test_unwritable_output_is_one_line(tmp_path: Path, raw_dir: Path) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("a file where the output directory should go")
    result = _import(raw_dir, blocker / "runs", "--engine", "vllm")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == f"error: {blocker / 'runs'}: Not a directory; check the path and its permissions"
    assert "Traceback" not in result.output and blocker.read_text().startswith("a file")


def test_binary_last_line_is_not_called_truncated(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "sglang_0101_2_32_4.jsonl").write_bytes(b"\x00\xff\x10garbage")
    (raw / "sglang_0101_4_32_4.jsonl").write_text(json.dumps(sglang_run(max_concurrency=4))[:300])
    result = _import(raw, tmp_path / "out")
    lines = [line for line in result.output.splitlines() if line.startswith("skipped:")]
    assert "truncated" not in lines[0] and "truncated" in lines[1]
