"""Many runs as one table: one row per scenario per run, every statistic a flat column.

`load_runs(paths)` finds the results.json files under the given paths (run
directories, multi-phase run directories, results.json files, or any
directory, searched recursively), validates each against the contract and
returns a pandas DataFrame. The columns are derived from the models
(`models.py`): a field added there becomes a column here without a change,
named by the rules below, with a pandas nullable dtype. docs/RUNS_TABLE.md
lists them; `tests/test_runtable.py` pins names and dtypes.

Naming rules (``COLUMNS`` is the result):

* run identity first: ``run_dir`` (directory of the results.json, as found)
  and ``results_file``;
* ``metadata.*`` and the typed ``config.*`` fields under their own names
  (``experiment``, ``run_id``, ``chip``, ``engine``, ``tp``, ``spec_method``…);
  the run's SLO as ``slo_tier``, ``slo_ttft_p95_ms``, ``slo_tpot_mean_ms``;
* per scenario: ``scenario`` (its name), its scalar fields under their own
  names (``concurrency``, ``request_rate``, ``input_len``…), latency
  statistics as ``<metric>_<statistic>`` (``ttft_ms_p95``, ``tpot_ms_mean``),
  the SLO verdict as ``slo_ttft_p95_ok``, ``slo_tpot_mean_ok``, ``slo_mark``,
  nested objects flattened with their prefix (``source_file``,
  ``accelerator_util_mean_pct``, ``validity_ok``), a field named like a
  run-level column prefixed ``scenario_`` (``scenario_timestamp``), lists of text joined
  with ``"; "`` (``notes``), mappings as ``key=value; …`` (``reconstructed``),
  lists of checks as the names of the failing ones (``validity_failed``).

Per-request lists (``raw_requests``) are not part of the table and are not
validated here (``sskj-results validate`` checks them); every other value is
validated by the models before it becomes a cell. Maths-free: no statistic
is computed, every cell is a value of a results.json.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import operator
import os
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Optional, Sequence, Union, get_args, get_origin

import orjson
from pydantic import BaseModel, ValidationError

from ..contract.errors import ResultsError
from ..contract.io import RESULTS_NAME, first_model_error, read_checked, read_json_text
from ..contract.models import Config, Metadata, Results, Scenario, SloSpec
from ..contract.runset import is_index_file, load_run_set, phase_paths

if TYPE_CHECKING:
    import pandas as pd

PathLike = Union[str, "os.PathLike[str]"]

# Directories of a run that never hold a run's results.json (searched recursively otherwise).
PRUNE_DIRS = frozenset({"raw_outputs", "logs", "gpu_logs", "server_metrics", "plots", "node_modules", "__pycache__"})
# Scenario fields that are not columns: per-request data (use load_run for it).
SCENARIO_SKIP = frozenset({"raw_requests"})
# Nested fields that are not columns either: a list per scenario, free JSON and the client's values of what a
# scenario did not measure (provenance, never a measurement; use load_run for them).
NESTED_SKIP = frozenset({"scenarios[].acceptance.per_position", "scenarios[].client_extras.steady_state",
                         "scenarios[].unmeasured"})
# Prefixes of nested scenario objects ("" drops the prefix: latencies.ttft_ms.p95 -> ttft_ms_p95).
PREFIX = {"latencies": "", "slo_status": "slo_", "accelerator_usage": "accelerator_"}
# Columns named otherwise than by the rules, by JSON path.
RENAME = {"scenarios[].name": "scenario", "scenarios[].slo_status.overall": "slo_mark"}
JOIN = "; "

Getter = Callable[[Any], Any]


@dataclass(frozen=True)
class Column:
    """One column of the runs table."""

    name: str
    dtype: str  # pandas dtype: "string", "Int64", "Float64", "boolean"
    path: str  # where the value is in results.json
    description: str
    level: Literal["run", "scenario"]
    get: Getter = field(repr=False, compare=False)


# --------------------------------------------------------------------------- columns from the models


def _unwrap(annotation: Any) -> Any:
    """Optional[X] -> X (and Annotated[X, ...] -> X)."""
    while True:
        origin = get_origin(annotation)
        if origin is Union or origin is types.UnionType:
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        elif hasattr(annotation, "__metadata__"):  # Annotated
            annotation = get_args(annotation)[0]
        else:
            return annotation


def _scalar_dtype(annotation: Any) -> Optional[str]:
    a = _unwrap(annotation)
    if a is bool:
        return "boolean"
    if a is int:
        return "Int64"
    if a is float:
        return "Float64"
    if a is str:
        return "string"
    if get_origin(a) is Literal and all(isinstance(v, str) for v in get_args(a)):
        return "string"
    return None


def _join_texts(values: Optional[Sequence[str]]) -> Optional[str]:
    return JOIN.join(values) if values else None


def _join_numbers(values: Optional[Sequence[int]]) -> Optional[str]:
    return JOIN.join(map(str, values)) if values else None


def _join_mapping(values: Optional[dict[str, Any]]) -> Optional[str]:
    return JOIN.join(f"{k}={v}" for k, v in values.items()) if values else None


def _failed_names(items: Optional[Sequence[Any]]) -> Optional[str]:
    if items is None:
        return None
    return JOIN.join(str(getattr(i, "name", None) or getattr(i, "check", None) or "?")
                     for i in items if getattr(i, "ok", True) is False)


def _getter(attrs: tuple[str, ...], nullable: bool) -> Getter:
    """The value at attrs (dotted attribute path); None when an optional object on the way is None."""
    if not nullable:
        return operator.attrgetter(".".join(attrs))  # one C-level lookup

    def get(obj: Any) -> Any:
        for attr in attrs:
            if obj is None:
                return None
            obj = getattr(obj, attr)
        return obj

    return get


def _then(get: Getter, convert: Callable[[Any], Any]) -> Getter:
    def both(obj: Any) -> Any:
        return convert(get(obj))

    return both


def _may_be_none(annotation: Any) -> bool:
    origin = get_origin(annotation)
    return (origin is Union or origin is types.UnionType) and type(None) in get_args(annotation)


def _model_columns(model: type[BaseModel], level: Literal["run", "scenario"], path: str, prefix: str,
                   attrs: tuple[str, ...], nullable: bool, skip: frozenset[str] = frozenset(),
                   unplaced: Optional[list[str]] = None) -> list[Column]:
    """Columns of a model's fields, nested models flattened; fields of no known shape go to `unplaced`."""
    columns: list[Column] = []
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        get = _getter(attrs + (name,), nullable)
        where = f"{path}.{name}" if path else name
        if where in NESTED_SKIP:
            continue
        col = RENAME.get(where, prefix + name)
        desc = info.description or ""
        ann = _unwrap(info.annotation)
        dtype = _scalar_dtype(ann)
        origin = get_origin(ann)
        args = get_args(ann)
        if dtype is not None:
            columns.append(Column(col, dtype, where, desc, level, get))
        elif isinstance(ann, type) and issubclass(ann, BaseModel):
            sub = PREFIX.get(name, f"{name}_") if not prefix else f"{prefix}{name}_"
            columns += _model_columns(ann, level, where, sub, attrs + (name,),
                                      nullable or _may_be_none(info.annotation), unplaced=unplaced)
        elif origin is list and args and _scalar_dtype(args[0]) in ("string", "Int64"):
            columns.append(Column(col, "string", where, desc + f" (joined with `{JOIN}`)", level,
                                  _then(get, _join_texts if _scalar_dtype(args[0]) == "string" else _join_numbers)))
        elif origin is dict and args and _scalar_dtype(args[1]) is not None:
            columns.append(Column(col, "string", where, desc + f" (as `key=value{JOIN}…`)", level,
                                  _then(get, _join_mapping)))
        elif (origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel)
              and "ok" in args[0].model_fields):
            columns.append(Column(RENAME.get(where, f"{prefix}failed"), "string", where,
                                  f"Names of the failing entries of `{where}` (joined with `{JOIN}`); "
                                  "empty when none failed.", level, _then(get, _failed_names)))
        elif unplaced is not None:
            unplaced.append(where)
    return columns


def _build_columns() -> tuple[list[Column], list[str]]:
    unplaced: list[str] = []
    identity = [
        Column("run_dir", "string", "(file system)", "Directory of the results.json, as found from the paths given.",
               "run", lambda f: None),
        Column("results_file", "string", "(file system)", "The results.json the row was read from.", "run",
               lambda f: None),
    ]
    run_cols = (
        _model_columns(Metadata, "run", "metadata", "", ("metadata",), False, unplaced=unplaced)
        + _model_columns(Config, "run", "config", "", ("config",), False, unplaced=unplaced)
        + _model_columns(SloSpec, "run", "slo", "slo_", ("slo",), True, unplaced=unplaced)
    )
    scenario_cols = _model_columns(Scenario, "scenario", "scenarios[]", "", (), False, SCENARIO_SKIP, unplaced)
    # A scenario field named like a run-level one (e.g. its own `timestamp`) is `scenario_<name>`.
    taken = {c.name for c in identity + run_cols}
    scenario_cols = [dataclasses.replace(c, name=f"scenario_{c.name}") if c.name in taken else c
                     for c in scenario_cols]
    columns = identity + run_cols + scenario_cols
    names = [c.name for c in columns]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise RuntimeError(f"runs table: duplicate column names {dups}; extend PREFIX/RENAME in runtable.py")
    return columns, unplaced


COLUMNS, UNPLACED_FIELDS = _build_columns()
DTYPES: dict[str, str] = {c.name: c.dtype for c in COLUMNS}
_RUN_COLUMNS = [c for c in COLUMNS if c.level == "run" and c.name not in ("run_dir", "results_file")]
_SCENARIO_COLUMNS = [c for c in COLUMNS if c.level == "scenario"]


# --------------------------------------------------------------------------- finding and reading runs


def _first_visit(directory: str, walked: set[str]) -> bool:
    """True the first time a directory (by its real path) is reached: a link cycle is walked once."""
    real = os.path.realpath(directory)
    if real in walked:
        return False
    walked.add(real)
    return True


def find_results_files(paths: Iterable[PathLike]) -> list[Path]:
    """Every results.json under the paths, in a stable order, each once.

    A file is taken as it is (any name), a run-set index as its phases' files; a directory is searched recursively
    for files named results.json (symbolic links to directories followed, each directory once: a link
    cycle ends), skipping hidden directories and a run's own
    raw_outputs/, logs/, gpu_logs/, server_metrics/ and plots/; a multi-phase run's index is left out
    (its phases are found below it).
    """
    found: list[Path] = []
    seen: set[str] = set()
    for given in paths:
        p = Path(given)
        if p.is_file():
            run_set = load_run_set(p)  # a run-set index stands for its phases
            candidates = [d / RESULTS_NAME for d in phase_paths(p, run_set)] if run_set is not None else [p]
        elif p.is_dir():
            candidates = []
            walked = {os.path.realpath(p)}  # symbolic links to run directories are followed, each directory once
            for root, dirs, files in os.walk(p, followlinks=True):
                dirs[:] = [d for d in sorted(dirs) if not d.startswith(".") and d not in PRUNE_DIRS
                           and _first_visit(os.path.join(root, d), walked)]
                if RESULTS_NAME in files and not is_index_file(Path(root) / RESULTS_NAME):  # phases are below it
                    candidates.append(Path(root) / RESULTS_NAME)
            if not candidates:
                raise ResultsError(f"{p}: no {RESULTS_NAME} here or below; give run directories or results.json files")
        else:
            raise ResultsError(f"{p}: no such file or directory")
        for c in candidates:
            key = os.path.realpath(c)
            if key not in seen:
                seen.add(key)
                found.append(c)
    return found


def _parse(file: Path) -> Any:
    """The parsed JSON of a results.json (orjson; on any problem io.read_json_text raises its one-line error)."""
    try:
        raw = read_checked(file, "results.json")  # a FIFO, device or oversized file is refused, never read
        return orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return read_json_text(file)  # raises ResultsError naming the file, line and column


def _validated(file: Path, data: Any) -> Results:
    """Results from parsed JSON, per-request lists left out (they are not part of the table).

    `data` is consumed: its scenarios lose their raw_requests.
    """
    if isinstance(data, dict) and isinstance(data.get("scenarios"), list):
        for s in data["scenarios"]:
            if isinstance(s, dict):
                s.pop("raw_requests", None)
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        extra = len(exc.errors()) - 1
        more = f" (and {extra} more; run `sskj-results validate {file}`)" if extra else ""
        raise ResultsError(first_model_error(file, exc) + more) from None


def read_run(file: Path) -> Results:
    """One results.json, validated (per-request lists excepted); ResultsError names the file and the JSON path."""
    return _validated(file, _parse(file))


# --------------------------------------------------------------------------- building the table


@dataclass
class TableBuilder:
    """Accumulates the columns of many runs; `frame()` turns them into a DataFrame."""

    data: dict[str, list[Any]] = field(default_factory=lambda: {c.name: [] for c in COLUMNS})
    rows: int = 0

    def add(self, file: Path, results: Results) -> int:
        """Append one row per scenario of a run; returns the number of rows added."""
        n = len(results.scenarios)
        if not n:
            return 0
        data = self.data
        data["run_dir"].extend([str(file.parent)] * n)
        data["results_file"].extend([str(file)] * n)
        for col in _RUN_COLUMNS:
            data[col.name].extend([col.get(results)] * n)
        scenarios = results.scenarios
        for col in _SCENARIO_COLUMNS:
            data[col.name].extend(map(col.get, scenarios))
        self.rows += n
        return n

    def frame(self) -> pd.DataFrame:
        return to_frame(self.data)


def to_frame(data: dict[str, list[Any]]) -> pd.DataFrame:
    """A DataFrame with the documented columns and dtypes, in the documented order."""
    import pandas as pd

    return pd.DataFrame({c.name: pd.array(data[c.name], dtype=c.dtype) for c in COLUMNS})


def empty_frame() -> pd.DataFrame:
    return to_frame({c.name: [] for c in COLUMNS})


@dataclass(frozen=True)
class Skipped:
    """A results.json left out of the table, and why."""

    file: str
    reason: str


@dataclass(frozen=True)
class RunsTable:
    """The table, the runs that could not be read, and the doubles left out (drop_doubles)."""

    frame: pd.DataFrame
    files: list[Path]
    skipped: list[Skipped]
    dropped: list[Dropped] = field(default_factory=list)


@dataclass(frozen=True)
class Dropped:
    """Rows of a run left out because another run holds the same raw runs (same raw file sha256 and line)."""

    run_dir: str
    rows: int
    kept_in: str

    def line(self) -> str:
        return (f"{self.run_dir}: {self.rows} scenario(s) left out, the same raw runs (raw file sha256 and line) "
                f"as in {self.kept_in}")


# Values a raw line gives every import of it alike (the chip, model or platform may differ between imports).
MEASURED = ("duration_s", "request_throughput", "output_token_throughput")


# Run-level columns that record the import itself, not the run: left out when counting what a record knows.
_BOOKKEEPING = ("imported_at", "imported_from", "tool_version")


def drop_doubles(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[Dropped]]:
    """One row per raw run: rows of two run directories with the same raw file (name and sha256), the same
    line (and position in it) and the same measured duration and throughputs are the same measurement
    recorded twice (an earlier `unknown_*` import beside a `--platform` one, a run loop's own run beside a
    later import of its raw_outputs/). Kept, in this order: the row of a run with a known chip; then the
    run's own record (written by the run loop or `parse`, no `imported_at`) over an `import-legacy` one;
    then the record that knows more run facts (metadata and config values); then the latest import; then
    the first found (docs/RUNS_TABLE.md)."""
    known = frame["source_sha256"].notna().to_numpy()
    if not known.any():
        return frame, []
    cols = {c: frame[c].tolist() for c in ("source_sha256", "source_file", "source_line", "source_index", "chip",
                                            "imported_at", "run_dir") + MEASURED}
    # how many run facts (metadata and config values) each row's run records, counted once for all rows
    facts_of = frame[[c.name for c in _RUN_COLUMNS if c.name not in _BOOKKEEPING]].notna().sum(axis=1).tolist()

    def missing(value: Any) -> bool:
        return value is None or value is pd_na()

    def row_key(i: int) -> tuple[Any, ...]:
        return (cols["source_sha256"][i], os.path.basename(str(cols["source_file"][i])), cols["source_line"][i],
                *(None if missing(cols[c][i]) else cols[c][i] for c in ("source_index",) + MEASURED))

    def rank(i: int) -> tuple[bool, bool, int, str]:
        """Smaller is kept, but for the import time: later is kept."""
        chip, when = cols["chip"][i], cols["imported_at"][i]
        facts = int(facts_of[i])
        return (missing(chip) or chip == "unknown", not missing(when), -facts, "" if missing(when) else str(when))

    best: dict[tuple[Any, ...], int] = {}
    for i in (int(i) for i in known.nonzero()[0]):
        key = row_key(i)
        j = best.get(key)
        if j is None:
            best[key] = i
            continue
        if cols["run_dir"][i] == cols["run_dir"][j]:
            continue  # one run directory's own rows are never doubles of each other
        (*first_i, when_i), (*first_j, when_j) = rank(i), rank(j)
        if (first_i, when_j) < (first_j, when_i):  # i ranks first, or ties and is the later import
            best[key] = i
    keep = [True] * len(frame)
    counts: dict[tuple[str, str], int] = {}
    for i in (int(i) for i in known.nonzero()[0]):
        key = row_key(i)
        j = best[key]
        if j != i and cols["run_dir"][i] != cols["run_dir"][j]:
            keep[i] = False
            pair = (str(cols["run_dir"][i]), str(cols["run_dir"][j]))
            counts[pair] = counts.get(pair, 0) + 1
    if all(keep):
        return frame, []
    dropped = [Dropped(run, n, kept) for (run, kept), n in sorted(counts.items())]
    return frame.loc[keep].reset_index(drop=True), dropped


def pd_na() -> Any:
    import pandas as pd

    return pd.NA


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Parsing many files allocates millions of acyclic objects: the cyclic collector would only rescan them."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def collect_table(paths: Iterable[PathLike]) -> RunsTable:
    """Read every results.json under the paths; invalid ones are skipped and listed, not raised."""
    files = find_results_files(paths)
    builder = TableBuilder()
    skipped: list[Skipped] = []
    with paused_gc():
        for file in files:
            try:
                results = read_run(file)
            except ResultsError as exc:
                skipped.append(Skipped(str(file), str(exc)))
                continue
            builder.add(file, results)
    frame, dropped = drop_doubles(builder.frame())
    return RunsTable(frame, files, skipped, dropped)


def load_runs(paths: Union[PathLike, Iterable[PathLike]], skip_invalid: bool = False) -> pd.DataFrame:
    """One row per scenario per run (repeats included) of every results.json under the paths.

    Paths may be run directories, multi-phase run directories
    (results/<RUN_ID>/phaseN_x/), results.json files, or any directory
    (searched recursively). An invalid results.json raises ResultsError
    naming it and the JSON path of the problem, unless ``skip_invalid``
    (then it is left out; ``collect_table`` also says which and why). A raw run imported into two run
    directories (same raw file sha256 and line) is one row (``collect_table`` says which were left out).
    Columns and dtypes: ``COLUMNS`` (docs/RUNS_TABLE.md).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    table = collect_table(paths)
    if table.skipped and not skip_invalid:
        first = table.skipped[0]
        more = f" (and {len(table.skipped) - 1} more invalid run(s))" if len(table.skipped) > 1 else ""
        raise ResultsError(first.reason + more)
    return table.frame


__all__ = ["COLUMNS", "DTYPES", "Column", "Dropped", "RunsTable", "drop_doubles", "Skipped", "TableBuilder", "collect_table", "empty_frame",
           "columns_markdown", "find_results_files", "load_runs", "paused_gc", "read_run", "to_frame"]


def columns_markdown() -> str:
    """The column table of docs/RUNS_TABLE.md (a test keeps the document equal to it)."""
    lines = ["| column | dtype | from results.json | description |", "|---|---|---|---|"]
    for c in COLUMNS:
        desc = " ".join(c.description.split()).replace("|", "\\|")
        lines.append(f"| `{c.name}` | {c.dtype} | `{c.path}` | {desc} |")
    return "\n".join(lines) + "\n"
