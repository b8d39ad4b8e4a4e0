"""The forms raw client outputs take in the wild, each built here by the test and imported as a user would.

Every imported value is checked against the file's own keys: lengths, concurrency or rate,
success/failed, every statistic (within 1e-6 relative), ❔ where a value was not measured.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Scenario
from sskj_results.analysis.rundata import run_data
from sskj_results.analysis.validate import validate_path

# the statistic keys of both clients, every spelling: <stat>_<metric>_ms
KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e_latency|e2el|latency)_ms$")
HOME = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e_latency": "e2e_ms", "e2el": "e2e_ms",
        "latency": "e2e_ms"}
FIELD = {"mean": "mean", "median": "p50", "std": "std", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99",
         "p99.9": "p99_9"}


def close(a: Optional[float], b: float) -> bool:
    return a is not None and abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)


def stat_of(scenario: Scenario, key: str) -> Optional[float]:
    m = KEY.match(key)
    assert m, key
    block = getattr(scenario.latencies, HOME[m.group(2)])
    field = FIELD.get(m.group(1))
    return getattr(block, field) if field else block.extra.get(m.group(1))


def assert_client_stats(scenario: Scenario, data: dict[str, Any]) -> int:
    """Every client statistic of the run lands in its home, unchanged, and is not called reconstructed."""
    checked = 0
    for key, value in data.items():
        if KEY.match(key) and isinstance(value, (int, float)):
            assert close(stat_of(scenario, key), value), (key, stat_of(scenario, key), value)
            checked += 1
    for key, attr in (("request_throughput", "request_throughput"), ("output_throughput", "output_token_throughput"),
                      ("total_token_throughput", "total_token_throughput"), ("duration", "duration_s")):
        if isinstance(data.get(key), (int, float)):
            assert close(getattr(scenario, attr), data[key]), key
            assert key not in scenario.reconstructed
            checked += 1
    return checked


def sample(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"ttft": 0.05 + rng.random(n) * 0.05, "tpot": 0.01 + rng.random(n) * 0.005,
            "e2e": 0.5 + rng.random(n) * 0.3, "itl": 0.01 + rng.random(4 * n) * 0.01}


def vllm_summary(n: int = 20, completed: Optional[int] = None, percentiles: tuple[float, ...] = (99,),
                 seed: int = 0, **extra: Any) -> dict[str, Any]:
    """`vllm bench serve --save-result` without --save-detailed: statistics only, no lengths."""
    done = n if completed is None else completed
    x = sample(max(done, 1), seed)
    run: dict[str, Any] = {
        "date": "20250312-101500", "endpoint_type": "openai", "backend": "vllm", "label": None,
        "model_id": "org/model-a", "tokenizer_id": "org/model-a", "num_prompts": n, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": 4, "duration": 12.5, "completed": done, "failed": n - done,
        "total_input_tokens": 1000 * done + 37, "total_output_tokens": 100 * done - 11,
        "request_throughput": done / 12.5, "request_goodput": None, "output_throughput": (100 * done - 11) / 12.5,
        "total_token_throughput": (1100 * done + 26) / 12.5,
    }
    for metric, values in (("ttft", x["ttft"]), ("tpot", x["tpot"]), ("itl", x["itl"]), ("e2el", x["e2e"])):
        run[f"mean_{metric}_ms"] = float(np.mean(values) * 1000)
        run[f"median_{metric}_ms"] = float(np.median(values) * 1000)
        run[f"std_{metric}_ms"] = float(np.std(values) * 1000)
        for p in percentiles:
            word = str(int(p)) if int(p) == p else str(p)
            run[f"p{word}_{metric}_ms"] = float(np.percentile(values, p) * 1000)
    run.update(extra)
    return run


def sglang_run(n: int = 8, out_len: int = 4, **extra: Any) -> dict[str, Any]:
    """One line of sglang.bench_serving --output-details."""
    rng = np.random.default_rng(n + out_len)
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
    run.update(extra)
    return run


def write(path: Path, *runs: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in runs) + "\n")
    return path


def run_import(raw: Path, out: Optional[Path], *extra: str) -> Any:
    args = ["import-legacy", str(raw)] + (["--out", str(out)] if out is not None else []) + list(extra)
    return CliRunner().invoke(main, args)


def imported(out: Path) -> list[Scenario]:
    found: list[Scenario] = []
    for run in sorted(p for p in out.iterdir() if p.is_dir()):
        found.extend(load_run(run).scenarios)
    return sorted(found, key=lambda s: (s.source.file, s.source.line))


# ---------------------------------------------------------------- 1. summary-only vllm bench serve


def test_summary_only_vllm_result_imports_with_lengths_from_the_options(tmp_path: Path) -> None:
    data = vllm_summary()
    write(tmp_path / "raw" / "bench.json", data)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--input-len", "1000", "--output-len", "100")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.input_len, s.output_len, s.concurrency) == (1000, 100, 4)
    assert (s.success, s.failed) == (20, 0)
    assert assert_client_stats(s, data) >= 20
    assert s.latencies.ttft_ms.count is None and s.latencies.e2e_ms.count is None  # no per-request data
    assert s.raw_requests == []
    # vllm's default percentiles are p99 only: TTFT P95 is not measured, so the verdict is unknown
    assert s.latencies.ttft_ms.p95 is None and s.slo_status.ttft_p95_ok is None and s.slo_status.overall == "❔"
    assert s.slo_status.tpot_mean_ok is True


def test_summary_only_lengths_from_the_runs_keys_then_the_name_then_the_averages(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "keyed.json", vllm_summary(random_input_len=512, random_output_len=64))
    write(raw / "vllm_0312_4_2048_256.json", vllm_summary(seed=1))
    write(raw / "plain.json", vllm_summary(seed=2, max_concurrency=8))
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    by_file = {Path(s.source.file).name: s for s in imported(tmp_path / "out")}
    assert (by_file["keyed.json"].input_len, by_file["keyed.json"].output_len) == (512, 64)
    named = by_file["vllm_0312_4_2048_256.json"]
    assert (named.input_len, named.output_len) == (2048, 256)
    assert "input length taken from the file name" in named.notes
    plain = by_file["plain.json"]
    data = vllm_summary(seed=2, max_concurrency=8)
    assert plain.input_len == round(data["total_input_tokens"] / data["completed"])
    assert plain.output_len == round(data["total_output_tokens"] / data["completed"])
    assert plain.reconstructed["input_len"] == "average" and plain.reconstructed["output_len"] == "average"
    assert any("average total_input_tokens / completed" in n for n in plain.notes)
    assert plain.name == f"c8_i{plain.input_len}_o{plain.output_len}"


def test_name_pattern_reads_other_naming_schemes(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    data = vllm_summary()
    del data["max_concurrency"]
    write(raw / "h200-run_conc16_in3000_out300.json", data)
    result = run_import(raw, tmp_path / "out", "--name-pattern", "{chip}-run_conc{concurrency}_in{input_len}_out{output_len}")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.concurrency, s.input_len, s.output_len) == (16, 3000, 300)
    assert load_run(next((tmp_path / "out").iterdir())).metadata.chip == "h200"
    bad = run_import(raw, tmp_path / "out2", "--name-pattern", "{chip}_{concurency}")
    assert bad.exit_code != 0 and "unknown placeholder {concurency}" in bad.output and "Traceback" not in bad.output


# ---------------------------------------------------------------- 2. partial per-request data


def test_lengths_kept_timing_dropped_imports_from_the_client_summary(tmp_path: Path) -> None:
    data = vllm_summary(n=6)
    data.update(input_lens=[1000, 1002, 998, 1000, 1001, 999], output_lens=[100, 100, 99, 100, 100, 0])
    write(tmp_path / "raw" / "fork.json", data)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.input_len, s.output_len) == (1000, 100)  # medians of the successful requests
    assert (s.success, s.failed) == (6, 0)
    assert assert_client_stats(s, data) >= 20
    assert any("per-request data incomplete (no ttfts, itls, errors)" in n for n in s.notes)
    assert s.latencies.ttft_ms.count is None and s.raw_requests == []
    assert s.empty_outputs == 1  # the lengths that are there are used


# ---------------------------------------------------------------- 3. all-failed runs


def test_all_failed_runs_are_skipped_with_the_real_reason(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    failed = sglang_run(n=5, errors=["Connection refused\ntraceback..."] * 5, completed=0)
    write(raw / "sglang_0101_2_32_4.jsonl", sglang_run(), failed)
    write(raw / "summary.json", vllm_summary(n=30, completed=0))
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 1
    assert "sglang_0101_2_32_4.jsonl:2: 0 of 5 requests succeeded; first error: Connection refused" in result.output
    assert "summary.json:1: 0 of 30 requests succeeded" in result.output
    assert "length" not in result.output.split("skipped:")[1]


# ---------------------------------------------------------------- 4. concurrency and rate


def test_max_concurrency_wins_and_failed_is_num_prompts_minus_completed(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    data = vllm_summary(n=50, completed=47, max_concurrency=16)
    del data["failed"]
    write(raw / "vllm_0312_64_1024_128.json", data)
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.concurrency, s.success, s.failed, s.num_prompts) == (16, 47, 3, 50)
    assert "file name says concurrency 64 but the client recorded 16" in result.output


def test_sglang_default_name_number_is_num_prompts_not_concurrency(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    seed = sglang_run(n=8)
    del seed["max_concurrency"]
    # the team's convention: the slot is the concurrency
    write(raw / "vllm_0707_32_32_4.jsonl", dict(seed, num_prompts=100))
    # sglang.bench_serving's default name: the slot is num_prompts; two request rates appended to one file
    rate4 = dict(seed, num_prompts=8, request_rate=4.0)
    rate8 = dict(seed, num_prompts=8, request_rate=8.0)
    write(raw / "sglang_0708_8_32_4.jsonl", rate4, rate8)
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    by_file: dict[str, list[Scenario]] = {}
    for s in imported(tmp_path / "out"):
        by_file.setdefault(Path(s.source.file).name, []).append(s)
    (team,) = by_file["vllm_0707_32_32_4.jsonl"]
    assert team.concurrency == 32 and team.request_rate is None
    open_loop = by_file["sglang_0708_8_32_4.jsonl"]
    assert [(s.concurrency, s.request_rate, s.name) for s in open_loop] == [(None, 4.0, "r4_i32_o4"), (None, 8.0, "r8_i32_o4")]
    assert any("not a concurrency" in n for n in open_loop[0].notes)


def test_open_loop_runs_compare_by_rate(tmp_path: Path) -> None:
    runs = []
    for engine in ("sglang", "vllm"):
        raw = tmp_path / f"raw_{engine}"
        base = sglang_run(n=8)
        del base["max_concurrency"]
        write(raw / f"{engine}_0708_8_32_4.jsonl", dict(base, num_prompts=8, request_rate=2.0),
              dict(base, num_prompts=8, request_rate=6.0))
        assert run_import(raw, tmp_path / f"out_{engine}", "--chip", "h200").exit_code == 0
        (run_dir,) = (tmp_path / f"out_{engine}").iterdir()
        assert all(r.valid for r in validate_path(run_dir))
        runs.append(run_data(load_run(run_dir), run_dir))
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert [(g.name, g.concurrency, len(g.rows)) for g in doc.scenarios] == [("r2_i32_o4", None, 2), ("r6_i32_o4", None, 2)]
    assert doc.unmatched == []


# ---------------------------------------------------------------- 5. every statistic in its home


@pytest.mark.parametrize("e2e", ["e2e_latency", "e2el", "latency"])
def test_every_client_statistic_lands_in_its_home(tmp_path: Path, e2e: str) -> None:
    data = vllm_summary(percentiles=(25, 50, 90, 95, 99, 99.9), random_input_len=128, random_output_len=16)
    for key in [k for k in data if k.endswith("_e2el_ms")]:
        data[key.replace("_e2el_ms", f"_{e2e}_ms")] = data.pop(key)
    write(tmp_path / "raw" / "r.json", data)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert assert_client_stats(s, data) >= 4 * 9
    assert s.latencies.ttft_ms.p99_9 == data["p99.9_ttft_ms"] and s.latencies.ttft_ms.extra["p25"] == data["p25_ttft_ms"]
    assert s.latencies.e2e_ms.p99_9 == data[f"p99.9_{e2e}_ms"]
    assert not any(path.startswith("latencies.") for path in s.reconstructed)
    assert s.slo_status.overall in ("✅", "⚠️", "❌")  # both measured: the seed-002 rule


def test_a_client_value_is_never_replaced_by_a_reconstruction(tmp_path: Path) -> None:
    data = sglang_run(n=12, p95_ttft_ms=12345.0)  # deliberately not what the arrays give
    write(tmp_path / "raw" / "sglang_0101_2_32_4.jsonl", data)
    assert run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200").exit_code == 0
    (s,) = imported(tmp_path / "out")
    assert s.latencies.ttft_ms.p95 == 12345.0 and "latencies.ttft_ms.p95" not in s.reconstructed
    ok = np.array(data["ttfts"])
    assert close(s.latencies.ttft_ms.p90, float(np.percentile(ok, 90) * 1000))
    assert s.reconstructed["latencies.ttft_ms.p90"] == "per_request" and s.latencies.ttft_ms.count == 12


# ---------------------------------------------------------------- 7. many models / chips / engines


def test_one_run_directory_per_engine_model_and_chip(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "nvidia_h200_sglang_0707_2_32_4.jsonl", sglang_run())
    write(raw / "kunlun_p800_sglang_0707_2_32_4.jsonl", sglang_run())
    write(raw / "bench_b.json", vllm_summary(model_id="org/model-b", random_input_len=1, random_output_len=1))
    write(raw / "bench_a.json", vllm_summary(random_input_len=1, random_output_len=1))
    write(raw / "mystery.json", vllm_summary(backend="openai-chat", random_input_len=1, random_output_len=1))
    result = run_import(raw, tmp_path / "out", "--chip", "nvidia_h200", "--hardware", "8x H200")
    assert result.exit_code == 0, result.output
    names = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "out").iterdir())
    assert names == ["kunlun_p800_sglang", "nvidia_h200_sglang", "nvidia_h200_unknown",
                     "nvidia_h200_vllm_model-a", "nvidia_h200_vllm_model-b"]
    assert "kunlun_p800_sglang_0707_2_32_4.jsonl: the file name says chip kunlun_p800" in result.output
    assert "mystery.json: not attributed to an engine" in result.output
    assert "kunlun_p800_sglang_0707_2_32_4.jsonl: not attributed to a model" in result.output
    kunlun = next(p for p in (tmp_path / "out").iterdir() if p.name.startswith("kunlun"))
    meta = load_run(kunlun).metadata
    assert meta.chip == "kunlun_p800" and meta.hardware is None  # the H200 hardware is not claimed for it


# ---------------------------------------------------------------- 8. honest counts


def test_zero_output_successes_are_counted_and_kept_out_of_our_statistics(tmp_path: Path) -> None:
    data = sglang_run(n=6)
    data["output_lens"][2] = 0
    data["itls"][2] = []
    data["ttfts"][2] = 9.0  # an outlier that must not enter our TTFT statistics
    write(tmp_path / "raw" / "sglang_0101_2_32_4.jsonl", data)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.success, s.failed, s.empty_outputs) == (6, 0, 1)
    ours = np.delete(np.array(data["ttfts"]), 2)
    assert close(s.latencies.ttft_ms.p95, float(np.percentile(ours, 95) * 1000))  # computed by us: without it
    assert s.latencies.ttft_ms.mean == data["mean_ttft_ms"]  # the client's value stays as written
    assert any("1 of 6 successful requests returned 0 output tokens" in n for n in s.notes)
    report = (next((tmp_path / "out").iterdir()) / "report.md").read_text()
    assert "### Successful requests with 0 output tokens" in report


# ---------------------------------------------------------------- 9. sweep directories


def test_sweep_directory_imports_each_run_once(tmp_path: Path) -> None:
    comb = tmp_path / "raw" / "20250101_120000" / "SERVE--BENCH-max_concurrency=4"
    runs = [vllm_summary(seed=i, max_concurrency=4, random_input_len=256, random_output_len=32, run_number=i,
                         max_num_seqs=64) for i in range(2)]
    for i, run in enumerate(runs):
        (comb.parent).mkdir(parents=True, exist_ok=True)
        write(comb / f"run={i}.json", json.dumps(run, indent=4))
    write(comb / "summary.json", json.dumps(runs, indent=4))
    write(comb / "warmup.json", json.dumps(dict(runs[0], run_number=-1), indent=4))
    write(comb / "run=2.failure.json", json.dumps({"run_number": 2, "error_type": "TimeoutError", "error": "server hung"}))
    dry = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "summary.json: sweep summary: repeats the run=N.json files" in dry.output
    assert "warmup.json: sweep warm-up run: not measured" in dry.output
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    assert "run=2.failure.json: not imported: benchmark failed (TimeoutError: server hung)" in result.output
    scenarios = imported(tmp_path / "out")
    assert [s.name for s in scenarios] == ["c4_i256_o32", "c4_i256_o32_r2"]
    for s, run in zip(scenarios, runs):
        assert_client_stats(s, run)


# ---------------------------------------------------------------- 10. vLLM's mean/median E2E swap


def _swapped(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["mean_e2el_ms"], data["median_e2el_ms"] = data["median_e2el_ms"], data["mean_e2el_ms"]
    return data


def test_e2e_mean_and_median_swap_is_corrected_by_date(tmp_path: Path) -> None:
    good = vllm_summary(random_input_len=8, random_output_len=8)
    write(tmp_path / "raw" / "old.json", _swapped(dict(good, date="20241001-090000")))
    write(tmp_path / "raw" / "new.json", dict(good, date="20250101-090000"))
    assert run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200").exit_code == 0
    new, old = sorted(imported(tmp_path / "out"), key=lambda s: s.source.file.endswith("old.json"))
    assert close(old.latencies.e2e_ms.mean, good["mean_e2el_ms"]) and close(old.latencies.e2e_ms.p50, good["median_e2el_ms"])
    assert old.reconstructed["latencies.e2e_ms.mean"] == "swapped_back"
    assert any("swapped back" in n for n in old.notes)
    assert close(new.latencies.e2e_ms.mean, good["mean_e2el_ms"]) and "latencies.e2e_ms.mean" not in new.reconstructed


def test_e2e_swap_is_decided_by_per_request_latencies_when_there(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lat = (0.5 + rng.exponential(0.3, 16)).tolist()
    base = vllm_summary(n=16, random_input_len=8, random_output_len=8, date="20240915-090000")
    base.update(mean_e2el_ms=float(np.mean(lat) * 1000), median_e2el_ms=float(np.median(lat) * 1000), latencies=lat,
                input_lens=[8] * 16, output_lens=[8] * 16, errors=[""] * 16)
    write(tmp_path / "raw" / "consistent.json", base)  # dated in the window, but the data say it is right
    write(tmp_path / "raw" / "swapped.json", _swapped(dict(base, date="20250601-090000")))
    assert run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200").exit_code == 0
    for s in imported(tmp_path / "out"):
        assert close(s.latencies.e2e_ms.mean, float(np.mean(lat) * 1000)), s.source.file
        assert close(s.latencies.e2e_ms.p50, float(np.median(lat) * 1000))
    swapped = next(s for s in imported(tmp_path / "out") if s.source.file.endswith("swapped.json"))
    assert any("inconsistent with the per-request latencies" in n for n in swapped.notes)


# ---------------------------------------------------------------- 11. dry run


def test_dry_run_says_per_file_and_line_what_would_happen_and_writes_nothing(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "sglang_0101_2_32_4.jsonl", sglang_run(), "{broken")
    write(raw / "bench.json", vllm_summary(request_rate=4.0, max_concurrency=None, random_input_len=64,
                                           random_output_len=8))
    result = run_import(raw, None, "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "import bench.json:1: engine vllm, model org/model-a, chip unknown, input 64, output 8, open loop at 4 req/s -> r4_i64_o8" in lines
    assert "import sglang_0101_2_32_4.jsonl:1: engine sglang, model unknown, chip unknown, input 32, output 4, concurrency 2 -> c2_i32_o4" in lines
    assert any(line.startswith("skip sglang_0101_2_32_4.jsonl:2:2: not valid JSON") for line in lines)
    assert not (tmp_path / "imported").exists() and sorted(p.name for p in raw.iterdir()) == ["bench.json", "sglang_0101_2_32_4.jsonl"]


# ---------------------------------------------------------------- import-legacy RAW_DIR as typed


def test_import_legacy_raw_dir_as_typed(tmp_path: Path) -> None:
    raw = tmp_path / "raw_outputs"
    write(raw / "sglang_0707_2_32_4.jsonl", sglang_run())
    write(raw / "vllm_0707_2_32_4.json", vllm_summary(random_input_len=32, random_output_len=4, max_concurrency=2))
    mtime = datetime(2026, 8, 1, 12, 0).timestamp()
    os.utime(raw / "sglang_0707_2_32_4.jsonl", (mtime, mtime))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["import-legacy", "raw_outputs/"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    out = tmp_path / "imported"
    assert f"output directory: {out}" in result.output
    assert result.output.count("no chip given") == 1
    runs = {p.name: p for p in out.iterdir()}
    assert sorted(runs) == ["unknown_sglang_0707", "unknown_vllm_20250312-101500"]
    sglang = load_run(runs["unknown_sglang_0707"])
    # the name's MMDD: a month and day, the year unknown (never the modification time's)
    assert (sglang.metadata.timestamp, sglang.metadata.timestamp_precision) == ("--07-07", "month-day")
    assert sglang.scenarios[0].timestamp == sglang.metadata.timestamp
    vllm = load_run(runs["unknown_vllm_20250312-101500"])
    assert vllm.metadata.timestamp.startswith("2025-03-12T10:15:00")  # the client's date key
    assert vllm.metadata.imported_at is not None and vllm.metadata.imported_at != vllm.metadata.timestamp
    assert vllm.metadata.imported_from == str(raw.resolve())
    report = validate_path(runs["unknown_vllm_20250312-101500"])[0]
    assert report.valid and any("--chip" in p.message and p.severity == "warning" for p in report.problems)
    # idempotent: the same run directories, replaced, nothing added
    again = run_import(raw, out)
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in out.iterdir()) == sorted(runs)
    assert again.output.count("replaced ") == 2
    # an older run added to RAW_DIR: the group's directory takes the new time, the old one goes
    write(raw / "sglang_0601_2_32_4.jsonl", sglang_run())
    os.utime(raw / "sglang_0601_2_32_4.jsonl", (mtime, mtime))
    assert run_import(raw, out).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["unknown_sglang_0601", "unknown_vllm_20250312-101500"]
    # never inside RAW_DIR
    inside = run_import(raw, raw / "imported")
    assert inside.exit_code != 0 and "is inside RAW_DIR" in inside.output and not (raw / "imported").exists()
    # the command the warning gives sets it
    set_chip = CliRunner().invoke(main, ["metadata", str(runs["unknown_vllm_20250312-101500"]), "--chip", "nvidia_h200",
                                         "--hardware", "8x NVIDIA H200", "--no-detect"])
    assert set_chip.exit_code == 0, set_chip.output
    assert load_run(runs["unknown_vllm_20250312-101500"]).metadata.chip == "nvidia_h200"
    assert not any("--chip" in p.message for p in validate_path(runs["unknown_vllm_20250312-101500"])[0].problems)


def test_e2e_swap_without_latencies_or_date_is_decided_by_the_streamed_data(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 24
    outs = rng.integers(2, 200, n)
    ttfts = (0.05 + rng.random(n) * 0.01).tolist()
    itls = [(0.02 + rng.random(int(k) - 1) * 0.002).tolist() for k in outs]
    e2e = np.array(ttfts) + np.array([sum(g) for g in itls])
    old = {"backend": "vllm", "model_id": "m", "num_prompts": n, "request_rate": "inf", "duration": 9.0,
           "completed": n, "total_input_tokens": 64 * n, "total_output_tokens": int(outs.sum()),
           "request_throughput": n / 9.0, "output_throughput": outs.sum() / 9.0,
           "mean_e2el_ms": float(np.median(e2e) * 1000), "median_e2el_ms": float(np.mean(e2e) * 1000),
           "input_lens": [64] * n, "output_lens": outs.tolist(), "ttfts": ttfts, "itls": itls, "errors": [""] * n}
    write(tmp_path / "raw" / "old.json", old)
    write(tmp_path / "raw" / "fine.json", _swapped(old))
    write(tmp_path / "raw" / "p50.json", dict(_swapped(old), date=None, p50_e2el_ms=old["mean_e2el_ms"],
                                              mean_e2el_ms=old["mean_e2el_ms"], median_e2el_ms=old["median_e2el_ms"]))
    assert run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--input-len", "64",
                      "--output-len", "100").exit_code == 0
    for s in imported(tmp_path / "out"):
        assert close(s.latencies.e2e_ms.mean, float(np.mean(e2e) * 1000)), s.source.file
        assert close(s.latencies.e2e_ms.p50, float(np.median(e2e) * 1000)), s.source.file
    notes = {Path(s.source.file).name: " ".join(s.notes) for s in imported(tmp_path / "out")}
    assert "ttft + sum of itls" in notes["old.json"] and "swapped back" not in notes["fine.json"]
    assert "its own p50_e2el_ms equals mean_e2el_ms" in notes["p50.json"]


def test_fork_spellings_nested_details_and_counts(tmp_path: Path) -> None:
    base = sglang_run(n=6)
    arrays = {k: base.pop(k) for k in ("input_lens", "output_lens", "ttfts", "itls", "errors", "generated_texts")}
    base.update(details=arrays, p50_tbt_ms=11.5, percentile_ttft_95_ms=55.5, benchmark_duration=2.0,
                successful_requests=base.pop("completed"), failed_requests=0, model="org/m")
    base.pop("duration")
    write(tmp_path / "raw" / "fork.jsonl", base)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.success, s.failed, s.duration_s) == (6, 0, 2.0)
    assert s.latencies.itl_ms.p50 == 11.5 and s.latencies.ttft_ms.p95 == 55.5
    assert len(s.raw_requests) == 6 and s.latencies.ttft_ms.count == 6  # the nested arrays are used
    assert load_run(next((tmp_path / "out").iterdir())).metadata.model == "org/m"


def test_free_form_names_with_tagged_tokens(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    old = vllm_summary(n=320, date="20240410-100000")
    for key in ("max_concurrency", "burstiness", "endpoint_type", "failed"):
        old.pop(key)
    old["request_inthroughput"] = old.pop("request_throughput")  # early-2024 vLLM spelling
    write(raw / "results_concurrency32_numprompt320_in2048_out256.json", old)
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.concurrency, s.input_len, s.output_len, s.success) == (32, 2048, 256, 320)
    assert close(s.request_throughput, old["request_inthroughput"]) and "request_throughput" not in s.reconstructed


def test_slo_search_treats_an_unmeasured_probe_as_unknown(tmp_path: Path) -> None:
    from sskj_results.analysis.slo_search import decide

    raw = tmp_path / "raw"
    write(raw / "vllm_0101_1_128_16.json", vllm_summary(max_concurrency=1, random_input_len=128, random_output_len=16,
                                                        percentiles=(95, 99), seed=1))
    write(raw / "vllm_0101_2_128_16.json", vllm_summary(max_concurrency=2, random_input_len=128, random_output_len=16,
                                                        seed=2))  # p99 only: TTFT P95 unknown
    assert run_import(raw, tmp_path / "out", "--chip", "h200").exit_code == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    results = load_run(run_dir)
    assert [s.slo_status.overall for s in results.scenarios] == ["✅", "❔"]
    decision = decide(results, 128, 16, 1, 8)
    assert decision.next_concurrency is None  # it cannot go past the unknown probe
    assert not decision.search.finished and decision.search.best_concurrency == 1
    assert [(step.concurrency, step.ok) for step in decision.search.steps] == [(1, True), (2, None)]


def test_request_format_in_the_default_name_is_read_as_its_engine(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    run = sglang_run(n=8, backend="sglang-oai")
    del run["max_concurrency"]
    write(raw / "sglang-oai_0708_8_32_4.jsonl", dict(run, num_prompts=8))
    write(raw / "vllm-dspark_0708_4_32_4.jsonl", sglang_run(n=8, max_concurrency=4))  # an engine name stays as it is
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    assert sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "out").iterdir()) == ["nvidia_h200_sglang", "nvidia_h200_vllm-dspark"]
    (s,) = load_run(next(p for p in (tmp_path / "out").iterdir() if "_sglang_" in p.name)).scenarios
    assert (s.concurrency, s.request_format) == (8, "sglang-oai")  # 8 prompts at once, the slot was num_prompts


def test_only_a_known_chip_in_a_file_name_overrides_the_given_chip(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    write(raw / "dsv4_sglang_0707_2_32_4.jsonl", sglang_run())  # `dsv4` is no chip
    write(raw / "h20_sglang_0707_2_32_4.jsonl", sglang_run())
    result = run_import(raw, tmp_path / "out", "--chip", "nvidia_h200")
    assert result.exit_code == 0, result.output
    assert sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "out").iterdir()) == ["h20_sglang", "nvidia_h200_sglang"]
    assert "h20_sglang_0707_2_32_4.jsonl: the file name says chip h20" in result.output
    assert "chip dsv4" not in result.output


# ---------------------------------------------------------------- a file that is one JSON array of runs


@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_array_of_runs_imports_each_element_as_a_run(tmp_path: Path, indent: Optional[int]) -> None:
    runs = [vllm_summary(seed=i, max_concurrency=2 ** i, random_input_len=64, random_output_len=8) for i in range(3)]
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "runs.json").write_text(json.dumps(runs, indent=indent) + "\n")
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    scenarios = sorted(imported(tmp_path / "out"), key=lambda s: s.source.index)
    assert [s.source.index for s in scenarios] == [0, 1, 2]
    assert [s.concurrency for s in scenarios] == [1, 2, 4]
    for s, run in zip(scenarios, runs):
        assert (s.input_len, s.output_len, s.success, s.failed) == (64, 8, run["completed"], run["failed"])
        assert assert_client_stats(s, run) >= 20
    lines = [s.source.line for s in scenarios]
    if indent is None:
        assert lines == [1, 1, 1]
    else:  # each element's own first line
        assert lines[0] == 2 and lines[0] < lines[1] < lines[2]


def test_a_bad_or_damaged_array_element_costs_that_element_only(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    good = vllm_summary(random_input_len=64, random_output_len=8)
    bad = dict(good, max_concurrency="two")
    write(raw / "mixed.json", json.dumps([good, bad, 7]))
    text = json.dumps([good, dict(good, max_concurrency=8)])
    write(raw / "cut.json", text[: len(text) - 200])  # the client was killed mid-write
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 1
    assert "mixed.json:1: [1]: max_concurrency: expected a number, got 'two'" in result.output
    assert "mixed.json:1: [2]: expected a JSON object (one run), got int" in result.output
    assert re.search(r"cut\.json:1: \[1\]: not valid JSON \(.*\); the file looks truncated", result.output), result.output
    names = sorted(Path(s.source.file).name for s in imported(tmp_path / "out"))
    assert names == ["cut.json", "mixed.json"]  # the complete element of each file
    assert "Traceback" not in result.output
    dry = run_import(raw, None, "--dry-run", "--chip", "h200")
    assert "import mixed.json:1[0]: engine vllm" in dry.output


# ---------------------------------------------------------------- the chip a run records


def test_the_chip_a_run_records_is_used_and_never_guessed(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shape = {"random_input_len": 64, "random_output_len": 8}
    write(raw / "meta_gpu.json", vllm_summary(gpu="4xNVIDIA_L40S", **shape))  # vllm --metadata gpu=4xNVIDIA_L40S
    write(raw / "nested.json", vllm_summary(seed=1, metadata={"gpu_type": "NVIDIA H200 141GB HBM3e"}, **shape))
    write(raw / "device_kind.json", vllm_summary(seed=2, device="cuda", **shape))  # a kind of device, not a chip
    write(raw / "kunlun_p800_vllm_0312_4_64_8.json", vllm_summary(seed=3, hardware="8x NVIDIA H20", **shape))
    result = run_import(raw, tmp_path / "out", "--chip", "h20")
    assert result.exit_code == 0, result.output
    runs = {load_run(p).metadata.chip: load_run(p) for p in (tmp_path / "out").iterdir()}
    # --chip h20 is the catalog's nvidia_h20: the run without a chip joins the one that records H20
    assert sorted(runs) == ["nvidia_h20", "nvidia_h200", "nvidia_l40s"]
    assert runs["nvidia_l40s"].metadata.hardware == "4xNVIDIA_L40S"
    (s,) = runs["nvidia_l40s"].scenarios
    assert "chip nvidia_l40s from the run's own `gpu` key ('4xNVIDIA_L40S')" in s.notes
    assert any("`metadata.gpu_type`" in n for n in runs["nvidia_h200"].scenarios[0].notes)
    assert sorted(Path(x.source.file).name for x in runs["nvidia_h20"].scenarios) == [
        "device_kind.json", "kunlun_p800_vllm_0312_4_64_8.json"]  # the given chip, and the one the run records
    # the run's own record wins over the file name's chip prefix, and says so
    assert "records chip nvidia_h20 (`hardware`: '8x NVIDIA H20') but the file name says kunlun_p800" in result.output
    assert "the given chip is nvidia_h20; imported under nvidia_l40s" in result.output


# ---------------------------------------------------------------- early-2024 vLLM and other spellings


def early_2024_vllm(n: int = 100, completed: int = 98) -> dict[str, Any]:
    """benchmarks/benchmark_serving.py --save-result, early 2024: `request_inthroughput`, p99 only, no ITL/E2E."""
    x = sample(completed, 7)
    run: dict[str, Any] = {
        "date": "20240301-101010", "backend": "vllm", "version": "N/A", "model_id": "org/old", "tokenizer_id": "org/old",
        "best_of": 1, "use_beam_search": False, "num_prompts": n, "request_rate": "inf", "duration": 20.0,
        "completed": completed, "total_input_tokens": 512 * completed + 3, "total_output_tokens": 128 * completed - 5,
        "request_inthroughput": completed / 20.0, "input_throughput": (512 * completed + 3) / 20.0,
        "output_throughput": (128 * completed - 5) / 20.0,
    }
    for metric in ("ttft", "tpot"):
        run[f"mean_{metric}_ms"] = float(np.mean(x[metric]) * 1000)
        run[f"median_{metric}_ms"] = float(np.median(x[metric]) * 1000)
        run[f"p99_{metric}_ms"] = float(np.percentile(x[metric], 99) * 1000)
    return run


def test_early_2024_vllm_result_imports(tmp_path: Path) -> None:
    data = early_2024_vllm()
    write(tmp_path / "raw" / "vllm-infqps-old-20240301-101010.json", json.dumps(data, indent=4))
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.success, s.failed, s.num_prompts) == (98, 2, 100)
    assert s.concurrency == 100 and s.request_rate is None  # unlimited rate, no cap: all at once
    assert (s.input_len, s.output_len) == (round(data["total_input_tokens"] / 98), round(data["total_output_tokens"] / 98))
    assert s.reconstructed["input_len"] == "average"
    assert assert_client_stats(s, data) >= 7
    assert close(s.request_throughput, data["request_inthroughput"]) and close(s.input_token_throughput, data["input_throughput"])
    assert s.latencies.e2e_ms.mean is None and s.latencies.itl_ms.mean is None  # not measured: null, not 0
    assert s.timestamp is not None and s.timestamp.startswith("2024-03-01T10:10:10")
    assert s.slo_status.overall == "❔"  # no TTFT P95 in the file


def test_unitless_seconds_and_reordered_statistic_keys(tmp_path: Path) -> None:
    n = 10
    x = sample(n, 11)
    run: dict[str, Any] = {
        "backend": "vllm", "model_id": "m", "num_prompts": n, "request_rate": 2.0, "max_concurrency": 4,
        "burstiness": 0.5, "request_goodput:": 1.5, "percentile_metrics": "ttft,tpot,itl,e2el",
        "metric_percentiles": "25,75,99.9", "duration": 5.0, "completed": n, "total_input_tokens": 640,
        "total_output_tokens": 80, "request_throughput": n / 5.0, "output_throughput": 16.0,
        # unitless, as forks and parsers of the printed "(ms)" table write them
        "mean_ttft": float(np.mean(x["ttft"]) * 1000), "median_ttft": float(np.median(x["ttft"]) * 1000),
        "p75_ttft": float(np.percentile(x["ttft"], 75) * 1000),
        "median_request_latency": float(np.median(x["e2e"]) * 1000),
        "p90_request_latency": float(np.percentile(x["e2e"], 90) * 1000),
        # seconds, and <metric>_<stat> order
        "tpot_mean_s": float(np.mean(x["tpot"])), "itl_p95_ms": float(np.percentile(x["itl"], 95) * 1000),
        "p999_itl_ms": 99.0,
    }
    write(tmp_path / "raw" / "fork.json", run)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200", "--input-len", "64", "--output-len", "8")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    lat = s.latencies
    assert close(lat.ttft_ms.mean, run["mean_ttft"]) and close(lat.ttft_ms.p50, run["median_ttft"])
    assert close(lat.ttft_ms.extra["p75"], run["p75_ttft"])
    assert close(lat.e2e_ms.p50, run["median_request_latency"]) and close(lat.e2e_ms.p90, run["p90_request_latency"])
    assert close(lat.tpot_ms.mean, run["tpot_mean_s"] * 1000) and close(lat.itl_ms.p95, run["itl_p95_ms"])
    assert lat.itl_ms.extra["p999"] == 99.0
    assert (s.concurrency, s.request_rate, s.success, s.failed) == (4, 2.0, n, 0)
    assert any("read as milliseconds" in note and "mean_ttft" in note for note in s.notes)
    assert any("converted to milliseconds" in note for note in s.notes)
    assert any("request goodput: 1.5 req/s" in note for note in s.notes)
    assert any("burstiness 0.5" in note for note in s.notes)


def test_fork_count_and_duration_spellings(tmp_path: Path) -> None:
    data = vllm_summary(n=40, completed=37, random_input_len=64, random_output_len=8)
    for old, new in (("completed", "completed_requests"), ("num_prompts", "total_requests"), ("duration", "benchmark_duration")):
        data[new] = data.pop(old)
    del data["failed"]
    write(tmp_path / "raw" / "f.json", data)
    result = run_import(tmp_path / "raw", tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    (s,) = imported(tmp_path / "out")
    assert (s.success, s.failed, s.num_prompts, s.duration_s) == (37, 3, 40, data["benchmark_duration"])


def test_parse_sets_the_scenario_time_from_the_runs_date(tmp_path: Path) -> None:
    from sskj_results.ingest.parse_run import parse_run_dir
    from sskj_results.ingest.metadata import write_metadata

    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    write(run / "raw_outputs" / "cpu_vllm_0312_4_64_8.json", vllm_summary(random_input_len=64, random_output_len=8))
    (s,) = parse_run_dir(run).results.scenarios
    assert s.timestamp is not None
    assert datetime.fromisoformat(s.timestamp).replace(tzinfo=None) == datetime(2025, 3, 12, 10, 15)


def test_the_runs_time_from_other_time_keys(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shape = {"random_input_len": 64, "random_output_len": 8}
    base = vllm_summary(**shape)
    del base["date"]
    epoch = datetime(2024, 9, 20, 8, 30).timestamp()
    write(raw / "epoch.json", _swapped(dict(base, timestamp=epoch)))  # an aware time inside the E2E swap window
    write(raw / "iso.json", dict(base, started_at="2025-02-03T04:05:06+00:00"))
    write(raw / "small.json", dict(base, start_time=12.5))  # a perf-counter value, not a time
    result = run_import(raw, tmp_path / "out", "--chip", "h200")
    assert result.exit_code == 0, result.output
    by_file = {Path(s.source.file).name: s for s in imported(tmp_path / "out")}
    assert datetime.fromisoformat(by_file["epoch.json"].timestamp).timestamp() == epoch
    assert close(by_file["epoch.json"].latencies.e2e_ms.mean, base["mean_e2el_ms"])  # swapped back by its date
    assert datetime.fromisoformat(by_file["iso.json"].timestamp) == datetime.fromisoformat("2025-02-03T04:05:06+00:00")
    assert any("modification time" in n for n in by_file["small.json"].notes)
