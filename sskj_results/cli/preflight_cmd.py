from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from .common import grid_options, handle_errors

if TYPE_CHECKING:
    from ..contract.models import ValidityThresholds
    from ..run.preflight import Outcome


def _say(level: str, message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    sys.stderr.write(f"[{stamp}] [{level}] preflight: {message}\n")


@click.command("preflight", context_settings={"ignore_unknown_options": True})
@click.option("--warn-only", is_flag=True, help="Report problems as warnings and exit 0 (DRY_RUN); never stop anything.")
@click.option("--engine", default="", help="Engine of the phase (names the *_PYTHON key in messages).")
@click.option("--client-python", default=None, help="Python of the bench client.")
@click.option("--client-module", default=None, help="Module the client runs (sglang.bench_serving, ...).")
@click.option("--client", "client_name", type=click.Choice(["sglang", "vllm"]), default=None,
              help="CLIENT: check the module of the client catalog every release of it has (CLIENT_MODULE when set).")
@click.option("--model", default=None, help="MODEL_PATH: must exist and hold config.json (a hub id is left to the engine).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=None, help="Port the engine will listen on: must be free.")
@click.option("--accelerators", default="none", help="KIND:COUNT expected visible (nvidia:8, xpu:8, none).")
@click.option("--hardware-auto", is_flag=True, help="The platform's HARDWARE is auto.")
@click.option("--detected-platform", default=None, help="The platform was auto-detected as this (PLATFORM not given).")
@click.option("--docker-image", default=None, help="Docker platforms: the image that must be present.")
@click.option("--disk", default=None, metavar="DIR:GB", help="At least GB free under DIR.")
@click.option("--experiment-dir", default=None, help="Find stale engines of this experiment too.")
@click.option("--orchestrator", type=int, default=0, help="Pid of the calling orchestrator (its own engines are not stale).")
@click.option("--grace", type=float, default=30.0, show_default=True, help="Seconds between TERM and KILL of a stale engine.")
@click.option("--stop-stale/--no-stop-stale", default=True, show_default=True,
              help="Stop a stale engine of a dead orchestrator, or refuse with the command that stops it.")
@click.option("--phase-file", "phase_files", multiple=True, type=click.Path(dir_okay=False),
              help="A phase to check: a file of NUL-terminated words ENGINE MODEL CLIENT_PYTHON SERVER_WORD... "
                   "(instead of --engine/--model/--client-python and ENGINE_CMD). Repeatable: each problem said once.")
@grid_options
@click.option("--slo-search", is_flag=True, help="The grid is searched (SLO_SEARCH=1): its shapes are checked, "
              "its prompt counts are not.")
@click.option("--context-margin-pct", type=click.FloatRange(min=0), default=1.0, show_default=True,
              envvar="CONTEXT_MARGIN_PCT", help="Context headroom every scenario needs, % of input + output.")
@click.option("--validity", "validity", multiple=True, metavar="NAME=VALUE",
              help="Validity threshold NAME=VALUE (docs/VALIDITY.md), over config.env's VALIDITY_<NAME> keys.")
@click.argument("engine_cmd", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def preflight(warn_only: bool, engine: str, client_python: Optional[str], client_module: Optional[str],
              client_name: Optional[str],
              model: Optional[str], host: str, port: Optional[int], accelerators: str, hardware_auto: bool,
              detected_platform: Optional[str], docker_image: Optional[str], disk: Optional[str],
              experiment_dir: Optional[str], orchestrator: int, grace: float, stop_stale: bool,
              phase_files: tuple[str, ...], scenarios_file: Optional[Path], concurrencies: Optional[str],
              shapes: Optional[str], num_prompts: Optional[int], prompts_per_concurrency: int, min_prompts: int,
              slo_search: bool, context_margin_pct: float, validity: tuple[str, ...],
              engine_cmd: tuple[str, ...]) -> None:
    """Check, in a few seconds, what a run needs before any model is loaded: engine and client
    interpreters and modules, model path, port (and stale engines of dead orchestrators), visible
    accelerators, Docker image, disk space. ENGINE_CMD (after --) is the server command.

    With the grid (--scenarios, or --concurrencies and --shapes, and the prompts rule as `next`
    takes it), every planned scenario is also checked against the validity rules known before
    the run (prompts per slot; thresholds from config.env's VALIDITY_<NAME> keys and --validity):
    one warning per scenario with the prompt count that would pass. These never stop a run.

    With the grid, every phase's context (the server command's context length; `auto` or none: the
    model's max_position_embeddings when its config.json is readable) must cover each scenario's
    input + output + speculative tokens + CONTEXT_MARGIN_PCT: one line per phase naming the
    scenarios that do not fit and the context that would.

    One line per problem with what to do; exit 1 when any (0 with --warn-only, except for a
    platform choice that contradicts the experiment's directory or HARDWARE=auto that cannot be
    queried: errors unless PLATFORM was given).
    """
    from ..analysis.grades import env_items
    from ..analysis.validity import parse_thresholds
    from ..contract.errors import UsageError
    from ..run.preflight import Problem

    if client_name and not client_module:
        from ..catalog.clients import choose_module

        try:  # the oldest module: every release of the client has it (the newer ones as a shim)
            client_module = choose_module(client_name, module=os.environ.get("CLIENT_MODULE") or None).module
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    problems: list[Problem] = []
    try:  # config.env's VALIDITY_* keys: a typo stops the run here, not at the first parse after hours of GPU
        thresholds = parse_thresholds((*env_items(os.environ), *validity))
    except UsageError as exc:
        thresholds = None
        problems.append(Problem(str(exc), "fix or remove that key in the experiment's config.env"))
    grid_given = scenarios_file is not None or bool(concurrencies or shapes)
    rows: list[tuple[str, int, int]] = []
    if grid_given:
        from ..run.specs import load_grid

        rows = [(r.name, r.input_len, r.output_len) for r in load_grid(scenarios_file, concurrencies, shapes)]
    if not problems and grid_given and not slo_search:
        for line in grid_warnings(scenarios_file, concurrencies, shapes, num_prompts, prompts_per_concurrency,
                                  min_prompts, thresholds):
            _say("WARN", f"validity: {line}")
    kind, _, count = accelerators.partition(":")
    if kind not in ("none", "nvidia", "xpu") or (count and not count.isdigit()):
        raise UsageError(f"--accelerators {accelerators!r}: expected none, nvidia:N or xpu:N")
    disk_dir, disk_gb = None, 1.0
    if disk:
        disk_dir, _, gb = disk.rpartition(":")
        try:
            disk_gb = float(gb)
        except ValueError:
            raise UsageError(f"--disk {disk!r}: expected DIR:GB") from None
    argv = list(engine_cmd)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    phases = [(engine, model or "", client_python or "", argv)]
    if phase_files:
        from ..contract.io import read_checked

        phases = []
        for name in phase_files:
            words = read_checked(Path(name), "config file").decode("utf-8", "surrogateescape").split("\0")
            if len(words) < 4 or words[-1] != "":
                raise UsageError(f"--phase-file {name}: expected NUL-terminated ENGINE MODEL CLIENT_PYTHON WORD...")
            phases.append((words[0], words[1], words[2], words[3:-1]))
    seen_notes: set[str] = set()
    seen: set[str] = set()
    failed = False
    for problem in problems:
        seen.add(problem.line())
        _say("WARN" if warn_only and not problem.fatal else "ERROR", problem.line())
    failed = bool(problems and not warn_only)
    for phase_engine, phase_model, phase_client, phase_argv in phases:
        outcome = _check_phase(phase_engine, phase_argv, phase_client, client_module, phase_model, host, port, kind,
                               count, hardware_auto, detected_platform, experiment_dir, docker_image, disk_dir,
                               disk_gb, stop_stale and not warn_only, grace, orchestrator)
        for note in outcome.notes:
            if note not in seen_notes:
                seen_notes.add(note)
                _say("WARN", note)
        from ..run.preflight import prompt_problem

        random_prompts = prompt_problem(phase_engine, phase_argv, os.environ)
        if random_prompts is not None and random_prompts.line() not in seen_notes:
            seen_notes.add(random_prompts.line())
            _say("WARN", random_prompts.line())
        from ..run.drafter import block_size_check

        wrong_block, unknown_block = block_size_check(phase_engine, phase_argv)
        if wrong_block is not None:
            outcome.problems.append(wrong_block)
        if unknown_block is not None and unknown_block not in seen_notes:
            seen_notes.add(unknown_block)
            _say("WARN", unknown_block)
        if rows:
            from ..run.headroom import context_problem

            short = context_problem(phase_engine, phase_argv, phase_model, rows, context_margin_pct)
            if short is not None:
                outcome.problems.append(Problem(*short))
        for problem in outcome.problems:
            if problem.line() not in seen:
                seen.add(problem.line())
                _say("WARN" if warn_only and not problem.fatal else "ERROR", problem.line())
        failed = failed or any(p.fatal for p in outcome.problems) or bool(outcome.problems and not warn_only)
    if failed:
        sys.exit(1)


def _check_phase(engine: str, argv: list[str], client_python: str, client_module: Optional[str], model: str,
                 host: str, port: Optional[int], kind: str, count: str, hardware_auto: bool,
                 detected_platform: Optional[str], experiment_dir: Optional[str], docker_image: Optional[str],
                 disk_dir: Optional[str], disk_gb: float, stop_stale: bool, grace: float, orchestrator: int) -> "Outcome":
    from ..run.preflight import Spec, engine_python_var, expected_platform, run_preflight

    spec = Spec(
        engine_argv=argv,
        engine_env_var=engine_python_var(engine),
        client_python=client_python or None,
        client_module=client_module,
        model=model or None,
        host=host,
        port=port,
        accelerator_kind=kind,
        accelerator_count=int(count or 0),
        hardware_auto=hardware_auto,
        platform_given=detected_platform is None,
        detected_platform=detected_platform,
        expected_platform=expected_platform(experiment_dir) if experiment_dir and detected_platform else None,
        docker_image=docker_image or None,
        disk_dir=disk_dir,
        disk_gb=disk_gb,
        experiment_dir=experiment_dir,
        stop_stale=stop_stale,
        grace_s=grace,
        orchestrator=orchestrator,
    )
    return run_preflight(spec)


def grid_warnings(scenarios_file: Optional[Path], concurrencies: Optional[str], shapes: Optional[str],
                  num_prompts: Optional[int], prompts_per_concurrency: int, min_prompts: int,
                  thresholds: Optional[ValidityThresholds]) -> list[str]:
    """The planned grid's validity warnings (analysis.grades.planned_problems)."""
    from ..analysis.grades import PlannedScenario, planned_problems
    from ..run.specs import PromptsRule, load_grid

    rule = PromptsRule(num_prompts, prompts_per_concurrency, min_prompts)
    planned = [PlannedScenario(row.name, row.concurrency, rule.prompts(row))
               for row in load_grid(scenarios_file, concurrencies, shapes)]
    return planned_problems(planned, thresholds)


@click.command("loop-preflight")
@click.argument("experiment_dir")
@click.option("--orchestrator", type=int, required=True, help="Pid of the calling orchestrator (its own engines are not stale).")
@click.option("--detected", is_flag=True, help="The platform was auto-detected (PLATFORM not given).")
@click.option("--platform-only", is_flag=True, help="Check the detected platform's choice alone (before any command is built).")
@click.option("--phase-file", "phase_files", multiple=True, help="A phase to check, as `preflight --phase-file` takes it.")
@handle_errors
def loop_preflight(experiment_dir: str, orchestrator: int, detected: bool, platform_only: bool,
                   phase_files: tuple[str, ...]) -> None:
    """The run loop's preflight (used by platform.sh): `preflight` with the options the run's settings give
    (run/loopstart.py: preflight_args), read from the environment the shell exported; its messages and exit status."""
    from ..run.loopstart import preflight_args
    from .inproc import invoke

    status, _ = invoke(preflight_args(os.environ, experiment_dir, orchestrator, phase_files, detected, platform_only))
    sys.exit(status)
