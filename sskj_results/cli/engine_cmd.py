from __future__ import annotations

import click

from .common import handle_errors


@click.command("engine")
@click.argument("name", required=False, default="")
@click.option("--config-from", "command", default=None, metavar="SERVER_COMMAND",
              help="Print instead the config values (JSON) this server command line sets.")
@click.option("--table", is_flag=True, help="Print instead every row's launch facts as JSON (name, launch_module, "
              "launch_args, console_script, python_var, dists), e.g. for benchmarks/check_engine_argv.py.")
@click.option("--flags", "settings", multiple=True, metavar="KEY=VALUE",
              help="Print instead this engine's flags for config settings (tp, kv_cache_dtype, max_num_seqs, "
                   "max_model_len, ...), NUL-separated; an empty VALUE gives no flag. Repeatable.")
@handle_errors
def engine(name: str, command: str | None, table: bool, settings: tuple[str, ...]) -> None:
    """Print the engine table row of NAME (a row name of sskj_results/catalog/engines.py, or a name starting with one).

    One line: BACKEND PYTHON_VAR LAUNCH_MODULE RESET_PATH METRICS(0|1)
    HEALTH_PATH SERVER_ENV DIST... (see sskj_results/catalog/engines.py).
    With --table no NAME is needed.
    """
    import json

    from ..catalog.engines import ENGINES, config_from_server_args, engine as engine_row, shell_row

    if table:
        click.echo(json.dumps([{"name": e.name, "launch_module": e.launch_module, "launch_args": e.launch_args,
                                "console_script": e.console_script, "python_var": e.python_var,
                                "dists": e.dists} for e in ENGINES], indent=1))
        return
    if not name:
        raise click.UsageError("missing argument NAME (or give --table)")
    from ..contract.envfile import parse_assignments

    if settings:
        pairs = [(key, value) for key, value in parse_assignments(settings, "--flags").items()]
        words = engine_row(name).flags_for(pairs)
        click.echo("".join(f"{w}\0" for w in words), nl=False)
        return
    if command is not None:
        click.echo(json.dumps(config_from_server_args(command), sort_keys=True))
        return
    click.echo(shell_row(name))


@click.command("package-version", context_settings={"ignore_unknown_options": True})
@click.option("--dist", "dists", multiple=True, required=True, help="Package name, first installed wins. Repeatable.")
@click.argument("python", nargs=-1, required=True, type=click.UNPROCESSED)
@handle_errors
def package_version(dists: tuple[str, ...], python: tuple[str, ...]) -> None:
    """Print the version of the first installed --dist package of the interpreter PYTHON... (after --); nothing when unknown."""
    from ..catalog.engines import package_version as ask

    version = ask(list(python), list(dists))
    if version:
        click.echo(version)
