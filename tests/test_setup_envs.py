"""The CPU setup (sskj_results/run/setup_envs.py): stamps, failures, usage."""

from __future__ import annotations

import hashlib
import io
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.run.setup_envs import STAMP_NAME, SetupError, SetupPaths, _Setup, setup_cpu


def _paths(tmp_path: Path, python: str = sys.executable) -> SetupPaths:
    req = tmp_path / "repo" / "requirements"
    req.mkdir(parents=True)
    for name in ("engine-cpu.txt", "client.txt", "client-nodeps.txt"):
        (req / name).write_text(f"# {name}\n", encoding="utf-8")
    return SetupPaths(repo=tmp_path / "repo", envs=tmp_path / "envs", models=tmp_path / "models", python=python)


def test_stamp_names_every_requirement_and_the_interpreter(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    setup = _Setup(paths, io.StringIO())
    req = paths.requirements / "client.txt"
    version = sys.version.split()[0]
    assert setup.expected_stamp([req]) == f"{hashlib.sha256(req.read_bytes()).hexdigest()}  client.txt\npython {version}\n"


def test_a_venv_is_current_only_with_its_stamp_and_unchanged_pins(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    setup = _Setup(paths, io.StringIO())
    venv, req = paths.envs / "client", paths.requirements / "client.txt"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert not setup.venv_is_current(venv, [req])  # no stamp: an interrupted install
    (venv / STAMP_NAME).write_text(setup.expected_stamp([req]), encoding="utf-8")
    assert setup.venv_is_current(venv, [req])
    req.write_text("changed==1\n", encoding="utf-8")
    assert not setup.venv_is_current(venv, [req])


def test_a_wrong_interpreter_fails_step_one_with_the_fix(tmp_path: Path) -> None:
    fake = tmp_path / "python3.9"
    fake.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    paths = _paths(tmp_path, python=str(fake))
    with pytest.raises(SetupError) as err:
        setup_cpu(paths, out=io.StringIO())
    text = str(err.value)
    assert "must be Python 3.11" in text and "set SSKJ_PYTHON" in text
    assert "step 1/5 failed" in text and "retry this step with:" in text
    assert not paths.envs.exists()  # nothing installed


def test_cli_installs_only_the_cpu_platform() -> None:
    result = CliRunner().invoke(main, ["setup-envs", "--repo", ".", "h200"])
    assert result.exit_code == 2
    assert "only 'cpu' is installed by this script" in result.output
