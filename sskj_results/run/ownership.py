"""Is what answers on the port the engine this run started? (`sskj-results engine-owner`; BENCHMARK_WORKFLOW.md, "Our engine or nothing")

A health answer proves that *an* engine listens, not that it is ours: a
second engine bound with SO_REUSEPORT (vLLM's API server sets it) shares the
port and the kernel splits the connections between them; a listener that
appears between the port check and our engine's bind answers for it. So the
run loop checks the sockets themselves, from /proc:

1. every socket listening on the port (``/proc/net/tcp``, ``/proc/net/tcp6``,
   state 0A) by inode;
2. the sockets of the engine's processes: the process the loop started, its
   process group (it leads one: ``setsid``) and every descendant
   (``/proc/<pid>/fd`` -> ``socket:[inode]``); when a listener is not theirs,
   also every visible process that carries the run's identity in its
   environment: the engine process's own ``SSKJ_ENGINE_MARK`` (port,
   orchestrator, run directory: the ranks `srun` starts outside the tree
   inherit it) or, on docker platforms, ``SSKJ_SERVER_TAG`` (``docker exec
   --env``; per port);
3. a listener outside that set belongs to someone else: the check fails and
   names the holder (pid and command when this user may read its
   ``/proc/<pid>/fd``, else the socket's uid).

What cannot be proven is said, never guessed: a server on another host
(`SERVER_HOST`) or inside a container with its own network namespace (the
host sees docker-proxy or nothing) gives ``ok`` None with the reason. Reads /proc only: no process is started.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

LISTEN = "0A"
PROC = Path("/proc")


@dataclass(frozen=True)
class Listener:
    """One socket listening on the port: its inode and owner uid (from /proc/net/tcp*)."""

    inode: int
    uid: int


@dataclass
class Ownership:
    """The answer: ok True (every listener is the engine's), False (another process holds one), None (unprovable)."""

    ok: Optional[bool]
    message: str
    holders: dict[int, str] = field(default_factory=dict)  # foreign pid -> command


def listeners(port: int, proc: Path = PROC) -> list[Listener]:
    """Every socket listening on TCP `port`, IPv4 and IPv6, of this network namespace."""
    found: list[Listener] = []
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10 or cols[3] != LISTEN:
                continue
            if int(cols[1].rsplit(":", 1)[1], 16) == port:
                found.append(Listener(inode=int(cols[9]), uid=int(cols[7])))
    return found


def _stat(pid: str, proc: Path) -> Optional[tuple[int, int]]:
    """(ppid, pgid) of a process, None when it is gone."""
    try:
        text = (proc / pid / "stat").read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[-1].split()
    return int(rest[1]), int(rest[2])


def engine_tree(pid: int, proc: Path = PROC) -> set[int]:
    """The engine process, the members of its process group and every descendant of either."""
    parents: dict[int, int] = {}
    tree = {pid}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        st = _stat(entry, proc)
        if st is None:
            continue
        parents[int(entry)] = st[0]
        if st[1] == pid:
            tree.add(int(entry))
    grown = True
    while grown:
        grown = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grown = True
    return tree


def marked(words: Iterable[bytes], proc: Path = PROC) -> set[int]:
    """Visible processes whose environment holds one of `words` (`NAME=VALUE`; readable environments only)."""
    want = set(words)
    found = set()
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            env = (proc / entry / "environ").read_bytes()
        except OSError:
            continue
        if want.intersection(env.split(b"\0")):
            found.add(int(entry))
    return found


def engine_mark(pid: int, proc: Path = PROC) -> Optional[bytes]:
    """The `SSKJ_ENGINE_MARK=...` word of the engine process's environment (the run's identity), if readable."""
    try:
        env = (proc / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    return next((w for w in env.split(b"\0") if w.startswith(b"SSKJ_ENGINE_MARK=")), None)


def socket_inodes(pids: Iterable[int], proc: Path = PROC) -> dict[int, int]:
    """socket inode -> pid, over the open files of the given processes (those this user may read)."""
    found: dict[int, int] = {}
    for pid in pids:
        fd_dir = proc / str(pid) / "fd"
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue
        for name in names:
            try:
                target = os.readlink(fd_dir / name)
            except OSError:
                continue
            if target.startswith("socket:["):
                found.setdefault(int(target[8:-1]), pid)
    return found


def command_of(pid: int, proc: Path = PROC) -> str:
    """A process's command line, shortened to one readable line."""
    try:
        words = (proc / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode("utf-8", "replace") for w in words if w)
    return text if len(text) <= 120 else text[:117] + "..."


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def check(port: int, engine_pid: Optional[int], tag: Optional[str] = None, proc: Path = PROC) -> Ownership:
    """Whether every socket listening on `port` belongs to the engine started as `engine_pid` (see the module);
    without an engine (None), who holds the port (ok True when nobody does)."""
    found = listeners(port, proc)
    if engine_pid is None and not found:
        return Ownership(True, f"port {port}: free")
    if not found:  # the engine on another host (SERVER_HOST, a remote head node) or in a container's namespace
        return Ownership(None, f"port {port}: nothing listens on it in this host's network namespace (an engine "
                               "on another host or in a container's own network): ownership cannot be proven here")
    ours = engine_tree(engine_pid, proc) if engine_pid is not None else set()
    mine = socket_inodes(ours, proc)
    strangers = [lst for lst in found if lst.inode not in mine]
    identities = [f"SSKJ_SERVER_TAG={tag}".encode()] if tag else []
    mark = engine_mark(engine_pid, proc) if engine_pid is not None else None
    if mark is not None:
        identities.append(mark)
    if strangers and identities:  # the run's identity: ranks started by srun, a server inside a container
        kin = marked(identities, proc) - ours
        ours |= kin
        mine.update(socket_inodes(kin, proc))
        strangers = [lst for lst in found if lst.inode not in mine]
    if not strangers:
        return Ownership(True, f"port {port}: every listener ({len(found)}) belongs to the engine (pid {engine_pid})")
    others = socket_inodes((int(e) for e in os.listdir(proc) if e.isdigit() and int(e) not in ours), proc)
    holders: dict[int, str] = {}
    unseen = []
    for lst in strangers:
        pid = others.get(lst.inode)
        if pid is None:
            unseen.append(lst)
        else:
            holders[pid] = command_of(pid, proc)
    if tag and not holders:  # a container's processes this user may not inspect (root's, another namespace)
        return Ownership(None, f"port {port}: {len(unseen)} listener(s) of processes this user cannot inspect "
                               "(the engine's container runs them as another user or in its own namespace): "
                               "ownership cannot be proven from the host")
    named = [f"pid {pid} ({cmd})" for pid, cmd in sorted(holders.items())]
    named += [f"a process of user {_user(lst.uid)} this user cannot inspect (socket inode {lst.inode})"
              for lst in unseen]
    whose = f", not by the engine this run started (pid {engine_pid})" if engine_pid is not None else ""
    return Ownership(False, f"port {port} is held by {', '.join(named)}{whose}", holders)


def free_port(start: int, host: str = "127.0.0.1", span: int = 200, proc: Path = PROC) -> int:
    """The first port from `start` on that nothing listens on and that binds now (`PORT=auto`); ConfigError when
    none of `span` ports is free. Another run may take it before our engine binds: the ownership checks see that."""
    import socket

    from ..contract.errors import ConfigError

    for port in range(start, min(start + span, 65536)):
        if listeners(port, proc):
            continue
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
        return port
    raise ConfigError(f"PORT=auto: no free port in {start}-{start + span - 1} on {host}; set PORT to a free port")
