from __future__ import annotations

import os
import re
import sys
import time

import click

from .common import handle_errors

PRESET_VARIABLE = "SSKJ_ENV_PRESET"
QUIET_VARIABLE = "SSKJ_QUIET_OVERRIDES"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _notice(message: str) -> None:
    """One line on stderr in the format of the shell's lib::info."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    sys.stderr.write(f"[{stamp}] [INFO] {message}\n")


@click.command("env")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--protect", "protect", multiple=True, metavar="KEY",
              help="Always take KEY from the file, even when the environment set it (repeatable).")
@handle_errors
def env(file: str, protect: tuple[str, ...]) -> None:
    """Parse the KEY=VALUE config FILE without executing anything; print what to export.

    Output: one NUL-terminated KEY=VALUE record per assignment, in file
    order, for the shell to `declare -gx` (read with `read -r -d ''`).
    References (${NAME}, ${NAME:-default}, $NAME) see this process's
    environment and the file's earlier lines. Variables named in
    $SSKJ_ENV_PRESET (newline-separated: what the caller's environment set
    before any file was loaded; default: every variable of the environment)
    keep their value unless named by --protect; each such override is
    reported on stderr unless $SSKJ_QUIET_OVERRIDES is set. Errors name
    file:line (exit 1).
    """
    from ..envfile import parse_env_file
    from ..errors import UsageError

    for key in protect:
        if not _NAME.fullmatch(key):
            raise UsageError(f"--protect: invalid variable name '{key}'")
    environ = dict(os.environ)
    listed = environ.pop(PRESET_VARIABLE, None)
    preset = set(environ) if listed is None else {name for name in listed.split("\n") if name}
    result = parse_env_file(file, environ, preset, set(protect))
    if not environ.get(QUIET_VARIABLE):
        for override in result.overrides:
            _notice(override.message)
    records = b"".join(f"{key}={value}\0".encode("utf-8", "surrogateescape") for key, value in result.assignments)
    sys.stdout.buffer.write(records)
    sys.stdout.buffer.flush()
