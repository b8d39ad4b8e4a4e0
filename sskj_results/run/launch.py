"""The server command of a phase, from the engine table and the run's settings (`sskj-results server-cmd`).

This is the one server-command builder: the shell (bench::server_cmd,
bench::server_base, lib::engine_launcher) asks here and starts exactly the
argv printed; nothing else spells an engine's command. `settings` is the
run's environment (platform file, config.env, phase settings, the rank under
srun): the CLI passes os.environ.

Kinds (the words, in order):
  launcher  the prefix that runs the engine's Python: on docker platforms
            `docker exec --env K=V... --env SSKJ_SERVER_TAG=sskj-<PORT>
            CONTAINER_NAME CONTAINER_PYTHON`, natively `env K=V... <python>`
            (or only `<python>` without environment), the python being the
            row's `python_var` (SGLANG_PYTHON, VLLM_PYTHON, ...), else
            ENGINE_PYTHON; a row whose engine is its own program
            (`program`: llama-server) runs that program instead, from its
            `python_var` key or PATH (in a container: by its name). With
            DEVICES set the environment starts with DEVICES_ENV=DEVICES
            (default CUDA_VISIBLE_DEVICES).
  base      launcher (with the row's server environment, e.g.
            VLLM_SERVER_DEV_MODE=1, and the K=V given) -m <launch module>
            [launch args] (vLLM: `-m vllm.entrypoints.cli.main serve`, what
            `vllm serve` runs)
  server    base, then the row's `head` (model as its positional argument or
            flag, TP, fixed flags such as --trust-remote-code, the flags that
            turn /metrics on), the settings' flags, FLAG..., the config-file
            option when a setting lives in the engine's config file, the row's
            host and port flags (--host SERVER_HOST --port PORT), MULTINODE,
            <row's extra_args_var>
MULTINODE (NNODES > 1, docs/CLUSTER.md) by the row's style: `dist-init`
`--nnodes N --node-rank R --dist-init-addr HEAD:PORT`; `master-addr`
`--nnodes N --node-rank R --master-addr HEAD --master-port PORT`, plus
`--headless` on ranks > 0; an engine without a style runs on one node only.
*_EXTRA_ARGS are split on blanks (first line only). Settings that live in the
engine's config file are written, as JSON (which YAML readers read), to
ENGINE_CONFIG_DIR/<PHASE_NAME>.<engine>.yaml (the run loop sets it to
results/<RUN_ID>/engine_configs/; unset, such a setting is an error).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..catalog.clients import IMPLS
from ..catalog.engines import Engine, engine
from ..contract.errors import ConfigError, UsageError

KINDS = ("launcher", "base", "server")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _get(settings: Mapping[str, str], key: str) -> str:
    return settings.get(key, "")


def require(settings: Mapping[str, str], *keys: str) -> None:
    """Every key set and non-empty; one error naming all missing ones."""
    missing = [k for k in keys if not _get(settings, k)]
    if missing:
        raise ConfigError(f"missing required variables: {' '.join(missing)}")


def launcher(name: str, env: list[str], settings: Mapping[str, str]) -> list[str]:
    """The prefix that runs engine NAME's Python with environment K=V... (see the module docstring)."""
    for kv in env:
        if not _ASSIGNMENT.match(kv):
            raise UsageError(f"expected KEY=VALUE, got {kv!r}")
    row = engine(name)
    if _get(settings, "DEVICES"):
        env = [f"{_get(settings, 'DEVICES_ENV') or 'CUDA_VISIBLE_DEVICES'}={settings['DEVICES']}", *env]
    if (_get(settings, "RUNTIME") or "native") == "docker":
        require(settings, "CONTAINER_NAME", *(() if row.program else ("CONTAINER_PYTHON",)), "PORT")
        words = ["docker", "exec"]
        for kv in env:
            words += ["--env", kv]
        return words + ["--env", f"SSKJ_SERVER_TAG=sskj-{settings['PORT']}", settings["CONTAINER_NAME"],
                        row.program or settings["CONTAINER_PYTHON"]]
    if row.program:  # the engine's own program: its platform key, else its name on PATH
        program = _get(settings, row.python_var) or row.program
        return ["env", *env, program] if env else [program]
    python = _get(settings, row.python_var) or _get(settings, "ENGINE_PYTHON")
    if not python:
        raise ConfigError(f"no Python for engine {name}: set {row.python_var} or ENGINE_PYTHON "
                          "(platforms/<chip>.env or environment)")
    return ["env", *env, python] if env else [python]


def multinode_args(name: str, settings: Mapping[str, str]) -> list[str]:
    """Engine NAME's multi-node flags of this rank; none on one node (an error for a single-node engine)."""
    nnodes = _get(settings, "NNODES") or "1"
    if not (nnodes.isascii() and nnodes.isdigit() and int(nnodes) > 1):
        return []
    style = engine(name).multinode
    if not style:
        raise ConfigError(f"NNODES={nnodes}: engine {name} runs on a single node only (catalog/engines.py)")
    rank, addr = _get(settings, "NODE_RANK"), _get(settings, "DIST_INIT_ADDR")
    if not (rank.isascii() and rank.isdigit() and re.fullmatch(r".+:[0-9]+", addr, re.S)):
        raise ConfigError(f"NNODES={nnodes}: NODE_RANK and DIST_INIT_ADDR (host:port) must be set "
                          "(they are, under srun, by multinode_rank.sh)")
    if style == "dist-init":
        return ["--nnodes", nnodes, "--node-rank", rank, "--dist-init-addr", addr]
    host, _, port = addr.rpartition(":")
    return ["--nnodes", nnodes, "--node-rank", rank, "--master-addr", host, "--master-port", port] + \
        (["--headless"] if int(rank) > 0 else [])


def _extra(settings: Mapping[str, str], key: str) -> list[str]:
    return (_get(settings, key).split("\n", 1)[0]).split()


def _head(row: Engine, settings: Mapping[str, str]) -> list[str]:
    words: list[str] = []
    for word in row.head:
        if word == "{model}":
            words += [row.model_flag, settings["MODEL_PATH"]] if row.model_flag else [settings["MODEL_PATH"]]
        elif word == "{tp}":
            words += [row.flags["tp"][0], settings["TP"]]
        elif word == "{metrics}":
            words += list(row.metrics_flags)
        else:
            words.append(word)
    return words


def config_file(row: Engine, content: dict[str, Any], settings: Mapping[str, str]) -> list[str]:
    """Write the engine's config file (settings that live there) and return the option naming it; [] when none."""
    if not content:
        return []
    from ..contract.io import atomic_write_text

    if not _get(settings, "ENGINE_CONFIG_DIR"):
        raise ConfigError(f"engine {row.name} keeps {', '.join(sorted(row.file_keys))} in a config file: set "
                          "ENGINE_CONFIG_DIR to the directory to write it to (the run loop does)")
    path = Path(settings["ENGINE_CONFIG_DIR"]) / f"{_get(settings, 'PHASE_NAME') or row.name}.{row.name}.yaml"
    try:
        atomic_write_text(path, json.dumps(content, indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the engine's config file ({exc.strerror}): "
                          "set ENGINE_CONFIG_DIR to a writable directory") from None
    return [row.config_file_flags[0], str(path)]


def server_cmd(name: str, kind: str, words: list[str], settings: Mapping[str, str],
               engine_settings: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The argv of KIND for engine NAME: WORDS are K=V environment (launcher, base) or the experiment's flags
    (server, after the flags the row spells for ENGINE_SETTINGS, the workflow's (key, value) settings)."""
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    row = engine(name)
    flags = row.flags_for(list(engine_settings))
    if kind == "launcher":
        return launcher(name, words, settings)
    if kind == "base":
        point = ["-m", row.launch_module] if row.launch_module else []  # a program row: the launcher ends with it
        return launcher(name, [*row.server_env, *words], settings) + [*point, *row.launch_args]
    require(settings, "MODEL_PATH", "TP", "SERVER_HOST", "PORT")
    conf = config_file(row, row.file_settings(list(engine_settings)), settings)
    return [*server_cmd(name, "base", [], settings), *_head(row, settings), *flags, *words, *conf,
            row.host_flag, settings["SERVER_HOST"], row.port_flag, settings["PORT"], *multinode_args(name, settings),
            *_extra(settings, row.extra_args_var)]


# run-wide settings: name -> default when unset or empty (PORT: the platform's DEFAULT_PORT)
RUN_DEFAULTS = (("SERVER_HOST", "127.0.0.1"), ("HEALTH_TIMEOUT_S", "1800"), ("STOP_GRACE_S", "30"),
                ("WARMUP_REQUESTS", "2"), ("PROMPTS_PER_CONCURRENCY", "4"), ("MIN_PROMPTS", "8"), ("CLIENT", "sglang"),
                ("REPEATS", "1"),
                ("OOM_PATTERN", "out of memory|OutOfMemoryError|OOM error"))
_COUNTS = ("PORT", "HEALTH_TIMEOUT_S", "STOP_GRACE_S", "WARMUP_REQUESTS", "PROMPTS_PER_CONCURRENCY", "MIN_PROMPTS", "TP",
           "REPEATS")


def run_settings(settings: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The run-wide settings with their defaults (environment > config.env > platform file > default), and every problem.

    TP: TP=, else one per device of DEVICES= (comma-separated), else the
    platform's DEFAULT_TP, else 1. PORT=auto: the first free port from the
    platform's DEFAULT_PORT on. The counts must be non-negative integers (REPEATS at least 1),
    CLIENT sglang or vllm, MODEL_PATH set.
    """
    out = {"PORT": _get(settings, "PORT") or _get(settings, "DEFAULT_PORT")}
    out.update((key, _get(settings, key) or default) for key, default in RUN_DEFAULTS)
    if out["PORT"] == "auto":  # a free port from the platform's default on (BENCHMARK_WORKFLOW.md)
        from .ownership import free_port

        base = _get(settings, "DEFAULT_PORT")
        out["PORT"] = str(free_port(int(base) if base.isdigit() else 30000, out["SERVER_HOST"]))
    devices = _get(settings, "DEVICES").split("\n", 1)[0]
    devices = devices[:-1] if devices.endswith(",") else devices  # as bash `IFS=, read -a` counts them
    out["TP"] = _get(settings, "TP") or (str(len(devices.split(","))) if devices else "") \
        or _get(settings, "DEFAULT_TP") or "1"
    problems = [f"{key} must be a non-negative integer, got '{out[key]}'" for key in _COUNTS
                if not (out[key].isascii() and out[key].isdigit())]
    if out["REPEATS"] == "0":
        problems.append("REPEATS must be at least 1 (measurements of each scenario), got '0'")
    if out["CLIENT"] not in ("sglang", "vllm"):
        problems.append("CLIENT must be 'sglang' (python -m sglang.bench_serving) or 'vllm' (vllm bench serve), "
                        f"got '{out['CLIENT']}'")
    if _get(settings, "CLIENT_IMPL") not in ("", *IMPLS):
        problems.append("CLIENT_IMPL must be 'python' or 'rust' (the client's Rust load generator), "
                        f"got '{_get(settings, 'CLIENT_IMPL')}'")
    if not _get(settings, "MODEL_PATH"):
        problems.append("missing required variables: MODEL_PATH")
    return out, problems
