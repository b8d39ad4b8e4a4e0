"""The `sskj-results` command line. Thin: parse options, call one library function, print.

Subcommands live in their own modules and are imported only when run, so
`sskj-results --help` starts fast.
"""

from __future__ import annotations

import importlib
from typing import Any, Optional

import click

from .. import __version__

# name -> (module, attribute, one-line help shown by --help); PLUMBING below names the run loop's own commands
COMMANDS: dict[str, tuple[str, str, str]] = {
    "validate": ("validate_cmd", "validate", "Check results.json files and run directories against the contract."),
    "schema": ("schema_cmd", "schema", "Print (or write) the JSON Schema of results.json."),
    "metadata": ("metadata_cmd", "metadata", "Create or update a run's results.json metadata and config."),
    "parse": ("import_cmd", "parse", "Import a run directory's raw_outputs/ into its results.json."),
    "import-legacy": ("import_cmd", "import_legacy", "Import a directory of raw client outputs into run directories."),
    "report": ("report_cmd", "report", "Write RUN_DIR/report.md (and plots) from results.json."),
    "compare": ("report_cmd", "compare", "Compare runs side by side with statistical verdicts."),
    "reparse": ("runset_cmd", "reparse", "Re-import a run (or every phase of a run set) and rewrite its results and reports."),
    "runset": ("runset_cmd", "runset", "Write the index of a multi-phase run directory (its phases, in order)."),
    "collect": ("collect_cmd", "collect", "Write one table (Parquet or CSV) of every run under the given paths."),
    "history": ("history_cmd", "history", "Every setup's runs over time and the runs where a metric stepped (history.md/html)."),
    "slo-next": ("slo_search_cmd", "slo_next", "Next concurrency of an SLO search (prints nothing when done)."),
    "slurm-plan": ("slurm_cmd", "slurm_plan", "Build the sbatch commands of a Slurm submission (used by submit.sh)."),
    "slurm-compare": ("slurm_compare_cmd", "slurm_compare", "Validate and compare the runs of Slurm jobs (the comparison job)."),
    "slurm-nodes": ("slurm_nodes_cmd", "slurm_nodes", "The nodes of the job's allocation for a multi-node engine (used by multinode.sh)."),
    "next": ("next_cmd", "next_scenario", "Next scenario of a run's grid or SLO search (prints nothing when done)."),
    "run-client": ("run_client_cmd", "run_client", "Run the bench client while watching the server; record its CPU use."),
    "engine": ("engine_cmd", "engine", "One engine's launch facts for the shell (python variable, cache reset, metrics)."),
    "package-version": ("engine_cmd", "package_version", "Version of a package in another Python (engine/client version)."),
    "phase": ("next_cmd", "phase", "Split a phase spec NAME[:ENGINE][:KEY=VALUE]... (used by the shell)."),
    "patches": ("patches_cmd", "patches", "List a platform's runtime patches, or record those applied (used by the shell)."),
    "wait-health": ("run_client_cmd", "wait_health", "Wait until a server answers its health check (used by the shell)."),
    "engine-owner": ("run_client_cmd", "engine_owner", "Check that every listener on a port is the engine a run started."),
    "run-summary": ("run_client_cmd", "run_summary", "The end of a run: points measured, qualified, disqualified (used by the shell)."),
    "server-cmd": ("server_cmd", "server_cmd", "One phase's server command (or launcher), NUL-separated (used by the shell)."),
    "platform": ("platform_cmd", "platform", "Detect the platform, find its file, check its keys (used by platform.sh)."),
    "run-settings": ("run_settings_cmd", "run_settings", "The run-wide settings with their defaults, checked (used by the shell)."),
    "client-cmd": ("client_cmd", "client_cmd", "One scenario's bench client command, NUL-separated (used by the shell)."),
    "env": ("env_cmd", "env", "Read KEY=VALUE config files safely (used by the shell; nothing is executed)."),
    "new-experiment": ("new_experiment_cmd", "new_experiment", "Create experiments/<platform>/<name>/ from TEMPLATE or another experiment."),
    "redact": ("redact_cmd", "redact", "Redact secrets from words or lines (the one redaction; used by the shell)."),
    "preflight": ("preflight_cmd", "preflight", "Check interpreters, model, port, accelerators, image and disk before a run."),
    "loop-preflight": ("preflight_cmd", "loop_preflight", "The run loop's preflight, its options from the run's settings (used by platform.sh)."),
    "setup-envs": ("setup_envs_cmd", "setup_envs", "Create the Python environments of a platform (cpu; used by setup_envs.sh)."),
    "check-names": ("redact_cmd", "check_names", "Check that names used as path segments are plain names."),
    "config": ("config_cmd", "config", "Load the platform, config.env, run-wide settings and phases in one call (the shell)."),
    "phase-begin": ("loop_cmd", "phase_begin", "Start a phase: versions, metadata, and a dry run's plan (the run loop)."),
    "step": ("loop_cmd", "step", "Record the finished scenario, return the next with its commands (the run loop)."),
    "phase-end": ("loop_cmd", "phase_end", "End a phase: parse, report, validate, run-set index (the run loop)."),
}

# commands the shell half calls (scripts/common/, platforms/, experiments/): not in `--help`, listed by
# `sskj-results plumbing`, each contract-tested like the others (tests/shell/test_contract.py)
PLUMBING = frozenset({
    "slo-next", "slurm-plan", "slurm-compare", "slurm-nodes", "next", "run-client", "engine", "package-version",
    "phase", "patches", "wait-health", "server-cmd", "platform", "run-settings", "client-cmd", "env", "redact",
    "setup-envs", "check-names", "runset", "config", "phase-begin", "step", "phase-end", "run-summary", "engine-owner",
    "loop-preflight",
})


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*COMMANDS, "plumbing"])

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name == "plumbing":
            return plumbing
        if cmd_name not in COMMANDS:
            return None
        module_name, attr, _ = COMMANDS[cmd_name]
        module = importlib.import_module(f"{__name__}.{module_name}")
        command: click.Command = getattr(module, attr)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if args and name not in COMMANDS and name != "plumbing" and not name.startswith("-"):
            import difflib

            close = difflib.get_close_matches(name, [*COMMANDS, "plumbing"], n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise click.UsageError(f"No such command '{name}'.{hint} (`sskj-results --help` lists them)", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: Any) -> None:
        rows = [(name, COMMANDS[name][2]) for name in sorted(COMMANDS) if name not in PLUMBING]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
        with formatter.section("The run loop's own commands"):
            formatter.write_text(f"{len(PLUMBING)} more, called by scripts/common/: `sskj-results plumbing` lists them.")


@click.command(name="plumbing")
def plumbing() -> None:
    """List the commands the shell half calls (scripts/common/): not for everyday use."""
    width = max(len(name) for name in PLUMBING)
    for name in sorted(PLUMBING):
        click.echo(f"{name.ljust(width)}  {COMMANDS[name][2]}")


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sskj-results")
def main() -> None:
    """Results toolkit of the sskj benchmark workflow: validate, import, compare, report."""
    import sys

    for stream in (sys.stdout, sys.stderr):  # a name with undecodable bytes is printed escaped, never a crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
