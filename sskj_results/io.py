"""Reading and writing results.json: typed loading and atomic saving."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Union

import orjson
from pydantic import ValidationError

from .errors import ResultsError
from .models import Results, dump_dict

RESULTS_NAME = "results.json"
# `kind` of the results.json that indexes the phases of a multi-phase run (sskj_results.runset)
RUN_SET_KIND = "run-set"
PathLike = Union[str, "os.PathLike[str]"]


def results_path(path: PathLike) -> Path:
    """The results.json for a run directory, or the path itself when it is a file."""
    p = Path(path)
    return p / RESULTS_NAME if p.is_dir() else p


def format_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """Render a pydantic/jsonschema location as a JSON path: `scenarios[0].latencies.ttft_ms.p95`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "$"


def read_json_text(path: Path) -> Any:
    """Parse a JSON file, raising ResultsError with line/column on bad syntax."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsError(f"{path}: is a directory, expected a results.json") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not UTF-8 text (byte {exc.start}); is this a results.json?") from None
    if not text.strip():
        raise ResultsError(f"{path}: empty file; expected a results.json object")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise ResultsError(f"{path}: invalid JSON: {exc}") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; write null for a missing value")


def model_message(err: Any) -> str:
    """A pydantic error message in the words `sskj-results validate` uses."""
    if err.get("type") == "missing":
        return "missing required key"
    if err.get("type") == "extra_forbidden":
        return "unknown key; see schema/results.schema.json"
    return str(err["msg"])


def first_model_error(path: Path, exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{path}: {format_loc(err['loc'])}: {model_message(err)}"


def load_run(path: PathLike) -> Results:
    """Load a run directory or a results.json into a typed Results.

    Raises ResultsError naming the file and the JSON path of the first problem
    (`sskj-results validate` lists them all).
    """
    file = results_path(path)
    data = read_json_text(file)
    if isinstance(data, dict) and data.get("kind") == RUN_SET_KIND:
        raise ResultsError(run_set_message(file, data))
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        extra = len(exc.errors()) - 1
        more = f" (and {extra} more; run `sskj-results validate {file}`)" if extra else ""
        raise ResultsError(first_model_error(file, exc) + more) from None


def run_set_message(file: Path, data: dict[str, Any]) -> str:
    """What to do with a run-set index where one run was expected."""
    phases = data.get("phases")
    dirs = [str(p.get("dir")) for p in phases if isinstance(p, dict)] if isinstance(phases, list) else []
    example = f" (e.g. {file.parent / dirs[0]})" if dirs else ""
    return (f"{file}: is the run-set index of a multi-phase run ({', '.join(dirs) or 'no phases'}), not one run; "
            f"give a phase directory{example}, or give {file.parent} to `sskj-results compare`, `report` or "
            "`validate`, which act on every phase")


def to_json_bytes(results: Results) -> bytes:
    """The exact bytes save_run writes: 2-space indented, UTF-8, trailing newline.

    Written by orjson (same layout as ``json.dumps(indent=2, ensure_ascii=False)``;
    floats in their shortest round-trip form); NaN and infinities are refused
    as ``json.dumps(allow_nan=False)`` refuses them.
    """
    data = dump_dict(results)
    _require_finite(data)
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:  # e.g. an integer beyond 64 bits in config: the standard library copes
        text = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
        return (text + "\n").encode("utf-8")


def _require_finite(node: Any) -> None:
    """Raise ValueError (as json.dumps(allow_nan=False) does) on a NaN or infinite float anywhere in node."""
    kind = type(node)
    if kind is dict:
        values = node.values()
    elif kind is list:
        values = node
    else:
        if kind is float and not math.isfinite(node):
            raise ValueError(f"Out of range float values are not JSON compliant: {node!r}")
        return
    for value in values:
        kind = type(value)
        if kind is float:
            if value - value != 0.0:  # NaN or +-inf
                raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        elif kind is dict or kind is list:
            _require_finite(value)


def atomic_write_bytes(file: Path, data: bytes) -> None:
    """Write data to file via a temporary file in the same directory and a rename."""
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, file)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(file: Path, text: str) -> None:
    atomic_write_bytes(file, text.encode("utf-8"))


def save_run(results: Results, path: PathLike) -> Path:
    """Write results.json atomically (temp file + rename); returns the file written."""
    p = Path(path)
    file = p / RESULTS_NAME if (p.is_dir() or not p.suffix) else p
    atomic_write_bytes(file, to_json_bytes(results))
    return file
