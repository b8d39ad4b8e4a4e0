"""The clients of today: the module a host runs, the client fingerprint of every point, one acceptance
definition across engines, and the keys the newer clients write.

The raw files are built here with the keys the clients' own code writes (sglang 0.5.23
`sglang/benchmark/serving.py` and `rust_client.py`, vLLM 0.33 `vllm/benchmarks/serve.py`, as installed
under /opt/argv-check), not copied from them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from sskj_results.analysis.compare import CompareOptions, build_comparison
from sskj_results.analysis.rundata import load_run_data
from sskj_results.catalog.clients import ClientRequest, choose_module, client_command
from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Scenario
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.render.report import render_comparison
from sskj_results.run.client_info import write_client_info
from sskj_results.run.phase import client_module, client_probe

REPO = Path(__file__).resolve().parents[1]
ARGV_CHECK = Path("/opt/argv-check")


# ---------------------------------------------------------------- raw files, after the clients' sources


def _stats(run: dict[str, Any], metric: str, seconds: np.ndarray) -> None:
    run[f"mean_{metric}_ms"] = float(np.mean(seconds) * 1000)
    run[f"median_{metric}_ms"] = float(np.median(seconds) * 1000)
    run[f"std_{metric}_ms"] = float(np.std(seconds) * 1000)
    run[f"p99_{metric}_ms"] = float(np.percentile(seconds, 99) * 1000)


def sglang_line(n: int = 8, out_len: int = 4, rust: bool = False, **extra: Any) -> dict[str, Any]:
    """One line of `python -m sglang.benchmark.serving --output-file F --output-details` (`--rust-client`:
    the same keys, `protocol` added and `request_rate` the string "inf")."""
    rng = np.random.default_rng(n)
    ttfts = 0.05 + rng.random(n) * 0.01
    itls = [(0.01 + rng.random(out_len - 1) * 0.001).tolist() for _ in range(n)]
    e2e = ttfts + np.array([sum(i) for i in itls])
    run: dict[str, Any] = {
        "tag": None, "backend": "sglang", "dataset_name": "random-ids", "request_rate": "inf" if rust else float("inf"),
        "max_concurrency": 2, "sharegpt_output_len": None, "random_input_len": 32, "random_output_len": out_len,
        "random_range_ratio": 1.0, "server_info": None, "duration": 1.0, "completed": n,
        "total_input_tokens": 32 * n, "total_input_text_tokens": 32 * n, "total_input_vision_tokens": 0,
        "total_output_tokens": out_len * n, "total_output_tokens_retokenized": out_len * n,
        "request_throughput": float(n), "input_throughput": 32.0 * n, "output_throughput": float(out_len * n),
        "total_throughput": 36.0 * n, "concurrency": 1.9, "accept_length": None, "max_output_tokens_per_s": 40.0,
        "max_concurrent_requests": 2,
        "input_lens": [32] * n, "output_lens": [out_len] * n, "ttfts": ttfts.tolist(), "itls": itls,
        "generated_texts": ["x"] * n, "errors": [""] * n,
    }
    _stats(run, "ttft", ttfts)
    _stats(run, "e2e_latency", e2e)
    if rust:
        run["protocol"] = "http"
    run.update(extra)
    return run


def vllm_doc(n: int = 8, out_len: int = 4, rust: bool = False, spec: bool = False, **extra: Any) -> dict[str, Any]:
    """`vllm bench serve --save-result --save-detailed` (VLLM_USE_RUST_BENCH=1: an ISO date,
    max_model_len, input_throughput and steady_state added, no queue_times)."""
    rng = np.random.default_rng(n + 1)
    ttfts = 0.05 + rng.random(n) * 0.01
    itls = [(0.01 + rng.random(out_len - 1) * 0.001).tolist() for _ in range(n)]
    latencies = ttfts + np.array([sum(i) for i in itls])
    queue = rng.random(n) * 0.002
    run: dict[str, Any] = {
        "date": "2026-11-30T10:15:00" if rust else "20261130-101500", "endpoint_type": "vllm", "backend": "vllm",
        "label": None, "model_id": "m", "tokenizer_id": "m", "num_prompts": n, "request_rate": "inf",
        "burstiness": 1.0, "max_concurrency": 2, "duration": 1.0, "completed": n, "failed": 0,
        "total_input_tokens": 32 * n, "total_output_tokens": out_len * n, "request_throughput": float(n),
        "request_goodput": None, "output_throughput": float(out_len * n), "total_token_throughput": 36.0 * n,
        "input_lens": [32] * n, "output_lens": [out_len] * n, "ttfts": ttfts.tolist(), "itls": itls,
        "latencies": latencies.tolist(), "start_times": list(range(n)), "generated_texts": ["x"] * n,
        "errors": [""] * n, "max_output_tokens_per_s": 40.0, "max_concurrent_requests": 2, "rtfx": 0.0,
    }
    if not rust:
        run["queue_times"] = queue.tolist()
    _stats(run, "ttft", ttfts)
    _stats(run, "e2el", latencies)
    if spec:  # the client's /metrics change over its benchmark: 100 drafts of 3 tokens
        run.update(spec_decode_acceptance_rate=60.0, spec_decode_acceptance_length=2.8, spec_decode_num_drafts=100,
                   spec_decode_draft_tokens=300, spec_decode_accepted_tokens=180,
                   spec_decode_per_position_acceptance_rates=[0.9, 0.6, 0.3])
    if rust:
        run.update(max_model_len=4096, input_throughput=32.0 * n, steady_state={"duration": 0.8, "requests": n - 2})
    run.update(extra)
    return run


def write(path: Path, *runs: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return path


def imported(out: Path) -> dict[str, Scenario]:
    found = {}
    for run in sorted(p for p in out.iterdir() if p.is_dir()):
        for s in load_run(run).scenarios:
            assert s.source is not None
            found[Path(s.source.file).name] = s
    return found


# ---------------------------------------------------------------- 1. the module the host has


def test_the_catalog_spells_each_module_and_implementation():
    base = dict(python="py", backend="sglang", host="h", port=1, model="m", tokenizer="t", input_len=16,
                output_len=8, num_prompts=4, concurrency=2, out=Path("/r/raw.jsonl"))
    new = client_command(ClientRequest(client="sglang", module="sglang.benchmark.serving", **base))  # type: ignore[arg-type]
    assert new[:3] == ["py", "-m", "sglang.benchmark.serving"] and new[-2:] == ["--warmup-requests", "0"]
    old = client_command(ClientRequest(client="sglang", **base))  # type: ignore[arg-type]
    assert old[:3] == ["py", "-m", "sglang.bench_serving"] and old[3:] == new[3:]
    rust = client_command(ClientRequest(client="sglang", module="sglang.benchmark.serving", impl="rust",
                                        extra="--x", **base))  # type: ignore[arg-type]
    assert rust[-2:] == ["--rust-client", "--x"] and rust[:-2] == new
    vllm = client_command(ClientRequest(client="vllm", impl="rust", **base))  # type: ignore[arg-type]
    assert vllm[:7] == ["env", "VLLM_USE_RUST_BENCH=1", "py", "-m", "vllm.entrypoints.cli.main", "bench", "serve"]
    assert "--rust-client" not in vllm
    assert choose_module("sglang", {"sglang.benchmark.serving"}).module == "sglang.benchmark.serving"
    assert choose_module("sglang", set()).module == "sglang.bench_serving"
    assert choose_module("sglang", {"sglang.benchmark.serving"}, "sglang.bench_serving").module == "sglang.bench_serving"
    with pytest.raises(ValueError, match="CLIENT_MODULE 'vllm.x' is not a module of CLIENT=sglang "
                                         r"\(known: sglang.benchmark.serving, sglang.bench_serving\)"):
        choose_module("sglang", module="vllm.x")


def test_client_cmd_refuses_an_unknown_module_in_one_line(tmp_path):
    result = CliRunner().invoke(main, ["client-cmd", "--python", "py", "--backend", "sglang", "--port", "1",
                                       "--model", "m", "--tokenizer", "t", "--input-len", "1", "--output-len", "1",
                                       "--num-prompts", "1", "--concurrency", "1", "--out", str(tmp_path / "o.jsonl"),
                                       "--module", "sglang.nope"])
    assert result.exit_code == 1
    assert result.output == ("error: CLIENT_MODULE 'sglang.nope' is not a module of CLIENT=sglang "
                             "(known: sglang.benchmark.serving, sglang.bench_serving)\n")


def fake_sglang(root: Path, new: bool) -> Path:
    """A stand-in sglang package: the old module only, or the new one beside it (as 0.5.23 ships both)."""
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "sglang" / "bench_serving.py").write_text("")
    if new:
        (root / "sglang" / "benchmark").mkdir()
        (root / "sglang" / "benchmark" / "__init__.py").write_text("")
        (root / "sglang" / "benchmark" / "serving.py").write_text("")
    return root


@pytest.mark.parametrize("new, module", [(True, "sglang.benchmark.serving"), (False, "sglang.bench_serving")])
def test_the_probe_asks_the_client_python_once_which_module_it_has(tmp_path, monkeypatch, new, module):
    monkeypatch.setenv("PYTHONPATH", str(fake_sglang(tmp_path / "mods", new)))
    settings = {"CLIENT_PYTHON": sys.executable, "CLIENT": "sglang"}
    version, present = client_probe(settings)
    assert client_module(settings, present) == module
    assert client_module({**settings, "CLIENT_MODULE": "sglang.bench_serving"}, present) == "sglang.bench_serving"
    assert client_probe({"CLIENT_PYTHON": str(tmp_path / "missing")}) == (None, set())


# ---------------------------------------------------------------- 2./4. fingerprints and new keys on import


def test_import_reads_the_client_from_the_key_sets_and_the_declared_option(tmp_path):
    raw = tmp_path / "raw"
    write(raw / "sglang_1130_2_32_4.jsonl", sglang_line())
    write(raw / "sglangrs_1130_2_32_4.jsonl", sglang_line(rust=True))
    write(raw / "vllm_1130_2_32_4.json", vllm_doc())
    write(raw / "vllmrs_1130_2_32_4.json", vllm_doc(rust=True))
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "a"), "--chip", "cpu",
                                       "--engine", "vllm"])
    assert result.exit_code == 0, result.output
    got = {name: s.client for name, s in imported(tmp_path / "a").items()}
    assert {k: (c.implementation, c.implementation_source, c.source, c.module, c.seed) for k, c in got.items() if c} == {
        "sglang_1130_2_32_4.jsonl": (None, None, "file", None, None),  # the file cannot tell
        "sglangrs_1130_2_32_4.jsonl": ("rust", "file", "file", None, None),
        "vllm_1130_2_32_4.json": (None, None, "file", None, None),
        "vllmrs_1130_2_32_4.json": ("rust", "file", "file", None, None),
    }
    declared = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "b"), "--chip", "cpu",
                                         "--engine", "vllm", "--client-impl", "python"])
    assert declared.exit_code == 0, declared.output
    scenarios = imported(tmp_path / "b")
    assert scenarios["sglang_1130_2_32_4.jsonl"].client.implementation == "python"  # type: ignore[union-attr]
    assert scenarios["sglang_1130_2_32_4.jsonl"].client.implementation_source == "declared"  # type: ignore[union-attr]
    rs = scenarios["sglangrs_1130_2_32_4.jsonl"]
    assert rs.client.implementation == "rust"  # type: ignore[union-attr]
    assert ("--client-impl python given, but the run has keys only a Rust client writes "
            '(protocol, request_rate "inf" (a string)): recorded as rust') in rs.notes
    assert scenarios["vllmrs_1130_2_32_4.json"].client.implementation == "rust"  # type: ignore[union-attr]


def test_import_reads_queue_times_and_the_rust_extras(tmp_path):
    raw = tmp_path / "raw"
    doc = vllm_doc()
    write(raw / "vllm_1130_2_32_4.json", doc)
    write(raw / "vllmrs_1130_2_32_4.json", vllm_doc(rust=True))
    write(raw / "sglangrs_1130_2_32_4.jsonl", sglang_line(rust=True))
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "a"), "--chip", "cpu",
                                       "--engine", "vllm"])
    assert result.exit_code == 0, result.output
    found = imported(tmp_path / "a")
    queue = found["vllm_1130_2_32_4.json"].client_extras.client_queue_ms  # type: ignore[union-attr]
    q = np.array(doc["queue_times"])
    assert queue is not None and queue.count == 8
    assert queue.mean == pytest.approx(float(np.mean(q) * 1000)) and queue.p99 == pytest.approx(float(np.percentile(q, 99) * 1000))
    rs = found["vllmrs_1130_2_32_4.json"]
    assert rs.client_extras is not None and rs.client_extras.client_queue_ms is None
    assert (rs.client_extras.max_model_len, rs.client_extras.steady_state) == (4096, {"duration": 0.8, "requests": 6})
    assert rs.input_token_throughput == 256.0
    assert found["sglangrs_1130_2_32_4.jsonl"].client_extras.protocol == "http"  # type: ignore[union-attr]
    assert found["sglangrs_1130_2_32_4.jsonl"].request_rate is None  # "inf": unlimited


def test_the_newer_clients_free_json_is_kept_only_when_finite_and_free_of_secrets(tmp_path):
    raw = tmp_path / "raw"
    write(raw / "a_1130_2_32_4.json", vllm_doc(rust=True, steady_state={"url": "http://user:secret@host:1/x"}))
    write(raw / "b_1130_2_32_4.json", vllm_doc(rust=True, steady_state={"rate": "NaN", "ok": [1, 2]}))
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "a"), "--chip", "cpu",
                                       "--engine", "vllm"])
    assert result.exit_code == 0, result.output
    found = imported(tmp_path / "a")
    assert found["a_1130_2_32_4.json"].client_extras.steady_state is None  # type: ignore[union-attr]
    assert found["b_1130_2_32_4.json"].client_extras.steady_state == {"rate": "NaN", "ok": [1, 2]}  # type: ignore[union-attr]
    assert "secret" not in (tmp_path / "a").joinpath(*[p.name for p in (tmp_path / "a").iterdir() if p.is_dir()][:1],
                                                      "results.json").read_text()


# ---------------------------------------------------------------- 3. one acceptance definition


def test_acceptance_of_each_engine_with_its_source_weighting_and_draft_length(tmp_path):
    raw = tmp_path / "raw"
    write(raw / "vllm_1130_2_32_4.json", vllm_doc(spec=True))
    info = {"dp_size": 1, "speculative_num_draft_tokens": 4, "version": "0.5.23",
            "internal_states": [{"avg_spec_accept_length": 2.5}]}
    write(raw / "sglang_1130_2_32_4.jsonl", sglang_line(accept_length=2.5, server_info=info))
    write(raw / "sglangdp_1130_2_32_4.jsonl", sglang_line(accept_length=2.5, server_info={**info, "dp_size": 4}))
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp_path / "a"), "--chip", "cpu",
                                       "--engine", "vllm"])
    assert result.exit_code == 0, result.output
    found = imported(tmp_path / "a")
    v = found["vllm_1130_2_32_4.json"]
    assert v.accept_length == 2.8 and v.acceptance is not None
    assert (v.acceptance.source, v.acceptance.weighting, v.acceptance.scope, v.acceptance.draft_length,
            v.acceptance.per_position, v.acceptance.reliable) == ("client_counters", "token", "scenario", 3,
                                                                  [0.9, 0.6, 0.3], True)
    s = found["sglang_1130_2_32_4.jsonl"].acceptance
    assert s is not None and (s.length, s.source, s.scope, s.draft_length, s.reliable) == (
        2.5, "server_info_lifetime", "server_lifetime", 3, None)
    dp = found["sglangdp_1130_2_32_4.jsonl"].acceptance
    assert dp is not None and dp.reliable is False
    assert dp.note == "server lifetime average of the first of 4 data-parallel schedulers: not this scenario's engine"
    assert found["sglangdp_1130_2_32_4.jsonl"].accept_length == 2.5  # kept, marked


def _run_dir(root: Path, name: str) -> Path:
    run = root / name
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "sglang", "chip": "cpu", "run_id": name,
                         "client": "sglang.benchmark.serving"},
                   {"server_args": "python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE",
                    "spec_method": "eagle", "spec_tokens": "3"}, detect=False)
    (run / "raw_outputs").mkdir()
    return run


def test_parse_records_the_loops_fingerprint_and_corrects_sglangs_lifetime_acceptance(tmp_path):
    run = _run_dir(tmp_path, "r1")
    stem = "cpu_sglang_1130_2_32_4"
    info = {"dp_size": 1, "speculative_num_draft_tokens": 4, "internal_states": [{"avg_spec_accept_length": 2.5}]}
    write(run / "raw_outputs" / f"{stem}.jsonl", sglang_line(accept_length=2.5, server_info=info))
    write_client_info(run, stem, client="sglang", module="sglang.benchmark.serving", impl="python",
                      version="0.5.23", seed="1", warmup_requests="0")
    metrics = run / "server_metrics"
    metrics.mkdir()
    (metrics / f"{stem}.before.prom").write_text('sglang:generation_tokens_total{model_name="m"} 1000\n'
                                                 'sglang:spec_verify_calls_total{model_name="m"} 500\n')
    (metrics / f"{stem}.after.prom").write_text('sglang:generation_tokens_total{model_name="m"} 1096\n'
                                                'sglang:spec_verify_calls_total{model_name="m"} 540\n')
    parse_run_dir(run)
    (s,) = load_run(run).scenarios
    assert s.client is not None
    assert s.client.model_dump() == {
        "module": "sglang.benchmark.serving", "version": "0.5.23", "implementation": "python",
        "implementation_source": "command", "seed": 1, "seed_default": 42, "warmup_requests": 0,
        "warmup_policy": "respects_max_concurrency", "source": "run", "temperature": 0.0}
    assert s.accept_length == pytest.approx(96 / 40) and s.reconstructed["accept_length"] == "server_metrics"
    assert s.acceptance is not None
    assert (s.acceptance.source, s.acceptance.scope, s.acceptance.draft_length, s.acceptance.reliable) == (
        "server_metrics", "scenario", 3, True)
    assert ("the client's accept_length 2.5 is a server lifetime average; replaced by 2.4 from /metrics over the "
            "scenario") in s.notes


def test_a_run_without_the_loops_record_takes_module_and_version_from_its_metadata(tmp_path):
    run = _run_dir(tmp_path, "r1")
    write(run / "raw_outputs" / "cpu_sglang_1130_2_32_4.jsonl", sglang_line())
    parse_run_dir(run)
    (s,) = load_run(run).scenarios
    assert s.client is not None
    assert (s.client.module, s.client.seed_default, s.client.warmup_policy, s.client.implementation, s.client.source) == (
        "sglang.benchmark.serving", 42, "respects_max_concurrency", None, "file")


# ---------------------------------------------------------------- 2. compare across client implementations


def test_compare_of_a_python_client_run_against_a_rust_client_run_lists_the_difference(tmp_path):
    stem = "cpu_sglang_1130_2_32_4"
    for name, impl in (("py", "python"), ("rs", "rust")):
        run = _run_dir(tmp_path, name)
        write(run / "raw_outputs" / f"{stem}.jsonl", sglang_line(rust=impl == "rust"))
        write_client_info(run, stem, client="sglang", module="sglang.benchmark.serving", impl=impl, version="0.5.23",
                          seed="1", warmup_requests="0")
        parse_run_dir(run)
    runs = [load_run_data(tmp_path / "py"), load_run_data(tmp_path / "rs")]
    doc = build_comparison(runs, CompareOptions(plots=False))
    diffs = {d.setting: d for d in doc.config_differences}
    assert diffs["client implementation"].values == {"sglang (py)": "python", "sglang (rs)": "rust"}
    assert diffs["client implementation"].expected is False and doc.configurations_differ
    assert "client seed" not in diffs and "client module" not in diffs
    md = render_comparison(doc)
    assert ("⚠️ The runs were measured by different load clients: client implementation (`sglang (py)`: python, "
            "`sglang (rs)`: rust). The clients time requests differently") in md
    assert "| client implementation |" in md


# ---------------------------------------------------------------- the real parsers, both argv forms


@pytest.mark.slow  # starts the real SGLang and vLLM parsers in their venvs (about 90 s)
@pytest.mark.skipif(not (ARGV_CHECK / "sglang" / "bin" / "python").is_file(), reason="no /opt/argv-check venvs")
def test_the_real_parsers_accept_every_client_form(tmp_path):
    base = dict(python="python", host="127.0.0.1", port=30000, model="m", tokenizer="t", input_len=64,
                output_len=8, num_prompts=8, concurrency=2, out=tmp_path / "raw.jsonl")
    forms = [("sglang", "sglang.benchmark.serving", "python"), ("sglang", "sglang.bench_serving", "python"),
             ("sglang", "sglang.benchmark.serving", "rust"), ("vllm", None, "python")]
    lines = [subprocess.list2cmdline(client_command(ClientRequest(
        client=c, module=m, impl=i, backend="vllm" if c == "vllm" else "sglang", **base)))  # type: ignore[arg-type]
        for c, m, i in forms]
    commands = tmp_path / "commands.txt"
    commands.write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "check_engine_argv.py"), "--from-file",
                           str(commands)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 distinct command(s): 0 failing" in done.stdout
    for module in ("sglang.benchmark.serving", "sglang.bench_serving", "vllm.entrypoints.cli.main bench serve"):
        assert f"  OK   client python -m {module}" in done.stdout


@pytest.mark.slow  # starts the real SGLang and vLLM parsers in their venvs
@pytest.mark.skipif(not (ARGV_CHECK / "sglang" / "bin" / "python").is_file(), reason="no /opt/argv-check venvs")
def test_the_real_parsers_read_a_server_line_as_a_dry_run_prints_it(tmp_path):
    """A dry run prints the engine as the run starts it, in the background with its log: the argv check parses
    the engine's own words, not the shell's redirections and `&` after them."""
    from sskj_results.run.launch import server_cmd

    settings = {"MODEL_PATH": "/m", "TP": "2", "SERVER_HOST": "127.0.0.1", "PORT": "30000",
                "SGLANG_PYTHON": "/e/sg/python", "VLLM_PYTHON": "/e/vl/python", "LMDEPLOY_PYTHON": "/e/lm/python"}
    # LMDeploy's real parser too where --setup installed it (its row's spellings: --server-name, --quant-policy)
    names = ("sglang", "vllm", *(("lmdeploy",) if (ARGV_CHECK / "lmdeploy" / "bin" / "python").is_file() else ()))
    given = [("kv_cache_dtype", "fp8"), ("max_num_seqs", "64"), ("max_model_len", "4096")]
    lines = [f"setsid {subprocess.list2cmdline(server_cmd(name, 'server', [], settings, given))} "
             '>>"$SERVER_LOG" 2>&1 </dev/null & SERVER_PID=$!' for name in names]
    commands = tmp_path / "commands.txt"
    commands.write_text("\n".join(lines) + "\n")
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "check_engine_argv.py"), "--from-file",
                           str(commands)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and f"{len(names)} distinct command(s): 0 failing" in done.stdout, \
        done.stdout + done.stderr
