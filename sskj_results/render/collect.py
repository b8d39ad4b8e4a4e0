"""`sskj-results collect`: the runs table written to Parquet or CSV, with a re-collect cache.

The table is `runtable`'s (one row per scenario per run). Beside the output
file a small cache (``.<out name>.cache.parquet``) keeps each run's rows
with the size and modification time of its results.json: collecting an
unchanged tree again reads only the cache and stats the files (the quick
check of make and rsync); a changed, new or removed results.json is read
again, added or dropped. The cache is tied to the table's columns and this
package's version, and is ignored (rebuilt) when either differs or when it
cannot be read. Invalid runs are skipped, listed, and read again next time.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from .. import __version__
from ..contract.errors import ConfigError, ResultsError, UsageError
from ..contract.escape import csv_text
from ..contract.io import atomic_write_bytes
from ..analysis.runtable import (
    COLUMNS, Dropped, Skipped, TableBuilder, drop_doubles, find_results_files, paused_gc, read_run,
)

if TYPE_CHECKING:
    import pandas as pd

PathLike = Union[str, "os.PathLike[str]"]
FORMATS = {".parquet": "parquet", ".csv": "csv"}
# Cache-only columns: the results.json's resolved path, size and mtime when its rows were read.
KEY_FILE, KEY_SIZE, KEY_MTIME = "_cache_file", "_cache_size", "_cache_mtime_ns"
FINGERPRINT_KEY = b"sskj_collect_fingerprint"


def fingerprint() -> str:
    """Identifies the table layout and the code that filled it: a cache with another one is not used."""
    spec = "|".join(f"{c.name}:{c.dtype}:{c.path}" for c in COLUMNS)
    return hashlib.sha256(f"{__version__}|{spec}".encode()).hexdigest()[:16]


def cache_path(out: Path) -> Path:
    return out.with_name(f".{out.name}.cache.parquet")


def output_format(out: Path) -> str:
    fmt = FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise UsageError(f"--out {out}: give a file name ending in .parquet (pandas, pyarrow) or .csv (spreadsheets)")
    return fmt


@dataclass(frozen=True)
class CollectOutput:
    """What collect wrote and what it read."""

    out: Path
    rows: int
    runs: int
    read: int  # results.json files read (the others came from the cache)
    skipped: list[Skipped]
    frame: pd.DataFrame
    dropped: list[Dropped] = field(default_factory=list)
    written: int = 0  # runs with a row in the table (a run all of whose rows were doubles, or with none, has none)


def _stat(file: Path) -> tuple[str, int, int]:
    st = file.stat()
    return os.path.realpath(file), st.st_size, st.st_mtime_ns


def _read_cache(path: Path) -> Optional[pd.DataFrame]:
    """The cached rows, or None when there is no usable cache (it is then rebuilt, never trusted blindly)."""
    if not path.is_file():
        return None
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception:  # any unreadable cache is just rebuilt  # noqa: BLE001
        return None
    meta = table.schema.metadata or {}
    if meta.get(FINGERPRINT_KEY, b"").decode("ascii", "replace") != fingerprint():
        return None
    expected = [c.name for c in COLUMNS] + [KEY_FILE, KEY_SIZE, KEY_MTIME]
    if table.column_names != expected:
        return None
    frame: pd.DataFrame = table.to_pandas()
    return frame.astype({c.name: c.dtype for c in COLUMNS} | {KEY_FILE: "string", KEY_SIZE: "int64",
                                                              KEY_MTIME: "int64"})


def _parquet_bytes(frame: pd.DataFrame, metadata: Optional[dict[bytes, bytes]] = None) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if metadata:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def table_bytes(frame: pd.DataFrame, fmt: str) -> bytes:
    """The bytes of the output file: Parquet (dtypes kept) or CSV (UTF-8, empty cells for nulls).

    The CSV follows RFC 4180: CRLF line ends, and every field holding a line break (\r or \n),
    a comma or a quote is quoted, so each row reads back as one record. Text cells that a
    spreadsheet would run as a formula (= + - @ TAB CR first) start with a single quote
    (contract.escape.csv_text); number columns are written as they are.
    """
    if fmt == "parquet":
        return _parquet_bytes(frame)
    safe = frame.copy()
    for name in safe.columns:
        if safe[name].dtype == object or str(safe[name].dtype) in ("string", "str"):
            safe[name] = safe[name].map(lambda v: csv_text(v) if isinstance(v, str) else v)
    return safe.to_csv(index=False, lineterminator="\r\n", quoting=csv.QUOTE_MINIMAL).encode("utf-8")


def collect(paths: Sequence[PathLike], out: PathLike, use_cache: bool = True) -> CollectOutput:
    """Write the runs table of every results.json under the paths to out (.parquet or .csv).

    Invalid runs are skipped and returned in `skipped`; nothing is written
    when no run could be read.
    """
    import pandas as pd

    out_path = Path(out)
    fmt = output_format(out_path)
    files = find_results_files(paths)
    stats = [_stat(f) for f in files]
    cache_file = cache_path(out_path)
    cached = _read_cache(cache_file) if use_cache else None
    reuse: dict[tuple[str, int, int], list[int]] = {}  # (file, size, mtime) -> its rows in the cache
    if cached is not None:
        keys = zip(cached[KEY_FILE].tolist(), cached[KEY_SIZE].tolist(), cached[KEY_MTIME].tolist())
        for i, key in enumerate(keys):
            reuse.setdefault(key, []).append(i)

    builder = TableBuilder()
    keys_of_new: list[tuple[str, int, int]] = []
    skipped: list[Skipped] = []
    pieces: list[tuple[int, str, Any]] = []  # (file index, "cache"|"new", row positions or (start, stop))
    read = 0
    with paused_gc():
        for index, (file, key) in enumerate(zip(files, stats)):
            rows = reuse.get(key)
            if rows is not None:
                pieces.append((index, "cache", rows))
                continue
            read += 1
            try:
                results = read_run(file)
            except ResultsError as exc:
                skipped.append(Skipped(str(file), str(exc)))
                continue
            start = builder.rows
            added = builder.add(file, results)
            keys_of_new.extend([key] * added)
            pieces.append((index, "new", (start, start + added)))
    new = builder.frame().assign(**{
        KEY_FILE: pd.array([k[0] for k in keys_of_new], dtype="string"),
        KEY_SIZE: pd.array([k[1] for k in keys_of_new], dtype="int64"),
        KEY_MTIME: pd.array([k[2] for k in keys_of_new], dtype="int64"),
    })
    # Rows in the order of the files: cached rows by their position in the cache, new ones after them.
    offset = len(cached) if cached is not None else 0
    order: list[int] = []
    for _, kind, rows in pieces:
        order.extend(rows if kind == "cache" else range(offset + rows[0], offset + rows[1]))
    combined = pd.concat([cached, new], ignore_index=True) if cached is not None and len(cached) else new
    full = combined.iloc[order].reset_index(drop=True)
    # The file columns as spelled by this call (the cache may have seen other spellings of the same files).
    spelled = [str(files[index]) for index, kind, rows in pieces
               for _ in range(len(rows) if kind == "cache" else rows[1] - rows[0])]
    full["results_file"] = pd.array(spelled, dtype="string")
    full["run_dir"] = pd.array([str(Path(f).parent) for f in spelled], dtype="string")
    frame, dropped = drop_doubles(full[[c.name for c in COLUMNS]])
    if not files or len(skipped) == len(files):
        raise ResultsError(f"no valid run to collect ({len(skipped)} invalid): "
                           + (skipped[0].reason if skipped else "no results.json found"))
    try:
        atomic_write_bytes(out_path, table_bytes(frame, fmt))
        if use_cache:
            atomic_write_bytes(cache_file, _parquet_bytes(full, {FINGERPRINT_KEY: fingerprint().encode("ascii")}))
    except OSError as exc:
        raise ConfigError(f"{exc.filename or out_path}: cannot write: {exc.strerror}; choose another --out") from None
    runs = len({p[0] for p in pieces})
    return CollectOutput(out=out_path, rows=len(frame), runs=runs, read=read, skipped=skipped, frame=frame,
                         dropped=dropped, written=int(frame["results_file"].nunique()) if len(frame) else 0)

