"""Bench client command lines (`sskj-results client-cmd`): how each client spells one scenario.

CLIENT=sglang: `python -m sglang.bench_serving` writing one JSON line per
run (`--output-file … --output-details`); CLIENT=vllm: `vllm bench serve`
writing one JSON document (`--save-result --save-detailed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, get_args

from ..contract.errors import ConfigError
from ..contract.models import PromptMethod

CLIENTS = ("sglang", "vllm")

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
    return dataset_name or ("random" if client == "vllm" else "random-ids")


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
    prompt_method: str = "client-random-text"
    prompt_file: Optional[str] = None  # the round-trip set of this scenario (prompt_method round-trip-set)


def client_command(r: ClientRequest) -> list[str]:
    """The client's argv for one scenario."""
    common = ["--backend", r.backend, "--host", r.host, "--port", str(r.port), "--model", r.model,
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
    if r.client == "vllm":
        cmd = [r.python, "-m", "vllm.entrypoints.cli.main", "bench", "serve", *common,
               "--dataset-name", dataset_name, *dataset, *shape,
               "--random-range-ratio", r.range_ratio or "0.0", *load,
               "--ignore-eos", "--temperature", "0", "--save-result", "--save-detailed",
               "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,95,99",
               "--result-dir", str(r.out.parent), "--result-filename", r.out.name]
    else:
        cmd = [r.python, "-m", "sglang.bench_serving", *common,
               "--dataset-name", dataset_name, *dataset, *shape,
               "--random-range-ratio", r.range_ratio or "1.0", *load,
               "--disable-tqdm", "--output-file", str(r.out), "--output-details"]
        # The run warms up with warmup.py before the cache reset and the /metrics
        # snapshot; the client's own warmup would run after them, warm the prefix
        # cache for its first prompt and count in the scenario's accept length.
        # An empty value omits the flag (clients older than 0.5).
        if r.warmup_requests:
            cmd += ["--warmup-requests", r.warmup_requests]
    return cmd + r.extra.split()
