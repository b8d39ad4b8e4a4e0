"""One raw run -> one Scenario of results.json (the fidelity rule: the client's own value wins)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
from pydantic import ValidationError

from ..analysis.metrics import (
    derived_values, fixed_slots, good_requests, goodput_rate, per_request, request_itl_means, slo_attainment, summarize,
    window_value,
)
from ..analysis.slo import slo_status
from ..contract.bulk import bulk
from ..contract.errors import ConfigError, RawFormatError, ResultsError
from ..contract.io import describe_os_error, display_name, format_loc, model_message, one_line, validated_requests
from ..contract.redact import redact_text
from ..contract.times import TimePrecision, TimeSource
from ..contract.metrics import LATENCY_NAMES, READ_INPUTS, REQUEST_COLUMNS, SECTION_METRICS, WINDOW_METRICS
from ..contract.figures import window_record
from ..contract.models import Distribution, Latencies, Percentiles, RawRequest, Scenario, SkippedScenario, SloSpec, Source
from .filenames import NameHints, name_hints
from .naming import scenario_name
from .rawio import FileScan, LineError
from .rawtext import span_crc
from .rawkeys import RunError
from .readers import RawRun, ReadOptions, read_run
from .streaming import NOT_STREAMED

RAW_REQUESTS_CAP = 20000
RAW_SUFFIXES = (".jsonl", ".json")
PCT_FIELDS = ("mean", "p50", "p90", "p95", "p99", "std")


_bulk = bulk  # the collector paused (contract/bulk.py)


@dataclass
class Problem:
    """A raw run that was not imported: `file:line: message`."""

    file: str
    line: Optional[int]
    message: str
    index: Optional[int] = None  # the run's position when the file is one JSON array of runs
    column: Optional[int] = None  # of a JSON syntax error: `file:line:column:`

    def __str__(self) -> str:
        name = display_name(self.file)
        where = f"{name}:{self.line}" if self.line else name
        if self.line and self.column:
            where += f":{self.column}"
        message = one_line(self.message)
        if self.index is not None and not message.startswith(f"[{self.index}]"):
            message = f"[{self.index}]: {message}"
        return f"{where}: {message}"


def unexpected(exc: BaseException) -> str:
    """The one-line reason for an exception no reader foresaw (the error boundary of one file or line)."""
    if isinstance(exc, OSError):
        return f"cannot read: {describe_os_error(exc)}"
    if isinstance(exc, RecursionError):
        return "nested too deeply to be read"
    if isinstance(exc, (ResultsError, RawFormatError, ConfigError)):
        return str(exc)
    if isinstance(exc, ValidationError):  # a value results.json cannot hold: its field, never pydantic's summary
        err = exc.errors()[0]
        return (f"{format_loc(err['loc'])}: {model_message(err)}: the run's value cannot be recorded; correct or remove "
                "its key in the raw file, or measure the run again")
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"could not be read ({type(exc).__name__}{': ' + text[:200] if text else ''}); skipped"


@dataclass
class ReadOutcome:
    runs: list[RawRun] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # of the bytes read, from the same pass; None when the file could not be read to its end
    sha256: Optional[str] = None
    size: int = 0
    lines: int = 0


def _at(run: RawRun) -> str:
    """`line N`, or `line N[i]` for the i-th run of a JSON array."""
    return f"line {run.line}" if run.index is None else f"line {run.line}[{run.index}]"


class _Repeats:
    """The runs of one file seen so far, to find one written twice (`cat a >> a`).

    Two measurements never share every top-level value (duration, date, the client's
    means…): those are the key; a run with the key of an earlier one is a repeat when
    its per-request arrays and the client's statistics are equal too."""

    def __init__(self, path: Optional[Path] = None) -> None:
        self._path = path
        self._seen: dict[tuple[Any, ...], list[tuple[RawRun, Optional[tuple[int, int]]]]] = {}

    def _same_bytes(self, a: tuple[int, int], b: tuple[int, int]) -> bool:
        """The two lines' bytes are equal (by CRC-32); False when either cannot be read again."""
        if self._path is None:
            return False
        crc = span_crc(self._path, a)
        return crc is not None and crc == span_crc(self._path, b)

    def first_of(self, data: dict[str, Any], run: RawRun,
                 span: Optional[tuple[int, int]] = None) -> tuple[Optional[RawRun], Optional[RawRun]]:
        """(the earlier run this one repeats, None) or (None, an earlier run of the same measurement whose other
        values differ: one of the two may be a damaged copy, and neither is dropped for the other).
        `span`: where the run's line is in the file, when the run is a line of its own: a copy's bytes are the same
        too (values the import does not read, such as vLLM's `start_times`, count as well); the two lines are
        checksummed only when every value read is equal."""
        key = tuple((k, v) for k, v in data.items() if v is None or isinstance(v, (str, int, float)))
        earlier = self._seen.setdefault(key, [])
        near = None
        for other, other_span in earlier:
            if _same_measurement(other, run):
                if _same_record(other, run) and (span is None or other_span is None or self._same_bytes(span, other_span)):
                    return other, None
                near = near or other
        earlier.append((run, span))
        return None, near


# what a run records besides its measurement (compared by _same_measurement) and its place in the file
_PLACE = {"line", "index", "details", "client", "client_extra", "success", "failed", "duration_s"}


def _same_record(a: RawRun, b: RawRun) -> bool:
    """Everything else read from the two runs is equal too (saved texts, notes, versions, chip, ...)."""
    return all(getattr(a, f.name) == getattr(b, f.name) for f in dataclasses.fields(RawRun) if f.name not in _PLACE)


def _same_measurement(a: RawRun, b: RawRun) -> bool:
    if (a.client, a.client_extra, a.success, a.failed, a.duration_s) != (b.client, b.client_extra, b.success,
                                                                          b.failed, b.duration_s):
        return False
    if a.details is None or b.details is None:
        return a.details is b.details
    x, y = a.details, b.details
    arrays = ("input_lens", "output_lens", "ttfts", "itl_flat", "itl_counts", "success")
    if not all(np.array_equal(getattr(x, k), getattr(y, k), equal_nan=k in ("ttfts", "itl_flat")) for k in arrays):
        return False
    if (x.latencies is None) != (y.latencies is None):
        return False
    return (x.latencies is None or y.latencies is None or np.array_equal(x.latencies, y.latencies, equal_nan=True)) \
        and x.errors == y.errors


def read_raw_file(path: Path, label: str, hints: Optional[NameHints] = None, strict: bool = False,
                  digest: bool = True, options: ReadOptions = ReadOptions()) -> ReadOutcome:
    """Every run of one raw file; bad runs become Problems (or raise with strict).

    The file is read once, one line at a time: each object is normalized into
    a RawRun (compact numpy arrays) before the next line is parsed.
    """
    hints = hints if hints is not None else name_hints(path.stem)
    out = ReadOutcome()
    scan = FileScan(path, digest=digest)
    seen = 0
    repeats = _Repeats(path)
    try:
        for item in scan:
            seen += 1
            if isinstance(item, LineError):
                problem = Problem(label, item.line or None, item.message, item.index, item.column)
            else:
                try:
                    run = read_run(item.data, item.line, hints, options)
                    run.index = item.index
                    first, near = repeats.first_of(item.data, run, item.span)
                    where = _at(run).removeprefix("line ")
                    if first is not None:
                        out.warnings.append(f"{display_name(label)}:{where}: the same run as {_at(first)} (every value "
                                            "equal: written twice, as `cat a >> a` does); counted once, from "
                                            f"{_at(first)}")
                        continue
                    if near is not None:
                        out.warnings.append(f"{display_name(label)}:{where}: the same measurement as {_at(near)} (equal "
                                            "statistics and per-request data) but other values differ: both imported; "
                                            "if one is a damaged copy, remove it")
                    out.runs.append(run)
                    continue
                except RunError as exc:
                    problem = Problem(label, item.line, str(exc), item.index)
                except Exception as exc:  # noqa: BLE001 - the error boundary of one line
                    problem = Problem(label, item.line, unexpected(exc), item.index)
                finally:
                    del item
            if strict:
                raise RawFormatError(f"{problem} (--strict: stopped at the first bad run)")
            out.problems.append(problem)
    except OSError as exc:
        # unreadable: nothing of the file counts, one problem says why
        out = ReadOutcome()
        problem = Problem(label, None, f"cannot read: {describe_os_error(exc)}")
        if strict:
            raise RawFormatError(f"{problem} (--strict: stopped at the first bad run)") from None
        out.problems.append(problem)
        return out
    out.sha256, out.size, out.lines = scan.sha256, scan.size, scan.lines
    if scan.line_end == "CR":  # read, and said: its line numbers count CRs, as an editor's do
        out.warnings.append(f"{display_name(label)}: lines end in CR only (classic Mac OS): read with CR as the line end")
    if scan.encoding is not None:  # PowerShell's `>`: read, and said
        out.warnings.append(f"{display_name(label)}: {scan.encoding} text, not UTF-8: read as {scan.encoding}")
    if not seen:
        problem = Problem(label, None, "empty file: no runs")
        if strict:
            raise RawFormatError(str(problem))
        out.problems.append(problem)
    return out


def _percentiles(client: dict[str, float], computed: dict[str, Optional[float]], path: str,
                 method: str, reconstructed: dict[str, str], extra: Optional[dict[str, float]] = None,
                 measured: bool = True) -> Percentiles:
    values: dict[str, Any] = {}
    for stat in PCT_FIELDS:
        if stat in client:
            values[stat] = client[stat]
        else:
            values[stat] = computed.get(stat)
            if values[stat] is not None:
                reconstructed[f"{path}.{stat}"] = method
    values["p99_9"] = client.get("p99_9")
    values["extra"] = dict(extra or {})
    values["count"] = computed.get("count") if measured else None
    return Percentiles(**values)


def _floats(values: np.ndarray) -> list[Optional[float]]:
    """Python floats, None where not finite."""
    finite = np.isfinite(values)
    return [v if ok else None for v, ok in zip(values.tolist(), finite.tolist())]


def _ms(seconds: np.ndarray) -> list[Optional[float]]:
    """Milliseconds as Python floats, None where the seconds are not finite."""
    seconds = np.asarray(seconds, dtype=np.float64)
    finite = np.isfinite(seconds)
    values = (seconds * 1000).tolist()
    if finite.all():
        return values
    return [v if ok else None for v, ok in zip(values, finite.tolist())]


def build_scenario(run: RawRun, slo: SloSpec, source: Source, name: Optional[str] = None,
                   repeat: Optional[int] = None, cap: int = RAW_REQUESTS_CAP) -> Scenario:
    """One Scenario from one RawRun, judged against slo."""
    reconstructed: dict[str, str] = dict(run.derived)
    for length in run.lengths_averaged:
        reconstructed[length] = "average"
    details = run.details
    empty = summarize(np.zeros(0))
    computed = {k: empty for k in LATENCY_NAMES}
    distributions: dict[str, Any] = {m.name: None for m in SECTION_METRICS + WINDOW_METRICS}
    raw_requests: list[RawRequest] = []
    attainment = goodput = None
    e2e_method = "per_request"
    timed = run.streaming is not False  # without streaming, TTFT, TPOT and ITL are not measured (streaming.py)
    unmeasured = () if timed else NOT_STREAMED
    if details is not None:
        # successes with 0 output tokens are counted, but no statistic of ours is computed over them
        stats_ok = details.success & (details.output_lens > 0)
        per, e2e_all, tpot_all = per_request(
            details.ttfts, details.output_lens, details.itl_flat, details.itl_counts,
            stats_ok, details.latencies,
        )
        if not per.e2e_from_latencies:
            e2e_method = "ttft_plus_itls"
        # only what the client did not write itself is reported from the arrays
        arrays = {"ttft_ms": per.ttft, "e2e_ms": per.e2e, "tpot_ms": per.tpot, "itl_ms": per.itl}
        computed = {name: empty if name in unmeasured else summarize(arrays[name], _missing(run, name))
                    for name in LATENCY_NAMES}
        distributions = _distributions(details, stats_ok, e2e_all, timed, fixed_slots(run.concurrency, run.request_rate))
        if timed:
            attainment = slo_attainment(stats_ok, details.ttfts, tpot_all, slo.ttft_p95_ms, slo.tpot_mean_ms)
        if stats_ok.size and timed:
            good = good_requests(stats_ok, details.ttfts, tpot_all, slo.ttft_p95_ms, slo.tpot_mean_ms)
            goodput = goodput_rate(good, run.duration_s)
        if not np.array_equal(stats_ok, details.success):
            _, e2e_all, tpot_all = per_request(
                details.ttfts, details.output_lens, details.itl_flat, details.itl_counts,
                details.success, details.latencies,
            )
        raw_requests = _raw_requests(details, e2e_all, tpot_all, cap, timed)
    measured = details is not None
    extra = run.client_extra
    method = {"e2e_ms": e2e_method, "tpot_ms": e2e_method}  # the others: per_request
    client = run.client
    notes = list(run.notes)
    no_gap = _no_gap_metrics(run)
    if no_gap:
        # the clients' mean of an empty list is 0.0: one token per output has no gap to time
        client = {k: v for k, v in client.items() if k not in no_gap}
        computed.update({k: empty for k in no_gap})
        notes.append(f"{' and '.join(m.split('_')[0].upper() for m in no_gap)} unknown: every successful request "
                     "returned one output token, which has no gap to time (the client's 0.0 is its value for no "
                     "sample, not a measurement)")
    latencies = Latencies(**{
        name: _percentiles(client.get(name, {}), computed[name], f"latencies.{name}",
                           method.get(name, "per_request"), reconstructed, extra.get(name),
                           measured and name not in unmeasured)
        for name in LATENCY_NAMES
    })
    total = run.success + (run.failed or 0)
    return Scenario(
        name=name or scenario_name(run.concurrency, run.input_len, run.output_len, request_rate=run.request_rate),
        concurrency=run.concurrency, input_len=run.input_len, output_len=run.output_len,
        duration_s=run.duration_s, success=run.success, failed=run.failed,
        request_throughput=run.request_throughput, input_token_throughput=run.input_throughput,
        output_token_throughput=run.output_throughput, total_token_throughput=run.total_throughput,
        accept_length=run.accept_length, latencies=latencies,
        slo_status=slo_status(latencies.ttft_ms.p95, latencies.tpot_ms.mean, slo),
        raw_requests=raw_requests, raw_requests_capped=bool(details is not None and total > cap),
        slo_attainment=attainment, request_goodput=goodput, reconstructed=reconstructed, repeat=repeat,
        num_prompts=run.num_prompts, request_rate=run.request_rate, dataset_name=run.dataset_name,
        request_format=run.request_format, notes=notes, source=source, empty_outputs=run.empty_outputs,
        client=run.client_print, acceptance=run.acceptance, client_extras=run.client_extras, **distributions,
        streaming=run.streaming, streaming_source=run.streaming_source, unmeasured=run.unmeasured,
    )


# the builder's own per-request arrays, by the name of the input they are (contract/metrics.py: REQUEST_INPUTS
# without a raw list): every request's value in the column's unit, from the run's details and its E2E in seconds
_OWN: dict[str, Callable[[Any, np.ndarray], np.ndarray]] = {
    "input_tokens": lambda d, e2e: np.where(d.input_lens >= 0, d.input_lens, np.nan).astype(float),
    "output_tokens": lambda d, e2e: d.output_lens.astype(float),
    "e2e_ms": lambda d, e2e: np.asarray(e2e, dtype=float) * 1000,
    "ttft_ms": lambda d, e2e: d.ttfts.astype(float) * 1000,
}


def _distributions(details: Any, stats_ok: np.ndarray, e2e_s: np.ndarray, timed: bool = True,
                   slots: Optional[int] = None) -> dict[str, Any]:
    """The registry's metrics sskj computes from the requests' columns (contract/metrics.py, `derive`): its
    distributions and its values over a window of the run (with their window, in a closed loop of `slots`), over
    the successful requests with output: every request, not only the raw_requests kept. Their columns are the
    inputs the rows declare (`REQUEST_COLUMNS`): the builder's own arrays, or a raw list read by the reader
    (`details.extra`); NaN where unknown (TTFT when not `timed`)."""
    n = int(stats_ok.sum())
    columns: dict[str, np.ndarray] = {}
    for name in REQUEST_COLUMNS:
        if not timed and name in NOT_STREAMED:
            columns[name] = np.full(n, np.nan)
        elif name in _OWN:
            columns[name] = _OWN[name](details, e2e_s)[stats_ok]
        else:
            read = details.extra.get(name)
            columns[name] = np.full(n, np.nan) if read is None else read[stats_ok]
    found: dict[str, Any] = {m.name: Distribution.model_validate(summarize(derived_values(m.derive, columns), scale=1.0))
                             for m in SECTION_METRICS if m.derive}
    for m in WINDOW_METRICS:
        found.update(window_record(m.name, window_value(m.derive or m.name, columns, slots)))
    return found


def _one_token_outputs(run: RawRun) -> bool:
    """Every successful request returned at most one output token (and some returned one): from the per-request
    lengths, else from the request's length (1) or the client's total (at most one token per success)."""
    details = run.details
    if details is not None:
        ok = details.success & (details.output_lens > 0)
        return bool(ok.any()) and not bool(np.any(details.output_lens[ok] > 1))
    if run.success <= 0:
        return False
    return run.output_len == 1 or (run.total_output_tokens is not None and 0 < run.total_output_tokens <= run.success)


def _no_gap_metrics(run: RawRun) -> tuple[str, ...]:
    """TPOT and ITL where the run's outputs had one token each and the client wrote no nonzero statistic of them
    (its empty-sample 0.0): unknown, not 0."""
    if not _one_token_outputs(run):
        return ()
    return tuple(m for m in ("tpot_ms", "itl_ms") if not any(v for v in run.client.get(m, {}).values()))


def _missing(run: RawRun, metric: str) -> list[str]:
    client = run.client.get(metric, {})
    return [stat for stat in PCT_FIELDS if stat not in client]


def _raw_requests(details: Any, e2e_all: np.ndarray, tpot_all: np.ndarray, cap: int,
                  timed: bool = True) -> list[RawRequest]:
    """The requests as the client measured them; TTFT, TPOT and ITL null when not `timed` (no streaming)."""
    n = min(len(details.errors), cap)
    ok = details.success[:n]
    timing = ok if timed else np.zeros(n, dtype=bool)
    ttft = _ms(np.where(timing, details.ttfts[:n], np.nan))
    e2e = _ms(e2e_all[:n])
    tpot = _ms(np.where(timing, tpot_all[:n], np.nan))
    itl = _ms(np.where(timing, request_itl_means(details.itl_flat, details.itl_counts)[:n], np.nan))
    inputs = details.input_lens[:n].tolist()
    outputs = details.output_lens[:n].tolist()
    errors = details.errors
    # the inputs read from raw lists (contract/metrics.py: READ_INPUTS), each its own field, null where unknown
    blank = {r.name: None for r in READ_INPUTS}
    records = [
        {"request_id": str(i), "input_tokens": inputs[i], "output_tokens": outputs[i], "e2e_ms": e2e[i],
         "ttft_ms": ttft[i], "tpot_ms": tpot[i], "itl_ms": itl[i], "accept_length": None,
         "success": bool(ok[i]), "error": None if ok[i] else redact_text(errors[i]), **blank}
        for i in range(n)
    ]
    for r in READ_INPUTS:
        if r.name in details.extra:
            for record, value in zip(records, _floats(details.extra[r.name][:n])):
                record[r.name] = value
    # validated in one call (and not again by check_writable); a value results.json cannot hold leaves them as they
    # are, for check_writable to name
    validated = validated_requests(records)
    if validated is not None:
        return validated
    make = RawRequest.model_construct
    return [make(**record) for record in records]


def _skip_entry(problem: Problem, hints: NameHints) -> SkippedScenario:
    if hints.concurrency is not None and hints.input_len is not None and hints.output_len is not None:
        name = scenario_name(hints.concurrency, hints.input_len, hints.output_len)
    else:
        name = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return SkippedScenario(
        scenario=name, concurrency=hints.concurrency or None, input_len=hints.input_len,
        output_len=hints.output_len, reason=f"not imported: {problem}", log_excerpt=None,
    )


def _local(dt: datetime) -> datetime:
    """An aware datetime; naive times (the clients write local time without a zone) take this machine's zone."""
    return dt.astimezone() if dt.tzinfo is None else dt



@dataclass(frozen=True)
class RunTime:
    """When a raw run ran, as much as is known: the ISO text, its precision and source (null: unknown)."""

    value: Optional[str] = None
    precision: Optional[TimePrecision] = None
    source: Optional[TimeSource] = None  # "run" | "file name"
    order: Optional[datetime] = None  # an aware datetime to sort by (None for a month and day without a year)
    folder: Optional[str] = None  # the folder whose date gave the name's MMDD its year


def _full(dt: datetime, precision: str, source: TimeSource) -> RunTime:
    aware = _local(dt).replace(microsecond=0)
    if precision == "day":
        return RunTime(aware.date().isoformat(), "day", source, aware)
    return RunTime(aware.isoformat(), "second", source, aware)


def run_time(run: RawRun, hints: Optional[NameHints] = None) -> RunTime:
    """The run's own time key; else a full date-time in the file name (`2026-03-24_11-23-55`); else the name's
    MMDD as a month and day without a year (`--10-15`); else unknown. Never the file's modification time."""
    if run.started is not None:
        return _full(run.started, run.started_precision, "run")
    if hints is None:
        return RunTime()
    if hints.when is not None and hints.when_precision is not None:
        when = _full(hints.when, hints.when_precision, "file name")
        return dataclasses.replace(when, folder=hints.when_folder) if hints.when_folder else when
    if hints.mmdd is not None:
        month, day = int(hints.mmdd[:2]), int(hints.mmdd[2:])
        try:
            datetime(2000, month, day)  # a leap year: 0229 is a month and day
        except ValueError:
            return RunTime()
        return RunTime(f"--{month:02d}-{day:02d}", "month-day", "file name")
    return RunTime()


def stamp_time(scenario: Scenario, when: RunTime) -> None:
    """Record when on the scenario, with a note when it is partial or unknown."""
    scenario.timestamp, scenario.timestamp_precision, scenario.timestamp_source = when.value, when.precision, when.source
    if when.value is None:
        scenario.notes.append("run time unknown (no date in the run or its file name): recorded as null, not the "
                              "file's modification time")
    elif when.precision == "month-day":
        scenario.notes.append(f"run date {when.value} from the file name's MMDD: month and day only, the year is "
                              "unknown (not taken from the file's modification time)")
    elif when.folder is not None:
        scenario.notes.append(f"run date {when.value}: the file name's month and day, in the year of its folder "
                              f"{display_name(when.folder)} (the name holds no year)")
    elif when.source == "file name":
        scenario.notes.append(f"run time {when.value} from the file name")
