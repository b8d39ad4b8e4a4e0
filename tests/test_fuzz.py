"""The fuzzer of tests/fuzz/ on a fixed sample: mutated real inputs never end in a traceback,
never cost a good file, and never alter a results.json when a command fails."""

from __future__ import annotations

import os

import pytest

from .fuzz.fuzzer import run_case

# SSKJ_FUZZ_CASES raises the sample (the long run is `python tests/fuzz/run_fuzz.py --cases 10000`).
CASES = int(os.environ.get("SSKJ_FUZZ_CASES", "300"))
BATCH = 25


@pytest.mark.parametrize("start", range(0, CASES, BATCH))
def test_fuzz_sample(start: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # durability is not what is tested here; fsync on a busy disk would be most of the time
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    failures = [f for n in range(start, min(start + BATCH, CASES)) for f in run_case(n, seed=0)]
    assert not failures, "\n".join(str(f) for f in failures)
