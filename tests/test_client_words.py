"""The bench clients' command lines: each client gets the backend and dataset words it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sskj_results.catalog.clients import ClientRequest, client_backend, client_command, client_dataset


def _request(client: str, backend: str, dataset: str = "") -> ClientRequest:
    return ClientRequest(client=client, python="/c/python", backend=backend, host="127.0.0.1", port=30000,
                         model="/m", tokenizer="/m", input_len=128, output_len=16, num_prompts=8, concurrency=2,
                         out=Path("/r/raw.json"), dataset_name=dataset or None)


def _value(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


@pytest.mark.parametrize("family, backend", [("sglang", "openai"), ("vllm", "vllm")])
@pytest.mark.parametrize("dataset, name", [("", "random"), ("random-ids", "random"), ("sharegpt", "sharegpt")])
def test_vllm_bench_serve_gets_its_own_backend_and_dataset_words(family: str, backend: str, dataset: str,
                                                                  name: str) -> None:
    words = client_command(_request("vllm", family, dataset))
    assert words[1:5] == ["-m", "vllm.entrypoints.cli.main", "bench", "serve"]
    assert (_value(words, "--backend"), _value(words, "--dataset-name")) == (backend, name)


@pytest.mark.parametrize("family", ["sglang", "vllm"])
def test_sglang_client_keeps_the_family_and_random_ids(family: str) -> None:
    words = client_command(_request("sglang", family))
    assert (_value(words, "--backend"), _value(words, "--dataset-name")) == (family, "random-ids")
    assert client_backend("sglang", "sglang") == "sglang" and client_dataset("sglang", "random") == "random"
