"""Shared CLI plumbing: typed library errors become one-line messages and exit codes."""

from __future__ import annotations

import errno
import functools
import math
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Callable, Optional, ParamSpec, TypeVar

import click

from ..contract.errors import SskjError, UsageError
from ..contract.io import describe_os_error, display_name, one_line

F = TypeVar("F", bound=Callable[..., Any])
P = ParamSpec("P")
R = TypeVar("R")


class ExitError(click.ClickException):
    """A one-line error with an explicit exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(one_line(message))
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


def echo(message: str, err: bool = False) -> None:
    """click.echo of one line: control characters and undecodable bytes (lone
    surrogates) of file names are escaped, so a message is always one printable line."""
    click.echo(one_line(message), err=err)


# what to do about an OSError, by errno (default: check the path and its permissions)
_ADVICE = {
    errno.ENOSPC: "free some space and run the command again",
    errno.EDQUOT: "free some space and run the command again",
    errno.EROFS: "write somewhere else",
    errno.EIO: "check the disk",
    errno.ENOENT: "check the path",
}


def os_error_message(exc: OSError) -> str:
    """`file: cause; what to do` for an OSError that ended a command."""
    where = f"{display_name(exc.filename)}: " if exc.filename else ""
    advice = _ADVICE.get(exc.errno or 0, "check the path and its permissions")
    return f"{where}{describe_os_error(exc)}; {advice}"


class Terminated(BaseException):
    """SIGTERM, raised in the main thread by `cleans_up_on_term`: every `except BaseException` and
    `finally` on the way out removes its temporary files, as for Ctrl-C."""


def cleans_up_on_term(func: Callable[P, R]) -> Callable[P, R]:
    """While func runs, SIGTERM (`kill`, `timeout`, Slurm's end of job) stops it as Ctrl-C does, so a
    writer removes its temporaries (`.results.json.*.tmp`, `.<run>.*.tmp`) before exiting 143; a
    second SIGTERM meanwhile is ignored, so the cleanup runs to its end. Put it below handle_errors."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if threading.current_thread() is not threading.main_thread():
            return func(*args, **kwargs)

        def on_term(signum: int, frame: Any) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            raise Terminated()

        previous = signal.signal(signal.SIGTERM, on_term)
        try:
            return func(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return wrapper


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn library errors into `error: ...` on stderr (exit 1; usage errors exit 2).

    The last resort: an exception no code foresaw is still one line
    (`internal error`, exit 1) and never a traceback; files are replaced
    atomically, so nothing is half-written.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except UsageError as exc:
            raise ExitError(str(exc), 2) from None
        except SskjError as exc:
            raise ExitError(str(exc), 1) from None
        except OSError as exc:  # a file or directory the command could not read or write
            raise ExitError(os_error_message(exc), 1) from None
        except (KeyboardInterrupt, Terminated) as exc:
            name, code = ("SIGTERM", 143) if isinstance(exc, Terminated) else ("SIGINT", 130)
            click.echo(f"error: interrupted ({name}): nothing half-written, its temporary files removed; "
                       "what was complete before is kept", err=True)
            sys.exit(code)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except RecursionError:
            raise ExitError("input nested too deeply to be processed; nothing was written", 1) from None
        except MemoryError:
            raise ExitError("out of memory; nothing was written (is an input file far bigger than expected?)", 1) from None
        except Exception as exc:  # noqa: BLE001 - last resort, see above
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
            text = str(exc).splitlines()[0][:200] if str(exc) else ""
            raise ExitError(f"internal error ({type(exc).__name__}{': ' + text if text else ''}{at}); "
                            "nothing was half-written; please report this with the input that caused it", 1) from None

    return wrapper


class PositiveFloat(click.ParamType):
    """A finite number above zero (and below `upper` when given; zero too with
    allow_zero). NaN, infinities, zero and negative values are usage errors:
    one line naming the option (`error: --alpha nan: must be ...`), exit 2."""

    name = "number"

    def __init__(self, upper: Optional[float] = None, allow_zero: bool = False, example: str = "") -> None:
        self.upper = upper
        self.allow_zero = allow_zero
        self.example = example

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> float:
        if isinstance(value, float) and math.isfinite(value) and self._in_range(value):
            return value
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = math.nan
        if not math.isfinite(number) or not self._in_range(number):
            option = param.opts[0] if param is not None and param.opts else "value"
            raise ExitError(f"{option} {one_line(str(value))}: must be {self._wanted()}", 2)
        return number

    def _in_range(self, number: float) -> bool:
        low_ok = number >= 0 if self.allow_zero else number > 0
        return low_ok and (self.upper is None or number < self.upper)

    def _wanted(self) -> str:
        if self.upper is not None:
            text = f"between 0 and {self.upper:g} (exclusive)"
        else:
            text = "a finite number >= 0" if self.allow_zero else "a finite number > 0"
        return text + (f", e.g. {self.example}" if self.example else "")


# The checkout the package runs from, where it is one (an editable install: `make venv`, `pip install -e .`).
REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_MARKER = Path("scripts") / "common" / "adaptive_bench_lib.sh"  # what the experiment scripts look for too


def repo_root() -> Path:
    """The repository whose platforms/ and experiments/ the commands use: $REPO_ROOT (the scripts export it), else
    the checkout the package runs from (editable install), else the nearest directory at or above the current one
    that holds scripts/common/ (a clone the package was installed from with a regular `pip install .`), else the
    package's checkout path (then the caller's message names what is missing there)."""
    env = os.environ.get("REPO_ROOT")
    candidates = [Path(env)] if env else []
    here = Path.cwd()
    candidates += [REPO_ROOT, here, *here.parents]
    return next((c for c in candidates if (c / REPO_MARKER).is_file()), REPO_ROOT)


class PlatformFile(click.ParamType):
    """A platform file: a path to one (platforms/nvidia_h200.env), or a platform's name (nvidia_h200, as the
    shell's PLATFORM=) for the repository's platforms/<name>.env. Anything else is a usage error naming the
    known platforms (exit 2)."""

    name = "FILE|NAME"

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Path:
        path = value if isinstance(value, Path) else Path(str(value))
        if path.is_dir():
            self.fail(f"{one_line(str(value))}: is a directory; give platforms/<name>.env or a platform name", param, ctx)
        if os.path.lexists(path):
            return path  # a file (or something that is not one: the reader says what, naming it)
        from ..contract.errors import ConfigError
        from ..run.platforms import known, platform_file

        try:
            return platform_file(repo_root(), str(value))
        except ConfigError:
            self.fail(f"{one_line(str(value))}: no such file, and not a platform name (known: "
                      f"{' '.join(known(repo_root()))})", param, ctx)


def catalog_chip_name(chip: str) -> str:
    """--chip as the catalog names it (H200 -> nvidia_h200); an unknown chip as given, with a warning."""
    from ..catalog.chips import catalog_chip, unknown_chip_warning

    name, known = catalog_chip(chip)
    if not known:
        echo(f"warning: {unknown_chip_warning(chip)}", err=True)
    return name


def slo_options(func: F) -> F:
    """--slo-tier / --slo-ttft-p95-ms / --slo-tpot-mean-ms."""
    func = click.option("--slo-tpot-mean-ms", type=PositiveFloat(example="50"), default=None,
                        help="Explicit TPOT-mean threshold, ms (> 0).")(func)
    func = click.option("--slo-ttft-p95-ms", type=PositiveFloat(example="2000"), default=None,
                        help="Explicit TTFT-P95 threshold, ms (> 0).")(func)
    func = click.option(
        "--slo-tier", default=None, metavar="TIER",
        help="SLO tier from docs/SLO_STANDARDS.md (S1, S2, S3). Default: the run's recorded tier, else S2.",
    )(func)
    return func


def grid_options(func: F) -> F:
    """The grid of a phase, as the planner reads it: --scenarios (used when it exists), else --concurrencies x
    --shapes; the prompts rule --num-prompts / --prompts-per-concurrency / --min-prompts."""
    from pathlib import Path

    for option in reversed((
        click.option("--scenarios", "scenarios_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="scenarios.tsv (concurrency input_len output_len [num_prompts]); used when it exists."),
        click.option("--concurrencies", default=None, metavar="'1 4 16'",
                     help="CONCURRENCIES, when there is no scenarios file."),
        click.option("--shapes", default=None, metavar="'128x64 1024x128'", help="SHAPES (INPUTxOUTPUT), with --concurrencies."),
        click.option("--num-prompts", type=click.IntRange(min=1), default=None,
                     help="Prompts of every scenario without its own (NUM_PROMPTS)."),
        click.option("--prompts-per-concurrency", type=click.IntRange(min=0), default=4, show_default=True),
        click.option("--min-prompts", type=click.IntRange(min=0), default=8, show_default=True),
    )):
        func = option(func)
    return func
