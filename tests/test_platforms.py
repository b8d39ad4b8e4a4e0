"""Platform detection, files and key checks (sskj_results/run/platforms.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest

from sskj_results.contract.errors import ConfigError
from sskj_results.run.platforms import detect, known, platform_file, problems

REPO = Path(__file__).resolve().parents[1]


def runner(nvidia: Optional[str], xpu: bool):
    def run(argv: list[str]) -> Optional[str]:
        if argv[0] == "nvidia-smi":
            return nvidia
        return "ok\n" if xpu else None
    return run


@pytest.mark.parametrize("gpu, expected", [("NVIDIA H200\nNVIDIA H200\n", "nvidia_h200"), ("NVIDIA H20\n", "nvidia_h20"),
                                           ("NVIDIA RTX PRO 6000D\n", "nvidia_rtx6000d")])
def test_nvidia_gpus_by_their_first_name(gpu: str, expected: str) -> None:
    assert detect(REPO, runner(gpu, xpu=True)) == expected


def test_xpu_then_cpu_and_an_unknown_gpu_names_the_choices() -> None:
    assert detect(REPO, runner(None, xpu=True)) == "kunlun_p800"
    assert detect(REPO, runner("", xpu=False)) == "cpu"
    with pytest.raises(ConfigError, match=r"unknown NVIDIA GPU 'NVIDIA A100': set PLATFORM to one of .*nvidia_h200"):
        detect(REPO, runner("NVIDIA A100\n", xpu=False))


def test_only_plain_names_of_existing_files() -> None:
    assert "cpu" in known(REPO)
    assert platform_file(REPO, "cpu") == REPO / "platforms" / "cpu.env"
    with pytest.raises(ConfigError, match="invalid PLATFORM"):
        platform_file(REPO, "../../etc/passwd")
    with pytest.raises(ConfigError, match="unknown platform 'nvidia_b300'"):
        platform_file(REPO, "nvidia_b300")


def test_every_problem_at_once() -> None:
    found = problems({"CHIP": "x", "ACCELERATOR": "y", "ENGINE": "trt", "RUNTIME": "docker", "DEFAULT_PORT": "abc"})
    assert found == ["missing keys: HARDWARE MODEL_ROOT DOCKER_IMAGE CONTAINER_NAME CONTAINER_PYTHON PATCH_ROOT",
                     "DEFAULT_PORT must be a number, got 'abc'", "unknown ENGINE 'trt'"]
    assert problems({"RUNTIME": "podman", "CHIP": "c", "ACCELERATOR": "a", "HARDWARE": "h", "ENGINE": "vllm",
                     "DEFAULT_PORT": "1", "MODEL_ROOT": "/m"}) == ["RUNTIME must be 'native' or 'docker', got 'podman'"]
