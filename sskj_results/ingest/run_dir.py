"""Writing an imported run directory: atomically, beside its own earlier import, with a provenance README."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Iterable, Optional

from .. import __version__
from ..contract.io import RESULTS_NAME, atomic_write_text, save_run
from ..contract.models import Results, Scenario
from ..contract.redact import redact, redact_text

ReportRenderer = Callable[[Results, Path], str]
UNKNOWN = "unknown"


def _own_previous(target: Path, raw_abs: str, key: tuple[str, Optional[str], str],
                  files: Optional[frozenset[tuple[str, str]]] = None) -> bool:
    """target holds an earlier import of the same raw directory and (engine, model, chip): it may be replaced.
    With `files` (file name, sha256) of the group's raw files, an earlier import of exactly those raw files
    is this import's own too whatever chip it was given (an `unknown_*` import redone with --platform)."""
    file = target / RESULTS_NAME
    if not file.is_file():
        return False
    try:
        data = json.loads(file.read_bytes())
        meta = data.get("metadata") or {}
        if not (isinstance(meta, dict) and meta.get("imported_from") == raw_abs and meta.get("engine") == key[0]
                and meta.get("model") == (key[1] or UNKNOWN)):
            return False
        if meta.get("chip") == key[2]:
            return True
        raw_files = data.get("raw_files") or []
        earlier = frozenset((Path(str(rf.get("file"))).name, rf.get("sha256")) for rf in raw_files
                            if isinstance(rf, dict))
    except (OSError, ValueError, AttributeError, TypeError):
        return False
    return files is not None and bool(earlier) and earlier == files


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
                              replace: bool = False) -> None:
    """Build the run directory under a temporary name, then rename it into place (replacing an earlier import)."""
    tmp = target.with_name(f".{target.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        save_run(results, tmp / RESULTS_NAME)
        if render_report is not None:
            atomic_write_text(tmp / "report.md", render_report(results, target))
        atomic_write_text(tmp / "README.md", provenance_readme(results, sources, command))
        if replace and target.exists():
            old = target.with_name(f".{target.name}.old")
            if old.exists():
                shutil.rmtree(old)
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def provenance_readme(results: Results, sources: Iterable[tuple[Path, str, int, int]], command: Optional[str]) -> str:
    meta = results.metadata
    lines = [
        f"# Provenance of {meta.chip}_{meta.engine}_{meta.run_id}",
        "",
        f"Imported by sskj-results {__version__} on {meta.imported_at or 'an unknown date'}; the runs started "
        f"{meta.timestamp or 'at an unknown time'} (from the raw runs: their own time keys, else a date-time in the "
        "file name, else the name's MMDD as a month and day without a year; never a file's modification time; times "
        "without a zone are this machine's local time).",
        "",
        "Command:",
        "",
        "```",
        redact(command) if command else "(not recorded)",
        "```",
        "",
        f"Engine `{meta.engine}`, model `{meta.model}` and chip `{meta.chip}` come from the command line, else (the "
        "engine) the server the runs name (`framework`, `server_info`), else the file name (`{chip}_{engine}_…`, a "
        "chip prefix, or --name-pattern), else the runs' own keys (`backend`, `model_id`, `server_info.model_path`); "
        "`unknown` where none of them says.",
        "",
        "## Source files",
        "",
        "| file | sha256 | lines | bytes |",
        "|---|---|---:|---:|",
    ]
    for path, digest, size, nlines in sources:
        lines.append(f"| {path} | `{digest}` | {nlines} | {size} |")
    lines.append("")
    return redact_text("\n".join(lines))  # the one redaction, over the whole file

