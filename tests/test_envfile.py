"""The KEY=VALUE config-file parser (sskj_results.contract.envfile) and `sskj-results env`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.envfile import EnvResult, Override, parse_env_file, parse_env_text
from sskj_results.contract.errors import ConfigError


def load(text: str, environ: dict[str, str] | None = None, preset: set[str] | None = None,
         protect: set[str] | None = None) -> EnvResult:
    return parse_env_text(text, "cfg.env", environ or {}, preset or set(), protect or set())


def values(text: str, **environ: str) -> dict[str, str]:
    return load(text, environ).as_dict()


def error_of(text: str, **environ: str) -> str:
    with pytest.raises(ConfigError) as exc:
        load(text, environ)
    return str(exc.value)


# --- syntax -----------------------------------------------------------------


def test_comments_blank_lines_and_export_are_accepted() -> None:
    text = "# a comment\n\n   \n  # indented comment\nexport A=1\n  export\tB=2\nexportC=3\n"
    assert load(text).assignments == [("A", "1"), ("B", "2"), ("exportC", "3")]


def test_double_quoted_values_keep_blanks_and_expand_references() -> None:
    assert values('A="two  words ${ROOT}/x $ROOT"', ROOT="/r") == {"A": "two  words /r/x /r"}


def test_double_quoted_escapes() -> None:
    text = r'A="q\" b\\ d\$HOME t\` other\n"' + "\n"
    assert values(text, HOME="/home/u") == {"A": 'q" b\\ d$HOME t` other\\n'}


def test_escaped_backslash_before_a_reference_still_expands() -> None:
    assert values(r'A="\\$X"', X="v") == {"A": "\\v"}


def test_single_quoted_values_are_literal() -> None:
    assert values("A='$X ${Y} $(id) `id` \\n'") == {"A": "$X ${Y} $(id) `id` \\n"}


def test_bare_values() -> None:
    text = "A=plain\nB=a#b\nC=\nD=${X}_$X-z\nE=back\\slash\nF=   \n"
    assert values(text, X="x") == {"A": "plain", "B": "a#b", "C": "", "D": "x_x-z", "E": "back\\slash", "F": ""}


def test_trailing_comments() -> None:
    text = 'A="x"  # c\nB=\'y\' # c\nC=z # c "with quotes"\nD="w"#tight\nE= # only a comment\n'
    assert values(text) == {"A": "x", "B": "y", "C": "z", "D": "w", "E": ""}


def test_crlf_line_ends_and_a_last_line_without_newline() -> None:
    assert values('A="1"\r\nB=2\r\n# c\r\nC=3') == {"A": "1", "B": "2", "C": "3"}


def test_references_see_the_environment_and_earlier_lines() -> None:
    text = 'ROOT="${BASE}/envs"\nPY="${ROOT}/bin/python"\nDFLT="${MISSING:-fallback}/${ROOT:-unused}"\n'
    assert values(text, BASE="/b") == {"ROOT": "/b/envs", "PY": "/b/envs/bin/python", "DFLT": "fallback//b/envs"}


def test_default_is_literal_and_used_for_empty_values() -> None:
    assert values('A="${EMPTY:-$B}"', EMPTY="") == {"A": "$B"}


def test_bare_reference_may_be_empty_braced_may_not() -> None:
    assert values('A="[$EMPTY]"', EMPTY="") == {"A": "[]"}
    assert error_of('A="${EMPTY}"', EMPTY="") == "cfg.env:1: ${EMPTY} is not set"


def test_dollar_without_a_name_is_literal() -> None:
    assert values('A="$ 1$ $1 cost$"\nB=$') == {"A": "$ 1$ $1 cost$", "B": "$"}


def test_later_line_wins_and_order_is_kept() -> None:
    result = load("A=1\nB=2\nA=3\n")
    assert result.assignments == [("A", "1"), ("B", "2"), ("A", "3")]
    assert result.as_dict() == {"A": "3", "B": "2"}


# --- errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line, message",
    [
        ('X="$(id)"', "command substitution is not allowed in config values"),
        ("X=$(id)", "command substitution is not allowed in config values"),
        ("X=`id`", "command substitution is not allowed in config values"),
        ('X="a`id`"', "command substitution is not allowed in config values"),
        ("X=two words", "values with blanks or quotes inside must be quoted"),
        ("X=it's", "values with blanks or quotes inside must be quoted"),
        ('X="open', "unterminated double quote"),
        ('X="ends in a backslash\\', "unterminated double quote"),
        ("X='open", "unterminated single quote"),
        ('X="a" b', "unexpected text after the value:  b"),
        ("X='a'b", "unexpected text after the value: b"),
        ("rm -rf /tmp/x", "expected KEY=VALUE, got: rm -rf /tmp/x"),
        ("1X=1", "expected KEY=VALUE, got: 1X=1"),
        ("export", "expected KEY=VALUE, got: export"),
        ('X="${NOT_SET_ANYWHERE}"', "${NOT_SET_ANYWHERE} is not set"),
        ('X="$NOT_SET_ANYWHERE"', "$NOT_SET_ANYWHERE is not set"),
        ("X=${OK:+alt}", "unsupported expansion in '${OK:+alt}' (use ${NAME} or ${NAME:-default})"),
        ("X=${OK", "unsupported expansion in '${OK' (use ${NAME} or ${NAME:-default})"),
    ],
)
def test_errors_name_file_and_line(line: str, message: str) -> None:
    assert error_of(f"# header\nOK=1\n{line}\nLATER=1\n") == f"cfg.env:3: {message}"


def test_crlf_is_not_part_of_the_message() -> None:
    assert error_of("OK=1\r\nbad line\r\n") == "cfg.env:2: expected KEY=VALUE, got: bad line"


def test_command_substitution_is_rejected_and_never_executed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    marker = tmp_path / "pwned"
    cfg = tmp_path / "evil.env"
    cfg.write_text(f'SAFE=1\nX="$(rm -rf {victim}; touch {marker})"\n')
    with pytest.raises(ConfigError, match=rf"^{cfg}:2: command substitution is not allowed"):
        parse_env_file(cfg, {}, set(), set())
    cfg.write_text('X="`rm -rf /`"\n')
    with pytest.raises(ConfigError, match=rf"^{cfg}:1: command substitution"):
        parse_env_file(cfg, {}, set(), set())
    assert (victim / "keep").exists() and not marker.exists()


def test_quoted_command_text_stays_literal(tmp_path: Path) -> None:
    cfg = tmp_path / "c.env"
    cfg.write_text("A='$(rm -rf /)'\nB=\"\\$(rm -rf /)\"\n")
    assert parse_env_file(cfg, {}, set(), set()).as_dict() == {"A": "$(rm -rf /)", "B": "$(rm -rf /)"}


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file .*missing.env"):
        parse_env_file(tmp_path / "missing.env", {}, set(), set())


# --- precedence -------------------------------------------------------------


def test_environment_wins_over_the_file_and_is_reported() -> None:
    result = load("PORT=1\nSAME=s\nNEW=n\nUSE=${PORT}\n", {"PORT": "2", "SAME": "s"}, preset={"PORT", "SAME"})
    assert result.assignments == [("NEW", "n"), ("USE", "2")]
    assert result.overrides == [Override("PORT", "2", "1", "cfg.env")]
    assert result.overrides[0].message == "PORT=2 from the environment overrides cfg.env"


def test_override_message_names_the_file_by_its_base_name(tmp_path: Path) -> None:
    cfg = tmp_path / "platform.env"
    cfg.write_text("PORT=1\n")
    result = parse_env_file(cfg, {"PORT": "2"}, {"PORT"}, set())
    assert [o.message for o in result.overrides] == ["PORT=2 from the environment overrides platform.env"]


def test_protected_keys_are_always_taken_from_the_file() -> None:
    result = load('CONTAINER_NAME="from_file"\nPORT="1"\n', {"CONTAINER_NAME": "env", "PORT": "2"},
                  preset={"CONTAINER_NAME", "PORT"}, protect={"CONTAINER_NAME"})
    assert result.assignments == [("CONTAINER_NAME", "from_file")]
    assert [o.key for o in result.overrides] == ["PORT"]


def test_values_set_after_the_snapshot_are_not_preset() -> None:
    # A platform file's values (exported after the snapshot) yield to config.env.
    result = load("MODEL_ROOT=/cfg\n", {"MODEL_ROOT": "/platform"}, preset=set())
    assert result.assignments == [("MODEL_ROOT", "/cfg")] and result.overrides == []


def test_the_environment_mapping_is_not_modified() -> None:
    environ = {"A": "1"}
    load("B=2\nA=3\n", environ)
    assert environ == {"A": "1"}


def test_non_utf8_bytes_round_trip(tmp_path: Path) -> None:
    cfg = tmp_path / "latin.env"
    cfg.write_bytes(b"A='caf\xe9'\n")
    value = parse_env_file(cfg, {}, set(), set()).as_dict()["A"]
    assert value.encode("utf-8", "surrogateescape") == b"caf\xe9"


# --- the CLI ----------------------------------------------------------------


def run_env(args: list[str], env: dict[str, str | None]) -> tuple[int, bytes, str]:
    result = CliRunner().invoke(main, ["env", *args], env=env)
    return result.exit_code, result.stdout_bytes, result.stderr


def test_cli_prints_nul_terminated_records_and_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "config.env"
    cfg.write_text('A="multi word"\nPORT=1\nCONTAINER_NAME=file\nB="${A}!"\n')
    env: dict[str, str | None] = {
        "PORT": "2", "CONTAINER_NAME": "env", "SSKJ_ENV_PRESET": "PORT\nCONTAINER_NAME", "SSKJ_QUIET_OVERRIDES": None,
    }
    code, out, err = run_env([str(cfg), "--protect", "CONTAINER_NAME"], env)
    assert code == 0, err
    assert out == b"A=multi word\0CONTAINER_NAME=file\0B=multi word!\0"
    assert err.count("\n") == 1 and err.rstrip().endswith("[INFO] PORT=2 from the environment overrides config.env")
    assert err.startswith("[20")


def test_cli_quiet_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "config.env"
    cfg.write_text("PORT=1\n")
    code, out, err = run_env([str(cfg)], {"PORT": "2", "SSKJ_ENV_PRESET": "PORT", "SSKJ_QUIET_OVERRIDES": "1"})
    assert (code, out, err) == (0, b"", "")


def test_cli_without_a_preset_list_treats_the_whole_environment_as_preset(tmp_path: Path) -> None:
    cfg = tmp_path / "config.env"
    cfg.write_text("SSKJ_TEST_PRESET_X=file\nSSKJ_TEST_NEW_Y=new\n")
    env: dict[str, str | None] = {"SSKJ_TEST_PRESET_X": "env", "SSKJ_ENV_PRESET": None, "SSKJ_QUIET_OVERRIDES": "1"}
    code, out, _ = run_env([str(cfg)], env)
    assert (code, out) == (0, b"SSKJ_TEST_NEW_Y=new\0")


def test_cli_errors_are_one_line_with_location(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.env"
    cfg.write_text('OK=1\nX="$(id)"\n')
    code, out, err = run_env([str(cfg)], {})
    assert (code, out) == (1, b"")
    assert err == f"error: {cfg}:2: command substitution is not allowed in config values\n"


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "c.env"
    cfg.write_text("A=1\n")
    assert run_env([], {})[0] == 2
    code, _, err = run_env([str(cfg), "--protect", "not a name"], {})
    assert code == 2 and "invalid variable name" in err
