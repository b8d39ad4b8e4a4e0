"""Run one of this CLI's commands inside the current process, as a separate `sskj-results` would run.

The run loop's commands (`config`, `phase-begin`, `step`, `phase-end`) are
the shell's former sequences of calls done in one process: each part runs
the very command it replaces, with the same messages on stderr and the same
exit status, so one process start does the work of several.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Iterator, Mapping, Optional, Sequence

import click


class Captured(io.TextIOWrapper):
    """A text stdout whose bytes (str writes and .buffer writes alike) are kept."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="surrogateescape", write_through=True)

    def value(self) -> bytes:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()


@contextlib.contextmanager
def environment(updates: Mapping[str, Optional[str]]) -> Iterator[None]:
    """os.environ with these keys set (None: removed), restored afterwards."""
    saved = {key: os.environ.get(key) for key in updates}
    try:
        for key, value in updates.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def invoke(args: Sequence[str], capture: bool = False) -> tuple[int, bytes]:
    """Run `sskj-results ARGS...` here: (exit status, stdout bytes when captured, else b"").

    Messages go to this process's stderr; without capture stdout is this
    process's stdout too. Errors are shown exactly as the command's own
    process would show them.
    """
    from . import main

    out = Captured() if capture else None
    status = 0
    with contextlib.redirect_stdout(out) if out is not None else contextlib.nullcontext():
        try:
            main.main(list(args), prog_name="sskj-results", standalone_mode=False)
        except click.exceptions.Exit as exc:
            status = exc.exit_code
        except click.ClickException as exc:
            exc.show(file=sys.stderr)
            status = exc.exit_code
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            status = 1
        except SystemExit as exc:
            code = exc.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
    sys.stdout.flush()
    return status, out.value() if out is not None else b""


def nul_words(data: bytes) -> list[str]:
    """The words of NUL-terminated output (server-cmd, client-cmd, records of env)."""
    if not data:
        return []
    text = data.decode("utf-8", "surrogateescape")
    return text[:-1].split("\0") if text.endswith("\0") else text.split("\0")
