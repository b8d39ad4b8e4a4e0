"""Runtime patches of a Docker platform (scripts/common/apply_patches.sh applies them).

PATCH_ROOT/series lists the patches in order, one per line:
`<patch file in PATCH_ROOT> <python package it patches>` (`#` comments).
What was applied is recorded in results.json as config.patches (a JSON
string): a list of {file, sha256, package, target, status}.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..contract.errors import ConfigError

_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PACKAGE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
STATUSES = ("applied", "already_applied", "dry_run")


@dataclass(frozen=True)
class Patch:
    file: str
    package: str
    sha256: str


def read_series(patch_root: Path) -> list[Patch]:
    """The patches of PATCH_ROOT/series, validated (file:line on error); [] without a series file."""
    series = patch_root / "series"
    if not series.is_file():
        return []
    out: list[Patch] = []
    for number, raw in enumerate(series.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ConfigError(f"{series}:{number}: expected '<patch file> <python package>'")
        file, package = fields
        if not _FILE.match(file) or not _PACKAGE.match(package):
            raise ConfigError(f"{series}:{number}: invalid patch file or package name")
        path = patch_root / file
        if not path.is_file():
            raise ConfigError(f"{series}:{number}: {path} does not exist")
        out.append(Patch(file, package, hashlib.sha256(path.read_bytes()).hexdigest()))
    return out


def dry_run_target(package: str) -> str:
    """Where a dry run says a patch would go: the container's site-packages are looked up only when it runs."""
    return f"<site-packages of {package}>"


def listing(patches: list[Patch]) -> str:
    """`FILE PACKAGE SHA256 DRY_RUN_TARGET` lines (apply_patches.sh reads them; the target is the rest of the line)."""
    return "".join(f"{p.file} {p.package} {p.sha256} {dry_run_target(p.package)}\n" for p in patches)


def patches_record(patches: list[Patch], results: dict[str, tuple[str, str]]) -> str:
    """config.patches: JSON list of {file, sha256, package, target, status}; results: file -> (status, target)."""
    rows = []
    for p in patches:
        if p.file not in results:
            raise ConfigError(f"no result given for patch {p.file}")
        status, target = results[p.file]
        if status not in STATUSES:
            raise ConfigError(f"patch {p.file}: status {status!r} is not one of {', '.join(STATUSES)}")
        rows.append({"file": p.file, "sha256": p.sha256, "package": p.package, "target": target, "status": status})
    return json.dumps(rows)
