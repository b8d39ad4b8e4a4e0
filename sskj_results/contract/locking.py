"""Two sskj-results commands writing the same run: advisory locks, unique temporary names,
a directory swap that never leaves the target missing, and the leftovers of killed writers.

* `locked(target)` holds an exclusive ``fcntl.flock`` on the run directory itself (the
  directory holding target when it is a file) for a whole read-modify-write. Re-entrant
  within a process (parse holds the run's lock, save_run asks for it again).
* `temp_prefix(name)` names temporaries ``.<name>.<pid>@<host>.<random>.tmp`` (or ``.old``),
  so no two writers share one and the next writer knows whose a leftover is.
* `clean_stale(directory, name)` removes the leftovers of writers that are gone (a dead pid
  on this host; another host's after a day) and says what it removed.
* `swap_dirs(new, target)` exchanges two directories in one step (renameat2
  RENAME_EXCHANGE) where the system has it, else moves the target to a backup and the new
  one in; `recover_backup(target)` puts a backup back when a writer died between the two.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional

_held: dict[str, list[int]] = {}  # locked directory -> [fd, depth]
_FOREIGN_AGE_S = 86400.0  # another host's leftover: its pid cannot be checked from here


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"


def lock_dir(directory: Path) -> Path:
    """The directory locked for `directory`: itself, symbolic links resolved (a run reached
    through a link shares its lock)."""
    return Path(os.path.realpath(directory))


def _open_dir(path: Path) -> int:
    path.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))


def _flock(fd: int, path: Path) -> int:
    """Lock fd exclusively; where a directory cannot be locked (NFS locks need a file open for
    writing) a `.sskj.lock` file inside it is locked instead. Returns the fd that holds the lock."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    except OSError as exc:
        if exc.errno not in (errno.EBADF, errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP):
            raise
    lock = os.open(path / ".sskj.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
    except BaseException:
        os.close(lock)
        raise
    return lock


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock (``fcntl.flock``) on a directory (created if missing) until
    the block ends; re-entrant within a process. No lock file is left anywhere.

    A directory replaced while we waited (import-legacy swaps a run directory) is locked again
    under its new identity. Where the directory cannot be opened (missing permission), nothing
    can be written there either: the block runs unlocked and its own write reports the error.
    """
    path = lock_dir(directory)
    key = str(path)
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    while True:
        try:
            fd = _open_dir(path)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                yield
                return
            raise
        try:
            holder = _flock(fd, path)
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except OSError:
            same = False
        if same:
            break
        for handle in {fd, holder}:  # replaced meanwhile: lock the directory now at that path
            os.close(handle)
    _held[key] = [fd, 1]
    try:
        yield
    finally:
        del _held[key]
        for handle in {fd, holder}:
            os.close(handle)  # closing releases the lock


def temp_prefix(name: str) -> str:
    """`.<name>.<pid>@<host>.`: the start of a temporary's name (tempfile adds a random part and the suffix)."""
    return f".{name}.{os.getpid()}@{_host()}."


_TEMP = re.compile(r"\.(?:(\d+)@([A-Za-z0-9-]+)\.)?[A-Za-z0-9_]{6,16}\.(?:tmp|old)$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def clean_stale(directory: Path, name: str) -> list[str]:
    """Remove the temporaries of `name` (`.<name>.….tmp` / `.old`) left in directory by writers that
    are gone; returns their names. Call it holding the target's lock.

    A leftover of a live process is kept; one of another host is removed after a day; one
    without an owner (written before temporaries were named after their writer, or the fixed
    `.<name>.tmp` / `.<name>.old` of old imports) is removed, since every writer of the
    target holds its lock.
    """
    removed: list[str] = []
    start = f".{name}."
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    host, now = _host(), time.time()
    for entry in entries:
        if not entry.name.startswith(start):
            continue
        rest = entry.name[len(name) + 1:]
        if rest in (".tmp", ".old"):
            owner_gone = True
        else:
            m = _TEMP.fullmatch(rest)
            if m is None:
                continue
            if m.group(1) is None:
                owner_gone = True
            elif m.group(2) == host:
                owner_gone = int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1)))
            else:
                try:
                    owner_gone = now - entry.stat(follow_symlinks=False).st_mtime > _FOREIGN_AGE_S
                except OSError:
                    owner_gone = False
        if not owner_gone or entry.name.endswith(".old") and not Path(directory, name).exists():
            continue  # a backup whose target is missing is restored by recover_backup, never removed
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(entry.name)
        except FileNotFoundError:
            pass
    return sorted(removed)


def backups(target: Path) -> list[Path]:
    """Backups of target (`.<name>.….old`), newest first."""
    start = f".{target.name}."
    try:
        found = [Path(e.path) for e in os.scandir(target.parent)
                 if e.name.startswith(start) and e.name.endswith(".old") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True)


def recover_backup(target: Path) -> Optional[Path]:
    """When target is missing and a backup of it is left (a writer killed between moving the old
    directory away and the new one in), move the backup back; returns the backup restored."""
    if target.exists() or target.is_symlink():
        return None
    for backup in backups(target):
        try:
            backup.rename(target)
            return backup
        except OSError:
            continue
    return None


_BACKUP = re.compile(r"\.(.+)\.\d+@[A-Za-z0-9-]+\.[A-Za-z0-9_]{6,16}\.old")


def recover_backups(directory: Path) -> list[Path]:
    """recover_backup for every backup in directory whose target is missing; returns the targets restored."""
    try:
        names = [m.group(1) for e in os.scandir(directory) if (m := _BACKUP.fullmatch(e.name))]
    except OSError:
        return []
    return [directory / name for name in sorted(set(names)) if recover_backup(directory / name) is not None]


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_libc: Optional[ctypes.CDLL] = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap a and b in one step (renameat2 RENAME_EXCHANGE); False where the system cannot."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        func = _libc.renameat2
    except (OSError, AttributeError):
        return False
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if func(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_dirs(new: Path, target: Path) -> None:
    """Put directory new in target's place and remove the old target; call it holding target's lock.

    At every instant target names a complete directory (the old one, then the new one):
    with RENAME_EXCHANGE in one step; without it the old directory is renamed to a
    backup first, and a writer killed before the second rename leaves the backup, which
    recover_backup (run by the next writer) moves back.
    """
    if _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # holds the old directory now
        return
    backup = Path(tempfile.mkdtemp(prefix=temp_prefix(target.name), suffix=".old", dir=target.parent))
    os.rename(target, backup)  # replaces the empty directory just made
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)
