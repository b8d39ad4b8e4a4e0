"""The command line's own surface: the user's commands in --help, the shell's apart, typos answered."""

from __future__ import annotations

from click.testing import CliRunner

from sskj_results.cli import COMMANDS, PLUMBING, main


def test_help_lists_the_users_commands_and_not_the_plumbing() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].split("\n\n")[0].splitlines()
              if line.startswith("  ") and not line.startswith("    ")}
    assert listed == set(COMMANDS) - PLUMBING
    # the user's commands, and only those: what the run loop calls for itself (engine-owner, step, ...) is plumbing
    assert listed == {"collect", "compare", "history", "import-legacy", "metadata", "new-experiment", "parse",
                      "preflight", "reparse", "report", "schema", "validate"}
    assert f"{len(PLUMBING)} more, called by scripts/common/: `sskj-results plumbing` lists them." in result.output


def test_plumbing_lists_every_shell_command_and_each_still_runs() -> None:
    result = CliRunner().invoke(main, ["plumbing"])
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.output.splitlines()] == sorted(PLUMBING)
    assert PLUMBING <= set(COMMANDS)
    for name in sorted(PLUMBING):  # hidden from --help, never from the shell
        assert CliRunner().invoke(main, [name, "--help"]).exit_code == 0, name


def test_a_typo_gets_one_line_with_the_command_meant() -> None:
    result = CliRunner().invoke(main, ["improt-legacy", "raw_outputs/"])
    assert result.exit_code == 2
    assert ("Error: No such command 'improt-legacy'. Did you mean 'import-legacy'? "
            "(`sskj-results --help` lists them)\n") in result.output
    assert "Traceback" not in result.output


def test_a_word_like_no_command_gets_no_guess() -> None:
    result = CliRunner().invoke(main, ["zzzz"])
    assert result.exit_code == 2
    assert "Error: No such command 'zzzz'. (`sskj-results --help` lists them)\n" in result.output


def test_validate_says_a_dry_run_is_a_dry_run_not_invalid(tmp_path) -> None:
    run = tmp_path / "run"
    made = CliRunner().invoke(main, ["metadata", str(run), "--no-detect", "--meta", "experiment=e", "--meta", "run_id=r",
                                     "--meta", "engine=vllm", "--meta", "chip=cpu", "--meta", "model=m", "--config", "server_args=python -m x",
                                     "--config", "dry_run=true"])
    assert made.exit_code == 0, made.output
    result = CliRunner().invoke(main, ["validate", str(run)])
    assert result.exit_code == 0, result.output
    assert result.output == (f"{run}/results.json: config.dry_run: warning: a dry run (DRY_RUN=1): its metadata and "
                             "server command only, nothing was measured; run it without DRY_RUN to measure\n"
                             f"{run}/results.json: valid (0 errors, 1 warning)\n")
    (run / "results.json").write_text((run / "results.json").read_text().replace('"dry_run": true', '"dry_run": false'))
    plain = CliRunner().invoke(main, ["validate", str(run)])
    assert plain.exit_code == 1 and "no scenarios measured yet" in plain.output and "no human-readable report" in plain.output
