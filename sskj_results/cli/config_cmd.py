"""The run loop's configuration in one call (`config`): the platform, config.env, the run-wide settings, the
phases, and for a run's start (--names) its names, settings record and where it writes.

It answers with records (sskj_results/run/records.py) that the shell reads with `lib::read_records`; each
part runs the command it replaces in this process (cli/inproc.py). Settings are read from the environment.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import click

from .common import ExitError, handle_errors
from .inproc import invoke, nul_words
from .loop_cmd import _error, _info, _ok, _write

if TYPE_CHECKING:
    from ..run.records import Records

# platform keys always taken from the platform file (too often set in environments for other purposes)
PROTECTED = ("CHIP", "ACCELERATOR", "RUNTIME", "DOCKER_IMAGE", "CONTAINER_NAME", "CONTAINER_PYTHON")
ACCEL_SAMPLER_OF_CHIP = (("nvidia_", "nvidia-smi"), ("kunlun_", "xpu-smi"))


@click.command("config")
@click.option("--repo", required=True, type=click.Path(file_okay=False, path_type=Path), help="The repository root.")
@click.option("--platform", "platform_name", default=None, help="Platform name (default: PLATFORM, else detected).")
@click.option("--experiment", "experiment_dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Experiment directory: also its config.env and the run-wide settings (without it: the platform only).")
@click.option("--phase", "specs", multiple=True, metavar="SPEC",
              help="A phase spec NAME[:ENGINE][:KEY=VALUE]...: checked and returned as arrays. Repeatable.")
@click.option("--names", is_flag=True, help="Default RUN_ID (the time now) and check every name that becomes a path "
              "segment, the environment's settings and the platform against the experiment's folder; with RESUME=1 "
              "the run's recorded settings.")
@click.option("--usage", "usage_of", default=None, metavar="SCRIPT",
              help="Print SCRIPT's usage and the settings it reads (run_bench.sh --help); load nothing.")
@click.option("--start", "entry_script", default=None, metavar="SCRIPT",
              help="With --names and --experiment: the run's start by SCRIPT (its run_bench.sh): RESUME=1's checks, "
                   "the run directory (RESULT_ROOT exported), what a dry run leaves, the command that resumes the run.")
@handle_errors
def config(repo: Path, platform_name: Optional[str], experiment_dir: Optional[Path], specs: tuple[str, ...],
           names: bool, usage_of: Optional[str], entry_script: Optional[str]) -> None:
    """Load a run's configuration in one call (used by platform.sh and the run loop): the platform file
    (detected when PLATFORM is not given), the experiment's config.env, the run-wide settings, the phases;
    with --start the run's start (run/loopstart.py: BENCH_RESULT_ROOT, BENCH_DRY_EXISTING, BENCH_DRY_REMOVE,
    BENCH_COMPARE_WARNING, the arrays BENCH_RESUME_CMD, BENCH_PHASE_RUN_DIRS and BENCH_COMPARE_ARGS).

    Precedence: environment > config.env > platforms/<chip>.env ($SSKJ_ENV_PRESET names what the caller's
    environment set). Prints records to export; errors name the file and line (exit 1; 2 for a malformed
    phase spec or name).
    """
    from ..catalog.engines import engine
    from ..catalog.settings import usage
    from ..contract.envfile import expand_references
    from ..run.records import Records

    if usage_of is not None:
        click.echo(usage(usage_of), nl=False)
        return
    start = entry_script is not None and names and experiment_dir is not None
    root_given = bool(os.environ.get("RESULT_ROOT"))  # the caller's environment's, before any file is read
    if start:
        from ..run.loopstart import resume_refusal

        refused = resume_refusal(os.environ, str(experiment_dir))
        if refused is not None:  # before the configuration and its checks
            _error(refused.message)
            _ok(refused.status)
    rec = Records()
    resume_settings: list[str] = []  # the recorded settings the environment set (the resume command repeats them)
    loaded: set[str] = set()  # the keys of the platform file and config.env: settings too
    if "SSKJ_ENV_PRESET" not in os.environ:
        os.environ["SSKJ_ENV_PRESET"] = "\n".join(os.environ)

    def export(key: str, value: str) -> None:
        os.environ[key] = value
        rec.var(key, value)

    def load_env(file: str, protect: tuple[str, ...] = ()) -> None:
        args = ["env"] + [word for key in protect for word in ("--protect", key)] + ["--", file]
        status, out = invoke(args, capture=True)
        _ok_with(status)
        for record in nul_words(out):
            key, _, value = record.partition("=")
            export(key, value)
            loaded.add(key)

    def _ok_with(status: int) -> None:
        if status != 0:
            _write(rec)
            _ok(status)

    parsed = []
    for spec in specs:
        status, out = invoke(["phase", spec], capture=True)
        _ok_with(2 if status else 0)
        words = nul_words(out)
        parsed.append((words[0], words[1], words[2:]))

    root = os.environ.get("REPO_ROOT") or str(repo)
    export("REPO_ROOT", root)
    if experiment_dir is not None:
        export("EXPERIMENT_DIR", str(experiment_dir))
    name = platform_name or os.environ.get("PLATFORM", "")
    detected = "0"
    if not name:
        status, out = invoke(["platform", "detect", "--repo", root], capture=True)
        _ok_with(status)
        name, detected = out.decode("utf-8", "surrogateescape"), "1"
        _info(f"detected platform {name} (set PLATFORM to override)")
    from ..run.platforms import resolve_name

    name = resolve_name(Path(root), name)  # PLATFORM=H200 as --chip H200
    status, out = invoke(["platform", "file", name, "--repo", root], capture=True)
    _ok_with(status)
    file = out.decode("utf-8", "surrogateescape")
    export("PLATFORM", name)
    export("SSKJ_ENVS_DIR", os.environ.get("SSKJ_ENVS_DIR") or f"{root}/envs")
    export("SSKJ_MODELS_DIR", os.environ.get("SSKJ_MODELS_DIR") or f"{root}/models")
    load_env(file, PROTECTED)
    export("RUNTIME", os.environ.get("RUNTIME") or "native")
    if not os.environ.get("ACCEL_SAMPLER"):
        chip = os.environ.get("CHIP", "")
        export("ACCEL_SAMPLER", next((s for prefix, s in ACCEL_SAMPLER_OF_CHIP if chip.startswith(prefix)), "none"))
    rec.var("PLATFORM_DETECTED", detected, export=False)
    _ok_with(invoke(["platform", "check", file])[0])

    if experiment_dir is not None:
        config_env = experiment_dir / "config.env"
        if config_env.is_file() or config_env.exists():
            load_env(str(config_env))
        export("EXPERIMENT", os.environ.get("EXPERIMENT") or experiment_dir.name)
        if names:
            _ok_with(_check_settings(experiment_dir, name, detected, loaded, export))
        status, out = invoke(["run-settings"], capture=True)
        _ok_with(status)
        for record in nul_words(out):
            key, _, value = record.partition("=")
            export(key, value)

    if names:
        export("RUN_ID", os.environ.get("RUN_ID") or time.strftime("%Y%m%d-%H%M%S"))
        pairs = [f"RUN_ID={os.environ['RUN_ID']}", f"EXPERIMENT={os.environ.get('EXPERIMENT', '')}",
                 f"PLATFORM={os.environ['PLATFORM']}", f"CHIP={os.environ.get('CHIP', '')}"]
        for phase_name, phase_engine, _ in parsed:
            pairs += [f"phase={phase_name}", f"engine={phase_engine}"]
        _ok_with(2 if invoke(["check-names", *pairs])[0] else 0)
    if names and experiment_dir is not None:
        from ..catalog.settings import recorded_values
        from ..run.runrecord import overrides, preset_names

        values = recorded_values(os.environ)  # written by the first real phase-begin (run_settings.json)
        export("SSKJ_RUN_SETTINGS", json.dumps(values, sort_keys=True))
        resume_settings = overrides(values, preset_names(os.environ))
        rec.array("BENCH_RESUME_SETTINGS", resume_settings)
    if specs:
        rec.array("BENCH_PHASE_NAMES", [p[0] for p in parsed])
        rec.array("BENCH_PHASE_ENGINES", [p[1] for p in parsed])
        rec.array("BENCH_PHASE_BACKENDS", [engine(p[1]).client_backends["sglang"] for p in parsed])
        rec.array("BENCH_PHASE_HEALTH_PATHS", [engine(p[1]).health_path for p in parsed])
        phase_sets = []
        for index, (_, _, settings) in enumerate(parsed, start=1):
            # a value may name the configuration: dspark:vllm-dspark:MODEL_PATH=${DSPARK_MODEL_PATH}
            expanded = [f"{key}={expand_references(value, os.environ, f'phase spec {specs[index - 1]!r}')}"
                        for key, _, value in (kv.partition("=") for kv in settings)]
            rec.array(f"BENCH_PHASE_SETS_{index}", expanded)
            phase_sets.append(dict(kv.partition("=")[::2] for kv in expanded))
        if experiment_dir is not None:
            _export_run_prompts(export, [(p[0], p[1], engine(p[1]).client_backends["sglang"], sets)
                                         for p, sets in zip(parsed, phase_sets)])
    if start:
        _start(rec, export, str(experiment_dir), root_given, str(entry_script), resume_settings, [p[0] for p in parsed])
    _write(rec)


def _start(rec: Records, export: Callable[[str, str], None], experiment_dir: str, root_given: bool,
           entry_script: str, resume_settings: list[str], names: list[str]) -> None:
    """config --start: the run's start (run.loopstart.run_start) as records; exit 1 when it is refused."""
    from ..run.loopstart import Refusal, run_start

    began = run_start(os.environ, experiment_dir, root_given, entry_script, resume_settings, names)
    if isinstance(began, Refusal):
        _error(began.message)
        _write(rec)
        _ok(began.status)
        return
    export("RESULT_ROOT", began.result_root)
    rec.var("BENCH_RESULT_ROOT", began.result_root, export=False)
    rec.var("BENCH_DRY_EXISTING", "1" if began.dry_existing else "0", export=False)
    rec.var("BENCH_DRY_REMOVE", began.dry_remove, export=False)
    rec.array("BENCH_RESUME_CMD", began.resume_cmd)
    rec.array("BENCH_PHASE_RUN_DIRS", began.run_dirs)
    rec.array("BENCH_COMPARE_ARGS", began.compare_args)
    rec.var("BENCH_COMPARE_WARNING", began.compare_warning, export=False)
    if began.note:
        _info(began.note)


def _check_settings(experiment_dir: Path, platform_name: str, detected: str, loaded: set[str],
                    export: Callable[[str, str], None]) -> int:
    """config --names: run.runrecord.check_settings, and with RESUME=1 the run's recorded settings, exported."""
    from ..contract.errors import ConfigError
    from ..run.runrecord import check_settings, preset_names, resumed

    try:
        check_settings(experiment_dir, platform_name, detected == "1", loaded, preset_names(os.environ), os.environ)
        values, note = resumed(experiment_dir, os.environ, preset_names(os.environ))
    except ConfigError as exc:
        _error(str(exc))
        return 2
    for key, value in values.items():
        export(key, value)
    if note:
        _info(note)
    return 0


def _export_run_prompts(export: Callable[[str, str], None],
                        phases: list[tuple[str, str, str, dict[str, str]]]) -> None:
    """RUN_PROMPT_METHOD, RUN_PROMPT_TEXT, RUN_PROMPT_TEXT_SHA256 and RUN_PROMPT_TOKENIZER: the prompts of every
    phase of the run (run.prompts.run_prompts), decided once before any phase's own settings apply."""
    from ..contract.errors import ConfigError
    from ..run.prompts import phase_prompts, run_prompts

    env = os.environ
    try:
        chosen = run_prompts(env, [phase_prompts(n, e, f, sets, env) for n, e, f, sets in phases],
                             Path(env.get("REPO_ROOT") or "."))
    except ConfigError as exc:
        raise ExitError(str(exc)) from None
    export("RUN_PROMPT_METHOD", chosen.method)
    export("RUN_PROMPT_TEXT", str(chosen.text.path) if chosen.text else "")
    export("RUN_PROMPT_TEXT_SHA256", chosen.text.sha256 if chosen.text else "")
    export("RUN_PROMPT_TOKENIZER", chosen.tokenizer)
    export("RUN_PROMPT_WHY", chosen.why)
