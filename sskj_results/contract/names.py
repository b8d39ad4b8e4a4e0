"""Names that become path segments (RUN_ID, EXPERIMENT, phase names, CHIP, ENGINE, ...).

A name is ``[A-Za-z0-9._-]+`` and neither ``.`` nor ``..``: it can never
leave the directory it is joined to, and it reads the same in every shell.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Tuple

from .errors import ConfigError

NAME_PATTERN = r"[A-Za-z0-9._-]+"
_NAME = re.compile(NAME_PATTERN)


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
