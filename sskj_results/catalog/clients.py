"""Bench client command lines (`sskj-results client-cmd`): how each client spells one scenario.

CLIENT=sglang: `python -m sglang.benchmark.serving` where the client's Python
has it (sglang 0.5.23 and later), `python -m sglang.bench_serving` otherwise
(the older module; in newer releases a shim that warns it will be removed),
writing one JSON line per run (`--output-file … --output-details`);
CLIENT=vllm: `vllm bench serve` writing one JSON document (`--save-result
--save-detailed`). CLIENT_IMPL=rust runs each client's Rust load generator
(sglang `--rust-client`, vLLM `VLLM_USE_RUST_BENCH=1`): same command, same
result keys.

Every fact about a client that a record needs (its module, default seed,
warmup policy) is declared here, once, in CLIENT_MODULES and IMPLEMENTATIONS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, get_args

from ..contract.errors import ConfigError
from ..contract.kinds import PromptMethod

CLIENTS = ("sglang", "vllm")
IMPLS = ("python", "rust")


@dataclass(frozen=True)
class ClientModule:
    """One client module a host may have, with the defaults whose meaning changed between them."""

    client: str  # CLIENT
    module: str  # python -m MODULE
    argv: tuple[str, ...]  # words after `python -m MODULE`
    label: str  # the recorded client name (results.json metadata.client)
    seed_default: int  # the client's --seed default
    warmup_policy: str  # what the client's own warmup does (ClientFingerprint.warmup_policy)
    warmup_flag: Optional[str]  # the client's own warmup option (None: sskj does not pass one)


# per client, newest first: a host uses the first whose module its client Python has (the last one otherwise)
CLIENT_MODULES: dict[str, tuple[ClientModule, ...]] = {
    "sglang": (
        ClientModule("sglang", "sglang.benchmark.serving", (), "sglang.benchmark.serving", 42,
                     "respects_max_concurrency", "--warmup-requests"),
        ClientModule("sglang", "sglang.bench_serving", (), "sglang.bench_serving", 1, "all_at_once",
                     "--warmup-requests"),
    ),
    "vllm": (
        ClientModule("vllm", "vllm.entrypoints.cli.main", ("bench", "serve"), "vllm bench serve", 0,
                     "respects_max_concurrency", None),
    ),
}


@dataclass(frozen=True)
class Implementation:
    """How CLIENT_IMPL selects a client's load generator: extra flags and environment."""

    flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # NAME=VALUE set for the client (through `env`)


IMPLEMENTATIONS: dict[tuple[str, str], Implementation] = {
    ("sglang", "python"): Implementation(),
    ("sglang", "rust"): Implementation(flags=("--rust-client",)),
    ("vllm", "python"): Implementation(),
    ("vllm", "rust"): Implementation(env=("VLLM_USE_RUST_BENCH=1",)),
}


def client_modules(client: str) -> tuple[ClientModule, ...]:
    """The modules of CLIENT, newest first. Raises ValueError for an unknown client."""
    if client not in CLIENT_MODULES:
        raise ValueError(f"unknown client {client!r} (known: {', '.join(CLIENTS)})")
    return CLIENT_MODULES[client]


def probe_modules(client: str) -> list[str]:
    """The modules whose presence decides which module CLIENT runs (asked once to the client's Python)."""
    return [m.module for m in client_modules(client)[:-1]]


def choose_module(client: str, present: Optional[set[str]] = None, module: Optional[str] = None) -> ClientModule:
    """CLIENT's module: the one named (CLIENT_MODULE), else the newest of those present, else its oldest.

    Raises ValueError for a module the client does not have."""
    modules = client_modules(client)
    if module:
        for row in modules:
            if row.module == module:
                return row
        raise ValueError(f"CLIENT_MODULE {module!r} is not a module of CLIENT={client} "
                         f"(known: {', '.join(m.module for m in modules)})")
    for row in modules[:-1]:
        if present is not None and row.module in present:
            return row
    return modules[-1]


def module_of_label(label: Optional[str]) -> Optional[ClientModule]:
    """The module row a recorded client name (metadata.client) stands for, if it names one."""
    for rows in CLIENT_MODULES.values():
        for row in rows:
            if label in (row.label, row.module):
                return row
    return None


def implementation(client: str, impl: str) -> Implementation:
    if (client, impl) not in IMPLEMENTATIONS:
        raise ValueError(f"CLIENT_IMPL must be one of {', '.join(IMPLS)}, got {impl!r}")
    return IMPLEMENTATIONS[(client, impl)]

# client -> {the workflow's name (SGLang's dataset names): the client's own}: `vllm bench serve` has no
# `random-ids` dataset (its `random` is the same thing: random token ids, decoded). The --backend word of each
# client against each engine is the engine row's (catalog/engines.py client_backends).
_DATASETS = {"vllm": {"random-ids": "random"}}
_DEFAULT_DATASET = {"sglang": "random-ids", "vllm": "random"}


def client_backend(client: str, backend: str) -> str:
    """The --backend word CLIENT takes for a server of BACKEND (CLIENT_BACKEND: the sglang.bench_serving word
    of the phase's engine row, or the user's own word, kept as given when no row has it)."""
    from .engines import ENGINES

    for row in ENGINES:
        if row.client_backends["sglang"] == backend:
            return row.client_backends.get(client, backend)
    return backend


def client_dataset(client: str, name: Optional[str]) -> str:
    """The --dataset-name word CLIENT takes for NAME (empty: the client's random-token-id dataset)."""
    if not name:
        return _DEFAULT_DATASET.get(client, "random-ids")
    return _DATASETS.get(client, {}).get(name, name)

# How a scenario's prompts reach the server (docs/METRICS.md, "Prompt tokens"): the token ids themselves
# (sglang.bench_serving --tokenize-prompt, SGLang's native backend only); a prompt set made before the engine
# starts that the served model's tokenizer reads back at exactly the input length (scripts/common/
# make_prompt_set.py, read as sglang.bench_serving's `sharegpt` or vllm bench serve's `custom` dataset); the
# client's random ids decoded to text (the server tokenizes them again: other lengths); the user's own
# DATASET_NAME / DATASET_PATH.
PROMPT_METHODS: tuple[str, ...] = get_args(PromptMethod)
# range ratio that makes every prompt of a scenario exactly the input length, per client
_FIXED_RATIO = {"sglang": 1.0, "vllm": 0.0}


def prompt_method(client: str, backend: str, wanted: str = "auto", dataset_name: Optional[str] = None,
                  dataset_path: Optional[str] = None, range_ratio: Optional[str] = None) -> str:
    """The prompt method of a scenario: PROMPT_METHOD (`wanted`), or with `auto` the exact one the client and
    backend allow (token ids, else the round-trip set); the user's dataset or a length range is the client's own."""
    if wanted not in ("auto", *PROMPT_METHODS):
        raise ConfigError(f"PROMPT_METHOD={wanted!r}: expected auto, {', '.join(PROMPT_METHODS)}")
    ids_ok = client == "sglang" and backend == "sglang"
    if wanted == "token-ids" and not ids_ok:
        raise ConfigError(f"PROMPT_METHOD=token-ids needs CLIENT=sglang with backend sglang (an SGLang server), not "
                          f"CLIENT={client} with backend {backend}: use auto or round-trip-set")
    if wanted != "auto":
        return wanted
    if dataset_path or dataset_name and dataset_name not in ("random", "random-ids"):
        return "client-dataset"
    try:
        fixed = range_ratio in (None, "") or float(range_ratio) == _FIXED_RATIO.get(client)
    except ValueError:
        raise ConfigError(f"RANDOM_RANGE_RATIO={range_ratio!r} is not a number") from None
    if dataset_name or not fixed:
        return "client-random-text"
    return "token-ids" if ids_ok else "round-trip-set"


def sent_dataset_name(client: str, method: str, dataset_name: Optional[str]) -> str:
    """The `--dataset-name` the client is given for a prompt method."""
    if method == "round-trip-set":  # the set's format: sglang.bench_serving 0.5.4 has no custom dataset
        return "custom" if client == "vllm" else "sharegpt"
    return client_dataset(client, dataset_name)


@dataclass(frozen=True)
class ClientRequest:
    client: str
    python: str
    backend: str
    host: str
    port: int
    model: str
    tokenizer: str
    input_len: int
    output_len: int
    num_prompts: int
    concurrency: int
    out: Path
    dataset_name: Optional[str] = None
    dataset_path: Optional[str] = None
    range_ratio: Optional[str] = None
    seed: str = "1"
    warmup_requests: Optional[str] = "0"
    extra: str = ""
    module: Optional[str] = None  # None: the client's oldest module (see choose_module)
    impl: str = "python"
    prompt_method: str = "client-random-text"
    prompt_file: Optional[str] = None  # the round-trip set of this scenario (prompt_method round-trip-set)


# The sampling temperature of a client's requests when its extra arguments do not set one: `client_command`
# passes vLLM's `--temperature 0` (its client no longer defaults to 0); sglang's clients put
# `"temperature": 0.0` in every request body, which `--extra-request-body` may override.
DEFAULT_TEMPERATURE = {"vllm": 0.0, "sglang": 0.0}


def client_temperature(client: str, extra: str) -> Optional[float]:
    """The temperature the client's requests asked for, with CLIENT_EXTRA_ARGS (`extra`) over the default;
    None when the extra arguments set it in a form not understood."""
    import json
    import shlex

    try:
        words = shlex.split(extra)
    except ValueError:
        return None
    value: object = DEFAULT_TEMPERATURE.get(client)
    for i, word in enumerate(words):
        flag, sep, text = word.partition("=")
        if not sep:
            text = words[i + 1] if i + 1 < len(words) else ""
        if client == "vllm" and flag == "--temperature":
            value = text
        elif client == "sglang" and flag == "--extra-request-body":
            try:
                body = json.loads(text)
            except ValueError:
                return None
            if isinstance(body, dict) and "temperature" in body:
                value = body["temperature"]
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


# the option that turns each client's streaming off (none: `vllm bench serve`'s request functions always stream)
STREAM_OFF_FLAGS: dict[str, Optional[str]] = {"sglang": "--disable-stream", "vllm": None}


def client_streams(client: str, extra: str) -> Optional[bool]:
    """Whether the client streams its responses with CLIENT_EXTRA_ARGS (`extra`); None when they cannot be read."""
    import shlex

    try:
        words = shlex.split(extra)
    except ValueError:
        return None
    flag = STREAM_OFF_FLAGS.get(client)
    return not (flag is not None and flag in words)


def client_command(r: ClientRequest) -> list[str]:
    """The client's argv for one scenario. Raises ValueError for an unknown module or implementation."""
    row = choose_module(r.client, module=r.module)
    impl = implementation(r.client, r.impl)
    common = ["--backend", client_backend(r.client, r.backend), "--host", r.host, "--port", str(r.port), "--model", r.model,
              "--tokenizer", r.tokenizer]
    shape = ["--random-input-len", str(r.input_len), "--random-output-len", str(r.output_len)]
    dataset = ["--dataset-path", r.dataset_path] if r.dataset_path else []
    dataset_name = sent_dataset_name(r.client, r.prompt_method, r.dataset_name)
    if r.prompt_method == "round-trip-set":
        if not r.prompt_file:
            raise ConfigError("prompt method round-trip-set without its prompt file")
        if r.client == "sglang" and r.output_len < 4:
            raise ConfigError(f"output length {r.output_len}: sglang.bench_serving's sharegpt dataset needs at least 4 "
                              "output tokens; use PROMPT_METHOD=client-random-text for this grid")
        # the lengths stay in the command: the raw output records them as the scenario's shape
        dataset = ["--dataset-path", r.prompt_file]
        dataset += (["--custom-output-len", str(r.output_len), "--skip-chat-template"] if r.client == "vllm"
                    else ["--sharegpt-output-len", str(r.output_len)])
    elif r.prompt_method == "token-ids":
        if r.client != "sglang" or r.backend != "sglang":
            raise ConfigError("prompt method token-ids needs CLIENT=sglang with backend sglang")
        dataset = [*dataset, "--tokenize-prompt"]
    load = ["--num-prompts", str(r.num_prompts), "--max-concurrency", str(r.concurrency), "--seed", r.seed]
    head = (["env", *impl.env] if impl.env else []) + [r.python, "-m", row.module, *row.argv]
    if r.client == "vllm":
        cmd = [*head, *common,
               "--dataset-name", dataset_name, *dataset, *shape,
               "--random-range-ratio", r.range_ratio or "0.0", *load,
               "--ignore-eos", "--temperature", "0", "--save-result", "--save-detailed",
               "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,95,99",
               "--result-dir", str(r.out.parent), "--result-filename", r.out.name]
    else:
        cmd = [*head, *common,
               "--dataset-name", dataset_name, *dataset, *shape,
               "--random-range-ratio", r.range_ratio or "1.0", *load,
               "--disable-tqdm", "--output-file", str(r.out), "--output-details"]
        # The run warms up with warmup.py before the cache reset and the /metrics
        # snapshot; the client's own warmup would run after them, warm the prefix
        # cache for its first prompt and count in the scenario's accept length.
        # An empty value omits the flag (clients older than 0.5).
        if r.warmup_requests and row.warmup_flag:
            cmd += [row.warmup_flag, r.warmup_requests]
    return cmd + list(impl.flags) + r.extra.split()
