"""Bench client command lines (`sskj-results client-cmd`): how each client spells one scenario.

CLIENT=sglang: `python -m sglang.bench_serving` writing one JSON line per
run (`--output-file … --output-details`); CLIENT=vllm: `vllm bench serve`
writing one JSON document (`--save-result --save-detailed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

CLIENTS = ("sglang", "vllm")

# client -> {the workflow's name (the phase engine's family, SGLang's dataset names): the client's own}
# `vllm bench serve` has no `sglang` backend (SGLang serves the OpenAI API) and no `random-ids` dataset
# (its `random` is the same thing: random token ids, decoded).
_BACKENDS = {"vllm": {"sglang": "openai"}}
_DATASETS = {"vllm": {"random-ids": "random"}}
_DEFAULT_DATASET = {"sglang": "random-ids", "vllm": "random"}


def client_backend(client: str, backend: str) -> str:
    """The --backend word CLIENT takes for a server of BACKEND (an engine family or the client's own word)."""
    return _BACKENDS.get(client, {}).get(backend, backend)


def client_dataset(client: str, name: Optional[str]) -> str:
    """The --dataset-name word CLIENT takes for NAME (empty: the client's random-token-id dataset)."""
    if not name:
        return _DEFAULT_DATASET.get(client, "random-ids")
    return _DATASETS.get(client, {}).get(name, name)


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


def client_command(r: ClientRequest) -> list[str]:
    """The client's argv for one scenario."""
    common = ["--backend", client_backend(r.client, r.backend), "--host", r.host, "--port", str(r.port), "--model", r.model,
              "--tokenizer", r.tokenizer]
    shape = ["--random-input-len", str(r.input_len), "--random-output-len", str(r.output_len)]
    dataset = ["--dataset-path", r.dataset_path] if r.dataset_path else []
    load = ["--num-prompts", str(r.num_prompts), "--max-concurrency", str(r.concurrency), "--seed", r.seed]
    if r.client == "vllm":
        cmd = [r.python, "-m", "vllm.entrypoints.cli.main", "bench", "serve", *common,
               "--dataset-name", client_dataset(r.client, r.dataset_name), *dataset, *shape,
               "--random-range-ratio", r.range_ratio or "0.0", *load,
               "--ignore-eos", "--temperature", "0", "--save-result", "--save-detailed",
               "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,95,99",
               "--result-dir", str(r.out.parent), "--result-filename", r.out.name]
    else:
        cmd = [r.python, "-m", "sglang.bench_serving", *common,
               "--dataset-name", client_dataset(r.client, r.dataset_name), *dataset, *shape,
               "--random-range-ratio", r.range_ratio or "1.0", *load,
               "--disable-tqdm", "--output-file", str(r.out), "--output-details"]
        # The run warms up with warmup.py before the cache reset and the /metrics
        # snapshot; the client's own warmup would run after them, warm the prefix
        # cache for its first prompt and count in the scenario's accept length.
        # An empty value omits the flag (clients older than 0.5).
        if r.warmup_requests:
            cmd += ["--warmup-requests", r.warmup_requests]
    return cmd + r.extra.split()
