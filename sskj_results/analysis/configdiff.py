"""What a comparison compares, and every other setting in which the compared runs differ. Pure: no I/O.

A comparison is like for like only when the runs differ in the thing being
compared and nothing else. The *compared axes* are decided from the runs
themselves, in this order:

* ``chip`` — the runs' chips differ (``metadata.chip``, else ``accelerator``);
* ``engine`` — their engines differ (``metadata.engine``/``backend``, or two
  recorded ``engine_version`` values);
* ``speculative decoding`` — their ``(config.spec_method, config.spec_tokens)``
  or the speculative flags of their server commands differ (one run
  speculative, another not, or two methods or token counts);
* ``configuration`` — none of the above differs: the runs compare engine
  settings of one engine on one chip (e.g. ``--kv-cache-dtype fp8`` against
  ``auto``), so any engine setting may differ.

Every setting belongs to one axis (`SETTINGS`); a difference in a setting
whose axis is compared is expected. A difference in any other setting (the
KV-cache dtype of an SGLang-vs-vLLM comparison, the benchmark client's
version, the dataset, ...) is *unexpected*: its effect is mixed into every
number of the comparison, and the comparison's title says "(configurations
differ)". docs/COMPARE.md lists the settings.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..catalog.engines import non_setting_flags, setting_flags, spec_flag_words
from ..contract.comparison_models import ConfigDifference
from ..contract.models import Config, Metadata
from .rundata import RunData

CHIP = "chip"
ENGINE = "engine"
SPECULATIVE = "speculative decoding"
CONFIGURATION = "configuration"
AXES = (CHIP, ENGINE, SPECULATIVE, CONFIGURATION)
# informational settings: listed when they differ, never part of the comparison and never "unexpected"
PROVENANCE = "provenance"
# what the engines were sent: never a compared axis; a difference refuses every verdict (`prompt_refusal`)
PROMPTS = "prompts"
PROMPT_SETTINGS = (("prompt method", "prompt_method"), ("prompt source", "prompt_source"))

# metadata fields that name a run rather than describe how it ran (shown in the Runs table instead)
IDENTITY_METADATA = frozenset({
    "experiment", "run_id", "timestamp", "timestamp_precision", "timestamp_source", "phase", "description", "script",
    "tool_version", "imported_at",
    "imported_from", "engine", "backend", "chip", "accelerator",
})
METADATA_AXES: dict[str, str] = {
    "engine_version": ENGINE, "env": ENGINE,
    "hardware": CHIP, "platform": CHIP, "devices": CHIP, "price_per_accel_hour": CHIP, "driver_version": CHIP, "runtime_version": CHIP, "host": CHIP,
    "client": "client", "client_version": "client",
    "git_commit": PROVENANCE,
}
# config keys that are not engine settings
# port: where the engine listened (PORT=auto beside another run), never how it ran
IGNORED_CONFIG = frozenset({"server_args", "scenario_name_format", "prompt_method", "port"})  # prompts: per scenario
# tp: the devices of a chip's setup (expected when chips are compared, a configuration difference on one chip)
CONFIG_AXES: dict[str, str] = {"spec_method": SPECULATIVE, "spec_tokens": SPECULATIVE, "extra_args": ENGINE, "tp": CHIP}
# server flags that legitimately differ between runs of one experiment, or repeat a setting listed on its own:
# every engine row's host, port and model flags (catalog/engines.py)
IGNORED_FLAGS = non_setting_flags()
# across chips the tensor-parallel size is the chip's setup, listed as config.tp: its flags leave the flag list
TP_FLAGS = setting_flags("tp")
# a speculative flag: a word of the rows' `spec_words` starts a word of its name (--speculative-*, --num-speculative-*)
SPEC_FLAG = re.compile(r"^--(?:[a-z0-9-]*-)?(?:" + "|".join(map(re.escape, spec_flag_words())) + ")",
                       re.IGNORECASE)
PHASE_ARGS = re.compile(r"^phase(\d+)_server_args$")

Flag = tuple[str, tuple[str, ...]]


# --------------------------------------------------------------------------- server commands


def server_command(config: Config) -> Optional[str]:
    """The recorded server command: `server_args`, else the `phase<N>_server_args` (the lowest N when several)."""
    if config.server_args:
        return config.server_args
    extra = config.model_extra or {}
    phases = sorted((int(m.group(1)), str(v)) for k, v in extra.items() if (m := PHASE_ARGS.match(k)) and v)
    return phases[0][1] if phases else None


def split_command(command: str) -> list[str]:
    """Shell words of a recorded command (`printf %q` quoting); whitespace words when it does not parse."""
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def parse_flags(command: str) -> list[Flag]:
    """`--name value...` pairs of a command, in order; `--name=value` is split; words before the first flag
    (the launcher and a positional model) are dropped."""
    flags: list[Flag] = []
    name: Optional[str] = None
    values: list[str] = []
    for word in split_command(command):
        if word.startswith("--") and len(word) > 2:
            if name is not None:
                flags.append((name, tuple(values)))
            name, _, value = word.partition("=")
            values = [value] if value else []
        elif name is not None and not (word.startswith("-") and len(word) > 1 and not _number(word)):
            values.append(word)
        elif name is not None:  # a short option: its own flag
            flags.append((name, tuple(values)))
            name, values = word, []
    if name is not None:
        flags.append((name, tuple(values)))
    return flags


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


_PLAIN = re.compile(r"^[\w@%+=:,./<>-]+$")


def _quote(word: str) -> str:
    return word if _PLAIN.match(word) else shlex.quote(word)


def flag_text(flags: Sequence[Flag]) -> str:
    """Flags as one command-line fragment (quoted only where a shell needs it; `<model>` stays readable)."""
    return " ".join(" ".join(_quote(w) for w in (name, *values)) for name, values in flags)


def speculative_flags(command: Optional[str], model: Optional[str] = None) -> Optional[str]:
    """The speculative-decoding flags of a server command, the served model written `<model>`
    (seed 002: `--spec-method dspark --spec-model <model> --spec-tokens 5`); None without any."""
    if not command:
        return None
    flags = [(n, tuple("<model>" if model and v == model else v for v in vals))
             for n, vals in parse_flags(command) if SPEC_FLAG.match(n)]
    return flag_text(flags) if flags else None


# --------------------------------------------------------------------------- axes


def is_speculative(run: RunData) -> bool:
    """config.spec_method is set, or the recorded server command has speculative-decoding flags."""
    config = run.results.config
    return bool(config.spec_method) or speculative_flags(server_command(config)) is not None


def _distinct(values: Sequence[Any]) -> bool:
    return len({repr(v) for v in values}) > 1


def compared_axes(runs: Sequence[RunData]) -> list[str]:
    """The axes in which the runs differ (see the module docstring); `configuration` when none does."""
    axes = []
    if _distinct([r.chip for r in runs]):
        axes.append(CHIP)
    versions = {r.results.metadata.engine_version for r in runs} - {None}
    if _distinct([r.engine for r in runs]) or len(versions) > 1:
        axes.append(ENGINE)
    if _distinct([(r.results.config.spec_method, r.results.config.spec_tokens,
                   speculative_flags(server_command(r.results.config), r.results.metadata.model)) for r in runs]):
        axes.append(SPECULATIVE)
    return axes or [CONFIGURATION]


def one_model_with_speculative_variant(runs: Sequence[RunData]) -> bool:
    """The runs are one model without speculative decoding and at least one speculative variant of it
    (whose own model, e.g. a DSpark checkpoint, may differ)."""
    plain = [r for r in runs if not is_speculative(r)]
    return bool(plain) and len(plain) < len(runs) and len({r.results.metadata.model for r in plain}) == 1


# --------------------------------------------------------------------------- differences


@dataclass(frozen=True)
class _Setting:
    name: str
    axis: Optional[str]
    value: Callable[[RunData], Any]


def _meta(field: str) -> Callable[[RunData], Any]:
    return lambda r: getattr(r.results.metadata, field)


def _config(key: str) -> Callable[[RunData], Any]:
    return lambda r: r.results.config.model_dump(mode="json").get(key)


def _scenario_values(field: str) -> Callable[[RunData], Any]:
    def values(run: RunData) -> Any:
        found = sorted({str(v) for s in run.results.scenarios if (v := getattr(s, field)) is not None})
        return ", ".join(found) if found else None
    return values


# the load client's fingerprint (scenario.client): the Rust and Python clients time requests differently, and
# the seed and warmup changed meaning between modules; a difference in any of them is mixed into every number
CLIENT_FIELDS = (("client implementation", "implementation"), ("client module", "module"),
                 ("client seed", "seed"), ("client warmup", "warmup_policy"))


def _client_values(field: str) -> Callable[[RunData], Any]:
    def values(run: RunData) -> Any:
        found = sorted({str(v) for s in run.results.scenarios
                        if s.client is not None and (v := getattr(s.client, field)) is not None})
        return ", ".join(found) if found else None
    return values


def _flags(speculative: bool, ignored: frozenset[str] = IGNORED_FLAGS) -> Callable[[RunData], Any]:
    def flags(run: RunData) -> Any:
        command = server_command(run.results.config)
        if command is None:
            return None
        return tuple(sorted((n, v) for n, v in parse_flags(command)
                            if n not in ignored and bool(SPEC_FLAG.match(n)) == speculative))
    return flags


def _settings(runs: Sequence[RunData], axes: Sequence[str]) -> list[_Setting]:
    settings = [_Setting("engine", ENGINE, lambda r: r.engine), _Setting("chip", CHIP, lambda r: r.chip),
                _Setting("accelerators", CHIP, _scenario_values("accelerators"))]
    settings.append(_Setting("model", "model", _meta("model")))
    meta_fields = [f for f in Metadata.model_fields if f not in IDENTITY_METADATA and f != "model"]
    settings += [_Setting(f"metadata.{f}", METADATA_AXES.get(f), _meta(f)) for f in meta_fields]
    keys: dict[str, None] = {}
    for run in runs:
        for key in run.results.config.model_dump(mode="json"):
            if key not in IGNORED_CONFIG and not PHASE_ARGS.match(key):
                keys.setdefault(key)
    settings += [_Setting(f"config.{k}", CONFIG_AXES.get(k, CONFIGURATION), _config(k)) for k in keys]
    flag_axis = ENGINE if ENGINE in axes else CONFIGURATION
    ignored = IGNORED_FLAGS | TP_FLAGS if CHIP in axes else IGNORED_FLAGS
    settings.append(_Setting("server flags", flag_axis, _flags(speculative=False, ignored=ignored)))
    settings.append(_Setting("speculative flags", SPECULATIVE, _flags(speculative=True)))
    settings.append(_Setting("dataset", "client", _scenario_values("dataset_name")))
    settings += [_Setting(name, PROMPTS, _scenario_values(field)) for name, field in PROMPT_SETTINGS]
    settings.append(_Setting("request format", ENGINE, _scenario_values("request_format")))
    settings += [_Setting(name, "client", _client_values(field)) for name, field in CLIENT_FIELDS]
    return settings


def _flag_values(values: list[Any]) -> list[Any]:
    """Per run, the flags not given identically to every run (None stays: not recorded)."""
    known = [set(v) for v in values if v is not None]
    common = set.intersection(*known) if known else set()
    return [None if v is None else flag_text([f for f in v if f not in common]) or "(none beyond the common flags)"
            for v in values]


def _model_expected(runs: Sequence[RunData], axes: Sequence[str]) -> bool:
    return SPECULATIVE in axes and one_model_with_speculative_variant(runs)


def config_differences(runs: Sequence[RunData], labels: Sequence[str]) -> tuple[list[str], list[ConfigDifference]]:
    """The compared axes and every setting whose recorded value is not the same in every run."""
    axes = compared_axes(runs)
    out: list[ConfigDifference] = []
    for setting in _settings(runs, axes):
        values = [setting.value(r) for r in runs]
        if not _distinct(values):
            continue
        if setting.name.endswith("flags"):
            values = _flag_values(values)
        if setting.name == "model":
            expected = _model_expected(runs, axes)
            axis: Optional[str] = SPECULATIVE if expected else setting.axis
        else:
            axis = setting.axis
            expected = axis in axes or axis == PROVENANCE or (CONFIGURATION in axes and axis == ENGINE)
        out.append(ConfigDifference(setting=setting.name, axis=axis, expected=expected,
                                    values=dict(zip(labels, values))))
    return axes, out


def prompt_refusal(differences: Sequence[ConfigDifference]) -> Optional[str]:
    """Why no verdict can be given: the runs' prompt method or prompt source differ where every run recorded it
    (one engine tokenized text, another got token ids; or the prompts were other texts). None: the same, or not
    recorded by some run (listed as a difference, not refused)."""
    found = [d for d in differences if d.axis == PROMPTS and None not in d.values.values()]
    if not found:
        return None
    return "prompts differ (" + "; ".join(
        f"{d.setting}: " + " vs ".join(str(v) for v in dict.fromkeys(d.values.values())) for d in found) + ")"
