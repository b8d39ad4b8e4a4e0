"""Fixtures of the Slurm tests: one real local cluster per session (see slurmkit.py).

The tests are marked `cluster`; `make test` runs them, `make test-fast` does
not. They skip only when the Slurm and munge programs are not installed
(`make test` installs them as root; see the Makefile).
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "shell"))

from shellkit import (  # noqa: E402
    COMMON,
    DEFAULT_CONFIG,
    FAKES,
    REPO,
    RUN_BENCH,
    SSKJ_RESULTS,
    START_SERVER,
    wait_no_tagged,
)
from slurmkit import LocalSlurm, missing_binaries  # noqa: E402

def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    missing = missing_binaries()
    if missing:
        pytest.skip(f"Slurm/munge not installed ({', '.join(missing)}): apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("the local Slurm cluster runs its daemons as root")
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()
    except Exception:
        cluster.stop()
        raise
    yield cluster
    cluster.stop()


@pytest.fixture
def tag() -> str:
    value = uuid.uuid4().hex
    yield value
    leaked = wait_no_tagged(value, timeout=20)
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if leaked:
        pytest.fail(f"processes left behind by the test: {leaked}")


@pytest.fixture
def job_env(slurm: LocalSlurm, tag: str, tmp_path: Path) -> dict[str, str]:
    """Environment of submit.sh (sbatch exports it to the jobs): fakes first, the cluster's SLURM_CONF."""
    env = {
        k: v
        for k, v in slurm.env.items()
        if not k.startswith(("SSKJ_", "PLATFORM", "RESUME", "DRY_RUN", "FAKE_", "NNODES"))
        and k not in ("PORT", "RUN_ID", "RESULT_ROOT", "SLO_SEARCH", "MODEL_PATH", "PATCH_ROOT")
    }
    env.update(
        {
            "SSKJ_TEST_TAG": tag,
            "PATH": f"{FAKES / 'bin'}:{Path(sys.executable).parent}:{env['PATH']}",
            "PYTHONPATH": str(FAKES / "pymods"),
            "CLIENT_PYTHON": sys.executable,
            "ENGINE_PYTHON": sys.executable,
        }
    )
    if SSKJ_RESULTS:
        env["SSKJ_RESULTS_BIN"] = SSKJ_RESULTS
    return env


@pytest.fixture
def fake_experiment(tmp_path: Path):
    """Write a throw-away experiment whose engine is tests/fakes/fake_openai_server.py."""

    def _make(name: str, phases: str = "vllm", config: str = DEFAULT_CONFIG,
              start_server: str | None = None) -> Path:
        exp = tmp_path / "experiments" / name
        exp.mkdir(parents=True)
        lib = COMMON / "adaptive_bench_lib.sh"
        text = start_server or START_SERVER.format(lib=lib, server=FAKES / "fake_openai_server.py")
        (exp / "start_server.sh").write_text(text)
        (exp / "run_bench.sh").write_text(RUN_BENCH.format(lib=lib, phases=phases))
        text = textwrap.dedent(config)
        if "PROMPT_METHOD" not in text:  # the fake model has no tokenizer to make a round-trip prompt set with
            text = text.rstrip("\n") + '\nPROMPT_METHOD="client-random-text"\n'
        (exp / "config.env").write_text(text)
        return exp

    return _make

