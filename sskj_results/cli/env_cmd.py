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
@click.option("--platform/--no-platform", "platform", default=None,
              help="Check the keys of a platform file (default: when FILE is platforms/<name>.env).")
@handle_errors
def env(file: str, protect: tuple[str, ...], platform: bool | None) -> None:
    """Parse the KEY=VALUE config FILE without executing anything; print what to export.

    Output: one NUL-terminated KEY=VALUE record per assignment, in file
    order, for the shell to `declare -gx` (read with `read -r -d ''`).
    References (${NAME}, ${NAME:-default}, $NAME) see this process's
    environment and the file's earlier lines. Variables named in
    $SSKJ_ENV_PRESET (newline-separated: what the caller's environment set
    before any file was loaded; default: every variable of the environment)
    keep their value unless named by --protect; each such override is
    reported on stderr unless $SSKJ_QUIET_OVERRIDES is set. Errors name
    file:line (exit 1): syntax, variables that change how programs start
    (PATH, LD_PRELOAD, BASH_ENV, PYTHONPATH, ...), and for platform files
    every missing or unknown key. Startup variables let through by the
    file's ENGINE_STARTUP_VARS are added to SSKJ_STARTUP_VARS
    ("KEY=VALUE" words), which the run records.
    """
    from ..catalog.engines import python_keys
    from ..contract.envfile import check_platform_keys, parse_env_file
    from ..contract.errors import UsageError

    for key in protect:
        if not _NAME.fullmatch(key):
            raise UsageError(f"--protect: invalid variable name '{key}'")
    environ = dict(os.environ)
    listed = environ.pop(PRESET_VARIABLE, None)
    preset = set(environ) if listed is None else {name for name in listed.split("\n") if name}
    result = parse_env_file(file, environ, preset, set(protect))
    path = os.path.abspath(file)
    if platform is None:
        platform = os.path.basename(os.path.dirname(path)) == "platforms" and path.endswith(".env")
    if platform:
        check_platform_keys(result, file, {key for key, _, _ in result.startup}, set(python_keys()))
    if result.startup:
        import shlex

        words = shlex.split(environ.get("SSKJ_STARTUP_VARS", ""))
        words += [f"{key}={value}" for key, value, _ in result.startup if f"{key}={value}" not in words]
        result.assignments.append(("SSKJ_STARTUP_VARS", shlex.join(words)))
    if not environ.get(QUIET_VARIABLE):
        for override in result.overrides:
            _notice(override.message)
    records = b"".join(f"{key}={value}\0".encode("utf-8", "surrogateescape") for key, value in result.assignments)
    sys.stdout.buffer.write(records)
    sys.stdout.buffer.flush()
