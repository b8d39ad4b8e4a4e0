"""`sskj-results metadata`: creation, updates that keep scenarios, detection, redaction."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import load_run, save_run
from sskj_results.contract.redact import redact

from .conftest import SEED


def _meta(run: Path, *args: str) -> object:
    return CliRunner().invoke(main, ["metadata", str(run), *args])


def test_create_then_update_keeps_scenarios(tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = _meta(run, "--meta", "experiment=dsv4", "--meta", "model=/m", "--meta", "engine=sglang",
                   "--meta", "chip=nvidia_h200", "--meta", "run_id=20260707-132641", "--no-detect",
                   "--config", "tp=8", "--config", "spec_tokens=5", "--config", "kv_cache_dtype=fp8",
                   "--config", "enable_x=true", "--config", "phase1_server_args=python -m sglang.launch_server --tp 8",
                   "--slo-tier", "S1")
    assert result.exit_code == 0, result.output
    assert result.output == f"{run}/results.json: metadata of dsv4 (20260707-132641) written\n"
    first = load_run(run)
    assert first.config.tp == 8 and first.config.spec_tokens == 5 and first.config.kv_cache_dtype == "fp8"
    assert first.config.model_extra == {"enable_x": True, "phase1_server_args": "python -m sglang.launch_server --tp 8"}
    assert first.slo.tier == "S1"
    assert first.metadata.timestamp[-6] in "+-" and first.metadata.host
    # add scenarios, then update metadata: scenarios and timestamp survive
    seeded = first.model_copy(update={"scenarios": load_run(SEED).scenarios})
    save_run(seeded, run)
    result = _meta(run, "--meta", "engine_version=0.5.4", "--config", "max_num_seqs=256")
    assert result.exit_code == 0, result.output
    after = load_run(run)
    assert after.scenarios == seeded.scenarios
    assert after.metadata.timestamp == first.metadata.timestamp
    assert after.metadata.engine_version == "0.5.4" and after.config.max_num_seqs == 256 and after.config.tp == 8


def test_create_requires_experiment_and_model(tmp_path: Path) -> None:
    result = _meta(tmp_path / "r", "--meta", "engine=vllm")
    assert result.exit_code == 2
    assert result.output == f"error: {tmp_path}/r/results.json does not exist yet: give --meta experiment=... --meta model=... to create it\n"
    assert not (tmp_path / "r" / "results.json").exists()


def test_unknown_key_and_malformed_item(tmp_path: Path) -> None:
    result = _meta(tmp_path, "--meta", "chipp=x")
    assert result.exit_code == 2 and result.output.startswith("error: unknown --meta key(s) chipp; known: experiment, run_id,")
    result = _meta(tmp_path, "--meta", "novalue")
    assert result.exit_code == 2 and result.output == "error: --meta 'novalue': expected KEY=VALUE\n"


def test_bad_config_type_names_path(tmp_path: Path) -> None:
    result = _meta(tmp_path / "r", "--meta", "experiment=e", "--meta", "model=m", "--no-detect", "--config", "tp=eight")
    assert result.exit_code == 1
    assert result.output.startswith(f"error: {tmp_path}/r/results.json: config.tp: ")


def test_server_args_are_redacted() -> None:
    assert redact("vllm serve m --api-key sk-1 --port 8") == "vllm serve m --api-key <redacted> --port 8"
    assert redact("HF_TOKEN=hf_x OPENAI_API_KEY='a b' python -m x") == "HF_TOKEN=<redacted> OPENAI_API_KEY=<redacted> python -m x"
    assert redact("docker exec -e HUGGING_FACE_HUB_TOKEN=abc c") == "docker exec -e HUGGING_FACE_HUB_TOKEN=<redacted> c"
    assert redact("--max-num-batched-tokens 8192") == "--max-num-batched-tokens 8192"


def test_detects_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$1" in --query-gpu=*) printf "NVIDIA H200, 143771, 570.86.15\\nNVIDIA H200, 143771, 570.86.15\\n";;\n'
        '*) echo "| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: 12.8 |";; esac\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = _meta(tmp_path / "r", "--meta", "experiment=e", "--meta", "model=m", "--meta", "chip=nvidia_h200",
                   "--meta", "engine=vllm", "--config", "server_args=vllm serve m")
    assert result.exit_code == 0, result.output
    meta = load_run(tmp_path / "r").metadata
    assert (meta.hardware, meta.driver_version, meta.runtime_version) == ("2x NVIDIA H200 140GB", "570.86.15", "CUDA 12.8")


def test_hardware_auto_describes_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    import sskj_results.ingest.metadata as metadata_mod

    monkeypatch.setattr(metadata_mod, "_run", lambda cmd, cwd=None: None)  # no nvidia-smi, no xpu-smi, no git
    result = _meta(tmp_path / "r", "--meta", "experiment=e", "--meta", "model=m", "--meta", "hardware=auto",
                   "--no-detect")
    assert result.exit_code == 0, result.output
    hardware = load_run(tmp_path / "r").metadata.hardware
    assert hardware is not None and re.fullmatch(r".+ \(\d+ cores, (\d+|\?) GB RAM\)", hardware), hardware
    # an explicit description is kept as given
    result = _meta(tmp_path / "r", "--meta", "hardware=8x NVIDIA H200 143GB")
    assert result.exit_code == 0 and load_run(tmp_path / "r").metadata.hardware == "8x NVIDIA H200 143GB"


def test_image_is_recorded_from_a_docker_env_and_never_guessed(tmp_path: Path) -> None:
    base = ["--meta", "experiment=e", "--meta", "model=/m", "--meta", "engine=sglang", "--meta", "chip=nvidia_h200",
            "--no-detect"]
    docker = "docker:lmsysorg/sglang:v0.5.4 (container sskj_e, python3; docker run --gpus all)"
    assert _meta(tmp_path / "a", *base, "--meta", f"env={docker}").exit_code == 0
    assert load_run(tmp_path / "a").metadata.image == "lmsysorg/sglang:v0.5.4"
    assert _meta(tmp_path / "b", *base, "--meta", "env=/opt/envs/sglang").exit_code == 0
    assert load_run(tmp_path / "b").metadata.image is None
    assert _meta(tmp_path / "c", *base, "--meta", "env=docker: (container x, ; docker run )").exit_code == 0
    assert load_run(tmp_path / "c").metadata.image is None
    # given by hand, it is kept over the env's
    assert _meta(tmp_path / "a", "--meta", "image=mine:1").exit_code == 0
    assert load_run(tmp_path / "a").metadata.image == "mine:1"
