"""Like for like: what a comparison compares, every other difference, and the seed-002 header."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.analysis.rundata import natural_key
from sskj_results.cli import main
from sskj_results.analysis.compare import CompareOptions, build_comparison, display_names
from sskj_results.analysis.configdiff import compared_axes, parse_flags, speculative_flags
from sskj_results.catalog.engines import ENGINES, Engine
from sskj_results.contract.models import Config
from sskj_results.render.report import render_comparison
from sskj_results.analysis.rundata import run_data, run_labels

from .test_compare import RUNS, latencies, parse_seed_table, results, scenario, seed_runs


def _pair(config_a: dict, config_b: dict, engines: tuple[str, str] = ("sglang", "vllm"), **meta_b):
    a = results(engines[0], [scenario(2, 10, 10, ttft=latencies(30, 100, 1), tpot=latencies(30, 10, 2))])
    b = results(engines[1], [scenario(2, 10, 10, ttft=latencies(30, 100, 3), tpot=latencies(30, 10, 4))])
    a = a.model_copy(update={"config": Config(**config_a)})
    b = b.model_copy(update={"config": Config(**config_b),
                             "metadata": b.metadata.model_copy(update=meta_b)})
    return [run_data(a, "a"), run_data(b, "b")]


def test_parse_flags_groups_values_and_drops_the_launcher():
    flags = parse_flags("python -m vllm.entrypoints.openai.api_server --model /m --kv-cache-dtype=fp8 "
                        "--cuda-graph-sizes 1 2 4 --enforce-eager --speculative-config '{\"method\": \"ngram\"}' "
                        "--offset -1 -O3")
    assert flags == [("--model", ("/m",)), ("--kv-cache-dtype", ("fp8",)), ("--cuda-graph-sizes", ("1", "2", "4")),
                     ("--enforce-eager", ()), ("--speculative-config", ('{"method": "ngram"}',)),
                     ("--offset", ("-1",)), ("-O3", ())]


def test_speculative_flags_write_the_served_model_as_a_placeholder():
    command = ("vllm serve /data/models/DeepSeek-V4-Flash-DSpark --tensor-parallel-size 8 --spec-method dspark "
               "--spec-model /data/models/DeepSeek-V4-Flash-DSpark --spec-tokens 5 --port 30004")
    assert speculative_flags(command, "/data/models/DeepSeek-V4-Flash-DSpark") == \
        "--spec-method dspark --spec-model <model> --spec-tokens 5"
    assert speculative_flags("vllm serve /m --port 1", "/m") is None
    assert speculative_flags("sglang --speculative-algorithm EAGLE --speculative-num-steps 3 --tp 8", None) == \
        "--speculative-algorithm EAGLE --speculative-num-steps 3"


def test_different_kv_cache_dtypes_are_listed_and_mark_the_title():
    runs = _pair({"server_args": "python -m sglang.launch_server --model-path /m --tp 8 --port 30000", "tp": 8},
                 {"server_args": "vllm serve /m --tensor-parallel-size 8 --kv-cache-dtype fp8 --max-num-seqs 1024 "
                                 "--port 30001", "tp": 8, "kv_cache_dtype": "fp8", "max_num_seqs": 1024})
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert doc.compared == ["engine"]
    diffs = {d.setting: d for d in doc.config_differences}
    assert diffs["config.kv_cache_dtype"].values == {"sglang": None, "vllm": "fp8"}
    assert diffs["config.kv_cache_dtype"].expected is False
    assert diffs["config.max_num_seqs"].values == {"sglang": None, "vllm": 1024}
    assert diffs["engine"].expected is True
    # engines spell their flags differently: a flag difference is part of comparing engines
    assert diffs["server flags"].expected is True
    assert diffs["server flags"].values == {
        "sglang": "--tp 8", "vllm": "--kv-cache-dtype fp8 --max-num-seqs 1024 --tensor-parallel-size 8"}
    assert "config.tp" not in diffs  # the same in both runs
    assert doc.configurations_differ is True
    assert doc.title == "sglang vs vllm (8x NVIDIA H200 143GB) (configurations differ)"
    md = render_comparison(doc)
    assert md.startswith("# sglang vs vllm (8x NVIDIA H200 143GB) (configurations differ)\n")
    assert ("- The runs differ in more than engine: config.kv_cache_dtype, config.max_num_seqs; "
            "see Configuration differences.") in md
    section = md[md.index("## Configuration differences"):]
    assert "2 other setting(s) differ too (⚠️)" in section
    line = next(x for x in section.splitlines() if x.startswith("| config.kv_cache_dtype"))
    assert [c.strip() for c in line.strip("|").split("|")] == ["config.kv_cache_dtype", "-", "fp8", "⚠️ no"]


def test_metadata_differences_beyond_the_engine_are_listed():
    runs = _pair({"server_args": "s"}, {"server_args": "v"}, client_version="0.5.9", engine_version="0.11.0",
                 git_commit="abc")
    doc = build_comparison(runs, CompareOptions(plots=False))
    diffs = {d.setting: d for d in doc.config_differences}
    assert diffs["metadata.client_version"].values == {"sglang": None, "vllm": "0.5.9"}
    assert diffs["metadata.client_version"].expected is False
    assert diffs["metadata.engine_version"].expected is True  # the engine is what is compared
    assert diffs["metadata.git_commit"].expected is True and diffs["metadata.git_commit"].axis == "provenance"


def test_identical_configurations_are_like_for_like():
    runs = _pair({"server_args": "vllm serve /m --port 1", "tp": 8}, {"server_args": "vllm serve /m --port 2", "tp": 8},
                 engines=("vllm", "vllm"))
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert doc.compared == ["configuration"]
    assert doc.config_differences == [] and doc.configurations_differ is False
    assert "(configurations differ)" not in doc.title
    md = render_comparison(doc)
    assert "This comparison compares configuration. Every other recorded setting is the same in every run." in md


def test_the_port_is_never_a_configuration_difference():
    """A PORT=auto run beside a default one: the port says where the engine listened, not how it ran."""
    runs = _pair({"server_args": "vllm serve /m --port 18000", "tp": 8, "port": 18000},
                 {"server_args": "vllm serve /m --port 18003", "tp": 8, "port": 18003}, engines=("vllm", "vllm"))
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert doc.config_differences == [] and doc.configurations_differ is False
    assert "config.port" not in render_comparison(doc)


def test_a_configuration_comparison_expects_the_engine_settings_to_differ():
    runs = _pair({"server_args": "vllm serve /m --kv-cache-dtype auto", "kv_cache_dtype": "auto"},
                 {"server_args": "vllm serve /m --kv-cache-dtype fp8", "kv_cache_dtype": "fp8"},
                 engines=("vllm", "vllm"))
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert doc.compared == ["configuration"]
    assert {d.setting for d in doc.config_differences} == {"config.kv_cache_dtype", "server flags"}
    assert not doc.configurations_differ
    # ... but a different dataset is never what is compared
    runs[1].results.scenarios[0].dataset_name = "sharegpt"
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert {d.setting: d.expected for d in doc.config_differences}["dataset"] is False
    assert doc.configurations_differ


def test_axes_in_order():
    assert compared_axes(_pair({"spec_method": "ngram", "spec_tokens": 4}, {}, engines=("vllm", "vllm"))) == [
        "speculative decoding"]
    assert compared_axes(_pair({}, {}, chip="Kunlun P800")) == ["chip", "engine"]


def _seed_002_runs():
    """The seed-002 matrix as the workflow records it: DSpark is vLLM with `--spec-method dspark`."""
    runs = seed_runs()
    commands = {
        "sglang": "python -m sglang.launch_server --model-path /data/models/DeepSeek-V4-Flash --tp 8 --port 30000",
        "vllm": "vllm serve /data/models/DeepSeek-V4-Flash --tensor-parallel-size 8 --port 30001",
        "dspark": "vllm serve /data/models/DeepSeek-V4-Flash-DSpark --tensor-parallel-size 8 --spec-method dspark "
                  "--spec-model /data/models/DeepSeek-V4-Flash-DSpark --spec-tokens 5 --port 30004",
    }
    for run in runs:
        engine = run.engine
        spec = {"spec_method": "dspark", "spec_tokens": 5} if engine == "dspark" else {}
        run.results = run.results.model_copy(update={
            "config": Config(server_args=commands[engine], tp=8, **spec),
            "metadata": run.results.metadata.model_copy(update={"client": "sglang.bench_serving"}),
        })
    return runs


def test_seed_002_header_and_table():
    seed = (RUNS.parent / "seed002_table.md").read_text(encoding="utf-8").splitlines()
    runs = _seed_002_runs()
    assert display_names(runs, run_labels(runs)) == ["SGLang", "vLLM", "DSpark"]
    doc = build_comparison(runs, CompareOptions(plots=False, matrix="long-context matrix"))
    md = render_comparison(doc).splitlines()
    assert md[0] == "# SGLang vs vLLM vs DSpark long-context matrix (8x NVIDIA H200 143GB)"
    assert md[2:10] == [
        "## Summary",
        "",
        "- Model: `/data/models/DeepSeek-V4-Flash`",
        "- DSpark model: `/data/models/DeepSeek-V4-Flash-DSpark`",
        "- Hardware: 8x NVIDIA H200 143GB",
        "- Benchmark client: `sglang.bench_serving`",
        "- DSpark flags: `--spec-method dspark --spec-model <model> --spec-tokens 5`",
        "- SLO reference: TTFT P95 < 3000.0ms, TPOT mean < 50.0ms (S2)",
    ]
    start = md.index("## Side-by-side results") + 2
    # the 63 rows' cells, byte for byte, in report.md's reading order (c2 before c10), then the Accept len column a
    # table with a speculative run adds, the Valid column and the Draft bound column of a table with a row beyond
    # it (docs/COMPARE.md)
    table = md[start:start + 65]
    ordered = sorted(seed[2:], key=lambda line: natural_key(line.split(" | ")[0][2:]))
    assert [line.rsplit(" | ", 3)[0] + " |" for line in table[:1] + table[2:]] == seed[:1] + ordered
    assert table[0].endswith(" | SLO | Accept len | Valid | Draft bound |")
    assert table[1] == seed[1] + "---:|---|---|"
    accept = [line.rsplit(" | ", 3)[1] for line in table[2:]]
    # the seed's runs record no acceptance: DSpark's is unknown (never 0), the others are not speculative
    assert {(line.split(" | ")[1], a) for a, line in zip(accept, table[2:])} == {
        ("sglang", "-"), ("vllm", "-"), ("dspark", "unknown ✖")}
    # DSpark at c2_i131072_o256 is 7.08x faster than vLLM with 5 draft tokens: beyond 1 + 5, and no other row
    bound = {tuple(line.split(" | ")[:2]): line.rsplit(" | ", 1)[1] for line in table[2:]}
    assert {key: mark for key, mark in bound.items() if mark != "- |"} == {
        ("| c2_i131072_o256", "dspark"): "⚠ TPOT 7.08x vllm > 1 + 5 |"}
    assert all(line.rsplit(" | ", 2)[0].endswith(" | ") or line.rsplit(" | ", 3)[2].strip() == ""
               for line in table[2:])  # no validity recorded: blank, never ✔
    assert len(parse_seed_table()[1]) == 63
    assert doc.compared == ["engine", "speculative decoding"]
    assert not doc.configurations_differ  # the DSpark model belongs to the speculative variant
    assert {d.setting: d.axis for d in doc.config_differences}["model"] == "speculative decoding"


def test_the_engine_named_after_its_method_is_called_by_the_method():
    runs = _seed_002_runs()
    dspark = runs[2].results
    runs[2].results = dspark.model_copy(update={"metadata": dspark.metadata.model_copy(update={"engine": "vllm-dspark"})})
    assert display_names(runs, run_labels(runs)) == ["SGLang", "vLLM", "DSpark"]
    # spec_method not recorded: the server command's flags still say it is speculative
    runs[2].results.config.spec_method = None
    runs[2].results.config.spec_tokens = None
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert doc.title == "SGLang vs vLLM vs vLLM-DSpark (8x NVIDIA H200 143GB)"
    assert "- vLLM-DSpark flags: `--spec-method dspark --spec-model <model> --spec-tokens 5`" in render_comparison(doc)


def test_a_speculative_variant_of_another_model_is_not_like_for_like():
    runs = _seed_002_runs()
    runs[1].results.metadata.model = "/data/models/Other"
    doc = build_comparison(runs, CompareOptions(plots=False))
    assert doc.configurations_differ
    assert doc.title.endswith("(8x NVIDIA H200 143GB) (configurations differ)")
    assert display_names(runs, run_labels(runs)) == ["sglang", "vllm", "dspark"]  # not one model: labels


@pytest.fixture
def runs_dir(tmp_path, monkeypatch) -> Path:
    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    return tmp_path / "runs"


def test_cli_warns_and_comparison_json_carries_the_differences(runs_dir):
    data = json.loads((runs_dir / "vllm" / "results.json").read_text())
    data["config"]["kv_cache_dtype"] = "auto"
    (runs_dir / "vllm" / "results.json").write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "--out", "o", "--no-plots",
                                       "--title", "Custom"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "wrote o/comparison.md and o/comparison.json\n"
    assert result.stderr == ("warning: the runs differ in more than engine: config.kv_cache_dtype; "
                             "see Configuration differences in o/comparison.md\n")
    doc = json.loads((runs_dir / "o" / "comparison.json").read_text())
    assert doc["title"] == "Custom (configurations differ)"
    assert doc["configurations_differ"] is True and doc["compared"] == ["engine"]
    (kv,) = [d for d in doc["config_differences"] if d["setting"] == "config.kv_cache_dtype"]
    assert kv == {"setting": "config.kv_cache_dtype", "axis": "configuration", "expected": False,
                  "values": {"sglang": "fp8", "vllm": "auto"}}


def test_cli_matrix_name_goes_into_the_default_title(runs_dir):
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "vllm_ngram", "--out", "o", "--no-plots",
                                       "--matrix", "chat matrix"])
    assert result.exit_code == 0, result.output
    doc = json.loads((runs_dir / "o" / "comparison.json").read_text())
    assert doc["title"] == "SGLang vs vLLM vs vLLM + ngram chat matrix (8x NVIDIA H200 143GB)"


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_each_engines_flags_fall_where_configuration_differences_need_them(row: Engine) -> None:
    """Where a server listens and what its model is called is no difference, across chips the TP flags are the
    chip's setup, and a speculative flag is listed with the speculative settings: in each row's own spelling
    (LMDeploy's --server-port, TensorRT-LLM's --tp_size), read from the rows, not from a copy."""
    from sskj_results.analysis.configdiff import IGNORED_FLAGS, SPEC_FLAG, TP_FLAGS

    assert {row.host_flag, row.port_flag, *row.name_flags, *([row.model_flag] if row.model_flag else [])} \
        <= IGNORED_FLAGS
    assert set(row.flags.get("tp", ())) <= TP_FLAGS
    spec = {f for key in ("spec_method", "spec_tokens", "spec_model") for f in row.flags.get(key, ())}
    spec |= {option for option, keys in row.json_options.items() if set(keys) & {"spec_method", "spec_tokens"}}
    assert all(SPEC_FLAG.match(f) for f in spec), spec
    others = {f for key, flags in row.flags.items() if not key.startswith("spec_") for f in flags}
    assert not [f for f in others if SPEC_FLAG.match(f)]
