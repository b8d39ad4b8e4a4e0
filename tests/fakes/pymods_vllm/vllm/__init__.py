"""Test double of the `vllm` package: only `python -m vllm.entrypoints.openai.api_server` exists."""
