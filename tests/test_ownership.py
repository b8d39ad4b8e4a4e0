"""Our engine or nothing: the listeners of the engine's port belong to the process tree the run started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.errors import EngineOwnershipError
from sskj_results.run.ownership import check, listeners
from sskj_results.run.plan import GridRow
from sskj_results.run.supervise import EXIT_OK, run_client, wait_for_health

FAKE = Path(__file__).resolve().parent / "fakes" / "fake_openai_server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def healthy(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing healthy on {port}")


class Engines:
    """Fake engines started by a test, each in its own session (as lib::start_server), stopped after it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, port: int, *extra: str, wrapper: bool = False, mark: str = "") -> subprocess.Popen[bytes]:
        argv = [sys.executable, str(FAKE), "--port", str(port), *extra]
        if mark:
            argv = ["env", f"SSKJ_ENGINE_MARK={mark}", *argv]
        if wrapper:  # a launcher that stays the parent (as `docker exec`, `env`, a shell script)
            argv = ["bash", "-c", '"$@"; exit $?', "launcher", *argv]
        log = (self.tmp / f"engine{len(self.procs)}.log").open("ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


@pytest.fixture
def engines(tmp_path: Path) -> Iterator[Engines]:
    made = Engines(tmp_path)
    yield made
    made.stop()


def test_an_engine_alone_on_its_port_is_ours_also_behind_a_launcher(engines: Engines) -> None:
    port = free_port()
    engine = engines.start(port, "--reuse-port", wrapper=True)
    healthy(port)
    found = check(port, engine.pid)
    assert found.ok is True, found.message
    assert found.message == f"port {port}: every listener (1) belongs to the engine (pid {engine.pid})"


def test_a_second_engine_sharing_the_port_is_named_for_either_run(engines: Engines) -> None:
    port = free_port()
    first = engines.start(port, "--reuse-port")
    healthy(port)
    second = engines.start(port, "--reuse-port")
    deadline = time.monotonic() + 20
    while len(listeners(port)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(listeners(port)) == 2  # SO_REUSEPORT: both bound, the kernel splits the connections
    found = check(port, first.pid)
    assert found.ok is False and list(found.holders) == [second.pid]
    assert found.message.startswith(f"port {port} is held by pid {second.pid} (")
    assert "fake_openai_server.py" in found.message
    assert found.message.endswith(f", not by the engine this run started (pid {first.pid})")
    assert check(port, second.pid).holders.keys() == {first.pid}


def test_nothing_listening_here_cannot_be_proven_either_way(engines: Engines) -> None:
    port = free_port()  # an engine on another host (SERVER_HOST) or in a container's own network
    sleeper = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        found = check(port, sleeper.pid)
        assert found.ok is None and found.message == (
            f"port {port}: nothing listens on it in this host's network namespace (an engine on another host or "
            "in a container's own network): ownership cannot be proven here")
    finally:
        sleeper.kill()
        sleeper.wait()


def test_health_from_a_foreign_engine_is_refused_naming_it(engines: Engines) -> None:
    port = free_port()
    foreign = engines.start(port)
    healthy(port)
    ours = subprocess.Popen(["sleep", "30"], start_new_session=True)  # our engine, still loading
    try:
        with pytest.raises(EngineOwnershipError) as err:
            wait_for_health(f"http://127.0.0.1:{port}/health", ours.pid, 10, interval_s=0.1, port=port)
        assert str(err.value).startswith(f"at health: port {port} is held by pid {foreign.pid} (")
        # without --port the old check is fooled: "an" engine answers
        assert wait_for_health(f"http://127.0.0.1:{port}/health", ours.pid, 10)[0] is True
    finally:
        ours.kill()
        ours.wait()


def test_an_engine_that_could_not_bind_fails_in_one_line_naming_the_port_and_the_holder(
        engines: Engines, tmp_path: Path) -> None:
    port = free_port()
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen()
    try:
        ours = engines.start(port)  # no SO_REUSEPORT: its bind fails and it exits
        result = CliRunner().invoke(main, ["wait-health", f"http://127.0.0.1:{port}/health", "--pid", str(ours.pid),
                                           "--timeout", "30", "--port", str(port)])
        assert result.exit_code == 1
        lines = result.output.splitlines()
        assert len(lines) == 1
        assert lines[0].startswith(f"error: server process {ours.pid} exited before it became healthy: port {port} "
                                   f"is held by pid {os.getpid()} (")
    finally:
        holder.close()


def test_run_client_refuses_a_scenario_on_a_shared_port_and_keeps_nothing(engines: Engines, tmp_path: Path) -> None:
    port = free_port()
    ours = engines.start(port, "--reuse-port")
    healthy(port)
    client = tmp_path / "client.py"
    marker = tmp_path / "client_ran"
    raw = tmp_path / "raw.jsonl"
    client.write_text(f"open({str(marker)!r}, 'w').write('x'); open({str(raw)!r}, 'w').write('{{}}')\n")
    argv = [sys.executable, str(client)]
    status, _ = run_client(argv, run_dir=tmp_path, stem="s", row=GridRow(1, 16, 8), server_pid=ours.pid,
                           server_log=None, log_offset=0, client_log=None, raw=raw, port=port)
    assert status == EXIT_OK and marker.exists() and raw.exists()
    marker.unlink()
    intruder = engines.start(port, "--reuse-port")
    deadline = time.monotonic() + 20
    while len(listeners(port)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    result = CliRunner().invoke(main, ["run-client", str(tmp_path), "--stem", "s", "--concurrency", "1",
                                       "--input-len", "16", "--output-len", "8", "--server-pid", str(ours.pid),
                                       "--port", str(port), "--raw", str(raw), "--", *argv])
    assert result.exit_code == 4
    assert result.output == (f"error: before the client of s: port {port} is held by pid {intruder.pid} "
                             f"({sys.executable} {FAKE} --port {port} --reuse-port), not by the engine this run "
                             f"started (pid {ours.pid})\n")
    assert not marker.exists()  # the client never ran


def test_engine_owner_without_a_pid_names_the_holder(engines: Engines) -> None:
    port = free_port()
    assert CliRunner().invoke(main, ["engine-owner", "--port", str(port)]).output == f"port {port}: free\n"
    engine = engines.start(port)
    healthy(port)
    result = CliRunner().invoke(main, ["engine-owner", "--port", str(port)])
    assert result.exit_code == 1
    assert result.output == f"error: port {port} is held by pid {engine.pid} ({sys.executable} {FAKE} --port {port})\n"


def test_port_auto_takes_the_first_free_port_from_the_platform_default() -> None:
    from sskj_results.run.launch import run_settings

    start = free_port()
    with socket.socket() as held:
        held.bind(("127.0.0.1", start))
        held.listen()
        values, problems = run_settings({"PORT": "auto", "DEFAULT_PORT": str(start), "MODEL_PATH": "m"})
    assert problems == []
    assert start < int(values["PORT"]) < start + 200
    values, _ = run_settings({"PORT": "18123", "DEFAULT_PORT": str(start), "MODEL_PATH": "m"})
    assert values["PORT"] == "18123"  # a number is taken as it is


def test_a_rank_outside_the_tree_with_the_runs_mark_is_ours_another_marks_is_not(engines: Engines) -> None:
    # srun starts a multi-node engine's ranks outside the launcher's tree; they inherit its SSKJ_ENGINE_MARK
    port = free_port()
    mark = f"port={port};orch=1;run=/r1"
    launcher = subprocess.Popen(["env", f"SSKJ_ENGINE_MARK={mark}", "sleep", "60"], start_new_session=True)
    try:
        rank = engines.start(port, "--reuse-port", mark=mark)
        healthy(port)
        assert check(port, launcher.pid).ok is True
        other = engines.start(port, "--reuse-port", mark=f"port={port};orch=2;run=/r2")
        deadline = time.monotonic() + 20
        while len(listeners(port)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        found = check(port, launcher.pid)
        assert found.ok is False and list(found.holders) == [other.pid] and rank.pid not in found.holders
    finally:
        launcher.kill()
        launcher.wait()


# ---------------------------------------------------------------- docker platforms: the per-port tag, the unprovable

FAKE_DOCKER = Path(__file__).resolve().parent / "fakes" / "bin" / "docker"


def test_a_server_inside_a_container_is_ours_by_its_ports_tag_alone(tmp_path: Path) -> None:
    """As on a Docker platform: the host-side `docker exec` is the engine process the run started; the server it
    runs is no descendant of it (the container's), and only its SSKJ_SERVER_TAG (per port) says it is ours."""
    port, pidfile = free_port(), tmp_path / "server.pid"
    env = dict(os.environ, FAKE_DOCKER_DETACH="1", FAKE_DOCKER_PIDFILE=str(pidfile))
    client = subprocess.Popen([str(FAKE_DOCKER), "exec", "--env", f"SSKJ_SERVER_TAG=sskj-{port}", "box",
                               sys.executable, str(FAKE), "--port", str(port)], env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        healthy(port)
        server = int(pidfile.read_text())
        assert server != client.pid
        assert check(port, client.pid, tag=f"sskj-{port}").ok is True
        # without the tag, or with another port's, the server is someone else's
        for tag in (None, f"sskj-{port + 1}"):
            other = check(port, client.pid, tag=tag)
            assert other.ok is False and server in other.holders, other.message
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        client.wait(timeout=10)


def _fake_proc(tmp_path: Path, port: int, engine_pid: int) -> Path:
    """A /proc where one socket listens on PORT (uid 0) and no visible process holds it: the container's
    processes this user cannot inspect."""
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    row = f"   0: 00000000:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 987654 1\n"
    (proc / "net" / "tcp").write_text(header + row)
    (proc / "net" / "tcp6").write_text(header)
    engine = proc / str(engine_pid)
    (engine / "fd").mkdir(parents=True)
    (engine / "stat").write_text(f"{engine_pid} (docker) S 1 {engine_pid} {engine_pid} 0 -1\n")
    (engine / "environ").write_bytes(b"PATH=/usr/bin\0")
    (engine / "cmdline").write_bytes(b"docker\0exec\0box\0")
    return proc


def test_a_containers_listener_this_user_cannot_inspect_is_unprovable_not_foreign(tmp_path: Path) -> None:
    proc = _fake_proc(tmp_path, 18000, 4242)
    unprovable = check(18000, 4242, tag="sskj-18000", proc=proc)
    assert unprovable.ok is None
    assert unprovable.message == ("port 18000: 1 listener(s) of processes this user cannot inspect (the engine's "
                                  "container runs them as another user or in its own namespace): ownership cannot "
                                  "be proven from the host")
    # a native engine (no container, no tag): a listener nobody visible holds is someone else's
    native = check(18000, 4242, proc=proc)
    assert native.ok is False and "a process of user root this user cannot inspect (socket inode 987654)" in native.message
