"""SHA-256, size and line count of raw files (one file, or many on several threads)."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ..contract.io import open_checked


def sha256_file(path: Path, chunk: int = 1 << 20) -> tuple[str, int]:
    """SHA-256 hex digest and size of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    buffer = bytearray(chunk)
    view = memoryview(buffer)
    with open_checked(path, "raw output") as handle:
        while True:
            n = handle.readinto(buffer)
            if not n:
                break
            digest.update(view[:n])
            size += n
    return digest.hexdigest(), size


class FileHashes:
    """`sha256_file` of each path, computed on helper threads from construction on
    (reading and hashing release the GIL, so the caller can do other work);
    `result()` waits for them."""

    def __init__(self, paths: Sequence[Path], workers: Optional[int] = None) -> None:
        self.paths = list(paths)
        self._results: list[Optional[tuple[str, int]]] = [None] * len(self.paths)
        self._failures: dict[int, BaseException] = {}
        self._indexes = iter(range(len(self.paths)))  # shared; next() is atomic under the GIL
        n = max(0, min(workers or min(os.cpu_count() or 1, 4), len(self.paths)))
        self._threads = [threading.Thread(target=self._work, name="sskj-sha256", daemon=True) for _ in range(n)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        for i in self._indexes:
            try:
                self._results[i] = sha256_file(self.paths[i])
            except BaseException as exc:  # re-raised in the caller's thread
                self._failures[i] = exc

    def result(self) -> list[tuple[str, int]]:
        """(hex digest, size) per path, in order; the first path that could not be
        read raises its OSError, as a loop over `sha256_file` would."""
        self._work()  # the caller helps with what is left
        for thread in self._threads:
            thread.join()
        if self._failures:
            raise self._failures[min(self._failures)]
        return [r for r in self._results if r is not None]


def sha256_files_each(paths: Sequence[Path], workers: Optional[int] = None) -> list[Union[tuple[str, int], OSError]]:
    """Like sha256_files, but a path that could not be read gives its OSError in
    its place instead of ending the whole batch (one file's problem is its own)."""
    hashes = FileHashes(paths, workers)
    hashes._work()
    for thread in hashes._threads:
        thread.join()
    out: list[Union[tuple[str, int], OSError]] = []
    for i, result in enumerate(hashes._results):
        failure = hashes._failures.get(i)
        if failure is not None:
            if not isinstance(failure, OSError):
                raise failure
            out.append(failure)
        else:
            assert result is not None
            out.append(result)
    return out


def sha256_files(paths: Sequence[Path], workers: Optional[int] = None) -> list[tuple[str, int]]:
    """`sha256_file` of each path, in order, on up to `workers` threads (default:
    the CPU count, at most 4)."""
    return FileHashes(paths, workers).result()


def count_lines(path: Path) -> int:
    """Number of lines (a last line without a newline counts)."""
    lines = 0
    last = b"\n"
    with open_checked(path, "raw output") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (0 if last == b"\n" else 1)


class Digest:
    """SHA-256 of a file fed in order; big pieces are hashed on a helper
    thread, concurrently with whatever the caller does next (hashlib releases
    the GIL while it hashes)."""

    BIG = 1 << 20

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._thread: Optional[threading.Thread] = None

    def add(self, data: Any, background: bool = True) -> None:
        self.wait()
        if not background or len(data) < self.BIG:
            self._hash.update(data)
            return
        started = threading.Event()

        def run() -> None:
            started.set()
            self._hash.update(data)

        thread = threading.Thread(target=run, name="sskj-sha256", daemon=True)
        thread.start()
        started.wait()  # let the helper take the GIL once and enter update()
        self._thread = thread

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def hexdigest(self) -> str:
        self.wait()
        return self._hash.hexdigest()
