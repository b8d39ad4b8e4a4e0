"""Reading and writing results.json: typed loading and atomic saving."""

from __future__ import annotations

import errno
import functools
import json
import os
import stat
import tempfile
import weakref
from pathlib import Path
from io import FileIO
from typing import TYPE_CHECKING, Any, Optional, Union

import orjson

from .errors import ResultsError
from .jsontree import _WIDE_FLOAT, INT64, MAX_DEPTH, _check_tree, check_json_tree, format_loc
from .locking import clean_stale, locked, temp_prefix

if TYPE_CHECKING:  # the models (pydantic) load on first use: file helpers and the shell's commands start fast
    from pydantic import ValidationError

    from .models import RawRequest, Results, Scenario

# ---------------------------------------------------------------- safe opening

MiB = 1 << 20
GiB = 1 << 30

# Largest file of each kind that is read at all (checked on the open file
# before a byte is read; stated in docs/INPUT_LIMITS.md). A raw output is read
# one line at a time, so its limit bounds the longest line held in memory too.
SIZE_LIMITS: dict[str, int] = {
    "raw output": 4 * GiB,
    "results.json": 1 * GiB,
    "server metrics": 64 * MiB,
    "accelerator log": 256 * MiB,
    "skipped-scenario list": 16 * MiB,
    "config file": 16 * MiB,
    "text file": 64 * MiB,
}

RAW_SUFFIXES = (".jsonl", ".json")


class RefusedFile(OSError):
    """A path that is not read: not a regular file, or bigger than its kind's limit.

    An OSError, so every caller that reports unreadable files reports these
    the same way (its ``strerror`` says why).
    """

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(errno.EINVAL, reason, str(path))


_KINDS = (
    (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
)


def _kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def describe_os_error(exc: OSError) -> str:
    """Why a file could not be opened or read, in words (no errno numbers, no temp names)."""
    if isinstance(exc, RefusedFile):
        return str(exc.strerror)
    return _OS_ERROR_WORDS.get(exc.errno or 0) or exc.strerror or type(exc).__name__


_OS_ERROR_WORDS = {
    errno.ELOOP: "symbolic link loop; refused",
    errno.ENOENT: "no such file (a broken symbolic link?)",
    errno.ENXIO: "not a regular file (a socket or a device without a reader); refused",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOSPC: "no space left on device (disk full)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EISDIR: "is a directory",
    errno.EIO: "input/output error (failing disk or network file system?)",
}


def open_checked(path: Path, kind: str = "raw output", limit: Optional[int] = None) -> FileIO:
    """Open path for reading if it is a regular file within the size limit of its kind.

    Never blocks (a FIFO is opened non-blocking and refused), never reads a
    device, a directory or a socket; symlinks are followed, and a broken or
    looping one is an OSError like any unreadable file. Raises OSError
    (RefusedFile for refusals) naming the path.
    """
    limit = SIZE_LIMITS.get(kind, SIZE_LIMITS["text file"]) if limit is None else limit
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RefusedFile(path, f"{_kind_of(st.st_mode)}, not a regular file; refused without reading it")
        if st.st_size > limit:
            raise RefusedFile(path, f"{st.st_size} bytes, more than the {_size(limit)} limit of a {kind}; "
                                    "refused without reading it (see docs/INPUT_LIMITS.md)")
        os.set_blocking(fd, True)
        return FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_checked(path: Path, kind: str, limit: Optional[int] = None) -> bytes:
    """The whole content of a regular file within its kind's size limit (see open_checked)."""
    limit = SIZE_LIMITS.get(kind, SIZE_LIMITS["text file"]) if limit is None else limit
    chunks: list[bytes] = []
    total = 0
    with open_checked(path, kind, limit) as handle:
        while total <= limit:
            chunk = handle.read(min(1 << 24, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:  # grew while we read
        raise RefusedFile(path, f"grew beyond the {_size(limit)} limit of a {kind} while being read; refused")
    return data


def read_text_checked(path: Path, kind: str, limit: Optional[int] = None) -> str:
    """read_checked decoded as UTF-8, undecodable bytes replaced (side files are informative text)."""
    return read_checked(path, kind, limit).decode("utf-8", errors="replace")


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


def display_name(name: object) -> str:
    """A file name as it can be printed on one line: quoted (Python escapes)
    when it holds control characters, a newline or undecodable bytes."""
    text = str(name)
    if text.isprintable() and not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return text
    return repr(text)


def one_line(text: str) -> str:
    """A message made safe to print as one line: control characters and lone
    surrogates escaped, nothing else changed."""
    if text.isprintable() and not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return text
    out = []
    for c in text:
        if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF:
            out.append(c)
        else:
            out.append(repr(c)[1:-1])
    return "".join(out)


RESULTS_NAME = "results.json"
# `kind` of the results.json that indexes the phases of a multi-phase run (sskj_results.runset)
RUN_SET_KIND = "run-set"
PathLike = Union[str, "os.PathLike[str]"]


def results_path(path: PathLike) -> Path:
    """The results.json for a run directory, or the path itself when it is a file."""
    p = Path(path)
    return p / RESULTS_NAME if p.is_dir() else p




def read_json_text(path: Path) -> Any:
    """Parse a JSON file, raising ResultsError with line/column on bad syntax.

    Bounded: special files and files above the results.json size limit are
    refused unread; nesting deeper than MAX_DEPTH, integers outside 64 bits
    and numbers that overflow a float are refused with their JSON path.
    """
    name = display_name(path)
    try:
        raw = read_checked(path, "results.json")
    except FileNotFoundError:
        raise ResultsError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ResultsError(f"{name}: is a directory, expected a results.json") from None
    except OSError as exc:
        raise ResultsError(f"{name}: cannot read: {describe_os_error(exc)}") from None
    # orjson first (2.5x the speed of json at 134 MB). It refuses everything json refuses here (bad UTF-8, a
    # BOM, NaN, overflowing numbers, lone surrogates, deep nesting) and more; anything it refuses is read again
    # by json below, whose result or message stands. One difference needs the tree: an integer outside
    # -2**63..2**64 comes back from orjson as a float, so a float that large sends the file to json too.
    try:
        fast = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        problem = _check_tree(fast, MAX_DEPTH, float(INT64))
        if problem is None:
            return fast
        if problem is not _WIDE_FLOAT:
            raise ResultsError(f"{name}: {problem}")
        del fast
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{name}: not UTF-8 text (byte {exc.start}); is this a results.json?") from None
    if not text.strip():
        raise ResultsError(f"{name}: empty file; expected a results.json object")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{name}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ResultsError(f"{name}: invalid JSON: nested too deeply (a results.json is at most {MAX_DEPTH} levels deep)") from None
    except ValueError as exc:
        raise ResultsError(f"{name}: invalid JSON: {one_line(str(exc))[:200]}") from None
    problem = check_json_tree(data, MAX_DEPTH)
    if problem is not None:
        raise ResultsError(f"{name}: {problem}")
    return data




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


# A run loaded only to look at it (parse's check for a damaged results.json, before parse loads it) is handed on
# to the next load of the same file in this process, if the file is unchanged (device, inode, size, modification
# and status-change times, taken before it was read): read and validated once, not twice. One run at a time, taken
# by the first load that asks (the object is never shared).
_handed_on: dict[str, tuple[tuple[int, ...], Results]] = {}


def _stamp(file: Path) -> Optional[tuple[int, ...]]:
    try:
        st = os.stat(file)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def load_run(path: PathLike, *, hand_on: bool = False) -> Results:
    """Load a run directory or a results.json into a typed Results.

    Raises ResultsError naming the file and the JSON path of the first problem
    (`sskj-results validate` lists them all). `hand_on`: the caller only looks
    at the run; the next load of the unchanged file takes this one.
    """
    file = results_path(path)
    key = os.path.abspath(file)
    stamp = _stamp(file)
    handed = _handed_on.pop(key, None)
    if handed is not None and stamp is not None and handed[0] == stamp:
        results = handed[1]
    else:
        results = _load_run(file)
    if hand_on and stamp is not None:
        _handed_on.clear()
        _handed_on[key] = (stamp, results)
    return results


def _load_run(file: Path) -> Results:
    from pydantic import ValidationError

    from .models import Results

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
    floats in their shortest round-trip form). Nothing is written that
    load_run could not read back: NaN and infinities, integers outside 64
    bits and anything the model would reject raise ResultsError first. A
    string holding a lone surrogate (undecodable bytes of a file name, a
    ``\\udXXX`` escape in a raw file) is written as a JSON escape, so the file
    stays valid UTF-8 and reads back to the same string.
    """
    from pydantic import ValidationError

    from .models import Results, dump_dict

    data = dump_dict(results)
    checked = _unchanged_requests(results, data)
    _require_readable(_without_requests(data, checked), "results")
    try:
        Results.model_validate(_without_requests(data, checked))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ResultsError(f"{format_loc(err['loc'])}: {one_line(model_message(err))}; not written") from None
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:  # a lone surrogate in a string: escape it
        text = json.dumps(data, ensure_ascii=True, indent=2, allow_nan=False)
        return (text + "\n").encode("ascii")


def _require_readable(data: Any, what: str) -> None:
    problem = check_json_tree(data, MAX_DEPTH)
    if problem is not None:
        raise ResultsError(f"{what}: {problem}; not written")


# Per-request records known to be writable (they passed RawRequest's validation and the JSON tree check), by their
# first request object (id; a weak reference to it) and as dumped: check_writable does not check again the records
# the import built validated, nor the write those check_writable checked. They are most of a run's bytes
# (docs/PERFORMANCE.md). Equality of the dump decides, never the objects: a record changed since is checked again.
_known_requests: dict[int, tuple[weakref.ref[Any], list[Any]]] = {}


def _forget_requests(key: int) -> Any:
    return lambda _ref: _known_requests.pop(key, None)


def _remember_requests(requests: list[Any], dumped: list[Any]) -> None:
    if requests:
        key = id(requests[0])
        _known_requests[key] = (weakref.ref(requests[0], _forget_requests(key)), dumped)


def _known(requests: list[Any], dumped: Any) -> bool:
    """The records dumped as `dumped` are requests known to be writable."""
    entry = _known_requests.get(id(requests[0])) if requests else None
    return entry is not None and entry[0]() is requests[0] and entry[1] == dumped


@functools.lru_cache(maxsize=1)
def _requests_adapter() -> Any:
    from pydantic import TypeAdapter

    from .models import RawRequest

    return TypeAdapter(list[RawRequest])


def validated_requests(records: list[dict[str, Any]]) -> Optional[list[RawRequest]]:
    """RawRequests validated from their records (dicts as results.json holds them) in one call, remembered as
    writable; None when one of them is not (the caller builds them as they are, and check_writable names it)."""
    from pydantic import ValidationError

    if check_json_tree(records, MAX_DEPTH - 4) is not None:
        return None
    try:
        requests: list[RawRequest] = _requests_adapter().validate_python(records)
    except ValidationError:
        return None
    _remember_requests(requests, records)
    return requests


def _unchanged_requests(results: Results, data: dict[str, Any]) -> set[int]:
    """Indexes of the scenarios whose raw_requests, as dumped in data, are known to be writable."""
    return {i for i, (scenario, dumped) in enumerate(zip(results.scenarios, data.get("scenarios", ())))
            if _known(scenario.raw_requests, dumped.get("raw_requests"))}


def _without_requests(data: dict[str, Any], indexes: set[int]) -> dict[str, Any]:
    """data with the raw_requests of those scenarios empty (a shallow copy; data itself is unchanged)."""
    if not indexes:
        return data
    scenarios = [{**s, "raw_requests": []} if i in indexes else s for i, s in enumerate(data["scenarios"])]
    return {**data, "scenarios": scenarios}


def check_writable(scenario: Scenario) -> None:
    """Raise ResultsError (`json path: why`) when the scenario could not be
    written to results.json and read back (e.g. an input_lens value beyond
    2^63, a value the model rejects)."""
    from pydantic import ValidationError

    from .models import Scenario

    data = scenario.model_dump(mode="json")
    requests: list[Any] = data["raw_requests"]
    known = _known(scenario.raw_requests, requests)
    checked = {**data, "raw_requests": []} if known else data
    problem = check_json_tree(checked, MAX_DEPTH - 2)
    if problem is not None:
        raise ResultsError(f"cannot be recorded: {problem}")
    try:
        Scenario.model_validate(checked)
    except ValidationError as exc:
        err = exc.errors()[0]
        value = err.get("input")
        shown = f" (got {_short_value(value)})" if not isinstance(value, (dict, list)) else ""
        raise ResultsError(f"cannot be recorded: {format_loc(err['loc'])}: {one_line(model_message(err))}{shown}") from None
    if not known:
        _remember_requests(scenario.raw_requests, requests)


def _short_value(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        return f"an integer of {value.bit_length()} bits"
    text = one_line(repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


def _umask() -> int:
    """The process umask, read without changing it where Linux shows it."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(file: Path, data: bytes) -> None:
    """Write data to file via a temporary file in the same directory and a rename.

    The file gets the permissions of a newly created file under the umask
    (0644 under umask 022), not the 0600 of the temporary file. An OSError
    names the target file (never the temporary one) and its real cause.
    """
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        # named after its writer (pid and host): the next writer removes it if this one is killed
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(file.name), suffix=".tmp", dir=file.parent)
    except OSError as exc:
        raise OSError(exc.errno, describe_os_error(exc), str(file)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, file)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise OSError(exc.errno, describe_os_error(exc), str(file)) from None
        raise


def atomic_write_text(file: Path, text: str) -> None:
    """atomic_write_bytes of UTF-8 text; a lone surrogate is written as its escape (``\\udcff``)."""
    atomic_write_bytes(file, text.encode("utf-8", errors="backslashreplace"))


def run_lock(file: Path) -> Any:
    """The advisory lock of the directory holding a results.json: held by every read-modify-write
    of it (contract.locking)."""
    return locked(file.parent)


def save_run(results: Results, path: PathLike, *, lock: bool = True) -> Path:
    """Write results.json atomically (temp file + rename); returns the file written.

    Validated first: what cannot be read back raises ResultsError naming
    the file and the JSON path, and nothing is written. Written holding the
    run's lock (``lock=False``: the caller writes a directory nobody else
    knows yet); temporaries of killed writers beside it are removed.
    """
    p = Path(path)
    file = p / RESULTS_NAME if (p.is_dir() or not p.suffix) else p
    try:
        data = to_json_bytes(results)
    except ResultsError as exc:
        raise ResultsError(f"{display_name(file)}: {exc}") from None
    if not lock:
        atomic_write_bytes(file, data)
        return file
    with run_lock(file):
        clean_stale(file.parent, file.name)
        atomic_write_bytes(file, data)
    return file

