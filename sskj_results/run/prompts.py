"""The prompts of a phase: which method, which round-trip sets, the command that makes them, and their record.

The method of each scenario comes from `catalog.clients.prompt_method`
(PROMPT_METHOD, default auto: token ids where the client can send them, else
a round-trip set). A round-trip set is made by scripts/common/make_prompt_set.py
under the client's Python, on the CPU, before the phase's engine starts
(`phase-begin`), for every (input length, prompt count) of the grid; a
scenario the grid did not foresee (SLO search) has its set made by the `step`
that proposes it. Sets are cached under PROMPT_SET_DIR (default
RESULT_ROOT/prompt_sets: per run), named by the tokenizer's fingerprint (SHA-256 of
its files), length, count, seed and the client's format, so a second phase or a resumed run
with the same tokenizer reuses them (other runs too, where PROMPT_SET_DIR is shared). Each scenario's method and set are recorded in
prompts/<stem>.json beside its raw output (read by `parse`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from ..contract.io import atomic_write_text

PROMPT_SET_VERSION = 1  # bump when make_prompt_set.py makes other prompts for the same key
PROMPTS_DIR = "prompts"  # prompts/<stem>.json in a phase's run directory
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "tiktoken.model", "vocab.json",
                   "vocab.txt", "merges.txt", "special_tokens_map.json", "added_tokens.json")


@dataclass(frozen=True)
class PromptSet:
    length: int
    count: int
    path: Path

    def arg(self) -> str:
        return f"{self.length}:{self.count}:{self.path}"


def tokenizer_fingerprint(tokenizer: str) -> str:
    """SHA-256 (16 hex digits) of the tokenizer's files in a local directory, else of its name (a hub id)."""
    digest = hashlib.sha256()
    directory = Path(tokenizer)
    files = [directory / name for name in TOKENIZER_FILES] if directory.is_dir() else []
    found = [f for f in files if f.is_file()]
    if not found:
        digest.update(b"name\0" + tokenizer.encode("utf-8", "surrogateescape"))
    for file in found:
        digest.update(file.name.encode() + b"\0")
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def set_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("PROMPT_SET_DIR") or f"{env.get('RESULT_ROOT') or 'results'}/prompt_sets")


def prompt_set(directory: Path, fingerprint: str, length: int, count: int, seed: str, client: str) -> PromptSet:
    """The set's file: a ShareGPT `.json` for sglang.bench_serving, a `.jsonl` of prompts for vllm bench serve."""
    ext = "jsonl" if client == "vllm" else "json"
    name = f"{fingerprint}_i{length}_n{count}_s{seed}_v{PROMPT_SET_VERSION}.{ext}"
    return PromptSet(length, count, directory / name)


def make_command(python: list[str], repo: Path, tokenizer: str, seed: str, sets: list[PromptSet],
                 missing_only: bool = True) -> list[str]:
    """The command that makes the sets (those not yet on disk, with missing_only); empty when none is left."""
    todo = [s for s in dict.fromkeys(sets) if not (missing_only and s.path.is_file())]
    if not todo:
        return []
    return [*python, str(repo / "scripts" / "common" / "make_prompt_set.py"), "--tokenizer", tokenizer,
            "--seed", seed, *[word for s in todo for word in ("--set", s.arg())]]


def record(run_dir: Path, stem: str, method: str, tokenizer: str, seed: str, used: Optional[PromptSet]) -> None:
    """prompts/<stem>.json: the scenario's prompt method and, for a round-trip set, its file and SHA-256."""
    data: dict[str, object] = {"stem": stem, "method": method, "tokenizer": tokenizer, "seed": seed}
    if used is not None:
        data.update(file=str(used.path), length=used.length, count=used.count,
                    sha256=hashlib.sha256(used.path.read_bytes()).hexdigest() if used.path.is_file() else None)
    (run_dir / PROMPTS_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / PROMPTS_DIR / f"{stem}.json", json.dumps(data, indent=2) + "\n")
