"""Dry runs use the client module the host's client Python has (faked here): sglang.benchmark.serving where
it exists, sglang.bench_serving otherwise, the Rust load generator with CLIENT_IMPL=rust; the choice is
recorded as the phase's client. Every sskj-results call is parsed by the real CLI (base_env's teardown)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from shellkit import FAKES, REPO, load_json, needs_results, run_script

pytestmark = [pytest.mark.shell, needs_results]

H200_VS = REPO / "experiments" / "h200" / "dsv4_h200_sglang_vs_vllm"


def fake_new_sglang(root: Path) -> Path:
    """sglang 0.5.23's layout: sglang.benchmark.serving beside the old module (which the fakes provide)."""
    pkg = root / "sglang"
    (pkg / "benchmark").mkdir(parents=True)
    for name in ("__init__.py", "bench_serving.py", "benchmark/__init__.py", "benchmark/serving.py"):
        (pkg / name).write_text("")
    return root


def clients_of(stdout: str) -> list[list[str]]:
    lines = [shlex.split(line) for line in stdout.splitlines() if line and not line.startswith("#")]
    # the clients, not the servers (vLLM serves with `-m vllm.entrypoints.cli.main serve` too)
    return [c for c in lines if "-m" in c and "serve" not in c[c.index("-m") + 2:c.index("-m") + 3]
            and any(w.startswith(("sglang.bench", "vllm.entrypoints.cli")) for w in c)]


@pytest.mark.parametrize("new, impl, module, label", [
    (True, "", "sglang.benchmark.serving", "sglang.benchmark.serving"),
    (False, "", "sglang.bench_serving", "sglang.bench_serving"),
    (True, "rust", "sglang.benchmark.serving", "sglang.benchmark.serving (Rust client)"),
], ids=["new-module", "old-module", "rust"])
def test_dry_run_uses_the_module_the_client_python_has(tmp_path, base_env, tag, new, impl, module, label):
    pythonpath = f"{fake_new_sglang(tmp_path / 'mods')}:{FAKES / 'pymods'}" if new else str(FAKES / "pymods")
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20261201-100000", RESULT_ROOT=str(tmp_path / "r"),
               SCENARIOS_FILE=str(tmp_path / "none.tsv"), CONCURRENCIES="1", SHAPES="64x8", PYTHONPATH=pythonpath,
               CLIENT_IMPL=impl)
    proc = run_script(H200_VS / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    clients = clients_of(proc.stdout)
    assert clients, proc.stdout
    for argv in clients:
        assert argv[argv.index("-m") + 1] == module
        assert ("--rust-client" in argv) == (impl == "rust")
    metadata = [load_json(f)["metadata"] for f in sorted((tmp_path / "r").glob("**/results.json"))]
    assert metadata and {m["client"] for m in metadata} == {label}


def test_dry_run_of_the_vllm_rust_client_sets_its_switch(tmp_path, base_env, tag):
    env = dict(base_env, DRY_RUN="1", PLATFORM="nvidia_h200", RUN_ID="20261201-100000", RESULT_ROOT=str(tmp_path / "r"),
               SCENARIOS_FILE=str(tmp_path / "none.tsv"), CONCURRENCIES="1", SHAPES="64x8", CLIENT="vllm",
               CLIENT_BACKEND="vllm", CLIENT_IMPL="rust")
    proc = run_script(H200_VS / "run_bench.sh", env)
    assert proc.returncode == 0, proc.stderr
    clients = clients_of(proc.stdout)
    assert clients and all(c[:2] == ["env", "VLLM_USE_RUST_BENCH=1"] and c[4:7] == ["vllm.entrypoints.cli.main", "bench", "serve"]
                           for c in clients), clients
