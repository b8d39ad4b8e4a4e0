"""Writing an imported run directory: atomically, beside its own earlier import, with a provenance README."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from .. import __version__
from ..contract.escape import md_cell, md_code, md_fence, md_text
from ..contract.io import RESULTS_NAME, _umask, atomic_write_text, read_checked, save_run
from ..contract.locking import clean_stale, locked, swap_dirs, temp_prefix
from ..contract.models import Results, Scenario
from ..contract.redact import redact, redact_text

ReportRenderer = Callable[[Results, Path], str]
UNKNOWN = "unknown"


# what import-legacy wrote into a run directory, by exact name: the directory's own name and its files
MANIFEST = ".sskj-import.json"
IMPORT_FILES = (RESULTS_NAME, "report.md", "README.md")


def _manifest(target: Path) -> Optional[dict[str, Any]]:
    try:
        data = json.loads(read_checked(target / MANIFEST, "text file"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _own_previous(target: Path, raw_abs: str, key: tuple[str, Optional[str], str],
                  files: Optional[frozenset[tuple[str, str]]] = None) -> bool:
    """target is a run directory this import wrote before, under this very name, from the same raw
    directory and (engine, model, chip): it may be replaced. With `files` (file name, sha256) of the group's
    raw files, an earlier import of exactly those raw files is this import's own too whatever chip it was
    given (an `unknown_*` import redone with --platform). A copy the user made (`<run>_before_update`)
    names another directory in its manifest (or, written before manifests, does not end in its run id)."""
    file = target / RESULTS_NAME
    if target.is_symlink() or not file.is_file():
        return False
    try:
        data = json.loads(read_checked(file, "results.json"))
        meta = data.get("metadata") or {}
        raw_files = data.get("raw_files") or []
        earlier = frozenset((Path(str(rf.get("file"))).name, rf.get("sha256")) for rf in raw_files
                            if isinstance(rf, dict))
    except (OSError, ValueError, AttributeError, TypeError, RecursionError):
        return False
    if not (isinstance(meta, dict) and meta.get("imported_from") == raw_abs and meta.get("engine") == key[0]
            and meta.get("model") == (key[1] or UNKNOWN)):
        return False
    if meta.get("chip") != key[2] and (files is None or not earlier or earlier != files):
        return False
    manifest = _manifest(target)
    if manifest is not None:
        return manifest.get("run_dir") == target.name
    run_id = str(meta.get("run_id"))
    return target.name.endswith(f"_{run_id}") or re.search(rf"_{re.escape(run_id)}-\d+$", target.name) is not None


def _written_before(target: Path) -> set[str]:
    manifest = _manifest(target)
    files = manifest.get("files") if manifest else None
    if isinstance(files, list):
        return {str(f) for f in files} | {MANIFEST}
    return set(IMPORT_FILES) | {MANIFEST}


def _carry_over(old: Path, new: Path) -> list[str]:
    """Hard-link (else copy) into new everything in old the import did not write (a NOTES.md, plots/)."""
    kept = []
    own = _written_before(old)
    for entry in sorted(os.scandir(old), key=lambda e: e.name):
        if entry.name in own or entry.name == ".sskj.lock":
            continue
        dest = new / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), dest)
        elif entry.is_dir():
            shutil.copytree(entry.path, dest, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry.path, str(dest))
        kept.append(entry.name)
    return kept


def _link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def remove_own_stale(stale: Path) -> list[str]:
    """Remove an earlier import (under its lock); files the import did not write are kept in place
    and named in the result (the directory then stays, holding only them)."""
    with locked(stale):
        own = _written_before(stale)
        others = [e.name for e in os.scandir(stale) if e.name not in own]
        if not others:
            shutil.rmtree(stale)
            return []
        for name in own:
            path = stale / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
        return sorted(others)


def _client_of(scenarios: list[Scenario]) -> Optional[str]:
    formats = {s.source.format for s in scenarios if s.source and s.source.format}
    names = {"sglang-bench-serving": "sglang.bench_serving", "vllm-bench-serve": "vllm bench serve"}
    return ", ".join(sorted(names.get(f, f) for f in formats)) or None


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in text)


def _unique_dir(path: Path) -> Path:
    candidate, n = path, 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}-{n}")
        n += 1
    return candidate


def _write_run_dir_atomically(target: Path, results: Results, sources: list[tuple[Path, str, int, int]],
                              command: Optional[str], render_report: Optional[ReportRenderer],
                              replace: bool = False) -> list[str]:
    """Build the run directory under a temporary name, then move it into place (replacing an earlier import).

    Holds the run directory's lock throughout. Files of the earlier import the import did not
    write (a NOTES.md) are carried over and their names returned. The swap never leaves target
    missing (contract.locking.swap_dirs); a backup left by a killed writer is restored first.
    """
    clean_stale(target.parent, target.name)
    # an existing run directory is locked too (a `parse` or `metadata` of it waits); a new one is not made early
    with locked(target) if target.is_dir() else contextlib.nullcontext():
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(target.name), suffix=".tmp", dir=target.parent))
        try:
            written = [RESULTS_NAME]
            save_run(results, tmp / RESULTS_NAME, lock=False)
            if render_report is not None:
                atomic_write_text(tmp / "report.md", render_report(results, target))
                written.append("report.md")
            atomic_write_text(tmp / "README.md", provenance_readme(results, sources, command))
            written.append("README.md")
            atomic_write_text(tmp / MANIFEST, json.dumps({"run_dir": target.name, "files": written,
                                                          "imported_from": results.metadata.imported_from}) + "\n")
            os.chmod(tmp, 0o777 & ~_umask())
            if replace and target.exists():
                kept = _carry_over(target, tmp)
                swap_dirs(tmp, target)
                return kept
            os.rename(tmp, target)
            return []
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def provenance_readme(results: Results, sources: Iterable[tuple[Path, str, int, int]], command: Optional[str]) -> str:
    meta = results.metadata
    lines = [
        f"# Provenance of {md_text(f'{meta.chip}_{meta.engine}_{meta.run_id}')}",
        "",
        f"Imported by sskj-results {__version__} on {md_text(meta.imported_at or 'an unknown date')}; the runs "
        f"started {md_text(meta.timestamp or 'at an unknown time')} (from the raw runs: their own time keys, else a "
        "date-time in the file name, else the name's MMDD as a month and day without a year; never a file's "
        "modification time; times without a zone are this machine's local time).",
        "",
        "Command:",
        "",
        *md_fence(redact(command) if command else "(not recorded)"),
        "",
        f"Engine {md_code(meta.engine)}, model {md_code(meta.model)} and chip {md_code(meta.chip)} come from the "
        "command line, else (the engine) the server the runs name (`framework`, `server_info`), else the file name "
        "(`{chip}_{engine}_…`, a chip prefix, or --name-pattern), else the runs' own keys (`backend`, `model_id`, "
        "`server_info.model_path`); `unknown` where none of them says.",
        "",
        "## Source files",
        "",
        "| file | sha256 | lines | bytes |",
        "|---|---|---:|---:|",
    ]
    for path, digest, size, nlines in sources:
        lines.append(f"| {md_cell(path)} | {md_cell(md_code(digest))} | {nlines} | {size} |")
    lines.append("")
    return redact_text("\n".join(lines))  # the one redaction, over the whole file

