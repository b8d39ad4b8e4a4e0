"""Numbers that cannot be right (issue 27, item 6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import load_run

from .conftest import RAW

GOOD = "vllm_0705_4_64_16.jsonl"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def line() -> dict[str, Any]:
    return dict(json.loads((RAW / GOOD).read_text(encoding="utf-8").splitlines()[0]))


def import_lines(tmp_path: Path, *runs: dict[str, Any], name: str = GOOD) -> tuple[Any, Path]:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    (raw / name).write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    out = tmp_path / "out"
    result = invoke("import-legacy", str(raw), "--out", str(out), "--chip", "cpu", "--engine", "vllm", "--model", "m")
    return result, out


def only_run(out: Path) -> Path:
    dirs = [p for p in out.iterdir() if not p.name.startswith(".")]
    assert len(dirs) == 1
    return dirs[0]


def test_arrays_in_ms_instead_of_s_are_a_validate_error(tmp_path: Path) -> None:
    data = line()
    data["ttfts"] = [t * 1000 for t in data["ttfts"]]
    data["itls"] = [[g * 1000 for g in gaps] for gaps in data["itls"]]
    result, out = import_lines(tmp_path, data)
    assert result.exit_code == 0, result.output
    run = only_run(out)
    check = invoke("validate", str(run))
    assert check.exit_code == 1
    assert "scenarios[0].latencies.ttft_ms.mean: the client's mean is 81.1773 ms but the per-request arrays" \
        in check.output, check.output
    assert "the arrays look written in ms instead of s" in check.output


def test_client_mean_against_the_arrays_mean(tmp_path: Path) -> None:
    data = line()
    data["mean_ttft_ms"] = data["mean_ttft_ms"] * 0.6  # the client's 30 ms beside 52 ms from its arrays
    result, out = import_lines(tmp_path, data)
    assert result.exit_code == 0, result.output
    check = invoke("validate", str(only_run(out)))
    assert check.exit_code == 0  # a warning: the client's statistics are recorded as written
    assert ("scenarios[0].latencies.ttft_ms.mean: warning: the client's mean 48.7064 ms and the mean of the "
            "per-request arrays (raw_requests[].ttft_ms) 81.1773 ms differ by 67%, more than 10%") in check.output


def test_negative_duration_is_refused_naming_the_key(tmp_path: Path) -> None:
    data = line()
    data["duration"] = -5
    result, _ = import_lines(tmp_path, data)
    assert result.exit_code == 1
    assert f"{GOOD}:1: duration: -5 s is negative; a benchmark's duration cannot be" in result.stderr
    assert "greater than" not in result.stderr  # no pydantic wording


def test_null_errors_are_unknown_outcomes_not_successes(tmp_path: Path) -> None:
    data = line()
    data["errors"] = [None] * len(data["errors"])
    data["completed"] = 10  # of 12 requests
    result, out = import_lines(tmp_path, data)
    assert result.exit_code == 0, result.output
    assert "errors: 12 of 12 entries are null (outcome unknown, not counted as successes)" in result.stderr
    scenario = load_run(only_run(out)).scenarios[0]
    assert scenario.success == 10  # the client's count, not 12 successes from null errors


def test_completed_beside_shorter_arrays_is_said(tmp_path: Path) -> None:
    data = line()
    data["completed"] = 1000
    result, _ = import_lines(tmp_path, data)
    assert result.exit_code == 0, result.output
    assert f"{GOOD}:1: client says completed=1000, per-request errors say 12 succeeded" in result.stderr
