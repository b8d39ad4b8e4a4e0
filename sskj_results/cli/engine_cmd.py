from __future__ import annotations

import click

from .common import handle_errors


@click.command("engine")
@click.argument("name")
@click.option("--config-from", "command", default=None, metavar="SERVER_COMMAND",
              help="Print instead the config values (JSON) this server command line sets.")
@handle_errors
def engine(name: str, command: str | None) -> None:
    """Print the engine table row of NAME (sglang, vllm, vllm-dspark, vllm-xpu, or a name starting with one).

    One line: FAMILY PYTHON_VAR LAUNCH_MODULE RESET_PATH METRICS(0|1)
    HEALTH_PATH SERVER_ENV DIST... (see sskj_results/engines.py).
    """
    import json

    from ..engines import config_from_server_args, shell_row

    if command is not None:
        click.echo(json.dumps(config_from_server_args(command), sort_keys=True))
        return
    click.echo(shell_row(name))
