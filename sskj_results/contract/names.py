"""Names that become path segments (RUN_ID, EXPERIMENT, phase names, CHIP, ENGINE, ...).

A name is ``[A-Za-z0-9._-]+`` and neither ``.`` nor ``..``: it can never
leave the directory it is joined to, and it reads the same in every shell.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable, List, Tuple

from .errors import ConfigError

NAME_PATTERN = r"[A-Za-z0-9._-]+"
_NAME = re.compile(NAME_PATTERN)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# bytes of a path segment made from a name: file systems allow 255 (NAME_MAX); this leaves room
# for what callers add around it (`cdf_` … `.png`, `_<run id>-2`)
MAX_SEGMENT = 160
_HASH_CHARS = 10


def path_segment(text: str, replacement: str = "_", fallback: str = "scenario", limit: int = MAX_SEGMENT) -> str:
    """`text` as one path segment of at most `limit` bytes: every run of characters outside
    ``[A-Za-z0-9._-]`` becomes `replacement` (ends stripped; empty gives `fallback`). A longer
    result is cut and ends in `-` and 10 hex digits of the SHA-256 of `text`, so two long names
    that share their start still get two files. The one place where a name (a scenario's, a
    model's) becomes a file or directory name."""
    safe = _UNSAFE.sub(replacement, text).strip(replacement) or fallback
    if safe in (".", ".."):
        safe = fallback
    if len(safe) <= limit:
        return safe
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{safe[:limit - _HASH_CHARS - 1]}-{digest}"


def name_problem(kind: str, value: str) -> str | None:
    """None when VALUE is a valid name, else one line saying what is wrong and what to do."""
    if _NAME.fullmatch(value) and value not in (".", ".."):
        return None
    shown = value.encode("unicode_escape").decode("ascii")
    if not value:
        why = "is empty"
    elif value in (".", ".."):
        why = f"is '{value}'"
    else:
        bad = sorted({c for c in value if not _NAME.fullmatch(c)})
        why = "contains " + " ".join(repr(c) for c in bad)
    return f"{kind} '{shown}' {why}: a name becomes a path segment, use only letters, digits, '.', '_' and '-'"


def check_names(pairs: Iterable[Tuple[str, str]]) -> None:
    """Raise ConfigError listing every bad (kind, value), one line each."""
    problems: List[str] = [p for kind, value in pairs if (p := name_problem(kind, value)) is not None]
    if problems:
        raise ConfigError("\n".join(problems))
