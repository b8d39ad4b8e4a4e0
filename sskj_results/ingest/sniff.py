"""What a path given where a run is expected really is: a raw client output, a folder of raw outputs, a
folder of runs, or nothing sskj can read. Used by the commands that take runs (`validate`, `report`,
`compare`) to point the user the right way before the results.json reader sees a file it cannot take.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Optional

from ..contract.errors import ResultsError
from ..contract.io import RESULTS_NAME, display_name
from ..contract.runset import runs_inside
from .rawkeys import detect_format

# The start of a file is enough to tell: a raw line is read whole only when it fits here.
SNIFF_BYTES = 1 << 20
# Keys a results.json has at its top level and no client output has.
_RESULTS_KEYS = ("scenarios", "schema_version")
_KEY = re.compile(rb'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')


def raw_client_format(path: Path) -> Optional[str]:
    """The client that wrote FILE (rawkeys.SGLANG / VLLM) when it is a raw client output, else None
    (a results.json, another file, an unreadable one)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None
    first = head.lstrip()[:1]
    if first not in (b"{", b"["):
        return None
    line = head.split(b"\n", 1)[0]
    data: Any = None
    try:
        data = json.loads(line)  # Python's reader takes the bare Infinity / NaN clients write
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
    if isinstance(data, dict):
        if any(k in data for k in _RESULTS_KEYS):
            return None
        return detect_format(data)
    # a line longer than SNIFF_BYTES (or a pretty-printed file): judge by the keys seen so far
    keys = {m.group(1).decode("ascii") for m in _KEY.finditer(head)}
    if keys & set(_RESULTS_KEYS):
        return None
    return detect_format(dict.fromkeys(keys, 0))


def _import_hint(folder: Path) -> str:
    return f"run `sskj-results import-legacy {display_name(folder)}` to import it into run directories"


def check_run_path(path: Path) -> None:
    """Raise ResultsError with what to do when PATH, given where a run is expected, is a raw client output,
    a folder of raw outputs, or a folder with no results.json in it or its subdirectories; return when PATH
    may be a run (a results.json, a run directory, a run set, a folder of runs: the readers decide)."""
    if path.is_file():
        if path.name != RESULTS_NAME:
            client = raw_client_format(path)
            if client is not None:
                raise ResultsError(f"{display_name(path)}: is a raw client output ({client}), not a results.json; "
                                   + _import_hint(path.parent))
        return
    if not path.is_dir() or os.path.lexists(path / RESULTS_NAME) or runs_inside(path):
        return
    raw = path / "raw_outputs"
    if raw.is_dir():
        raise ResultsError(f"{display_name(path)}: has raw_outputs/ but no {RESULTS_NAME}; run `sskj-results parse "
                           f"{display_name(path)}` (a run directory) or `sskj-results import-legacy {display_name(raw)}`")
    try:
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".jsonl"))[:20]
    except OSError:
        return
    if any(raw_client_format(f) for f in files):
        raise ResultsError(f"{display_name(path)}: holds raw client outputs, not runs; " + _import_hint(path))
    raise ResultsError(f"{display_name(path)}: no {RESULTS_NAME} here nor one level down; give a run "
                       f"directory (one holding {RESULTS_NAME}), a folder of them, or a {RESULTS_NAME}")
