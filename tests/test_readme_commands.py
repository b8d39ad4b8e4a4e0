"""The results commands of README.md and BENCHMARK_WORKFLOW.md's Quick Start, run as typed.

Each line of README's `# results` block and the `parse_results.py` command of
the Quick Start is taken from the document itself, `<run_id>` and `[...]`
(optional parts, kept) filled in, and run by bash in a directory laid out as a
clone: experiments with a run and a multi-phase run, raw_outputs/, runA/runB.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
BIN = Path(sys.executable).parent
RUN_ID = "20260708-120000"


def block_after(text: str, marker: str) -> list[str]:
    """Command lines of the first ```bash block after marker (continuations joined, comments dropped)."""
    body = text[text.index(marker):]
    body = body[body.index("```bash\n") + 8:]
    body = body[:body.index("```")]
    lines = body.replace("\\\n", " ").splitlines()
    return [line.split("  #")[0].strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def readme_results_commands() -> list[str]:
    lines = block_after((ROOT / "README.md").read_text(encoding="utf-8"), "## Everyday commands")
    return [line for line in lines if line.startswith(("sskj-results", "python3"))]


def quick_start_parse_command() -> str:
    lines = block_after((ROOT / "BENCHMARK_WORKFLOW.md").read_text(encoding="utf-8"), "## Quick Start")
    (parse,) = [line for line in lines if "parse_results.py" in line]
    return re.sub(r"\s+", " ", parse)


def _sskj(cwd: Path, *args: str) -> None:
    subprocess.run([str(BIN / "sskj-results"), *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    for exp in ("p800/dsv4_p800_sglang", "h200/dsv4_h200_sglang_vs_vllm"):
        shutil.copytree(ROOT / "experiments" / exp, repo / "experiments" / exp, ignore=shutil.ignore_patterns("results"))
    (repo / "scripts" / "common").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "common" / "sskj_tool.py", repo / "scripts" / "common")
    (repo / "platforms").mkdir()
    shutil.copy(ROOT / "platforms" / "nvidia_h200.env", repo / "platforms")
    # a legacy raw directory
    shutil.copytree(DATA / "raw", repo / "raw_outputs", ignore=shutil.ignore_patterns("README.md"))
    # one run of the P800 experiment, with its raw outputs
    run = repo / "experiments" / "p800" / "dsv4_p800_sglang" / "results" / RUN_ID
    (run / "raw_outputs").mkdir(parents=True)
    shutil.copy(DATA / "raw" / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / "kunlun_p800_sglang_0708_2_128_32.jsonl")
    _sskj(repo, "metadata", str(run), "--no-detect", "--meta", "experiment=dsv4_p800_sglang", "--meta", f"run_id={RUN_ID}",
          "--meta", "model=/data/models/DeepSeek-V4-Flash", "--meta", "engine=sglang", "--meta", "chip=kunlun_p800",
          "--config", "server_args=python3 -m sglang.launch_server --model-path /data/models/DeepSeek-V4-Flash")
    # a multi-phase run of the SGLang-vs-vLLM experiment, and two runs to compare
    multi = repo / "experiments" / "h200" / "dsv4_h200_sglang_vs_vllm" / "results" / RUN_ID
    for i, name in enumerate(("sglang", "vllm"), start=1):
        shutil.copytree(DATA / "compare" / "runs" / name, multi / f"phase{i}_{name}")
    _sskj(repo, "runset", str(multi))
    shutil.copytree(DATA / "compare" / "runs" / "sglang", repo / "runA")
    shutil.copytree(DATA / "compare" / "runs" / "vllm", repo / "runB")
    shutil.copytree(DATA / "compare" / "runs" / "vllm", repo / "RUN_DIR")
    return repo


def test_the_documents_name_the_commands():
    commands = readme_results_commands()
    assert any(c.startswith("python3 experiments/p800/dsv4_p800_sglang/parse_results.py") for c in commands)
    assert any(c.startswith("sskj-results compare experiments/") for c in commands)
    assert quick_start_parse_command() == ("python3 experiments/p800/dsv4_p800_sglang/parse_results.py "
                                           "experiments/p800/dsv4_p800_sglang/results/<run_id>")


def test_every_results_command_works_as_typed(clone: Path):
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "SSKJ_RESULTS_BIN": str(BIN / "sskj-results"), "MPLBACKEND": "Agg"}
    commands = [quick_start_parse_command()] + readme_results_commands()
    for typed in commands:
        line = typed.replace("<run_id>", RUN_ID).replace("[", "").replace("]", "")
        proc = subprocess.run(["bash", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{typed}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, typed
    assert (clone / "imported").is_dir()
    assert (clone / "comparison" / "comparison.md").is_file()
    assert (clone / "RUN_DIR" / "report.md").is_file()
