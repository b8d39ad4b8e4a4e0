"""Preflight of a DSpark phase: speculative tokens against the drafter's block size (run/drafter.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.run.drafter import block_size_check, drafter_block_size

VLLM = ["/e/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--spec-method", "dspark"]


def _drafter(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "drafter"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return path


def _phase_file(tmp_path: Path, argv: list[str]) -> Path:
    path = tmp_path / "phase"
    path.write_bytes(b"".join(w.encode() + b"\0" for w in ("vllm-dspark", str(tmp_path / "no-model"), "", *argv)))
    return path


def _lines(output: str, level: str) -> list[str]:
    return [line.split("] preflight: ", 1)[1] for line in output.splitlines() if f"[{level}] preflight: " in line]


def test_block_size_from_the_drafters_config(tmp_path: Path) -> None:
    assert drafter_block_size(str(_drafter(tmp_path, {"block_size": 8, "dflash_config": {"block_size": 5}}))) \
        == (5, "dflash_config.block_size")
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"block_size": 5}))
    assert drafter_block_size(str(other)) == (5, "block_size")
    none, why = drafter_block_size(str(tmp_path / "absent"))
    assert none is None and "not readable here" in why


def test_preflight_refuses_spec_tokens_other_than_the_block_size(tmp_path: Path) -> None:
    drafter = _drafter(tmp_path, {"architectures": ["DFlashDraftModel"], "block_size": 5})
    wrong = _phase_file(tmp_path, [*VLLM, "--spec-model", str(drafter), "--spec-tokens", "7"])
    result = CliRunner().invoke(main, ["preflight", "--phase-file", str(wrong)])
    assert result.exit_code == 1
    assert [line for line in _lines(result.output, "ERROR") if "block size" in line] == [
        f"the dspark phase of engine vllm-dspark runs 7 speculative tokens, but its drafter {drafter} has a block "
        "size of 5 (block_size of its config.json): its acceptance collapses when they differ: set the speculative "
        "tokens to 5 (SPEC_TOKENS or --spec-tokens / num_speculative_tokens)"]
    right = block_size_check("vllm-dspark", [*VLLM, "--spec-model", str(drafter), "--spec-tokens", "5"])
    assert right == (None, None)


def test_preflight_warns_when_the_block_size_is_unknown(tmp_path: Path) -> None:
    drafter = _drafter(tmp_path, {"architectures": ["DFlashDraftModel"]})
    phase = _phase_file(tmp_path, [*VLLM, "--spec-model", str(drafter), "--spec-tokens", "5"])
    result = CliRunner().invoke(main, ["preflight", "--phase-file", str(phase)])
    assert not any("block size" in line for line in _lines(result.output, "ERROR")), result.output
    (warning,) = [line for line in _lines(result.output, "WARN") if "block size" in line]
    assert warning.startswith("the dspark phase of engine vllm-dspark: the drafter's block size is unknown")
    assert "names no block_size" in warning
    assert block_size_check("vllm", ["/e/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]) \
        == (None, None)  # not speculative
    ngram = block_size_check("vllm", [*VLLM[:-1], "ngram", "--spec-tokens", "3"])
    assert ngram == (None, None)  # no block-trained drafter
