"""Fixtures for the tests that drive the bash orchestration.

Every test gets a unique SSKJ_TEST_TAG in the environment of what it starts;
all processes inherit it, so at teardown any process still carrying the tag
is a leak: it is killed and the test errors.
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shellkit import (  # noqa: E402
    COMMON,
    DEFAULT_CONFIG,
    FAKES,
    RUN_BENCH,
    SSKJ_RESULTS,
    START_SERVER,
    contract_problems,
    recorded_calls,
    wait_no_tagged,
)


@pytest.fixture
def tag() -> str:
    value = uuid.uuid4().hex
    yield value
    leaked = wait_no_tagged(value)
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if leaked:
        pytest.fail(f"processes left behind by the test: {leaked}")


@pytest.fixture
def base_env(tag: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Environment for scripts under test: fakes first on PATH and PYTHONPATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SSKJ_", "PLATFORM", "RESUME", "DRY_RUN", "FAKE_"))
        and k not in ("PORT", "RUN_ID", "RESULT_ROOT", "SLO_SEARCH", "MODEL_PATH", "PATCH_ROOT")
    }
    env.update(
        {
            "SSKJ_TEST_TAG": tag,
            "PATH": f"{FAKES / 'bin'}:{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
            "PYTHONPATH": str(FAKES / "pymods"),
            "CLIENT_PYTHON": sys.executable,
            "ENGINE_PYTHON": sys.executable,
            "FAKE_DOCKER_LOG": str(tmp_path / "docker_calls.log"),
            "FAKE_CLIENT_LOG": str(tmp_path / "client_calls.log"),
        }
    )
    calls = tmp_path.parent / f"{tmp_path.name}.sskj_results_calls.bin"  # beside tmp_path: tests check what it holds
    if SSKJ_RESULTS:
        # every sskj-results call the shell makes is recorded and, after the
        # test, parsed by the real click command: an option that does not
        # exist fails the test (the shell <-> CLI contract)
        env.update(SSKJ_RESULTS_BIN=str(FAKES / "bin" / "sskj-results-recorder"), SSKJ_RESULTS_REAL=SSKJ_RESULTS,
                   SSKJ_RESULTS_CALLS=str(calls))
    yield env
    problems = contract_problems(recorded_calls(calls))
    if problems:
        pytest.fail("sskj-results calls the CLI does not accept:\n" + "\n".join(problems))


@pytest.fixture
def make_experiment(tmp_path: Path):
    """Write a throw-away experiment that uses the real scripts/common."""

    def _make(phases: str = "vllm", config: str = DEFAULT_CONFIG, scenarios: str | None = None) -> Path:
        exp = tmp_path / "exp_fake"
        exp.mkdir(exist_ok=True)
        lib = COMMON / "adaptive_bench_lib.sh"
        (exp / "start_server.sh").write_text(START_SERVER.format(lib=lib, server=FAKES / "fake_openai_server.py"))
        (exp / "run_bench.sh").write_text(RUN_BENCH.format(lib=lib, phases=phases))
        (exp / "config.env").write_text(textwrap.dedent(config))
        if scenarios is not None:
            (exp / "scenarios.tsv").write_text(textwrap.dedent(scenarios))
        return exp

    return _make
