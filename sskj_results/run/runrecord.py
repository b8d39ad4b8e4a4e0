"""results/<RUN_ID>/run_settings.json: the settings a run was started with, which RESUME=1 takes again.

`sskj-results config` reads the recorded settings (catalog/settings.py: those marked `recorded`) from the
environment it loaded (environment > config.env > platform file > default); the first real `phase-begin`
writes them beside the run's phases. On RESUME=1, `config` gives every recorded setting its recorded value
and refuses a resume whose environment sets one to another value, naming each difference.
Also the checks of the settings themselves: a variable that looks like a setting but is not one, and a
platform that is not the one the experiment's folder names.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import AbstractSet, Mapping, Optional

from ..catalog.settings import RECORDED
from ..contract.errors import ConfigError, ResultsError
from ..contract.io import atomic_write_text, read_json_text

RECORD_NAME = "run_settings.json"


def read_record(root: Path) -> Optional[dict[str, str]]:
    """The recorded settings of the run at ROOT, None when it recorded none (a run started before the record)."""
    file = root / RECORD_NAME
    if not file.is_file():
        return None
    try:
        data = read_json_text(file)
    except (ResultsError, OSError) as exc:
        raise ConfigError(f"{exc} (the run's settings); restore it or start a new RUN_ID") from None
    settings = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
        raise ConfigError(f"{file}: $.settings is not an object of strings; restore it or start a new RUN_ID")
    return {str(k): v for k, v in settings.items()}


def write_record(root: Path, settings: Mapping[str, str]) -> bool:
    """Write ROOT/run_settings.json unless it exists (a resume keeps the first). True when written."""
    file = root / RECORD_NAME
    if file.exists():
        return False
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(file, json.dumps({"settings": dict(settings)}, indent=2, sort_keys=True) + "\n")
    return True


def preset_names(env: Mapping[str, str]) -> set[str]:
    """The names the caller's environment set ($SSKJ_ENV_PRESET, newline-separated)."""
    return {n for n in env.get("SSKJ_ENV_PRESET", "").split("\n") if n}


def _pair(key: str, value: str) -> str:
    return f"{key}={shlex.quote(value)}" if value else f"{key}="


def resume_settings(recorded: Mapping[str, str], env: Mapping[str, str],
                    preset: AbstractSet[str]) -> dict[str, str]:
    """The values RESUME=1 gives the recorded settings (every recorded one, the run's own value).

    Raises ConfigError naming every setting the resuming environment (PRESET: the names it set) gives
    another value."""
    differ = [key for key in recorded if key in preset and env.get(key, "") != recorded[key]]
    if differ:
        ran = " ".join(_pair(k, recorded[k]) for k in differ)
        now = " ".join(_pair(k, env.get(k, "")) for k in differ)
        raise ConfigError(f"RESUME=1: the run was started with {ran}, this resume sets {now} ({RECORD_NAME}); "
                          "resume with the run's settings (unset them) or start a new RUN_ID")
    return dict(recorded)


def overrides(values: Mapping[str, str], preset: AbstractSet[str]) -> list[str]:
    """KEY=VALUE of the recorded settings the caller's environment set (the resume command repeats them)."""
    return [f"{key}={values[key]}" for key in RECORDED if key in preset and key in values]


def check_settings(experiment_dir: Path, platform_name: str, detected: bool, loaded: AbstractSet[str],
                   preset: AbstractSet[str], env: Mapping[str, str]) -> None:
    """Refuse (ConfigError) a variable of the caller's environment (PRESET) that looks like a setting but is
    not one (LOADED: the platform file's and config.env's keys), and a platform given (not DETECTED) that is
    not the one the experiment's folder names, unless OTHER_PLATFORM=1."""
    from ..catalog.engines import ENGINES
    from ..catalog.settings import misspelled
    from .preflight import expected_platform

    ours = set(loaded) | {e.extra_args_var for e in ENGINES} | {e.python_var for e in ENGINES}
    given = {n for n in preset if not n.startswith(("SSKJ_", "BENCH_", "LIB_", "SLURM", "PYTEST", "FAKE_"))}
    for typo, setting in misspelled(given, ours):
        raise ConfigError(f"{typo} is not a setting sskj reads: did you mean {setting}? (unset {typo}; "
                          f"`bash {experiment_dir}/run_bench.sh --help` lists the settings)")
    expected = expected_platform(str(experiment_dir))
    if not detected and expected and expected != platform_name and env.get("OTHER_PLATFORM") != "1":
        raise ConfigError(f"PLATFORM={platform_name}: {experiment_dir} is an experiment of platform {expected}; run "
                          f"it with PLATFORM={expected}, or set OTHER_PLATFORM=1 to run it on {platform_name} knowingly")


def resumed(experiment_dir: Path, env: Mapping[str, str], preset: AbstractSet[str]) -> tuple[dict[str, str], str]:
    """With RESUME=1: the recorded settings of the run to resume (resume_settings) and a line saying which ones
    this environment did not have; else nothing."""
    if env.get("RESUME") != "1" or not env.get("RUN_ID"):
        return {}, ""
    root = Path(env.get("RESULT_ROOT") or experiment_dir / "results" / env["RUN_ID"])
    recorded = read_record(root)
    if recorded is None:
        return {}, f"{root} recorded no settings ({RECORD_NAME}); resuming with this environment's"
    values = resume_settings(recorded, env, preset)
    from .launch import RUN_DEFAULTS

    defaults = dict(RUN_DEFAULTS, TP=env.get("DEFAULT_TP") or "1")  # what this environment would give them
    taken = [_pair(k, v) for k, v in sorted(values.items()) if (env.get(k) or defaults.get(k, "")) != v]
    return values, f"resuming with the run's settings: {' '.join(taken)} ({RECORD_NAME})" if taken else ""
