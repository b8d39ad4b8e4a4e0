"""A progress line on stderr for work that lasts (a long import, a report of many runs).

Drawn only when stderr is a terminal and the work has already taken DELAY_S
(a quick command prints nothing more); redrawn in place at most every
REDRAW_S; cleared when the work ends, so what the command prints after it
stays as it was. Piped or redirected (CI logs, `2>file`), nothing is drawn.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Any, Callable, Optional, TextIO

DELAY_S = 2.0
REDRAW_S = 0.1
BAR = 24


class Progress:
    """`progress(done, total, item)` callbacks drawn as `label [#####.....] done/total item`."""

    def __init__(self, label: str, stream: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic,
                 delay_s: float = DELAY_S) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.started = clock()
        self.delay_s = delay_s
        self.drawn_at: Optional[float] = None
        self.width = 0
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty and isatty())

    def __call__(self, done: int, total: int, item: str = "") -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.started < self.delay_s or (self.drawn_at is not None and now - self.drawn_at < REDRAW_S
                                                 and done < total):
            return
        filled = BAR * done // total if total else BAR
        text = f"{self.label} [{'#' * filled}{'.' * (BAR - filled)}] {done}/{total} {item}".rstrip()
        columns = shutil.get_terminal_size((80, 24)).columns - 1
        text = text[:columns]
        self.stream.write("\r" + text + " " * max(0, self.width - len(text)))
        self.stream.flush()
        self.width = len(text)
        self.drawn_at = now

    def close(self) -> None:
        """Clear the line (when one was drawn)."""
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
