"""The run loop's calls: a phase's start in one, one step per scenario, the phase's end in one (the configuration
in one: cli/config_cmd.py).

Each answers with records (sskj_results/run/records.py) that the shell reads
with `lib::read_records`. Each part runs the command it replaces in this
process (cli/inproc.py): same messages, same exit status, one process start.
Settings of the run are read from the environment the shell exported.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from .common import ExitError, handle_errors
from .inproc import invoke, nul_words

if TYPE_CHECKING:
    from ..run.prompts import PromptSet, PromptText
    from ..run.records import Records
    from ..run.scenario_cmds import ScenarioCommands


def _info(message: str) -> None:
    """One line on stderr in the format of the shell's lib::info."""
    sys.stderr.write(f"[{time.strftime('%Y-%m-%dT%H:%M:%S%z')}] [INFO] {message}\n")


def _ok(status: int) -> None:
    if status != 0:
        sys.stdout.flush()
        sys.exit(status)


def _write(records: "Records") -> None:
    sys.stdout.buffer.write(bytes(records))
    sys.stdout.buffer.flush()


def _next_args(run_dir: Path, session: Path) -> list[str]:
    """The `next` call of a phase, from the run's settings (the shell's former `ask` array)."""
    env = os.environ
    scenarios = env.get("SCENARIOS_FILE") or f"{env.get('EXPERIMENT_DIR', '')}/scenarios.tsv"
    args = ["next", str(run_dir), "--chip", env.get("CHIP", ""), "--engine", env.get("PHASE_ENGINE", ""),
            "--run-id", env.get("RUN_ID", ""), "--client", env.get("CLIENT", ""), "--scenarios", scenarios,
            "--concurrencies", env.get("CONCURRENCIES", ""), "--shapes", env.get("SHAPES", ""),
            "--prompts-per-concurrency", env.get("PROMPTS_PER_CONCURRENCY", ""),
            "--min-prompts", env.get("MIN_PROMPTS", ""), "--session", str(session)]
    if env.get("REPEATS"):
        args += ["--repeats", env["REPEATS"]]
    if env.get("NUM_PROMPTS"):
        args += ["--num-prompts", env["NUM_PROMPTS"]]
    if env.get("SLO_SEARCH", "0") == "1":
        args += ["--slo-search", "--slo-max-steps", env.get("SLO_MAX_STEPS") or "32"]
        for option, key in (("--slo-tier", "SLO_TIER"), ("--slo-min-concurrency", "SLO_MIN_CONCURRENCY"),
                            ("--slo-max-concurrency", "SLO_MAX_CONCURRENCY")):
            if env.get(key):
                args += [option, env[key]]
    return args


def _prompt_method() -> str:
    """The phase's prompt method (catalog.clients.prompt_method) from PROMPT_METHOD and the client settings."""
    from ..catalog.clients import prompt_method
    from ..contract.errors import ConfigError

    env = os.environ
    try:  # the run's method (config: one for every phase), checked against this phase's client and backend
        return prompt_method(env.get("CLIENT") or "sglang", env.get("CLIENT_BACKEND", ""),
                             env.get("RUN_PROMPT_METHOD") or env.get("PROMPT_METHOD") or "auto",
                             env.get("DATASET_NAME") or None,
                             env.get("DATASET_PATH") or None, env.get("RANDOM_RANGE_RATIO") or None)
    except ConfigError as exc:
        raise ExitError(str(exc)) from None


def _tokenizer() -> str:
    """The tokenizer the prompt sets are made with: the run's (one for every phase), else the phase's."""
    env = os.environ
    return env.get("RUN_PROMPT_TOKENIZER") or env.get("TOKENIZER_PATH") or env.get("MODEL_PATH", "")


def _text() -> "Optional[PromptText]":
    """The run's real text (RUN_PROMPT_TEXT), None for random prompts."""
    from ..run.prompts import PromptText

    env = os.environ
    if not env.get("RUN_PROMPT_TEXT"):
        return None
    return PromptText(Path(env["RUN_PROMPT_TEXT"]), env.get("RUN_PROMPT_TEXT_SHA256", ""),
                      env.get("PROMPT_CHAT_TEMPLATE", "0") == "1")


def _seed() -> str:
    return os.environ.get("SEED") or "1"


def _prompt_set(input_len: int, prompts: int) -> "PromptSet":
    from ..run.prompts import prompt_set, set_dir, tokenizer_fingerprint

    return prompt_set(set_dir(os.environ), tokenizer_fingerprint(_tokenizer()), input_len, prompts, _seed(),
                      os.environ.get("CLIENT") or "sglang", _text())


def _grid_prompt_sets() -> list["PromptSet"]:
    """The round-trip sets of the phase's grid: one per (input length, prompt count)."""
    from ..run.specs import PromptsRule, load_grid

    env = os.environ
    scenarios = env.get("SCENARIOS_FILE") or f"{env.get('EXPERIMENT_DIR', '')}/scenarios.tsv"
    rule = PromptsRule(int(env["NUM_PROMPTS"]) if env.get("NUM_PROMPTS", "").isdigit() else None,
                       int(env.get("PROMPTS_PER_CONCURRENCY") or 4), int(env.get("MIN_PROMPTS") or 8))
    grid = load_grid(Path(scenarios), env.get("CONCURRENCIES"), env.get("SHAPES"))
    sizes = dict.fromkeys((row.input_len, rule.prompts(row)) for row in grid)
    return [_prompt_set(length, count) for length, count in sizes]


def _make_sets_command(sets: list["PromptSet"], missing_only: bool = True) -> list[str]:
    from ..run.prompts import make_command

    repo = Path(os.environ.get("REPO_ROOT") or ".")
    return make_command([os.environ.get("CLIENT_PYTHON", "python3")], repo, _tokenizer(), _seed(), sets, missing_only)


def _make_sets(sets: list["PromptSet"]) -> None:
    """Make the round-trip sets not on disk yet, with the client's Python (its stderr says what it made)."""
    import subprocess

    argv = _make_sets_command(sets)
    if not argv:
        return
    _info(f"making {argv.count('--set')} prompt set(s) with {_tokenizer()} (once per tokenizer, length, count, seed)")
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False)
    except OSError as exc:
        raise ExitError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise ExitError(f"the prompt sets could not be made (exit {done.returncode}); fix the tokenizer at "
                        f"{_tokenizer()} (TOKENIZER_PATH) or set PROMPT_METHOD=client-random-text knowingly")


def _client_args(raw: Path, concurrency: str, input_len: str, output_len: str, prompts: str,
                 method: str = "client-random-text", prompt_file: str = "") -> list[str]:
    """The `client-cmd` call of a scenario, from the run's settings (the shell's former lib::build_client_cmd)."""
    env = os.environ
    missing = [key for key in ("CLIENT_PYTHON", "PORT", "MODEL_PATH", "CLIENT_BACKEND") if not env.get(key)]
    if missing:
        raise ExitError(f"missing required variables: {' '.join(missing)}")
    model = env.get("SERVED_MODEL_NAME") or env["MODEL_PATH"]
    return ["client-cmd", "--client", env.get("CLIENT") or "sglang", "--python", env["CLIENT_PYTHON"],
            "--backend", env["CLIENT_BACKEND"], "--host", env.get("SERVER_HOST") or "127.0.0.1", "--port", env["PORT"],
            "--model", model, "--tokenizer", env.get("TOKENIZER_PATH") or env["MODEL_PATH"],
            "--dataset-name", env.get("DATASET_NAME", ""), "--dataset-path", env.get("DATASET_PATH", ""),
            "--range-ratio", env.get("RANDOM_RANGE_RATIO", ""), "--seed", env.get("SEED") or "1",
            "--warmup-requests", env.get("CLIENT_WARMUP_REQUESTS", "0"), "--extra", env.get("CLIENT_EXTRA_ARGS", ""),
            "--module", env.get("BENCH_CLIENT_MODULE", ""), "--impl", env.get("CLIENT_IMPL") or "python",
            "--input-len", input_len, "--output-len", output_len, "--num-prompts", prompts,
            "--concurrency", concurrency, "--out", str(raw), "--prompt-method", method, "--prompt-file", prompt_file]


def _scenario(run_dir: Path, session: Path, prepare: bool = False) -> Optional[tuple[list[str], "ScenarioCommands"]]:
    """The next scenario of the phase and its commands; None when the phase is done. Exit 1 when `next` fails.

    prepare (a real step): make the scenario's round-trip set if the grid did not foresee it, and record its
    prompt method in prompts/<stem>.json."""
    from ..run.prompts import record
    from ..run.scenario_cmds import scenario_commands

    status, out = invoke(_next_args(run_dir, session), capture=True)
    if status != 0:
        raise ExitError(f"sskj-results next {run_dir} failed", 1)
    line = out.decode("utf-8", "surrogateescape").strip()
    if not line:
        return None
    fields = line.split()
    c, inp, outp, n, stem, raw_name = fields
    raw = run_dir / "raw_outputs" / raw_name
    method = _prompt_method()
    used = _prompt_set(int(inp), int(n)) if method == "round-trip-set" else None
    if prepare:
        if used is not None:
            _make_sets([used])
        record(run_dir, stem, method, _tokenizer(), _seed(), used)
    status, words = invoke(_client_args(raw, c, inp, outp, n, method, str(used.path) if used else ""), capture=True)
    if status != 0:
        sys.exit(1)
    repo = Path(os.environ.get("REPO_ROOT") or ".")
    cmds = scenario_commands(os.environ, repo, run_dir, os.environ.get("PHASE_ENGINE", ""), stem, raw, int(c),
                             int(inp), int(outp), nul_words(words))
    return fields, cmds


@click.command("phase-begin", context_settings={"ignore_unknown_options": True})
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--session", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The run loop's session file (a dry run lists the phase's scenarios through it).")
@click.option("--patches", "patch_root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The platform's runtime patches (PATCH_ROOT, Docker runtime): listed for apply_patches.sh.")
@click.option("--print-only", is_flag=True,
              help="A dry run of an existing run: print the metadata command, write nothing into the run.")
@click.option("--phases", type=click.IntRange(min=1), default=1, show_default=True,
              help="How many phases the run has (more than one: the phase's end also writes the run set's index).")
@click.option("--shell-cmd", "shell_cmd", default="sskj-results", show_default=True,
              help="The sskj-results command as the shell calls it (a dry run's plan prints it).")
@click.option("--lib-dir", default="scripts/common", show_default=True,
              help="The shell library's directory (a dry run's line that stops the engine sources its lib.sh).")
@click.option("--server-line", default="", help="The phase's server command as the shell quoted it (redacted).")
@click.argument("metadata_args", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def phase_begin(run_dir: Path, session: Path, patch_root: Optional[Path], print_only: bool, phases: int,
                shell_cmd: str, lib_dir: str, server_line: str, metadata_args: tuple[str, ...]) -> None:
    """Start a phase (used by the run loop): the engine's and client's versions, the run's metadata and
    config (run/dryplan.config_args; METADATA_ARGS after --: more `sskj-results metadata` options, a
    multi-node engine's), the phase's end (array BENCH_END_ARGS), a Docker platform's container
    command (BENCH_CONTAINER_CREATE), and with DRY_RUN=1 the whole plan of the phase (run/dryplan.py;
    arrays BENCH_PLAN_BEFORE: the heading, metadata, prompt sets and container, before the patches;
    BENCH_PLAN: the engine's start, every scenario's commands, the engine's stop and the phase's end).

    With --patches: PATCH_ROOT/series listed in BENCH_PATCH_LIST (apply_patches.sh's input). Where nothing
    will be applied (a dry run, or an empty series) config.patches is recorded here with the metadata and
    BENCH_PATCHES_RECORDED=1 says so; else apply_patches.sh records what it applied.
    """
    from ..catalog.clients import client_backend, sent_dataset_name
    from ..contract.redact import redact_argv
    from ..run.phase import (client_label, client_module, client_probe, engine_environment, engine_version,
                             metadata_meta, probe_record)
    from ..run import dryplan
    from ..run.records import Records, measured_args, plan_words

    env = os.environ
    dry = env.get("DRY_RUN", "0") == "1"
    engine_name = env.get("PHASE_ENGINE", "")
    # the client's module and version: asked once per phase to its Python; each step reads them from here
    version, present = client_probe(env)
    module = client_module(env, present)
    env["BENCH_CLIENT_MODULE"], env["BENCH_CLIENT_VERSION"] = module, "" if dry else (version or "")
    facts = {
        "ENGINE_ENV": engine_environment(engine_name, env),
        "ENGINE_VERSION": "" if dry else (engine_version(engine_name, env) or ""),
        "CLIENT_VERSION": env["BENCH_CLIENT_VERSION"],
        "CLIENT_LABEL": client_label(env, module),
    }
    more = list(metadata_args)
    args = dryplan.config_args(env, server_line, phases, more[1:] if more[:1] == ["--"] else more)
    series = None
    record_patches = False  # recorded here where nothing will be applied; else apply_patches.sh records them
    if patch_root is not None:
        from ..run.patches import dry_run_target, patches_record, read_series

        series = read_series(patch_root)
        record_patches = dry or not series
        if record_patches:
            args += ["--config", "patches=" + patches_record(
                series, {p.file: ("dry_run", dry_run_target(p.package)) for p in series})]
    client = env.get("CLIENT") or "sglang"  # the backend and dataset words the client is given
    method = _prompt_method()
    args += ["--config", f"client_backend={client_backend(client, env.get('CLIENT_BACKEND', ''))}",
             "--config", f"prompt_method={method}",
             "--config", f"dataset_name={sent_dataset_name(client, method, env.get('DATASET_NAME') or None)}"]
    from ..analysis.plausibility import acceptance_env

    if acceptance_env(env):  # settings that make acceptance synthetic, inherited by the engine
        args += ["--config", f"acceptance_env={acceptance_env(env)}"]
    metadata_argv = ["metadata", str(run_dir), *metadata_meta(env, facts), *args]
    if not print_only:
        status, out = invoke(metadata_argv, capture=True)
        sys.stderr.write(out.decode("utf-8", "surrogateescape"))
        if status != 0:
            sys.exit(1)
    if not dry and env.get("SSKJ_RUN_SETTINGS") and env.get("RESULT_ROOT"):
        from ..run.runrecord import write_record

        write_record(Path(env["RESULT_ROOT"]), json.loads(env["SSKJ_RUN_SETTINGS"]))
    rec = Records()
    rec.var("BENCH_CLIENT_MODULE", module)
    rec.var("BENCH_CLIENT_PROBE", probe_record(env, version, present))
    rec.var("BENCH_CLIENT_VERSION", env["BENCH_CLIENT_VERSION"])
    if series is not None:
        from ..run.patches import listing

        rec.var("BENCH_PATCH_LIST", listing(series), export=False)
        rec.var("BENCH_PATCHES_RECORDED", "1" if record_patches else "0", export=False)
        if record_patches:
            _info(f"{run_dir / 'results.json'}: {len(series)} patch(es) recorded")
    items: list[tuple[str, list[str]]] = []
    before: list[tuple[str, list[str]]] = []
    if env.get("RUN_PROMPT_WHY") and not dry:
        _info(f"prompts of the run: {env['RUN_PROMPT_WHY']}; tokenizer {_tokenizer()}")
    if method == "round-trip-set" and not dry:
        _make_sets(_grid_prompt_sets())
    if dry:
        items.append(("#", ["# the phase's metadata, as the run records it (a run also records the engine's and "
                            "client's versions, here unknown)"]))
        items.append(("$", redact_argv(["sskj-results", *measured_args(metadata_argv)])))
        items.append(("#", [f"# prompts: {method} (PROMPT_METHOD={env.get('PROMPT_METHOD') or 'auto'}; "
                            "docs/METRICS.md, prompt tokens)"]))
        if env.get("RUN_PROMPT_WHY"):
            items.append(("#", [f"# prompts of the run: {env['RUN_PROMPT_WHY']}; tokenizer {_tokenizer()}"]))
        if method == "round-trip-set":
            items.append(("#", ["# the round-trip sets of the grid, made before the engine starts (kept in "
                                "PROMPT_SET_DIR, made only when missing):"]))
            items.append(("$", _make_sets_command(_grid_prompt_sets(), missing_only=False)))
        before, items = items, []  # the plan before the engine starts, then the scenarios with it
        items.append(("#", [f"# each client runs under `{' '.join(['sskj-results', 'run-client'])} {run_dir} --stem STEM "
                            "... --server-pid PID --server-log LOG -- CLIENT` (the engine's pid and log, known "
                            "once it runs): it stops the client when the engine dies and records its CPU use"]))
        while (found := _scenario(run_dir, session)) is not None:
            (c, inp, outp, n, stem, _), cmds = found
            repeat = re.search(r"_r([0-9]+)$", stem)
            of = (f", repeat {repeat.group(1) if repeat else 1} of {env['REPEATS']}: {stem}"
                  if env.get("REPEATS", "1") not in ("", "1") else "")
            items.append(("#", [f"# scenario c{c}_i{inp}_o{outp} ({n} prompts{of})"]))
            for argv in (cmds.warmup, cmds.reset, cmds.metrics_before, cmds.client, cmds.metrics_after):
                if argv:
                    items.append(("$", redact_argv(argv)))
    docker = (env.get("RUNTIME") or "native") == "docker"
    create, warnings = dryplan.container_create(env) if docker else ([], [])
    end = dryplan.end_args(env, str(run_dir), phases)
    rec.array("BENCH_CONTAINER_CREATE", create)
    rec.array("BENCH_END_ARGS", end)
    if dry:
        before = dryplan.heading(env, str(run_dir)) + before + (dryplan.container_step(env, create) if docker else [])
        items = (dryplan.server_start(env, str(run_dir), server_line, shell_cmd) + items
                 + dryplan.server_stop(env, lib_dir) + dryplan.phase_end(end, shell_cmd))
        rec.array("BENCH_PLAN_BEFORE", plan_words(before))
    rec.array("BENCH_PLAN", plan_words(items))
    for line in warnings:
        warn(line)
    _write(rec)


@click.command("step")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--session", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--parse", "parse_first", is_flag=True,
              help="First record what was measured (sskj-results parse): after a scenario, or when resuming.")
@handle_errors
def step(run_dir: Path, session: Path, parse_first: bool) -> None:
    """One step of the run loop: record the finished scenario (--parse), then return the next one with
    every command it runs (warmup, cache reset, /metrics, the client) as records; BENCH_STEM is empty
    when the phase is done. Settings are read from the environment the shell exported.
    """
    _write(step_records(run_dir, session, parse_first))


def step_records(run_dir: Path, session: Path, parse_first: bool) -> "Records":
    """The records of `step` (also made by `run-client --session` once its client has ended)."""
    from ..contract.redact import redact_argv
    from ..run.records import Records

    if parse_first:
        _parse(run_dir, "; rerun it by hand")
    rec = Records()
    found = _scenario(run_dir, session, prepare=True)
    if found is None:
        rec.var("BENCH_STEM", "", export=False)
        return rec
    (c, inp, outp, n, stem, raw), cmds = found
    _record_client(run_dir, stem)
    for name, value in (("BENCH_C", c), ("BENCH_IN", inp), ("BENCH_OUT", outp), ("BENCH_N", n),
                        ("BENCH_STEM", stem), ("BENCH_RAW", str(run_dir / "raw_outputs" / raw)),
                        ("BENCH_RESET_OUT", cmds.reset_out)):
        rec.var(name, value, export=False)
    for name, argv in (("BENCH_WARMUP_CMD", cmds.warmup), ("BENCH_RESET_CMD", cmds.reset),
                       ("BENCH_METRICS_BEFORE_CMD", cmds.metrics_before), ("BENCH_CLIENT_CMD", cmds.client),
                       ("BENCH_METRICS_AFTER_CMD", cmds.metrics_after), ("BENCH_SUPERVISE_ARGS", cmds.supervise)):
        rec.array(name, argv)
    rec.array("BENCH_WARMUP_SHOWN", redact_argv(cmds.warmup))
    rec.array("BENCH_CLIENT_SHOWN", redact_argv(cmds.client))
    return rec


def _record_client(run_dir: Path, stem: str) -> None:
    """client_info/<stem>.json: the fingerprint of the client this scenario runs (read by parse)."""
    from ..run.client_info import write_client_info

    env = os.environ
    write_client_info(run_dir, stem, client=env.get("CLIENT") or "sglang", module=env.get("BENCH_CLIENT_MODULE", ""),
                      impl=env.get("CLIENT_IMPL") or "python", version=env.get("BENCH_CLIENT_VERSION", ""),
                      seed=env.get("SEED") or "1", warmup_requests=env.get("CLIENT_WARMUP_REQUESTS", "0"),
                      extra=env.get("CLIENT_EXTRA_ARGS", ""))


def warn(message: str) -> None:
    """One line on stderr in the format of the shell's lib::warn."""
    sys.stderr.write(f"[{time.strftime('%Y-%m-%dT%H:%M:%S%z')}] [WARN] {message}\n")


def _error(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%Y-%m-%dT%H:%M:%S%z')}] [ERROR] {message}\n")


def _to_stderr(args: list[str]) -> int:
    status, out = invoke(args, capture=True)
    sys.stderr.write(out.decode("utf-8", "surrogateescape"))
    sys.stderr.flush()
    return status


def _parse(run_dir: Path, advice: str) -> int:
    tier = os.environ.get("SLO_TIER")
    status = _to_stderr(["parse", str(run_dir), *(["--slo-tier", tier] if tier else [])])
    if status != 0:
        warn(f"sskj-results parse {run_dir} failed{advice}")
    return status


@click.command("phase-end")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--runset", "runset_root", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Also write the index of this multi-phase run directory (sskj-results runset).")
@click.option("--baseline", default=None)
@click.option("--title", default=None)
@click.option("--matrix", default=None)
@handle_errors
def phase_end(run_dir: Path, runset_root: Optional[Path], baseline: Optional[str], title: Optional[str],
              matrix: Optional[str]) -> None:
    """End a phase (used by the run loop): parse, report (with report.html), validate, and the run set's
    index. Exit 1 when any part failed (each says why); the index is a warning only."""
    failed = _parse(run_dir, "") != 0
    failed = _to_stderr(["report", str(run_dir), "--html"]) != 0 or failed
    if _to_stderr(["validate", str(run_dir)]) != 0:
        _error(f"results.json of {run_dir} is not valid")
        failed = True
    if runset_root is not None:
        args = ["runset", str(runset_root)]
        for option, value in (("--baseline", baseline), ("--title", title), ("--matrix", matrix)):
            if value:
                args += [option, value]
        if _to_stderr(args) != 0:
            warn(f"sskj-results runset {runset_root} failed; rerun it by hand")
    if failed:
        sys.exit(1)
