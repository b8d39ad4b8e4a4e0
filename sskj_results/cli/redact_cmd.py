from __future__ import annotations

import sys

import click

from .common import handle_errors


@click.command("redact", context_settings={"ignore_unknown_options": True})
@click.option("--lines", is_flag=True, help="Redact stdin line by line instead of WORDS.")
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def redact(lines: bool, words: tuple[str, ...]) -> None:
    """Print WORDS with secret values replaced by <redacted>, NUL-terminated (or stdin lines with --lines).

    The rules are those of sskj_results/contract/redact.py, the one redaction used by
    every writer and by the shell for every command line it prints or logs.
    """
    from ..contract.redact import main

    sys.exit(main(["--lines"] if lines else ["--", *words]))


@click.command("check-names")
@click.argument("pairs", nargs=-1, required=True, metavar="KIND=VALUE...")
@handle_errors
def check_names(pairs: tuple[str, ...]) -> None:
    """Check names that become path segments (RUN_ID, EXPERIMENT, phases, ...): [A-Za-z0-9._-]+, not . or ..

    One error line per bad name (exit 1); nothing printed when all are fine.
    """
    from ..contract.errors import UsageError
    from ..contract.names import check_names as check

    parsed = []
    for pair in pairs:
        kind, sep, value = pair.partition("=")
        if not sep or not kind:
            raise UsageError(f"expected KIND=VALUE, got {pair!r}")
        parsed.append((kind, value))
    check(parsed)
