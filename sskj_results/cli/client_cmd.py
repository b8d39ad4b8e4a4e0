from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from ..catalog.clients import PROMPT_METHODS
from .common import handle_errors


@click.command("client-cmd")
@click.option("--client", type=click.Choice(["sglang", "vllm"]), default="sglang", show_default=True)
@click.option("--python", "python", required=True, help="CLIENT_PYTHON.")
@click.option("--backend", required=True, help="Client backend (sglang, vllm, ...).")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), required=True)
@click.option("--model", required=True)
@click.option("--tokenizer", required=True)
@click.option("--input-len", type=click.IntRange(min=1), required=True)
@click.option("--output-len", type=click.IntRange(min=1), required=True)
@click.option("--num-prompts", type=click.IntRange(min=1), required=True)
@click.option("--concurrency", type=click.IntRange(min=1), required=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Raw output file.")
@click.option("--dataset-name", default="", help="Default: random-ids (sglang), random (vllm).")
@click.option("--dataset-path", default="")
@click.option("--range-ratio", default="", help="Default: 1.0 (sglang), 0.0 (vllm).")
@click.option("--seed", default="1", show_default=True)
@click.option("--warmup-requests", default="0", show_default=True,
              help="The client's own warmup (sglang); empty: flag omitted.")
@click.option("--extra", default="", help="CLIENT_EXTRA_ARGS, split like a shell would (no expansion).")
@click.option("--module", default="", help="The client's module (client catalog; default: the client's oldest).")
@click.option("--impl", "impl", type=click.Choice(["python", "rust"]), default="python", show_default=True,
              help="CLIENT_IMPL: the Python client or the Rust load generator.")
@click.option("--prompt-method", default="client-random-text", show_default=True,
              type=click.Choice(PROMPT_METHODS),
              help="How the prompts reach the server (docs/METRICS.md).")
@click.option("--prompt-file", default="", help="The round-trip set of the scenario (--prompt-method round-trip-set).")
@handle_errors
def client_cmd(client: str, python: str, backend: str, host: str, port: int, model: str, tokenizer: str,
               input_len: int, output_len: int, num_prompts: int, concurrency: int, out: Path, dataset_name: str,
               dataset_path: str, range_ratio: str, seed: str, warmup_requests: Optional[str], extra: str,
               module: str = "", impl: str = "python", prompt_method: str = "client-random-text",
               prompt_file: str = "") -> None:
    """Print the bench client command of one scenario, NUL-separated (read by the shell with mapfile -d '')."""
    from ..catalog.clients import ClientRequest, choose_module, client_command, implementation
    from ..contract.errors import ConfigError

    try:
        choose_module(client, module=module or None)
        implementation(client, impl)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:
        words = client_command(ClientRequest(
            client=client, python=python, backend=backend, host=host, port=port, model=model, tokenizer=tokenizer,
            input_len=input_len, output_len=output_len, num_prompts=num_prompts, concurrency=concurrency, out=out,
            dataset_name=dataset_name or None, dataset_path=dataset_path or None, range_ratio=range_ratio or None,
            seed=seed, warmup_requests=warmup_requests, extra=extra, module=module or None, impl=impl,
            prompt_method=prompt_method, prompt_file=prompt_file or None))
    except ValueError as exc:
        raise ConfigError(f"CLIENT_EXTRA_ARGS {extra!r}: {exc}") from None
    click.echo("".join(f"{w}\0" for w in words), nl=False)
