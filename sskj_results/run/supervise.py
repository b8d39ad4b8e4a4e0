"""Run the bench client while watching the server (`sskj-results run-client`).

The client runs as a child in its own process group. Every poll interval the
server process is checked; when it is gone, the client's group is stopped
(TERM, then KILL after a grace period) instead of waiting for the client to
give up. After the client ends, the server log written since the scenario
started is searched for an out-of-memory message; a server failure (OOM or
death) is recorded in skipped_after_oom.csv with the log excerpt. The
client's resource use goes to a side file, client_stats/<stem>.json:

    {"stem", "exit_code", "wall_s", "user_cpu_s", "system_cpu_s",
     "max_rss_kib", "stopped_because_server_died", "server_failure",
     "started_at", "ended_at"}

user/system CPU seconds are the client process's own (and of its waited-for
children), from wait4(2); server_failure is null, "oom" or "server_died".

With the engine's port, the client runs only when every socket listening
there belongs to the engine's process tree (`ownership.check`), and its raw
file is kept only when that still holds after it: otherwise
`EngineOwnershipError` names the port and the holder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from datetime import datetime
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Optional

from ..contract.errors import ConfigError, EngineOwnershipError
from ..contract.io import atomic_write_text
from ..contract.times import now_iso
from .specs import GridRow

DEFAULT_OOM_PATTERN = r"out of memory|OutOfMemoryError|OOM error"
EXIT_OK, EXIT_CLIENT_FAILED, EXIT_SERVER_FAILED, EXIT_NOT_OUR_ENGINE = 0, 1, 3, 4


def require_owner(port: Optional[int], server_pid: Optional[int], tag: Optional[str], when: str) -> Optional[str]:
    """Raise EngineOwnershipError when another process holds the engine's port; the reason when it cannot be proven."""
    if port is None or server_pid is None:
        return None
    from .ownership import check

    found = check(port, server_pid, tag)
    if found.ok is False:
        raise EngineOwnershipError(f"{when}: {found.message}")
    return found.message if found.ok is None else None


@dataclass
class ClientStats:
    stem: str
    exit_code: Optional[int]
    wall_s: float
    user_cpu_s: Optional[float]
    system_cpu_s: Optional[float]
    max_rss_kib: Optional[int]
    stopped_because_server_died: bool
    server_failure: Optional[str]
    started_at: str
    ended_at: str


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def log_since(path: Optional[Path], offset: int) -> str:
    if path is None or not path.is_file():
        return ""
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8", errors="replace")


def server_failure(log_text: str, server_alive: bool, pattern: str) -> tuple[Optional[str], str]:
    """(reason, excerpt): "oom" with the first 5 matching lines, "server_died" with the last 20 lines, or (None, "")."""
    try:
        oom = re.compile(pattern, re.I)
    except re.error as exc:
        raise ConfigError(f"OOM_PATTERN {pattern!r} is not a valid regular expression: {exc}") from None
    lines = log_text.splitlines()
    matches = [line for line in lines if oom.search(line)]
    if matches:
        return "oom", "\n".join(matches[:5])
    if not server_alive:
        return "server_died", "\n".join(lines[-20:])
    return None, ""


def stop_group(pgid: int, grace_s: float) -> None:
    """TERM the process group, KILL it after grace_s (nothing when no such group exists)."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_exit(pid: int, timeout_s: float) -> None:
    """Sleep until the child exits or timeout_s passes, whichever comes first (the server is checked between):
    the client's end is seen at once, not up to a poll interval late."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return
            time.sleep(min(0.05, timeout_s))
        return
    try:
        select.select([fd], [], [], timeout_s)
    finally:
        os.close(fd)


def run_client(argv: list[str], *, run_dir: Path, stem: str, row: GridRow, server_pid: Optional[int],
               server_log: Optional[Path], log_offset: int, client_log: Optional[Path], raw: Optional[Path],
               oom_pattern: str = DEFAULT_OOM_PATTERN, poll_s: float = 1.0, grace_s: float = 5.0,
               port: Optional[int] = None, tag: Optional[str] = None) -> tuple[int, ClientStats]:
    """Run argv, watch the server, record the outcome; return (exit status for the shell, stats).
    With port: raises EngineOwnershipError (raw file removed) when another process holds it, before or after."""
    if server_pid is None or pid_alive(server_pid):
        require_owner(port, server_pid, tag, f"before the client of {stem}")
    started_at, start = now_iso(), time.monotonic()
    stopped = False
    status: Optional[int] = None
    user = system = None
    rss: Optional[int] = None
    if server_pid is None or pid_alive(server_pid):
        out = client_log.open("ab") if client_log else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as exc:
            raise ConfigError(f"cannot start the bench client {argv[0]}: {exc.strerror or exc}") from None
        finally:
            if client_log and not isinstance(out, int):
                out.close()

        def forward(signum: int, frame: Optional[FrameType]) -> None:
            stop_group(proc.pid, grace_s)
            raise SystemExit(128 + signum)

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
        try:
            while True:
                pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    status = os.waitstatus_to_exitcode(wait_status)
                    user, system, rss = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
                    proc.returncode = status
                    break
                if server_pid is not None and not pid_alive(server_pid):
                    stopped = True
                    stop_group(proc.pid, grace_s)
                    _, wait_status, usage = os.wait4(proc.pid, 0)
                    status = os.waitstatus_to_exitcode(wait_status)
                    user, system, rss = usage.ru_utime, usage.ru_stime, usage.ru_maxrss
                    proc.returncode = status
                    break
                _wait_exit(proc.pid, poll_s)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    alive = server_pid is None or pid_alive(server_pid)
    if alive:
        try:
            require_owner(port, server_pid, tag, f"after the client of {stem}")
        except EngineOwnershipError:
            if raw is not None:
                raw.unlink(missing_ok=True)
            raise
    reason, excerpt = server_failure(log_since(server_log, log_offset), alive, oom_pattern)
    stats = ClientStats(stem=stem, exit_code=status, wall_s=round(time.monotonic() - start, 3),
                        user_cpu_s=user, system_cpu_s=system, max_rss_kib=rss, stopped_because_server_died=stopped,
                        server_failure=reason, started_at=started_at,
                        # to the millisecond: the end of the benchmark window of the energy figures (ingest/power.py)
                        ended_at=datetime.now().astimezone().isoformat(timespec="milliseconds"))
    stats_dir = run_dir / "client_stats"
    stats_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(stats_dir / f"{stem}.json", json.dumps(asdict(stats), indent=2) + "\n")
    if reason is not None:
        if raw is not None:
            raw.unlink(missing_ok=True)
        from .plan import record_skip

        record_skip(run_dir, row, reason, excerpt)
        return EXIT_SERVER_FAILED, stats
    if status != 0 or raw is not None and (not raw.is_file() or raw.stat().st_size == 0):
        if raw is not None:
            raw.unlink(missing_ok=True)
        return EXIT_CLIENT_FAILED, stats
    return EXIT_OK, stats


def wait_for_health(url: str, pid: int, timeout_s: float, interval_s: float = 1.0, port: Optional[int] = None,
                    tag: Optional[str] = None) -> tuple[bool, str]:
    """Poll GET url until it answers 2xx, the process dies, or timeout_s passes: (healthy, why not).
    With port, healthy also means that every listener on it is the engine's (else EngineOwnershipError)."""
    import urllib.error
    import urllib.request

    start = time.monotonic()
    while True:
        if not pid_alive(pid):
            why = f"server process {pid} exited before it became healthy"
            if port is not None:
                from .ownership import check

                held = check(port, pid, tag)
                if held.ok is False and held.holders:
                    raise EngineOwnershipError(f"{why}: {held.message}")
            return False, why
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (a local http URL from the shell)
                if 200 <= response.status < 300:
                    unproven = require_owner(port, pid, tag, "at health")
                    note = f" (engine ownership not proven: {unproven})" if unproven else ""
                    return True, f"server healthy after {round(time.monotonic() - start)}s{note}"
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() - start >= timeout_s:
            return False, f"server not healthy after {round(timeout_s)}s"
        time.sleep(interval_s)
