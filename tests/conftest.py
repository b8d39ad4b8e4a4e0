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

