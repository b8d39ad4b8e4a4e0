"""The answer format of the run loop's commands: records the shell reads with `lib::read_records`.

A stream of NUL-terminated words, each record led by a one-character tag:

| tag | words after it | the shell does |
|---|---|---|
| `v` | NAME VALUE | `declare -gx NAME=VALUE` (exported: child scripts see it) |
| `l` | NAME VALUE | `declare -g NAME=VALUE` (this shell only) |
| `a` | NAME COUNT WORD... | NAME=(WORD...) (an array of this shell) |
| `#` | TEXT | prints TEXT as a line on stdout (a dry run's comment lines) |
| `$` | COUNT WORD... | prints the words as one shell-quoted line on stdout (a dry run's commands) |
| `!` | TEXT | prints TEXT as a line on stderr (messages of a command whose own stderr went elsewhere) |

Names are shell variable names; values are text without NUL (paths and
environment values cannot hold one). A dry run's plan travels as the words
of an array (`plan_words`) so the shell can print it where the run would act.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _word(text: str) -> bytes:
    if "\0" in text:
        raise ValueError(f"a NUL byte in {text[:40]!r}")
    return text.encode("utf-8", "surrogateescape") + b"\0"


class Records:
    """Records to hand to the shell, in order."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def _tagged(self, tag: str, words: Iterable[str]) -> None:
        self._buf += _word(tag)
        for word in words:
            self._buf += _word(word)

    @staticmethod
    def _check(name: str) -> str:
        if not _NAME.fullmatch(name):
            raise ValueError(f"not a shell variable name: {name!r}")
        return name

    def var(self, name: str, value: object, export: bool = True) -> None:
        self._tagged("v" if export else "l", (self._check(name), "" if value is None else str(value)))

    def array(self, name: str, words: Sequence[str]) -> None:
        self._tagged("a", (self._check(name), str(len(words)), *words))

    def comment(self, text: str) -> None:
        for line in text.splitlines() or [""]:
            self._tagged("#", (line,))

    def message(self, text: str) -> None:
        for line in text.splitlines():
            self._tagged("!", (line,))

    def command(self, argv: Sequence[str]) -> None:
        self._tagged("$", (str(len(argv)), *argv))

    def extend(self, other: "Records") -> None:
        self._buf += other._buf

    def __bytes__(self) -> bytes:
        return bytes(self._buf)


def plan_words(items: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """A dry run's plan as the words of one array: `#` TEXT for a line as it is, `$` COUNT WORD... for a
    command (its words quoted), `%` COUNT PART... for a line of literal text and words to quote in turn
    (run/dryplan.py: parts_line)."""
    words: list[str] = []
    for kind, value in items:
        if kind == "#":
            words += ["#", value[0]]
        elif kind in ("$", "%"):
            words += [kind, str(len(value)), *value]
        else:
            raise ValueError(f"not a plan item: {kind!r}")
    return words


def measured_args(argv: list[str]) -> list[str]:
    """The metadata command of a dry run as a measured run gives it: without `--config dry_run=true` and the
    patches a dry run records as not applied (apply_patches.sh records those it applies)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--config" and i + 1 < len(argv) and argv[i + 1].startswith(("dry_run=", "patches=")):
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out
