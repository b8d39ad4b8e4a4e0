"""The engine table and the config read from a server command."""

from __future__ import annotations

import pytest

from sskj_results.catalog.engines import DERIVED_KEYS, config_from_server_args, engine, shell_row
from sskj_results.contract.errors import ConfigError
from sskj_results.ingest.metadata import write_metadata


def test_engine_rows_by_name_and_prefix() -> None:
    assert engine("vllm-cpu").python_var == "VLLM_PYTHON"
    assert engine("vllm-dspark").python_var == "DSPARK_PYTHON"
    assert engine("sglang").reset_path == "/flush_cache" and engine("sglang").metrics
    assert engine("sglang").metrics_flags == ("--enable-metrics",) and engine("vllm").metrics_flags == ()
    assert shell_row("vllm").split()[:7] == ["vllm", "VLLM_PYTHON", "vllm.entrypoints.cli.main",
                                             "/reset_prefix_cache", "1", "/health", "VLLM_SERVER_DEV_MODE=1"]
    with pytest.raises(ConfigError, match="unknown engine 'tgi'"):
        engine("tgi")


def test_sglang_command_gives_only_what_it_sets() -> None:
    cfg = config_from_server_args(
        "/e/python -m sglang.launch_server --model-path /m --tp 8 --trust-remote-code --context-length 266240 "
        "--kv-cache-dtype=fp8_e5m2 --max-running-requests 64 --host 127.0.0.1 --port 30000")
    assert cfg == {"tp": 8, "kv_cache_dtype": "fp8_e5m2", "max_num_seqs": 64, "max_model_len": 266240,
                   "spec_method": None, "spec_tokens": None, "spec_model": None}


def test_vllm_dspark_and_ngram_speculative_settings() -> None:
    dspark = config_from_server_args(
        "env VLLM_SERVER_DEV_MODE=1 /e/python -m vllm.entrypoints.cli.main serve /m "
        "--tensor-parallel-size 8 --spec-method dspark --spec-model /d --spec-tokens 3 --max-model-len auto")
    assert (dspark["tp"], dspark["spec_method"], dspark["spec_tokens"], dspark["spec_model"]) == (8, "dspark", 3, "/d")
    assert dspark["max_model_len"] == "auto" and dspark["kv_cache_dtype"] is None
    ngram = config_from_server_args(
        "/e/python -m vllm.entrypoints.openai.api_server --model /m --speculative-config "
        "'{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_max\":4}'")
    assert (ngram["spec_method"], ngram["spec_tokens"], ngram["tp"]) == ("ngram", 3, None)


ENGINE_ARGV = {
    "sglang": ("/e/python -m sglang.launch_server --model-path /m --tp-size 8 --kv-cache-dtype fp8_e4m3 "
               "--max-running-requests 64 --context-length 266240 --speculative-algorithm EAGLE "
               "--speculative-num-draft-tokens 4"),
    "vllm": ("/e/python -m vllm.entrypoints.cli.main serve /m -tp 8 --kv-cache-dtype fp8 --max-num-seqs 64 "
             "--max-model-len=266240 --spec-method dspark --spec-tokens 4"),
}


@pytest.mark.parametrize("family", ["sglang", "vllm"])
@pytest.mark.parametrize("wrapper", [
    "", "env VLLM_SERVER_DEV_MODE=1 CUDA_VISIBLE_DEVICES=0,1 ", "timeout --signal=TERM 3600 ",
    "docker exec --env SSKJ_SERVER_TAG=sskj-30000 -e A=1 c1 ", "srun --overlap --nodes=2 --ntasks=2 ",
    "env -u SLURM_MEM srun --nodes=1 timeout 60 docker exec c1 env X=1 ",
])
def test_config_is_read_from_the_engines_own_argv_inside_any_wrapper(family: str, wrapper: str) -> None:
    cfg = config_from_server_args(wrapper + ENGINE_ARGV[family])
    method = "EAGLE" if family == "sglang" else "dspark"
    kv = "fp8_e4m3" if family == "sglang" else "fp8"
    assert cfg == {"tp": 8, "kv_cache_dtype": kv, "max_num_seqs": 64, "max_model_len": 266240,
                   "spec_method": method, "spec_tokens": 4, "spec_model": None}


def test_every_vllm_launch_form_is_recognised() -> None:
    for launch in ("/e/python -m vllm.entrypoints.cli.main serve /m", "/env/bin/vllm serve /m",
                   "python3 -m vllm.entrypoints.openai.api_server --model /m"):
        assert config_from_server_args(f"{launch} --tensor-parallel-size 2 --max-num-seqs 9")["tp"] == 2, launch
    # a wrapper's own options (srun --nodes, docker --env) are not read as the engine's
    cfg = config_from_server_args("srun --max-num-seqs=3 /e/python -m vllm.entrypoints.cli.main serve /m")
    assert cfg["max_num_seqs"] is None
    # the srun line of a multi-node run names no engine: nothing is claimed from it
    assert config_from_server_args("env -u SLURM_GRES srun --nodes=2 bash scripts/common/multinode_rank.sh e p a") == {}


def test_multinode_config_comes_from_rank0_and_hardware_says_nodes(tmp_path) -> None:
    srun = "env -u SLURM_GRES srun --overlap --nodes=2 bash /r/scripts/common/multinode_rank.sh /x dspark a:1"
    rank0 = ENGINE_ARGV["vllm"] + " --nnodes 2 --node-rank 0"
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
    assert config_from_server_args("/opt/fake_server.py --model m --tp 8") == {}
    assert config_from_server_args("unbalanced 'quote") == {}


def test_metadata_config_follows_the_phase_command_over_experiment_variables(tmp_path) -> None:
    run = tmp_path / "phase1_sglang"
    results = write_metadata(run, {"experiment": "x", "model": "m"},
                             {"tp": "8", "spec_tokens": "5", "kv_cache_dtype": "fp8",
                              "server_args": "/e/python -m sglang.launch_server --model-path /m --tp 4"},
                             detect=False)
    cfg = results.config.model_dump()
    assert cfg["tp"] == 4 and cfg["spec_tokens"] is None and cfg["kv_cache_dtype"] is None
    assert set(DERIVED_KEYS) <= set(cfg)


def test_one_setting_in_each_engines_spelling() -> None:
    settings = [("tp", "8"), ("kv_cache_dtype", "fp8"), ("max_num_seqs", "64"), ("max_model_len", "")]
    assert engine("sglang").flags_for(settings) == [
        "--tp-size", "8", "--kv-cache-dtype", "fp8_e4m3", "--max-running-requests", "64"]
    assert engine("vllm").flags_for(settings) == [
        "--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8", "--max-num-seqs", "64"]
    with pytest.raises(ConfigError, match="no setting 'block'"):
        engine("vllm").flags_for([("block", "16")])


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
