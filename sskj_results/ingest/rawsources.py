"""Which raw files are read: those of a run's raw_outputs/ (`parse`), and those `import-legacy` reads
under RAW_DIR, in a stable order, with those it leaves out and why (hidden entries, sweep summaries
that repeat their runs, warm-ups, failure records)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ..contract.errors import RawFormatError
from ..contract.io import RAW_SUFFIXES, describe_os_error, read_checked
from .rawio import loads_lenient

@dataclass
class RawListing:
    """What a raw directory holds: the raw outputs to read (any case of
    .jsonl/.json, special files included so that reading them reports a
    refusal) and everything else, which is not read and is listed."""

    files: list[Path] = field(default_factory=list)
    ignored: list[tuple[Path, str]] = field(default_factory=list)


# editors' and tools' copies beside a file: never a measurement of their own
_SWAP = (".swp", ".swo", ".swx")
_BACKUP = (".bak", ".orig")


def left_out(name: str) -> Optional[str]:
    """Why a directory entry is not read on purpose (a hidden entry, a backup copy, an editor's swap or
    auto-save file), or None. Each one is named in a warning, so no file is left out silently."""
    if name.lower().endswith(_SWAP):
        return "editor swap file, not read"
    if name.startswith("#") and name.endswith("#") and len(name) > 1:
        return "editor auto-save file, not read"
    if name.endswith("~"):
        return "backup copy (the name ends in ~), not read"
    if name.lower().endswith(_BACKUP):
        return f"backup copy (the name ends in {name[name.rindex('.'):]}), not read"
    if name.startswith("."):
        return "hidden, not read"
    return None


def list_raw_dir(directory: Path) -> RawListing:
    """Raw outputs of a directory (sorted), and the entries that are not raw outputs, with why
    (hidden entries, backups and swap files are not read: `left_out`)."""
    listing = RawListing()
    try:
        entries = sorted(directory.iterdir())
    except FileNotFoundError:
        return listing
    except NotADirectoryError:
        return listing
    for entry in entries:
        why = left_out(entry.name)
        if why is not None:
            listing.ignored.append((entry, why))
        elif entry.suffix.lower() in RAW_SUFFIXES:
            listing.files.append(entry)
        elif entry.is_dir():
            listing.ignored.append((entry, "directory, not read"))
        else:
            listing.ignored.append((entry, "not a raw output (*.jsonl or *.json), not read"))
    return listing


@dataclass(frozen=True)
class RawSource:
    """A raw file to import, or one to leave out and why (sweep summaries, warm-ups, failure records)."""

    path: Path
    label: str
    skip: Optional[str] = None
    # runs of the file left out, by their position in its JSON array, and why (a sweep summary's repeats)
    skip_items: tuple[tuple[int, str], ...] = ()


_SWEEP_RUN = re.compile(r"^run=\d+\.json$")


def collect_raw_sources(raw_dir: Path, ignored: Optional[list[tuple[str, str]]] = None) -> list[RawSource]:
    """Every *.jsonl/*.json under raw_dir (subdirectories too, hidden ones left out), in a stable order.

    In a `vllm bench sweep serve` directory (`run=N.json` files), `summary.json` repeats the runs and
    `warmup.json` is the unmeasured warm-up: both are left out; `summary.json` alone is imported.
    """
    sources: list[RawSource] = []
    root = raw_dir
    paths: list[Path] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        walked = path.is_dir() and not path.is_symlink()  # rglob walks it
        if any(part.startswith(".") for part in rel.parts) or walked or path.suffix.lower() not in RAW_SUFFIXES:
            # listed, never silently skipped (a hidden directory once, not each file in it)
            hidden_below = any(part.startswith(".") for part in rel.parts[:-1])
            if ignored is not None and not hidden_below and not (walked and not rel.name.startswith(".")):
                why = left_out(rel.name) or "not a raw output (*.jsonl or *.json), not read"
                ignored.append((str(rel), why))
            elif ignored is not None and not hidden_below and walked and path.suffix.lower() in RAW_SUFFIXES:
                try:
                    inside = "empty" if not any(path.iterdir()) else "the raw files inside it are read"
                except OSError as exc:
                    inside = f"cannot list it: {describe_os_error(exc)}"
                ignored.append((str(rel), f"a directory named like a raw output, not a file: not read as one ({inside})"))
            elif ignored is not None and not hidden_below and walked:
                try:  # the walk passes over a directory it cannot list without a word: named here
                    os.scandir(path).close()
                except OSError as exc:
                    ignored.append((str(rel), f"a directory that cannot be listed, not read: {describe_os_error(exc)}"))
            continue
        paths.append(path)  # special files named like raw files are kept: reading them reports the refusal
    sweep_dirs = {p.parent for p in paths if _SWEEP_RUN.match(p.name)}
    for path in paths:
        label = str(path.relative_to(root))
        siblings_runs = path.parent in sweep_dirs
        if path.name == "summary.json" and siblings_runs:
            repeats = sweep_repeats(path, sorted(p for p in paths if p.parent == path.parent and _SWEEP_RUN.match(p.name)))
            if repeats is not None and repeats[1] and len(repeats[0]) == repeats[1]:
                sources.append(RawSource(path, label, "sweep summary: repeats the run=N.json files beside it, each imported once"))
            else:  # unreadable (the reader says why), or runs of its own: those are imported
                sources.append(RawSource(path, label, skip_items=tuple(sorted(repeats[0].items())) if repeats else ()))
        elif path.name == "warmup.json" and siblings_runs:
            sources.append(RawSource(path, label, "sweep warm-up run: not measured"))
        elif path.name.endswith(".failure.json"):
            sources.append(RawSource(path, label, _failure_reason(path)))
        else:
            sources.append(RawSource(path, label))
    return sources


def _load_json(path: Path) -> Any:
    return loads_lenient(read_checked(path, "raw output"))


def _same_run(element: dict[str, Any], run: dict[str, Any]) -> bool:
    """The summary element is that run: every key both hold has the same value (statistics, counts, date), and
    they share a count and a statistic (two runs of one sweep share their settings, never all their numbers)."""
    common = [k for k in element if k in run]
    if "completed" not in common and "date" not in common:
        return False
    if not any(k.endswith("_ms") for k in common):
        return False
    return all(element[k] == run[k] for k in common)


def sweep_repeats(summary: Path, run_files: list[Path]) -> Optional[tuple[dict[int, str], int]]:
    """({position: why} of the summary's elements that repeat a `run=N.json` beside it, number of elements);
    None when a file cannot be read as JSON (then the summary is read as any raw file, and says why)."""
    try:
        data = _load_json(summary)
        runs = [(p.name, _load_json(p)) for p in run_files]
    except (OSError, ValueError, RecursionError, RawFormatError):
        return None
    elements = data if isinstance(data, list) else [data]
    repeats: dict[int, str] = {}
    for i, element in enumerate(elements):
        if not isinstance(element, dict):
            continue
        for name, run in runs:
            if isinstance(run, dict) and _same_run(element, run):
                repeats[i] = f"sweep summary element repeats {name} beside it (imported once, from {name})"
                break
    return repeats, len(elements)


def _failure_reason(path: Path) -> str:
    """The error a `vllm bench sweep` failure record keeps."""
    try:
        data = json.loads(read_checked(path, "raw output").decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return "sweep failure record: the benchmark did not produce results"
    if isinstance(data, dict) and data.get("error"):
        kind = f"{data.get('error_type')}: " if data.get("error_type") else ""
        return f"benchmark failed ({kind}{str(data['error']).strip().splitlines()[0][:300]})"
    return "sweep failure record: the benchmark did not produce results"
