"""The server command of a phase, from the engine table and the run's settings (`sskj-results server-cmd`).

The shell's command builders (bench::sglang_server_cmd, bench::vllm_server_cmd,
bench::vllm_server_base, lib::engine_launcher) ask here and start exactly the
argv printed. `settings` is the run's environment (platform file, config.env,
phase settings, the rank under srun): the CLI passes os.environ.

Kinds (the words, in order):
  launcher  the prefix that runs the engine's Python: on docker platforms
            `docker exec --env K=V... --env SSKJ_SERVER_TAG=sskj-<PORT>
            CONTAINER_NAME CONTAINER_PYTHON`, natively `env K=V... <python>`
            (or only `<python>` without environment), the python being the
            engine table's variable (SGLANG_PYTHON, VLLM_PYTHON, ...), else
            ENGINE_PYTHON. With DEVICES set the environment starts with
            DEVICES_ENV=DEVICES (default CUDA_VISIBLE_DEVICES).
  base      launcher (with the engine table's server environment, e.g.
            VLLM_SERVER_DEV_MODE=1, and the K=V given) -m <launch module>
            [launch args] (vLLM: `-m vllm.entrypoints.cli.main serve`, what
            `vllm serve` runs; the model follows as its positional argument)
  sglang    launcher -m <module> --model-path MODEL_PATH --tp-size TP
            --trust-remote-code --enable-metrics FLAG... --host SERVER_HOST --port PORT
            MULTINODE SGLANG_EXTRA_ARGS
  vllm      base MODEL_PATH (vllm-cpu: --model MODEL_PATH) --trust-remote-code
            --tensor-parallel-size TP FLAG... --host SERVER_HOST --port PORT
            MULTINODE VLLM_EXTRA_ARGS
MULTINODE (NNODES > 1, docs/CLUSTER.md): SGLang `--nnodes N --node-rank R
--dist-init-addr HEAD:PORT`; vLLM `--nnodes N --node-rank R --master-addr
HEAD --master-port PORT`, plus `--headless` on ranks > 0. *_EXTRA_ARGS are
split on blanks (first line only).
"""

from __future__ import annotations

import re
from typing import Mapping

from ..catalog.clients import IMPLS
from ..catalog.engines import engine
from ..contract.errors import ConfigError, UsageError

KINDS = ("launcher", "base", "sglang", "vllm")
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
        require(settings, "CONTAINER_NAME", "CONTAINER_PYTHON", "PORT")
        words = ["docker", "exec"]
        for kv in env:
            words += ["--env", kv]
        return words + ["--env", f"SSKJ_SERVER_TAG=sskj-{settings['PORT']}", settings["CONTAINER_NAME"],
                        settings["CONTAINER_PYTHON"]]
    python = _get(settings, row.python_var) or _get(settings, "ENGINE_PYTHON")
    if not python:
        raise ConfigError(f"no Python for engine {name}: set {row.python_var} or ENGINE_PYTHON "
                          "(platforms/<chip>.env or environment)")
    return ["env", *env, python] if env else [python]


def multinode_args(family: str, settings: Mapping[str, str]) -> list[str]:
    """The engine's multi-node flags of this rank; none on one node."""
    nnodes = _get(settings, "NNODES") or "1"
    if not (nnodes.isascii() and nnodes.isdigit() and int(nnodes) > 1):
        return []
    rank, addr = _get(settings, "NODE_RANK"), _get(settings, "DIST_INIT_ADDR")
    if not (rank.isascii() and rank.isdigit() and re.fullmatch(r".+:[0-9]+", addr, re.S)):
        raise ConfigError(f"NNODES={nnodes}: NODE_RANK and DIST_INIT_ADDR (host:port) must be set "
                          "(they are, under srun, by multinode_rank.sh)")
    if family == "sglang":
        return ["--nnodes", nnodes, "--node-rank", rank, "--dist-init-addr", addr]
    host, _, port = addr.rpartition(":")
    return ["--nnodes", nnodes, "--node-rank", rank, "--master-addr", host, "--master-port", port] + \
        (["--headless"] if int(rank) > 0 else [])


def _extra(settings: Mapping[str, str], key: str) -> list[str]:
    return (_get(settings, key).split("\n", 1)[0]).split()


def server_cmd(name: str, kind: str, words: list[str], settings: Mapping[str, str]) -> list[str]:
    """The argv of KIND for engine NAME: WORDS are K=V environment (launcher, base) or the experiment's flags."""
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    if kind == "launcher":
        return launcher(name, words, settings)
    if kind == "base":
        row = engine(name)
        return launcher(name, [*row.server_env, *words], settings) + ["-m", row.launch_module, *row.launch_args]
    require(settings, "MODEL_PATH", "TP", "SERVER_HOST", "PORT")
    tail = ["--host", settings["SERVER_HOST"], "--port", settings["PORT"], *multinode_args(kind, settings)]
    if kind == "sglang":
        row = engine(name)
        return [*launcher(name, [], settings), "-m", row.launch_module, "--model-path", settings["MODEL_PATH"],
                "--tp-size", settings["TP"], "--trust-remote-code", *row.metrics_flags, *words, *tail,
                *_extra(settings, "SGLANG_EXTRA_ARGS")]
    # the serve CLI takes the model as its positional argument (and honours --headless on ranks > 0)
    row = engine(name)
    model = [row.model_flag, settings["MODEL_PATH"]] if row.model_flag else [settings["MODEL_PATH"]]
    return [*server_cmd(name, "base", [], settings), *model, "--trust-remote-code",
            "--tensor-parallel-size", settings["TP"], *words, *tail, *_extra(settings, "VLLM_EXTRA_ARGS")]


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
    platform's DEFAULT_TP, else 1. The counts must be non-negative integers (REPEATS at least 1),
    CLIENT sglang or vllm, MODEL_PATH set.
    """
    out = {"PORT": _get(settings, "PORT") or _get(settings, "DEFAULT_PORT")}
    out.update((key, _get(settings, key) or default) for key, default in RUN_DEFAULTS)
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
