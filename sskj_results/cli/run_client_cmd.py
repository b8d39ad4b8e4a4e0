from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from .common import handle_errors

if TYPE_CHECKING:
    from ..run.specs import GridRow


@click.command("run-client", context_settings={"ignore_unknown_options": True})
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--stem", required=True, help="Raw file stem of the scenario (names client_stats/<stem>.json).")
@click.option("--concurrency", type=click.IntRange(min=1), required=True)
@click.option("--input-len", type=click.IntRange(min=1), required=True)
@click.option("--output-len", type=click.IntRange(min=1), required=True)
@click.option("--server-pid", type=click.IntRange(min=1), default=None, help="Server process to watch.")
@click.option("--server-log", type=click.Path(dir_okay=False, path_type=Path), default=None)
@click.option("--log-offset", type=click.IntRange(min=0), default=0, show_default=True,
              help="Bytes of the server log written before the scenario (searched after it).")
@click.option("--oom-pattern", default=None, help="Regular expression of out-of-memory messages (OOM_PATTERN).")
@click.option("--client-log", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append the client's stdout and stderr here.")
@click.option("--raw", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The raw file the client writes (removed when the scenario fails).")
@click.option("--poll-s", type=click.FloatRange(min=0.05), default=1.0, show_default=True)
@click.option("--sampler-pid", type=click.IntRange(min=1), default=None,
              help="The accelerator sampler of the scenario: stopped as soon as the client ends.")
@click.option("--session", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Then do the run loop's next step in this process (the scenario's /metrics after, "
                   "`sskj-results step --parse`), its records written to --records-out.")
@click.option("--records-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --session: the step's records (its messages as `!` records), written atomically.")
@click.option("--port", type=click.IntRange(min=1, max=65535), default=None,
              help="The engine's port: the client runs, and its raw file is kept, only while every socket listening "
                   "there belongs to --server-pid's process tree (exit 4 otherwise).")
@click.option("--tag", default=None, help="The run's SSKJ_SERVER_TAG (a server inside a container).")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@handle_errors
def run_client(run_dir: Path, stem: str, concurrency: int, input_len: int, output_len: int, server_pid: Optional[int],
               server_log: Optional[Path], log_offset: int, oom_pattern: Optional[str], client_log: Optional[Path],
               raw: Optional[Path], poll_s: float, sampler_pid: Optional[int], session: Optional[Path],
               records_out: Optional[Path], port: Optional[int], tag: Optional[str], argv: tuple[str, ...]) -> None:
    """Run the bench client ARGV (after --) while watching the server.

    Exit 0: the client succeeded and wrote its raw file. Exit 1: the client
    failed while the server is fine (nothing recorded; RESUME=1 runs it
    again). Exit 3: the server died or reported out-of-memory; the client was
    stopped within one poll interval and the scenario recorded in
    skipped_after_oom.csv with the server log excerpt. Exit 4 (with --port):
    another process holds the engine's port, before or after the client;
    one line names the port and the holder, nothing is recorded. The client's CPU and
    wall time go to RUN_DIR/client_stats/<stem>.json (BENCHMARK_WORKFLOW.md).

    With --session the run loop's next step follows in this process, so a
    scenario costs one process start: the sampler stopped, GET /metrics into
    server_metrics/<stem>.after.prom (unless the server failed), then what
    `sskj-results step --parse` answers, written to --records-out (no file:
    the shell makes the step itself). The exit status stays the client's.
    """
    from ..run.specs import GridRow
    from ..contract.errors import EngineOwnershipError
    from ..run.supervise import (DEFAULT_OOM_PATTERN, EXIT_NOT_OUR_ENGINE, EXIT_SERVER_FAILED, run_client as supervise,
                                 stop_group)

    if (session is None) != (records_out is None):
        raise click.UsageError("--session and --records-out go together")
    if session is not None:
        # The step's modules load while the client starts up (it imports its own for seconds), not after it.
        import threading

        threading.Thread(target=_load_step_modules, daemon=True).start()
    try:
        status, stats = supervise(
            list(argv), run_dir=run_dir, stem=stem, row=GridRow(concurrency, input_len, output_len),
            server_pid=server_pid, server_log=server_log, log_offset=log_offset, client_log=client_log, raw=raw,
            oom_pattern=oom_pattern or DEFAULT_OOM_PATTERN, poll_s=poll_s, port=port, tag=tag,
        )
    except EngineOwnershipError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_NOT_OUR_ENGINE)
    finally:
        if sampler_pid is not None:
            stop_group(sampler_pid, 2.0)
    if status == EXIT_SERVER_FAILED:
        how = " (client stopped)" if stats.stopped_because_server_died else ""
        click.echo(f"server failure during c{concurrency}_i{input_len}_o{output_len}: {stats.server_failure}{how}; "
                   f"recorded in skipped_after_oom.csv", err=True)
    if session is not None and records_out is not None:
        _next_step(run_dir, stem, raw, GridRow(concurrency, input_len, output_len), argv,
                   status != EXIT_SERVER_FAILED, session, records_out)
    sys.exit(status)


def _load_step_modules() -> None:
    from . import loop_cmd  # noqa: F401
    from ..run import plan, scenario_cmds  # noqa: F401
    from ..ingest import parse_run  # noqa: F401


def _next_step(run_dir: Path, stem: str, raw: Optional[Path], row: "GridRow", argv: tuple[str, ...],
               server_ok: bool, session: Path, records_out: Path) -> None:
    """The scenario's /metrics after and the loop's next step; its messages travel as records."""
    import contextlib
    import os
    import subprocess

    from ..contract.io import atomic_write_bytes
    from ..run.scenario_cmds import scenario_commands
    from .inproc import Captured
    from .loop_cmd import step_records, warn

    messages = Captured()
    with contextlib.redirect_stderr(messages):
        if server_ok:
            cmds = scenario_commands(os.environ, Path(os.environ.get("REPO_ROOT") or "."), run_dir,
                                     os.environ.get("PHASE_ENGINE", ""), stem, raw or run_dir / "raw_outputs" / stem,
                                     row.concurrency, row.input_len, row.output_len, list(argv))
            after = cmds.metrics_after
            if after and subprocess.run(after, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL).returncode != 0:
                out_file = Path(cmds.metrics_after_out)
                out_file.unlink(missing_ok=True)
                warn(f"GET {cmds.metrics_url} failed; no {out_file.name}")
        try:
            rec = step_records(run_dir, session, True)
        except (SystemExit, Exception) as exc:  # the shell's own `step` call then says what is wrong
            failed: Optional[BaseException] = exc
        else:
            failed = None
    if failed is not None:
        sys.stderr.write(messages.value().decode("utf-8", "surrogateescape"))
        sys.stderr.write(f"run-client: the step after the client failed ({failed!r}); the run loop makes it again\n")
        return
    from ..run.records import Records

    out = Records()
    out.message(messages.value().decode("utf-8", "surrogateescape"))
    out.extend(rec)
    atomic_write_bytes(records_out, bytes(out))


@click.command("wait-health")
@click.argument("url")
@click.option("--pid", type=click.IntRange(min=1), required=True, help="Server process: its death ends the wait at once.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0), required=True, help="Seconds.")
@click.option("--log", "log", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Server log: its last --tail lines are printed when the server does not become healthy.")
@click.option("--tail", type=click.IntRange(min=0), default=40, show_default=True)
@click.option("--port", type=click.IntRange(min=1, max=65535), default=None,
              help="The engine's port: healthy only when every socket listening there belongs to --pid's process "
                   "tree; one line names the holder otherwise (exit 1).")
@click.option("--tag", default=None, help="The run's SSKJ_SERVER_TAG (a server inside a container).")
@handle_errors
def wait_health(url: str, pid: int, timeout_s: float, log: Optional[Path], tail: int, port: Optional[int],
                tag: Optional[str]) -> None:
    """Wait until GET URL answers 2xx (exit 0); exit 1 when the server process dies or TIMEOUT passes, or (with
    --port) when another process holds the port."""
    from ..run.supervise import wait_for_health

    healthy, message = wait_for_health(url, pid, timeout_s, port=port, tag=tag)
    if healthy:
        click.echo(message, err=True)
        return
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[-tail:] if log and log.is_file() else []
    click.echo(f"error: {message}; last lines of {log}:" if log else f"error: {message}", err=True)
    for line in lines:
        click.echo(line, err=True)
    sys.exit(1)


@click.command("engine-owner")
@click.option("--port", type=click.IntRange(min=1, max=65535), required=True, help="The engine's port.")
@click.option("--pid", type=click.IntRange(min=1), default=None,
              help="The engine process the run started; without it, name whoever holds the port.")
@click.option("--tag", default=None, help="The run's SSKJ_SERVER_TAG (a server inside a container).")
@handle_errors
def engine_owner(port: int, pid: Optional[int], tag: Optional[str]) -> None:
    """Tell whether every socket listening on PORT belongs to the engine PID's process tree (exit 0), another
    process holds one (exit 1, naming it) or it cannot be proven from here (exit 0, said). Without --pid:
    exit 0 when the port is free, else exit 1 naming its holders."""
    from ..contract.errors import EngineOwnershipError
    from ..run.ownership import check

    found = check(port, pid, tag)
    if found.ok is False:
        raise EngineOwnershipError(found.message)
    click.echo(found.message if found.ok else f"warning: {found.message}")


@click.command("run-summary")
@click.argument("run_dirs", nargs=-1, required=True)
@click.option("--comparison", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The run's comparison.md (named first among the files to look at).")
@click.option("--strict", is_flag=True, help="Exit 1 when a point is disqualified (✖; STRICT=1 of the run loop).")
@click.option("--loop", is_flag=True, help="The run loop's call: run directories without results.json (a phase that "
              "did not start, an empty word) and repeats are left out, nothing is said without one; STRICT=1 is --strict.")
@handle_errors
def run_summary(run_dirs: tuple[str, ...], comparison: Optional[Path], strict: bool, loop: bool) -> None:
    """The end of a run: points measured per phase, points qualified or disqualified with their checks, what to
    look at (stderr). Exit 1 with --strict when a point is disqualified."""
    from ..run.summary import loop_dirs, summarize

    if loop:
        dirs = loop_dirs(run_dirs)
        strict = strict or os.environ.get("STRICT", "0") == "1"
        if not dirs:
            return
    else:
        for given in run_dirs:
            if not Path(given).is_dir():
                raise click.BadParameter(f"Directory {given!r} does not exist.", param_hint="'RUN_DIRS...'")
        dirs = [Path(d) for d in run_dirs]
    found = summarize(dirs, comparison)
    for line in found.lines:
        click.echo(line, err=True)
    if strict and found.disqualified:
        click.echo(f"error: STRICT=1: {found.disqualified} disqualified or partly unreliable point(s)", err=True)
        sys.exit(1)
