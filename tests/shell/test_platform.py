"""scripts/common/platform.sh: detection, loading, validation."""

from __future__ import annotations

import pytest
from shellkit import REPO, bash_lib

pytestmark = pytest.mark.shell

EMPTY_BIN = "/nonexistent-sskj-bin"


def no_accelerator_path(base_env) -> str:
    # Keep coreutils etc., drop the fakes so nothing is detected.
    return ":".join(p for p in base_env["PATH"].split(":") if "tests/fakes/bin" not in p)


@pytest.mark.parametrize(
    "gpu_name, expected",
    [
        ("NVIDIA H200", "nvidia_h200"),
        ("NVIDIA H20", "nvidia_h20"),
        ("NVIDIA RTX PRO 6000D", "nvidia_rtx6000d"),
    ],
)
def test_detects_nvidia_gpus_by_name(base_env, gpu_name, expected):
    proc = bash_lib("platform::detect", dict(base_env, FAKE_GPU_NAME=gpu_name))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == expected


def test_unknown_nvidia_gpu_is_an_error_naming_it(base_env):
    proc = bash_lib("platform::detect", dict(base_env, FAKE_GPU_NAME="NVIDIA A100-SXM4-80GB"))
    assert proc.returncode == 1
    assert "unknown NVIDIA GPU 'NVIDIA A100-SXM4-80GB'" in proc.stderr and "nvidia_h200" in proc.stderr


def test_detects_kunlun_when_only_xpu_smi_works(base_env):
    env = dict(base_env, FAKE_GPU_NAME="")  # nvidia-smi fails like a machine without the driver
    assert bash_lib("platform::detect", env).stdout == "kunlun_p800"
    env["FAKE_XPU_FAIL"] = "1"
    assert bash_lib("platform::detect", env).stdout == "cpu"


def test_defaults_to_cpu_without_accelerator_tools(base_env):
    env = dict(base_env, PATH=no_accelerator_path(base_env))
    assert bash_lib("platform::detect", env).stdout == "cpu"


def test_platform_override_loads_env_file(base_env):
    env = dict(base_env, PLATFORM="kunlun_p800", MODEL_ROOT="/mnt/models")
    proc = bash_lib(
        'platform::load; echo "$PLATFORM|$CHIP|$RUNTIME|$CONTAINER_NAME|$MODEL_ROOT|$PATCH_ROOT|$ACCEL_SAMPLER"', env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f"kunlun_p800|kunlun_p800|docker|sskj_p800_sglang|/mnt/models|{REPO}/platforms/patches/kunlun_p800|xpu-smi"
    )


def test_cpu_platform_leaves_hardware_to_metadata(base_env):
    proc = bash_lib('platform::load cpu; echo "$HARDWARE|$ENGINE|$DEFAULT_PORT|$MODEL_ROOT"', base_env)
    assert proc.returncode == 0, proc.stderr
    hardware, engine, port, model_root = proc.stdout.strip().split("|")
    assert hardware == "auto"  # described by `sskj-results metadata` (tests/test_metadata.py)
    assert (engine, port, model_root) == ("vllm", "18000", f"{REPO}/models")


def test_every_platform_file_is_valid(base_env):
    for name in ("cpu", "kunlun_p800", "nvidia_h20", "nvidia_h200", "nvidia_rtx6000d"):
        proc = bash_lib(f"platform::load {name}", base_env)
        assert proc.returncode == 0, (name, proc.stderr)


def test_unknown_or_malicious_platform_names_are_rejected(base_env):
    proc = bash_lib("platform::load nvidia_b300", base_env)
    assert proc.returncode == 1 and "unknown platform 'nvidia_b300'" in proc.stderr
    proc = bash_lib("platform::load ../../tmp/evil", base_env)
    assert proc.returncode == 1 and "invalid PLATFORM" in proc.stderr


def test_validation_reports_all_missing_keys_at_once(base_env):
    proc = bash_lib(
        "CHIP=x ACCELERATOR=y ENGINE=vllm RUNTIME=docker DEFAULT_PORT=abc CONTAINER_NAME= "
        "platform::validate test.env",
        base_env,
    )
    assert proc.returncode == 1
    assert (
        "test.env: missing keys: HARDWARE MODEL_ROOT DOCKER_IMAGE CONTAINER_NAME CONTAINER_PYTHON PATCH_ROOT"
        in proc.stderr
    )
    assert "DEFAULT_PORT must be a number" in proc.stderr
