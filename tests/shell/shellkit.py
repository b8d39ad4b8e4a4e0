"""Helpers shared by the shell tests (imported by conftest.py and the tests)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
FAKES = REPO / "tests" / "fakes"
COMMON = REPO / "scripts" / "common"


def sskj_results_bin() -> str | None:
    """The sskj-results next to this Python, on PATH, or in the repo venv."""
    for candidate in (
        Path(sys.executable).parent / "sskj-results",
        Path(shutil.which("sskj-results") or "/nonexistent"),
        REPO / ".venv" / "bin" / "sskj-results",
    ):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


SSKJ_RESULTS = sskj_results_bin()
needs_results = pytest.mark.skipif(SSKJ_RESULTS is None, reason="sskj-results is not installed")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def tagged_pids(tag: str) -> list[int]:
    """Pids of live processes whose environment holds SSKJ_TEST_TAG=tag."""
    needle = f"SSKJ_TEST_TAG={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_no_tagged(tag: str, timeout: float = 5.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        pids = tagged_pids(tag)
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.1)


START_SERVER = """\
#!/usr/bin/env bash
# Test experiment: the "engine" is tests/fakes/fake_openai_server.py.
set -euo pipefail
EXPERIMENT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
source {lib}

build_server_cmd() {{
  local -a extra=()
  read -r -a extra <<<"${{FAKE_SERVER_ARGS:-}}"
  case "${{PHASE_ENGINE}}" in
    sglang) lib::engine_launcher sglang || return 1 ;;
    *) lib::engine_launcher "${{PHASE_ENGINE}}" VLLM_SERVER_DEV_MODE=1 || return 1 ;;
  esac
  SERVER_CMD=("${{LIB_LAUNCHER[@]}}" {server} --model "${{MODEL_PATH}}"
    --host "${{SERVER_HOST}}" --port "${{PORT}}" --api-key "${{FAKE_API_KEY:-sk-test-secret}}" "${{extra[@]}}")
}}

main() {{
  bench::server_main "${{EXPERIMENT_DIR}}" build_server_cmd "$@"
}}

main "$@"
"""

RUN_BENCH = """\
#!/usr/bin/env bash
set -euo pipefail
EXPERIMENT_DIR="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
source {lib}

main() {{
  local -a phases=({phases})
  bench::run_experiment "${{EXPERIMENT_DIR}}" "${{phases[@]}}"
}}

main "$@"
"""

DEFAULT_CONFIG = """\
MODEL_PATH="fake-model"
# the fake model has no tokenizer to make a round-trip set with (tests/test_prompt_sets.py covers those)
PROMPT_METHOD="client-random-text"
CONCURRENCIES="1 2"
SHAPES="16x8"
MIN_PROMPTS="4"
PROMPTS_PER_CONCURRENCY="2"
WARMUP_REQUESTS="1"
STOP_GRACE_S="5"
HEALTH_TIMEOUT_S="30"
"""


# How a dry run's plan starts a phase's engine (sskj_results/run/dryplan.py, server_start):
# `setsid <server command> >>"$SERVER_LOG" 2>&1 </dev/null & SERVER_PID=$!`
SERVER_START = ("setsid ", ' >>"$SERVER_LOG" 2>&1 </dev/null & SERVER_PID=$!')


def plan_command_lines(stdout: str) -> list[list[str]]:
    """The commands of a dry run's plan, as words; the engine's start line as its server command alone."""
    out = []
    for line in stdout.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith(SERVER_START[0]) and line.endswith(SERVER_START[1]):
            line = line[len(SERVER_START[0]):-len(SERVER_START[1])]
        out.append(shlex.split(line))
    return out


def client_calls(tmp_path: Path) -> list[tuple[int, ...]]:
    """(concurrency, input, output) of every run of the fake client (its FAKE_CLIENT_LOG), in order."""
    log = tmp_path / "client_calls.log"
    if not log.exists():
        return []
    return [tuple(int(x) for x in line.split()[:3]) for line in log.read_text().splitlines()]


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())


def default_signals() -> None:
    """A child's SIGINT and SIGTERM as a shell started from a terminal has them (preexec_fn): a suite started
    with SIGINT ignored (nohup, `trap '' INT`, a background job) would hand its children an ignored SIGINT,
    which bash cannot trap, and the tests of Ctrl-C would test nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def run_script(script: Path, env: dict[str, str], timeout: float = 240, args: Sequence[str] = (),
               **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
        preexec_fn=default_signals,
        **kw,
    )


def bash_lib(snippet: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a bash snippet with lib.sh and platform.sh sourced."""
    script = f"set -euo pipefail\nsource {COMMON / 'lib.sh'}\nsource {COMMON / 'platform.sh'}\n{snippet}\n"
    return subprocess.run(
        ["bash", "-c", script],
        env=env if env is not None else dict(os.environ),
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
        preexec_fn=default_signals,
    )


def recorded_calls(log: Path) -> list[list[str]]:
    """The sskj-results invocations written by tests/fakes/bin/sskj-results-recorder."""
    if not log.is_file():
        return []
    words = log.read_bytes().split(b"\0")
    calls, i = [], 0
    while i < len(words) - 1:
        n = int(words[i])
        calls.append([w.decode() for w in words[i + 1:i + 1 + n]])
        i += 1 + n
    return calls


def contract_problems(calls: list[list[str]]) -> list[str]:
    """Each call parsed by the real click command (options, types, choices); what does not parse."""
    import click

    from sskj_results.cli import main

    problems = []
    for argv in calls:
        if not argv or argv[0] in ("--help", "--version"):
            continue
        with click.Context(main) as ctx:
            command = main.get_command(ctx, argv[0])
        if command is None:
            problems.append(f"no command {argv[0]!r}: {argv}")
            continue
        try:
            command.make_context(argv[0], list(argv[1:]), resilient_parsing=False)
        except click.exceptions.Exit:
            pass
        except click.ClickException as exc:
            problems.append(f"{exc.format_message()}: {argv}")
    return problems


def engine_settings(cmd: list[str]) -> dict[str, list[str]]:
    """Every setting key -> the values a server command gives it, read with its engine row's spellings
    (catalog/engines.py): its flags, its JSON options and the config file it names. Tests read commands
    through the rows and keep no copy of an engine's spellings."""
    from sskj_results.catalog.engines import SETTING_KEYS, engine_argv

    found = engine_argv(cmd)
    assert found is not None, f"no engine launch point in {cmd}"
    row, own = found

    def given(flags: tuple[str, ...]) -> list[str]:
        out = []
        for i, word in enumerate(own):
            name, eq, value = word.partition("=")
            if name in flags:
                out.append(value if eq else own[i + 1])
        return out

    files = given(row.config_file_flags)
    content = json.loads(Path(files[-1]).read_text()) if files else {}
    values: dict[str, list[str]] = {}
    for key in SETTING_KEYS:
        values[key] = given(row.flags.get(key, ()))
        for option, keys in row.json_options.items():
            for text in given((option,)):
                if key in keys and keys[key] in json.loads(text):
                    values[key].append(str(json.loads(text)[keys[key]]))
        node = content
        for part in row.file_keys.get(key, "").split(".") if key in row.file_keys else ():
            node = node.get(part) if isinstance(node, dict) else None
        if key in row.file_keys and node is not None:
            values[key].append(str(node))
    return values
