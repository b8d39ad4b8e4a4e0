"""The RESUME rule: whether a scenario's raw file still needs measuring."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

from ..contract.errors import ResultsError
from ..contract.io import RESULTS_NAME, describe_os_error, open_checked, read_json_text
from .rawio import FileScan, LineError


def raw_output_needs_measuring(run_dir: Union[str, "os.PathLike[str]"], raw_name: str,
                               recorded_files: Optional[list[Any]] = None) -> Optional[str]:
    """Why RESUME must measure again the scenario whose raw output is
    RUN_DIR/raw_outputs/<raw_name>, or None when that file is a finished measurement.

    A raw output is done only when it is a regular, readable, non-empty file
    that results.json does not mark damaged (see RawFile.damaged) and, when
    parse has not recorded it as it is now, whose every non-blank line reads
    as a complete JSON object (a client killed mid-write leaves a truncated
    last line). A non-empty file is not enough.

    recorded_files: results.json's `raw_files` as dicts, when the caller has
    them already (results.json is then not read again).
    """
    run = Path(run_dir)
    raw = run / "raw_outputs" / raw_name
    label = f"raw_outputs/{raw_name}"
    try:
        with open_checked(raw, "raw output") as handle:
            st = os.fstat(handle.fileno())
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot read: {describe_os_error(exc)}"
    if st.st_size == 0:
        return "empty"
    if recorded_files is None:
        try:
            data = read_json_text(run / RESULTS_NAME) if (run / RESULTS_NAME).is_file() else None
        except ResultsError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("raw_files"), list):
            recorded_files = data["raw_files"]
    recorded = next((rf for rf in recorded_files or [] if isinstance(rf, dict) and rf.get("file") == label), None)
    if recorded is not None:
        if recorded.get("damaged"):
            return f"marked damaged in results.json: {recorded['damaged']}"
        if (recorded.get("size"), recorded.get("mtime_ns"), recorded.get("ctime_ns")) == (st.st_size, st.st_mtime_ns,
                                                                                      st.st_ctime_ns):
            return None
    records = 0
    try:
        for item in FileScan(raw, digest=False):
            if isinstance(item, LineError):
                return f"line {item.line}: {item.message}"
            records += 1
    except OSError as exc:
        return f"cannot read: {describe_os_error(exc)}"
    return None if records else "no JSON object in it"

