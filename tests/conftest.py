from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parent / "data"
RAW = DATA / "raw"
SEED = DATA / "seed_example.json"


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


# `make test` runs the suite on two workers (pytest-xdist, --dist loadgroup). The tests that run the real
# CPU engine or the local Slurm cluster share one worker, in file order: the engine's environments are
# installed once (the first of them installs envs/), one cluster serves the Slurm tests, and two engines
# never compete for this machine's cores; every other test is spread over both workers.
_ONE_WORKER = ("cluster", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).relative_to(Path(__file__).resolve().parent).parts
        if parts and parts[0] in _ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group("engine"))
