"""The engine table and the config read from a server command."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from sskj_results.catalog.engines import (DERIVED_KEYS, ENGINES, METRICS_FORMATS, MULTINODE_STYLES, SETTING_KEYS,
                                          Engine, alias_engine, config_from_server_args, docs_table, engine,
                                          engine_argv, python_keys, shell_row)
from sskj_results.run.launch import server_cmd
from sskj_results.contract.errors import ConfigError
from sskj_results.ingest.metadata import write_metadata


def test_engine_rows_by_name_and_prefix() -> None:
    assert engine("vllm-dspark2") is engine("vllm-dspark") and engine("sglang-x").name == "sglang"
    row = engine("vllm")
    assert shell_row("vllm").split()[:7] == [row.client_backends["sglang"], row.python_var, row.launch_module,
                                             row.reset_path or "-", str(int(bool(row.metrics))), row.health_path,
                                             ",".join(row.server_env) or "-"]
    with pytest.raises(ConfigError, match="unknown engine 'tgi'"):
        engine("tgi")


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_every_row_says_everything_an_engine_is(row: Engine) -> None:
    assert row.multinode in MULTINODE_STYLES and row.metrics in METRICS_FORMATS
    assert row.health_path.startswith("/") and (row.reset_path == "" or row.reset_path.startswith("/"))
    assert "{model}" in row.head and ("tp" in row.flags) == ("{tp}" in row.head)
    # speculative support or none: all three settings, or none of them (and no draft-token semantics)
    spec = {k for k in ("spec_method", "spec_tokens", "spec_model") if k in row.flags or k in row.file_keys}
    assert spec in (set(), {"spec_method", "spec_tokens", "spec_model"}) and row.speculative == bool(spec)
    assert row.speculative or not (row.spec_tokens_are_draft or row.spec_tokens_count_root or row.always_speculative)
    assert not (row.spec_tokens_are_draft and row.spec_tokens_count_root)
    # /metrics counters only where there is a /metrics sskj reads, with the flags that turn it on in the head
    assert row.metrics or not any(vars(row.counters).values())
    assert not row.metrics_flags or "{metrics}" in row.head
    assert row.host_flag.startswith("-") and row.port_flag.startswith("-")
    assert set(row.flags) | set(row.file_keys) <= set(SETTING_KEYS) and not set(row.flags) & set(row.file_keys)
    assert row.python_var in python_keys() and row.extra_args_var.endswith("_EXTRA_ARGS") and row.label
    # a Python engine: its interpreter's key and the packages whose version is its version; an engine that is
    # its own program (llama-server): its path's key, started by its name, no package
    assert (row.python_var.endswith("_PYTHON") and row.dists and row.launch_module) if not row.program else \
        (not row.launch_module and not row.dists and row.console_script[:1] == (row.program,))
    assert set(row.client_backends) == {"sglang", "vllm"}  # the CLIENT values (launch.run_settings)
    assert not row.file_keys or row.config_file_flags  # a setting in a config file names the option of the file
    assert alias_engine(row.name) == row.name and all(alias_engine(a) == row.name for a in row.aliases)
    if row.launch_module:
        assert engine_argv(["python", "-m", row.launch_module, *row.launch_args, "/m"])[1] == ["/m"]
    if row.console_script:
        assert engine_argv(["/env/bin/" + row.console_script[0], *row.console_script[1:], "/m"])[1] == ["/m"]


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_every_spelling_of_every_setting_is_read_back_in_both_forms(row: Engine) -> None:
    launch = ["/e/python", "-m", row.launch_module, *row.launch_args, "/m"] if row.launch_module else \
        [f"/e/bin/{row.program}", *row.launch_args, "/m"]
    values = {"tp": 8, "kv_cache_dtype": "fp8_e5m2", "max_num_seqs": 64, "max_model_len": 266240,
              "spec_method": "eagle", "spec_tokens": 3, "spec_model": "/d"}
    for key in DERIVED_KEYS:
        for flag in row.flags.get(key, ()):
            for words in ([flag, str(values[key])], [f"{flag}={values[key]}"]):
                cfg = config_from_server_args(shlex.join([*launch, *words, "--host", "h"]))
                assert cfg == {**dict.fromkeys(DERIVED_KEYS), key: values[key]}, (flag, words)
        for option, keys in row.json_options.items():  # a JSON option that carries settings (vLLM's spec config)
            if key in keys:
                cfg = config_from_server_args(shlex.join([*launch, option, json.dumps({keys[key]: values[key]})]))
                assert cfg[key] == values[key], option
    # a wrapper's own options are not read as the engine's, and a command without a launch point claims nothing
    flag = row.flags["max_num_seqs"][0]
    assert config_from_server_args(shlex.join(["srun", f"{flag}=3", *launch]))["max_num_seqs"] is None
    assert config_from_server_args(shlex.join(["/opt/fake_server.py", flag, "3"])) == {}


SETTINGS = [("tp", "8"), ("kv_cache_dtype", "fp8"), ("max_num_seqs", "64"), ("max_model_len", "266240"),
            ("spec_method", "dspark"), ("spec_tokens", "4")]


def engine_command(row: Engine, tmp_path: Path) -> str:
    """The command the one builder makes for ROW with SETTINGS (the config file, if any, under tmp_path)."""
    settings = {"MODEL_PATH": "/m", "TP": "8", "SERVER_HOST": "h", "PORT": "1",
                row.python_var: f"/e/bin/{row.program}" if row.program else "/e/python",
                "ENGINE_CONFIG_DIR": str(tmp_path)}
    given = [(k, v) for k, v in SETTINGS if k != "tp" and (k in row.flags or k in row.file_keys)]
    return shlex.join(server_cmd(row.name, "server", [], settings, given))


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
@pytest.mark.parametrize("wrapper", [
    "", "env VLLM_SERVER_DEV_MODE=1 CUDA_VISIBLE_DEVICES=0,1 ", "timeout --signal=TERM 3600 ",
    "docker exec --env SSKJ_SERVER_TAG=sskj-30000 -e A=1 c1 ", "srun --overlap --nodes=2 --ntasks=2 ",
    "env -u SLURM_MEM srun --nodes=1 timeout 60 docker exec c1 env X=1 ",
])
def test_config_is_read_back_from_the_engines_own_argv_inside_any_wrapper(row: Engine, wrapper: str,
                                                                          tmp_path: Path) -> None:
    cfg = config_from_server_args(wrapper + engine_command(row, tmp_path))
    # what the row has is read back in the workflow's terms; what it has not (no speculative decoding, no
    # KV-cache dtype) is unknown
    want = {k: (int(v) if v.isdigit() else row.spelled(k, v)) if k in row.flags or k in row.file_keys else None
            for k, v in SETTINGS}
    got = {k: cfg[k] for k in want}
    assert got == want and cfg["spec_model"] is None
    if row.file_keys:  # a setting that lives in the engine's config file is recorded as such
        assert cfg["engine_config_file"]["settings"] == sorted(k for k, _ in SETTINGS if k in row.file_keys)


def test_the_srun_line_of_a_multinode_run_names_no_engine() -> None:
    assert config_from_server_args("env -u SLURM_GRES srun --nodes=2 bash scripts/common/multinode_rank.sh e p a") == {}


def test_multinode_config_comes_from_rank0_and_hardware_says_nodes(tmp_path) -> None:
    srun = "env -u SLURM_GRES srun --overlap --nodes=2 bash /r/scripts/common/multinode_rank.sh /x dspark a:1"
    rank0 = engine_command(engine("vllm"), tmp_path) + " --nnodes 2 --node-rank 0"
    results = write_metadata(tmp_path / "p", {"experiment": "x", "model": "m", "nodes": "2", "gpus_per_node": "",
                                              "hardware": "8x NVIDIA H200 143GB"},
                             {"server_args": srun, "rank0_server_args": rank0}, detect=False)
    cfg = results.config.model_dump()
    assert (cfg["tp"], cfg["kv_cache_dtype"], cfg["max_num_seqs"], cfg["max_model_len"]) == (8, "fp8", 64, 266240)
    assert (cfg["spec_method"], cfg["spec_tokens"]) == ("dspark", 4)
    meta = results.metadata
    assert (meta.hardware, meta.nodes, meta.gpus_per_node) == ("2 nodes x 8x NVIDIA H200 143GB", 2, 8)
    again = write_metadata(tmp_path / "p", {"phase": "dspark"}, {}, detect=False).metadata
    assert again.hardware == "2 nodes x 8x NVIDIA H200 143GB"
    one = write_metadata(tmp_path / "q", {"experiment": "x", "model": "m", "hardware": "8x NVIDIA H200 143GB"},
                         {}, detect=False).metadata
    assert (one.hardware, one.nodes, one.gpus_per_node) == ("8x NVIDIA H200 143GB", None, None)


def test_unknown_command_claims_nothing() -> None:
    assert config_from_server_args("unbalanced 'quote") == {}


def test_metadata_config_follows_the_phase_command_over_experiment_variables(tmp_path) -> None:
    run = tmp_path / "phase1_sglang"
    row = engine("sglang")
    results = write_metadata(run, {"experiment": "x", "model": "m"},
                             {"tp": "8", "spec_tokens": "5", "kv_cache_dtype": "fp8",
                              "server_args": f"/e/python -m {row.launch_module} /m {row.flags['tp'][-1]} 4"},
                             detect=False)
    cfg = results.config.model_dump()
    assert cfg["tp"] == 4 and cfg["spec_tokens"] is None and cfg["kv_cache_dtype"] is None
    assert set(DERIVED_KEYS) <= set(cfg)


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_one_setting_in_each_engines_spelling(row: Engine) -> None:
    settings = [(k, v) for k, v in [("tp", "8"), ("kv_cache_dtype", "fp8"), ("max_num_seqs", "64"),
                                    ("max_model_len", "")] if k in row.flags or k in row.file_keys]
    want: list[str] = []
    for key, value in settings:
        if value and key not in row.file_keys:
            want += [row.flags[key][0], row.values.get(key, {}).get(value, value)]
    assert row.flags_for(settings) == want
    # a draft length or model without a speculative method says nothing, also to an engine without speculation
    assert row.flags_for([("spec_method", ""), ("spec_tokens", "5"), ("spec_model", "/d")]) == []
    if not row.speculative:  # a speculative setting given to an engine without one is refused by name
        with pytest.raises(ConfigError, match=f"engine {row.name} has no setting 'spec_method'"):
            row.flags_for([("spec_method", "eagle")])
    with pytest.raises(ConfigError, match="no setting 'block'"):
        row.flags_for([("block", "16")])


def test_the_docs_engine_table_is_the_rows() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "PLATFORMS.md").read_text()
    assert docs_table() in doc, "docs/PLATFORMS.md: replace its engine table with the output of " \
        "python -c 'from sskj_results.catalog.engines import docs_table; print(docs_table())'"


def test_client_commands() -> None:
    from pathlib import Path

    from sskj_results.catalog.clients import ClientRequest, client_command

    base = dict(python="py", backend="sglang", host="h", port=1, model="m", tokenizer="t", input_len=16,
                output_len=8, num_prompts=4, concurrency=2, out=Path("/r/raw.jsonl"), extra="--a b")
    sglang = client_command(ClientRequest(client="sglang", **base))  # type: ignore[arg-type]
    assert sglang[:3] == ["py", "-m", "sglang.bench_serving"] and sglang[-4:] == ["--warmup-requests", "0", "--a", "b"]
    assert "--output-file" in sglang and sglang[sglang.index("--dataset-name") + 1] == "random-ids"
    vllm = client_command(ClientRequest(client="vllm", warmup_requests="", **base))  # type: ignore[arg-type]
    assert vllm[2:5] == ["vllm.entrypoints.cli.main", "bench", "serve"]
    assert vllm[vllm.index("--result-dir") + 1] == "/r" and vllm[vllm.index("--result-filename") + 1] == "raw.jsonl"
    assert "--warmup-requests" not in vllm


def test_raw_files_name_their_engine_by_the_rows() -> None:
    from sskj_results.ingest.rawkeys import engine_of

    for row in ENGINES:
        for name in (row.name, *row.aliases):
            assert engine_of(f" {name.upper()} ") == row.name, name
    assert engine_of("openai") is None and engine_of("lmdeploy-chat") == "lmdeploy"  # generic; no row
