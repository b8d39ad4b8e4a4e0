from __future__ import annotations

import os

import click

from ..run.launch import KINDS
from .common import handle_errors


@click.command("server-cmd", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.option("--kind", type=click.Choice(list(KINDS)), required=True,
              help="launcher: the engine's Python prefix; base: launcher -m MODULE; server: the whole "
                   "server command (sskj_results/run/launch.py).")
@click.option("--setting", "settings", multiple=True, metavar="KEY=VALUE",
              help="A setting in the workflow's terms (tp, kv_cache_dtype, max_num_seqs, max_model_len, spec_*, "
                   "mem_fraction), spelled by the engine table (or written to its config file) before the experiment's own flags; an empty VALUE gives no flag. "
                   "Repeatable.")
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def server_cmd(name: str, kind: str, settings: tuple[str, ...], words: tuple[str, ...]) -> None:
    """Print the server command of engine NAME, NUL-separated (used by the shell's command builders).

    WORDS (after --): KEY=VALUE server environment for launcher and base, the
    experiment's own flags for server. The settings (RUNTIME,
    MODEL_PATH, TP, PORT, DEVICES, NNODES, ...) are read from the environment.
    """
    from ..contract.envfile import parse_assignments
    from ..run.launch import server_cmd as build

    pairs = list(parse_assignments(settings, "--setting").items()) if settings else []
    argv = build(name, kind, list(words), os.environ, pairs)
    click.echo("".join(f"{w}\0" for w in argv), nl=False)
