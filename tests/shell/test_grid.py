"""The scenario grid of adaptive_bench_lib.sh."""

from __future__ import annotations

import os
import subprocess

import pytest
from shellkit import COMMON

pytestmark = pytest.mark.shell


def grid(exp_dir, env, scenarios_file=None) -> subprocess.CompletedProcess:
    snippet = (
        f"set -euo pipefail; source {COMMON / 'adaptive_bench_lib.sh'}; "
        f'bench::load_grid {exp_dir}; printf "%s\\n" "${{BENCH_GRID[@]}}"'
    )
    return subprocess.run(["bash", "-c", snippet], env=env, capture_output=True, text=True, timeout=60)


def test_grid_from_tsv_sorted_by_shape_then_concurrency(tmp_path):
    (tmp_path / "scenarios.tsv").write_text(
        "concurrency\tinput_len\toutput_len\tnum_prompts\n"
        "# comment line\n"
        "64\t1000\t256\n"
        "8\t4000\t512\t40   # trailing comment\n"
        "\n"
        "1 1000 256\n"
        "16\t1000\t256\n"
        "16\t1000\t256\n"
    )
    proc = grid(tmp_path, dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["1000 256 1 -", "1000 256 16 -", "1000 256 64 -", "4000 512 8 40"]


def test_grid_from_config_variables(tmp_path):
    env = dict(os.environ, CONCURRENCIES="16 1 4", SHAPES="128x64 1024x128")
    proc = grid(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "128 64 1 -", "128 64 4 -", "128 64 16 -", "1024 128 1 -", "1024 128 4 -", "1024 128 16 -",
    ]


@pytest.mark.parametrize(
    "content, message",
    [("8 1000\n", "expected 'concurrency input_len output_len"), ("8 1000 x\n", "'x' is not a positive integer")],
)
def test_bad_tsv_rows_name_file_and_line(tmp_path, content, message):
    (tmp_path / "scenarios.tsv").write_text("1 2 3\n" + content)
    proc = grid(tmp_path, dict(os.environ))
    assert proc.returncode == 1
    assert f"scenarios.tsv:2: {message}" in proc.stderr


def test_no_grid_at_all_is_an_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CONCURRENCIES", "SHAPES")}
    proc = grid(tmp_path, env)
    assert proc.returncode == 1 and "no scenarios" in proc.stderr


def test_bad_shape(tmp_path):
    proc = grid(tmp_path, dict(os.environ, CONCURRENCIES="1", SHAPES="128by64"))
    assert proc.returncode == 1 and "'128by64' is not INPUTxOUTPUT" in proc.stderr
