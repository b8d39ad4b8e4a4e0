"""Shared CLI plumbing: typed library errors become one-line messages and exit codes."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, ParamSpec, TypeVar

import click

from ..errors import SskjError, UsageError

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")


class ExitError(click.ClickException):
    """A one-line error with an explicit exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self._exit_code = exit_code

    # click declares exit_code a class variable; each ExitError carries its own.
    @property
    def exit_code(self) -> int:
        return self._exit_code

    @exit_code.setter
    def exit_code(self, value: int) -> None:
        self._exit_code = value

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn library errors into `error: ...` on stderr (exit 1; usage errors exit 2)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except UsageError as exc:
            raise ExitError(str(exc), 2) from None
        except SskjError as exc:
            raise ExitError(str(exc), 1) from None
        except OSError as exc:  # a file or directory the command could not read or write
            where = f"{exc.filename}: " if exc.filename else ""
            raise ExitError(f"{where}{exc.strerror or exc}; check the path and its permissions", 1) from None
        except KeyboardInterrupt:
            click.echo("error: interrupted; nothing was half-written (files are replaced atomically)", err=True)
            sys.exit(130)

    return wrapper


def slo_options(func: F) -> F:
    """--slo-tier / --slo-ttft-p95-ms / --slo-tpot-mean-ms."""
    func = click.option("--slo-tpot-mean-ms", type=float, default=None, help="Explicit TPOT-mean threshold, ms.")(func)
    func = click.option("--slo-ttft-p95-ms", type=float, default=None, help="Explicit TTFT-P95 threshold, ms.")(func)
    func = click.option(
        "--slo-tier", default=None, metavar="TIER",
        help="SLO tier from docs/SLO_STANDARDS.md (S1, S2, S3). Default: the run's recorded tier, else S2.",
    )(func)
    return func
