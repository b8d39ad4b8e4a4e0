from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data"
RAW = DATA / "raw"
SEED = DATA / "seed_example.json"
REPO = Path(__file__).resolve().parents[1]
# The shared read-only material (real client outputs, the users' documents) lives in ../shared beside the
# project, in every checkout and clone that has it: never at an absolute path.
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared beside the repository. Where it is missing the test fails under CI (CI=true: CI
    must put ../shared beside its clone), and elsewhere is skipped with the path it looked for (pytest -ra)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        message = f"{path} is missing: the shared fixtures are read from ../shared beside the project ({REPO})"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"{message}; CI must provide it", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture
def shared_raw() -> Path:
    """../shared/fixtures/raw: real client outputs of the tiny model (shared_path: fails under CI when missing)."""
    return shared_path("fixtures", "raw")


@pytest.fixture
def seed_dict() -> dict[str, Any]:
    return json.loads(SEED.read_text(encoding="utf-8"))


@pytest.fixture
def raw_dir(tmp_path: Path) -> Path:
    """A writable copy of the real raw fixtures."""
    target = tmp_path / "raw"
    target.mkdir()
    for f in RAW.iterdir():
        if f.suffix in (".jsonl", ".json"):
            shutil.copy(f, target / f.name)
    return target

