from __future__ import annotations

import os

import click

from .common import handle_errors


@click.command("server-cmd", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.option("--kind", type=click.Choice(["launcher", "base", "sglang", "vllm"]), required=True,
              help="launcher: the engine's Python prefix; base: launcher -m MODULE; sglang/vllm: the whole "
                   "server command (sskj_results/run/launch.py).")
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def server_cmd(name: str, kind: str, words: tuple[str, ...]) -> None:
    """Print the server command of engine NAME, NUL-separated (used by the shell's command builders).

    WORDS (after --): KEY=VALUE server environment for launcher and base, the
    experiment's own flags for sglang and vllm. The settings (RUNTIME,
    MODEL_PATH, TP, PORT, DEVICES, NNODES, ...) are read from the environment.
    """
    from ..run.launch import server_cmd as build

    argv = build(name, kind, list(words), os.environ)
    click.echo("".join(f"{w}\0" for w in argv), nl=False)
