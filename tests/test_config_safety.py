"""Config files cannot run code; platform files have exactly the documented keys; names are names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.envfile import (
    ALLOW_KEY, NEVER_ALLOWED, PLATFORM_KEYS, check_platform_keys, parse_env_text, startup_variable,
)
from sskj_results.contract.errors import ConfigError
from sskj_results.contract.names import check_names, name_problem

REPO = Path(__file__).resolve().parents[1]
REFUSED = ["BASH_ENV", "ENV", "PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD", "LD_LIBRARY_PATH", "PATH", "IFS", "PS4",
           "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PYTHONHOME", "PYTHONWARNINGS", "LD_AUDIT", "GIT_SSH_COMMAND",
           "GIT_CONFIG_COUNT", "PERL5OPT", "NODE_OPTIONS", "SSKJ_RESULTS_BIN", "BASH_FUNC_x", "CDPATH", "PIP_INDEX_URL"]


def parse(text: str, name: str = "config.env"):
    return parse_env_text(text, name, {}, set(), set())


@pytest.mark.parametrize("key", REFUSED)
def test_each_startup_variable_is_refused_with_file_and_line(key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse(f'# comment\nA=1\nexport {key}="/tmp/payload"\n')
    assert str(exc.value).startswith(f"config.env:3: {key} changes how programs start")


def test_harmless_python_variables_and_lookalikes_pass() -> None:
    text = "PYTHONUNBUFFERED=1\nPYTHONHASHSEED=0\nENV_ROOT=/e\nMY_PATH=/x\nPATHS=a\nLD=1\n"
    assert dict(parse(text).assignments) == {"PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0", "ENV_ROOT": "/e",
                                             "MY_PATH": "/x", "PATHS": "a", "LD": "1"}
    assert not startup_variable("ENGINE_PYTHON") and startup_variable("PYTHONPATH")


def test_the_allow_list_lets_an_engine_variable_through_and_records_it() -> None:
    text = f'{ALLOW_KEY}="LD_LIBRARY_PATH LD_PRELOAD"\nLD_LIBRARY_PATH=/opt/xre/lib\nLD_PRELOAD=/usr/lib/libtcmalloc.so\n'
    result = parse(text, "platforms/x.env")
    assert result.startup == [("LD_LIBRARY_PATH", "/opt/xre/lib", "platforms/x.env:2"),
                              ("LD_PRELOAD", "/usr/lib/libtcmalloc.so", "platforms/x.env:3")]
    with pytest.raises(ConfigError, match=r"x.env:1: LD_LIBRARY_PATH changes how programs start"):
        parse("LD_LIBRARY_PATH=/a\n" f'{ALLOW_KEY}="LD_LIBRARY_PATH"\n', "x.env")  # the allow-list comes first


@pytest.mark.parametrize("key", sorted(NEVER_ALLOWED))
def test_shell_variables_cannot_be_allowed(key: str) -> None:
    with pytest.raises(ConfigError, match=rf"cfg:1: {ALLOW_KEY} cannot allow {key}"):
        parse_env_text(f'{ALLOW_KEY}="{key}"\n{key}=x\n', "cfg", {}, set(), set())


def test_env_command_refuses_and_records(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "config.env"
    bad.write_text('MODEL_PATH=/m\nBASH_ENV=/tmp/payload.sh\n')
    result = runner.invoke(main, ["env", str(bad)])
    assert result.exit_code == 1 and f"{bad}:2: BASH_ENV changes how programs start" in result.output
    good = tmp_path / "config2.env"
    good.write_text(f'{ALLOW_KEY}=LD_LIBRARY_PATH\nLD_LIBRARY_PATH=/opt/lib\n')
    result = runner.invoke(main, ["env", "--no-platform", str(good)], env={"SSKJ_ENV_PRESET": ""})
    records = dict(r.split("=", 1) for r in result.output.split("\0") if r)
    assert records["LD_LIBRARY_PATH"] == "/opt/lib" and records["SSKJ_STARTUP_VARS"] == "LD_LIBRARY_PATH=/opt/lib"


# --- platform keys ------------------------------------------------------------------

SEED = 'CHIP="my_chip"\nACCELERATOR="My Accelerator"\nHARDWARE="8x My Accelerator"\nENGINE="vllm-myengine"\n' \
       'DEFAULT_PORT="30000"\nMODEL_ROOT="/data/models"\n'


def platform_errors(text: str) -> list[str]:
    try:
        check_platform_keys(parse(text, "platforms/p.env"), "platforms/p.env")
    except ConfigError as exc:
        return str(exc).split("\nerror: ")
    return []


def test_the_seed_example_is_a_complete_platform() -> None:
    assert platform_errors(SEED) == []


@pytest.mark.parametrize("key", ["CHIP", "ACCELERATOR", "HARDWARE", "ENGINE", "DEFAULT_PORT", "MODEL_ROOT"])
def test_each_missing_required_key_is_one_error(key: str) -> None:
    text = "\n".join(line for line in SEED.splitlines() if not line.startswith(key + "=")) + "\n"
    errors = platform_errors(text)
    assert len(errors) == 1 and errors[0].startswith(f"platforms/p.env: missing key {key}")


def test_docker_platforms_need_the_docker_keys_one_error_each() -> None:
    errors = platform_errors(SEED + 'RUNTIME="docker"\nDOCKER_IMAGE="img"\n')
    assert [e.split(":")[1].strip() for e in errors] == [
        "missing key CONTAINER_NAME", "missing key CONTAINER_PYTHON", "missing key PATCH_ROOT"]


def test_each_unknown_key_is_one_error_with_its_line() -> None:
    errors = platform_errors(SEED + "CHPI=x\nFOO=1\n")
    assert errors[0].startswith("platforms/p.env:7: unknown platform key CHPI (did you mean CHIP?)")
    assert errors[1].startswith("platforms/p.env:8: unknown platform key FOO")
    assert len(errors) == 2


def test_every_platform_file_of_the_repository_passes(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"REPO_ROOT": str(REPO), "SSKJ_ENVS_DIR": "/e", "SSKJ_MODELS_DIR": "/m", "SSKJ_ENV_PRESET": ""}
    for file in sorted((REPO / "platforms").glob("*.env")):
        result = runner.invoke(main, ["env", str(file)], env=env)
        assert result.exit_code == 0, (file, result.output)


def test_documented_platform_keys_match_the_code() -> None:
    doc = (REPO / "docs" / "PLATFORMS.md").read_text()
    for key in PLATFORM_KEYS:
        assert f"`{key}`" in doc, key


# --- names ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["../x", "..", ".", "a/b", "", "x y", "run$(id)", "a\nb", "/abs", "é"])
def test_names_that_are_not_names(value: str) -> None:
    problem = name_problem("RUN_ID", value)
    assert problem is not None and problem.startswith("RUN_ID '")


def test_names_that_are_names() -> None:
    for value in ("20260707-132641", "dsv4_h200_dspark", "phase1.v2", "a..b"):
        assert name_problem("RUN_ID", value) is None
    with pytest.raises(ConfigError) as exc:
        check_names([("RUN_ID", "../../etc"), ("EXPERIMENT", "ok"), ("phase", "..")])
    assert str(exc.value).count("\n") == 1


def test_check_names_command() -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["check-names", "RUN_ID=20260101-000000", "EXPERIMENT=e"]).exit_code == 0
    result = runner.invoke(main, ["check-names", "RUN_ID=../x"])
    assert result.exit_code == 1 and "RUN_ID '../x' contains '/'" in result.output


def test_template_and_shipped_experiments_take_tp_from_the_platform() -> None:
    """A copy of TEMPLATE on an H20 or a 4-GPU box asks for the platform's DEFAULT_TP GPUs, not a fixed 8."""
    configs = [REPO / "experiments" / "TEMPLATE" / "config.env", *sorted(REPO.glob("experiments/*/*/config.env"))]
    for config in configs:
        keys = [k for k, _ in parse_env_text(config.read_text(encoding="utf-8"), config.name, {"MODEL_ROOT": "/m"},
                                             set(), set()).assignments]
        assert "TP" not in keys, f"{config.relative_to(REPO)} sets TP; leave it to the platform's DEFAULT_TP"
