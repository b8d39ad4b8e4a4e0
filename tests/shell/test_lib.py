"""Functions of scripts/common/lib.sh, driven through bash."""

from __future__ import annotations

import os
import re
import shlex
import socket
import sys
import time
from pathlib import Path

import pytest
from shellkit import FAKES, bash_lib, free_port

pytestmark = pytest.mark.shell


def test_require_env_reports_every_missing_variable_at_once(base_env):
    env = dict(base_env, PRESENT="x")
    proc = bash_lib("lib::require_env PRESENT MISSING_ONE MISSING_TWO", env)
    assert proc.returncode == 1
    assert "missing required variables: MISSING_ONE MISSING_TWO" in proc.stderr
    assert bash_lib("lib::require_env PRESENT", env).returncode == 0
    assert bash_lib("lib::require_env", env).returncode == 2


def test_log_lines_are_timestamped_on_stderr(base_env):
    proc = bash_lib("lib::info hello world; lib::err broken", base_env)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines[0].endswith("[INFO] hello world") and lines[0].startswith("[20")
    assert lines[1].endswith("[ERROR] broken")


def test_load_env_file_parses_without_executing(tmp_path, base_env):
    marker = tmp_path / "pwned"
    cfg = tmp_path / "c.env"
    cfg.write_text(
        "# comment\n"
        "\n"
        'A="double quoted ${REPO_ROOT}/x"  # trailing comment\n'
        "export B='single $A $(touch " + str(marker) + ")'\n"
        "C=bare_${NOPE:-dflt}_$REPO_ROOT\n"
        'D="${UNSET_VAR:-fallback} \\$literal"\n'
        "FROM_ENV=from_file\n"
    )
    env = dict(base_env, REPO_ROOT="/repo", FROM_ENV="from_env")
    proc = bash_lib(
        f"lib::snapshot_env; lib::load_env_file {cfg}; "
        'printf "%s\\n" "$A" "$B" "$C" "$D" "$FROM_ENV"; bash -c \'printf "%s\\n" "$A"\'',
        env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "double quoted /repo/x",
        f"single $A $(touch {marker})",
        "bare_dflt_/repo",
        "fallback $literal",
        "from_env",
        "double quoted /repo/x",  # exported to children
    ]
    assert not marker.exists()


@pytest.mark.parametrize(
    "line, message",
    [
        ('X="$(id)"', "command substitution is not allowed"),
        ("X=`id`", "command substitution is not allowed"),
        ("X=two words", "must be quoted"),
        ('X="open', "unterminated double quote"),
        ("rm -rf /tmp/x", "expected KEY=VALUE"),
        ('X="${NOT_SET_ANYWHERE}"', "is not set"),
        ("X=${OK:+alt}", "unsupported expansion"),
    ],
)
def test_load_env_file_rejects_bad_lines_with_location(tmp_path, base_env, line, message):
    cfg = tmp_path / "bad.env"
    cfg.write_text(f"OK=1\n{line}\n")
    proc = bash_lib(f"lib::snapshot_env; lib::load_env_file {cfg}", base_env)
    assert proc.returncode == 1
    assert f"{cfg}:2" in proc.stderr and message in proc.stderr


def test_protected_keys_ignore_the_environment(tmp_path, base_env):
    cfg = tmp_path / "p.env"
    cfg.write_text('CONTAINER_NAME="from_file"\nPORT="1"\n')
    env = dict(base_env, CONTAINER_NAME="from_env", PORT="2")
    proc = bash_lib(
        f'lib::snapshot_env; lib::load_env_file {cfg} --protect CONTAINER_NAME; echo "$CONTAINER_NAME $PORT"', env
    )
    assert proc.stdout.strip() == "from_file 2"


def test_quote_cmd_round_trips_and_redacts_secrets(base_env):
    proc = bash_lib(
        "lib::quote_cmd python -m srv --api-key s3cret --token=abc --max-tokens 8 --tokenizer /m "
        "'a b' HF_TOKEN=hf_x OPENAI_API_KEY=k MAX_TOKENS=3 \"it's\"",
        base_env,
    )
    words = shlex.split(proc.stdout)
    assert words == [
        "python", "-m", "srv", "--api-key", "<redacted>", "--token=<redacted>", "--max-tokens", "8",
        "--tokenizer", "/m", "a b", "HF_TOKEN=<redacted>", "OPENAI_API_KEY=<redacted>", "MAX_TOKENS=3", "it's",
    ]
    assert "s3cret" not in proc.stdout and "hf_x" not in proc.stdout


def test_port_is_free(base_env):
    port = free_port()
    assert bash_lib(f"lib::port_is_free {port}", base_env).returncode == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        assert bash_lib(f"lib::port_is_free {port}", base_env).returncode == 1
    assert bash_lib("lib::port_is_free nope", base_env).returncode == 2


def _start_fake(port: int, log: Path, extra: str, env) -> str:
    server = FAKES / "fake_openai_server.py"
    return (
        f"lib::start_server fake {shlex.quote(str(log))} {shlex.quote(sys.executable)} {server} "
        f"--port {port} {extra}\n"
    )


def test_wait_for_health_ok_then_stop_tree_leaves_nothing(tmp_path, base_env, tag):
    port = free_port()
    snippet = (
        _start_fake(port, tmp_path / "logs", "", base_env)
        + f'lib::wait_for_health http://127.0.0.1:{port} "$LIB_SERVER_PID" 30 "$LIB_SERVER_LOG"\n'
        + 'echo "log=$LIB_SERVER_LOG"\n'
        + "lib::stop_server\n"
        + f"lib::port_is_free {port} && echo freed\n"
    )
    proc = bash_lib(snippet, dict(base_env, STOP_GRACE_S="5"))
    assert proc.returncode == 0, proc.stderr
    assert "server healthy" in proc.stderr and "freed" in proc.stdout
    log = Path(proc.stdout.split("log=")[1].split()[0])
    assert log.parent == tmp_path / "logs" and log.name.startswith("fake_") and log.suffix == ".log"
    assert log.read_text().startswith("# ")  # the exact command heads the log


def test_wait_for_health_times_out_and_prints_log_tail(tmp_path, base_env):
    port = free_port()
    snippet = (
        _start_fake(port, tmp_path / "logs", "--hang-health", base_env)
        + f'rc=0; lib::wait_for_health http://127.0.0.1:{port} "$LIB_SERVER_PID" 3 "$LIB_SERVER_LOG" || rc=$?\n'
        + 'lib::stop_server; exit "$rc"\n'
    )
    start = time.monotonic()
    proc = bash_lib(snippet, dict(base_env, STOP_GRACE_S="3"))
    assert proc.returncode == 1
    assert "not healthy after 3s" in proc.stderr
    assert "fake-server" in proc.stderr  # the log tail
    assert time.monotonic() - start < 20


def test_wait_for_health_fails_at_once_when_the_server_dies(tmp_path, base_env):
    port = free_port()
    snippet = (
        _start_fake(port, tmp_path / "logs", "--exit-at-start 3 --oom", base_env)
        + f'lib::wait_for_health http://127.0.0.1:{port} "$LIB_SERVER_PID" 120 "$LIB_SERVER_LOG"\n'
    )
    start = time.monotonic()
    proc = bash_lib(snippet, base_env)
    assert proc.returncode == 1
    assert time.monotonic() - start < 15  # not the 120 s timeout
    assert "exited before it became healthy" in proc.stderr
    assert "CUDA out of memory" in proc.stderr


def test_an_engine_that_could_not_bind_fails_in_one_line_naming_the_port_and_the_holder(tmp_path, base_env):
    port = free_port()
    with socket.socket() as holder:  # a listener that appeared after the port check, before our engine's bind
        holder.bind(("127.0.0.1", port))
        holder.listen()
        snippet = (
            _start_fake(port, tmp_path / "logs", "", base_env)
            + f'lib::wait_for_health http://127.0.0.1:{port} "$LIB_SERVER_PID" 60 "$LIB_SERVER_LOG" /health {port}\n'
        )
        proc = bash_lib(snippet, base_env)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1
    assert re.fullmatch(rf"error: server process \d+ exited before it became healthy: port {port} is held by pid "
                        rf"{os.getpid()} \(.*\), not by the engine this run started \(pid \d+\)", errors[0])


def test_a_foreign_engine_answering_health_is_not_ours(tmp_path, base_env, tag):
    port = free_port()
    foreign = _start_fake(port, tmp_path / "foreign", "", base_env) + "foreign=$LIB_SERVER_PID\n"
    snippet = (
        foreign
        + f'lib::wait_for_health http://127.0.0.1:{port} "$foreign" 30 "$LIB_SERVER_LOG"\n'
        + "setsid -w sleep 60 & ours=$!\n"  # our engine, still loading: the foreign one answers /health
        + f'rc=0; lib::wait_for_health http://127.0.0.1:{port} "$ours" 30 "$LIB_SERVER_LOG" /health {port} || rc=$?\n'
        + 'echo "foreign=$foreign ours=$ours"; lib::stop_tree "$ours" 1; lib::stop_server; exit "$rc"\n'
    )
    proc = bash_lib(snippet, dict(base_env, STOP_GRACE_S="3"))
    assert proc.returncode == 1
    pids = dict(word.split("=") for word in proc.stdout.split())
    assert (f"error: at health: port {port} is held by pid {pids['foreign']} (" in proc.stderr
            and f"not by the engine this run started (pid {pids['ours']})" in proc.stderr)


def test_stop_tree_kills_the_process_group_and_descendants(base_env, tag):
    # A parent that ignores TERM with a child that ignores TERM: KILL after the grace.
    snippet = (
        "setsid -w bash -c 'trap \"\" TERM; sleep 300 & trap \"\" TERM; wait' &\n"
        "pid=$!; sleep 0.5\n"
        'lib::stop_tree "$pid" 1\n'
        'lib::pid_alive "$pid" && echo alive || echo dead\n'
    )
    start = time.monotonic()
    proc = bash_lib(snippet, base_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "dead"
    assert "sending KILL" in proc.stderr
    assert time.monotonic() - start < 15


def test_engine_launcher_native_and_docker(base_env):
    env = dict(base_env, SGLANG_PYTHON="/envs/sglang/bin/python", ENGINE_PYTHON="/envs/any/bin/python", PORT="31000")
    proc = bash_lib(
        'lib::engine_launcher sglang; echo "${LIB_LAUNCHER[*]}"; '
        'lib::engine_launcher vllm A=1; echo "${LIB_LAUNCHER[*]}"; '
        'RUNTIME=docker CONTAINER_NAME=c1 CONTAINER_PYTHON=python3 lib::engine_launcher sglang B=2; '
        'echo "${LIB_LAUNCHER[*]}"',
        env,
    )
    assert proc.stdout.splitlines() == [
        "/envs/sglang/bin/python",
        "env A=1 /envs/any/bin/python",
        "docker exec --env B=2 --env SSKJ_SERVER_TAG=sskj-31000 c1 python3",
    ]
