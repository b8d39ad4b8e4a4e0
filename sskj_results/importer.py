"""Raw client outputs -> results.json scenarios: `sskj-results parse` and `import-legacy`.

Fidelity rule: where the raw run carries the client's own value of a
statistic, results.json reports exactly that value. Statistics the file lacks
are computed from the per-request arrays and listed in Scenario.reconstructed.
"""

from __future__ import annotations

import functools
import gc
import json
import math
import re
import shlex
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, ParamSpec, TypeVar

import numpy as np

from . import __version__
from .errors import ConfigError, RawFormatError, ResultsError, UsageError
from .evidence import judge_run
from .io import RESULTS_NAME, atomic_write_text, check_writable, load_run, save_run
from .metrics import per_request, request_itl_means, slo_attainment, summarize
from .models import (
    Config, Latencies, Metadata, Percentiles, RawFile, RawRequest, Results, Scenario,
    SkippedScenario, SloSpec, Source, ValidityThresholds,
)
from .rawio import (
    FileScan, LineError, describe_os_error, display_name, list_raw_dir, one_line, read_checked, sha256_files_each,
)
from .readers import (
    ENGINE_OF_BACKEND, NameHints, RawRun, ReadOptions, RunError, compile_name_pattern, name_hints, read_run,
)
from .redact import redact
from .sidecars import (
    accept_length_between, read_metrics, read_skipped, sidecar_digest, sidecar_paths, summarize_gpu_log, summarize_xpu_log,
)
from .slo import resolve_slo, slo_status

P = ParamSpec("P")
R = TypeVar("R")

RAW_REQUESTS_CAP = 20000
RAW_SUFFIXES = (".jsonl", ".json")
LATENCY_FIELDS = ("e2e_ms", "ttft_ms", "tpot_ms", "itl_ms")
PCT_FIELDS = ("mean", "p50", "p90", "p95", "p99", "std")


def _bulk(func: Callable[P, R]) -> Callable[P, R]:
    """Run func with the cyclic garbage collector paused (restored after).

    An import allocates millions of objects without reference cycles (parsed
    JSON, then one small model per request); the collector would scan them
    over and over for nothing: about a tenth of the import time.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper


@dataclass
class Problem:
    """A raw run that was not imported: `file:line: message`."""

    file: str
    line: Optional[int]
    message: str
    index: Optional[int] = None  # the run's position when the file is one JSON array of runs

    def __str__(self) -> str:
        name = display_name(self.file)
        where = f"{name}:{self.line}" if self.line else name
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
    try:
        for item in scan:
            seen += 1
            if isinstance(item, LineError):
                problem = Problem(label, item.line or None, item.message, item.index)
            else:
                try:
                    run = read_run(item.data, item.line, hints, options)
                    run.index = item.index
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
    computed = {k: empty for k in LATENCY_FIELDS}
    raw_requests: list[RawRequest] = []
    attainment = None
    e2e_method = "per_request"
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
        computed = {
            "ttft_ms": summarize(per.ttft, _missing(run, "ttft_ms")),
            "e2e_ms": summarize(per.e2e, _missing(run, "e2e_ms")),
            "tpot_ms": summarize(per.tpot, _missing(run, "tpot_ms")),
            "itl_ms": summarize(per.itl, _missing(run, "itl_ms")),
        }
        attainment = slo_attainment(stats_ok, details.ttfts, tpot_all, slo.ttft_p95_ms, slo.tpot_mean_ms)
        if not np.array_equal(stats_ok, details.success):
            _, e2e_all, tpot_all = per_request(
                details.ttfts, details.output_lens, details.itl_flat, details.itl_counts,
                details.success, details.latencies,
            )
        raw_requests = _raw_requests(details, e2e_all, tpot_all, cap)
    measured = details is not None
    extra = run.client_extra
    latencies = Latencies(
        e2e_ms=_percentiles(run.client.get("e2e_ms", {}), computed["e2e_ms"], "latencies.e2e_ms", e2e_method,
                            reconstructed, extra.get("e2e_ms"), measured),
        ttft_ms=_percentiles(run.client.get("ttft_ms", {}), computed["ttft_ms"], "latencies.ttft_ms", "per_request",
                             reconstructed, extra.get("ttft_ms"), measured),
        tpot_ms=_percentiles(run.client.get("tpot_ms", {}), computed["tpot_ms"], "latencies.tpot_ms", e2e_method,
                             reconstructed, extra.get("tpot_ms"), measured),
        itl_ms=_percentiles(run.client.get("itl_ms", {}), computed["itl_ms"], "latencies.itl_ms", "per_request",
                            reconstructed, extra.get("itl_ms"), measured),
    )
    total = run.success + run.failed
    return Scenario(
        name=name or scenario_name(run.concurrency, run.input_len, run.output_len, request_rate=run.request_rate),
        concurrency=run.concurrency, input_len=run.input_len, output_len=run.output_len,
        duration_s=run.duration_s, success=run.success, failed=run.failed,
        request_throughput=run.request_throughput, input_token_throughput=run.input_throughput,
        output_token_throughput=run.output_throughput, total_token_throughput=run.total_throughput,
        accept_length=run.accept_length, latencies=latencies,
        slo_status=slo_status(latencies.ttft_ms.p95, latencies.tpot_ms.mean, slo),
        raw_requests=raw_requests, raw_requests_capped=bool(details is not None and total > cap),
        slo_attainment=attainment, reconstructed=reconstructed, repeat=repeat,
        num_prompts=run.num_prompts, request_rate=run.request_rate, dataset_name=run.dataset_name,
        request_format=run.request_format, notes=list(run.notes), source=source, empty_outputs=run.empty_outputs,
    )


def _missing(run: RawRun, metric: str) -> list[str]:
    client = run.client.get(metric, {})
    return [stat for stat in PCT_FIELDS if stat not in client]


def _raw_requests(details: Any, e2e_all: np.ndarray, tpot_all: np.ndarray, cap: int) -> list[RawRequest]:
    n = min(len(details.errors), cap)
    ok = details.success[:n]
    ttft = _ms(np.where(ok, details.ttfts[:n], np.nan))
    e2e = _ms(e2e_all[:n])
    tpot = _ms(tpot_all[:n])
    itl = _ms(np.where(ok, request_itl_means(details.itl_flat, details.itl_counts)[:n], np.nan))
    inputs = details.input_lens[:n].tolist()
    outputs = details.output_lens[:n].tolist()
    errors = details.errors
    make = RawRequest.model_construct
    return [
        make(
            request_id=str(i), input_tokens=inputs[i], output_tokens=outputs[i], e2e_ms=e2e[i],
            ttft_ms=ttft[i], tpot_ms=tpot[i], itl_ms=itl[i], accept_length=None,
            success=bool(ok[i]), error=None if ok[i] else errors[i],
        )
        for i in range(n)
    ]


DEFAULT_NAME_FORMAT = "c{concurrency}_i{input_len}_o{output_len}"
# open-loop runs (a request rate, no concurrency cap)
DEFAULT_RATE_FORMAT = "r{request_rate}_i{input_len}_o{output_len}"
# a concurrency cap and a finite request rate
DEFAULT_CAPPED_RATE_FORMAT = "c{concurrency}_r{request_rate}_i{input_len}_o{output_len}"

ShapeKey = tuple[int, int, int, float]


def format_rate(rate: Optional[float]) -> str:
    """4.0 -> '4', 0.5 -> '0.5'; None (unlimited) -> 'inf'."""
    return "inf" if rate is None else f"{rate:g}"


def scenario_name(concurrency: Optional[int], input_len: int, output_len: int, fmt: Optional[str] = None,
                  request_rate: Optional[float] = None) -> str:
    """A scenario's name from its shape, by default `c{concurrency}_i{input_len}_o{output_len}`;
    an open-loop run (no concurrency) is `r{request_rate}_i{input_len}_o{output_len}` unless fmt uses {request_rate}."""
    if fmt is None and request_rate is not None:
        fmt = DEFAULT_CAPPED_RATE_FORMAT if concurrency is not None else DEFAULT_RATE_FORMAT
    elif concurrency is None and not (fmt and "{request_rate}" in fmt):
        fmt = DEFAULT_RATE_FORMAT
    try:
        return (fmt or DEFAULT_NAME_FORMAT).format(concurrency=concurrency, input_len=input_len, output_len=output_len,
                                                   request_rate=format_rate(request_rate))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"scenario name format {fmt!r} is invalid ({exc}); use {{concurrency}}, {{input_len}}, {{output_len}} "
            "and {request_rate}"
        ) from None


def shape_of(s: Scenario) -> ShapeKey:
    """(concurrency, input, output, rate): an open-loop run has concurrency 0; an unlimited rate is inf."""
    rate = s.request_rate if s.request_rate is not None else math.inf
    return (s.concurrency or 0, s.input_len, s.output_len, rate)


def _name_of(key: ShapeKey, fmt: Optional[str]) -> str:
    concurrency, input_len, output_len, rate = key
    return scenario_name(concurrency or None, input_len, output_len, fmt, None if math.isinf(rate) else rate)


def name_scenarios(scenarios: list[Scenario], fmt: Optional[str] = None) -> list[Scenario]:
    """Sort by shape then concurrency; the 2nd, 3rd… run of one shape get `_r2`, `_r3` (repeat set on all)."""
    def order(s: Scenario) -> tuple[Any, ...]:
        src = s.source
        key = shape_of(s)
        return (s.input_len, s.output_len, key[0], key[3], src.file if src else "", src.line if src else 0,
                src.index or 0 if src else 0)

    ordered = sorted(scenarios, key=order)
    counts: dict[ShapeKey, int] = {}
    owner: dict[str, ShapeKey] = {}
    for s in ordered:
        key = shape_of(s)
        counts[key] = counts.get(key, 0) + 1
        base = _name_of(key, fmt)
        if owner.setdefault(base, key) != key:
            shown = [k[:3] if math.isinf(k[3]) else (f"rate {format_rate(k[3])}", *k[1:3]) for k in (owner[base], key)]
            raise ConfigError(
                f"scenario name format {fmt!r} gives {base!r} to two shapes {shown[0]} and {shown[1]} "
                "(concurrency, input, output); include each of {concurrency}, {input_len}, {output_len} that varies"
            )
    seen: dict[ShapeKey, int] = {}
    for s in ordered:
        key = shape_of(s)
        seen[key] = seen.get(key, 0) + 1
        base = _name_of(key, fmt)
        s.repeat = seen[key] if counts[key] > 1 else None
        s.name = base if seen[key] == 1 else f"{base}_r{seen[key]}"
    return ordered


def _skip_entry(problem: Problem, hints: NameHints) -> SkippedScenario:
    if hints.concurrency is not None and hints.input_len is not None and hints.output_len is not None:
        name = scenario_name(hints.concurrency, hints.input_len, hints.output_len)
    else:
        name = f"{problem.file}:{problem.line}" if problem.line else problem.file
    return SkippedScenario(
        scenario=name, concurrency=hints.concurrency or None, input_len=hints.input_len,
        output_len=hints.output_len, reason=f"not imported: {problem}", log_excerpt=None,
    )


# ---------------------------------------------------------------- parse RUN_DIR

@dataclass
class ParseOutcome:
    results: Results
    problems: list[Problem]
    warnings: list[str]
    files_read: int
    files_reused: int


def raw_files(directory: Path) -> list[Path]:
    """The raw outputs of a directory (any case of .jsonl/.json; see rawio.list_raw_dir)."""
    return list_raw_dir(directory).files


@_bulk
def parse_run_dir(run_dir: Path, slo: Optional[SloSpec] = None, cap: int = RAW_REQUESTS_CAP,
                  name_format: Optional[str] = None, validity: Optional[ValidityThresholds] = None) -> ParseOutcome:
    """Merge RUN_DIR/raw_outputs/* into RUN_DIR/results.json (idempotent, atomic).

    Scenario names follow name_format, else config.scenario_name_format, else
    `c{concurrency}_i{input_len}_o{output_len}`; a given format is recorded in config.
    Validity thresholds: the given ones, else the recorded ones, else the defaults.
    """
    file = run_dir / RESULTS_NAME
    if file.is_dir():
        raise ResultsError(f"{file}: a directory, not a results.json; move it away, then create the run's "
                           f"results.json with `sskj-results metadata {run_dir} --meta ...`")
    if not file.is_file() and not (file.is_symlink() or file.exists()):  # a special file or bad link: load_run says what it is
        raise ResultsError(f"{file}: no results.json; create it first with `sskj-results metadata {run_dir} --meta ...`")
    listing = list_raw_dir(run_dir / "raw_outputs")
    paths = listing.files
    existing = load_run(file)
    spec = slo or existing.slo or resolve_slo()
    thresholds = validity or existing.validity_thresholds
    same_slo = existing.slo is not None and existing.slo == spec and thresholds == existing.validity_thresholds
    known = {rf.file: rf for rf in existing.raw_files}
    warnings: list[str] = [f"raw_outputs/{display_name(p.name)}: {why}" for p, why in listing.ignored]
    # quick check (as rsync and make do): a file whose size and mtime are those
    # recorded keeps its recorded hash; every other file is hashed
    stamps: dict[Path, Any] = {}
    unreadable: dict[Path, str] = {}
    for path in paths:
        try:
            stamps[path] = path.stat()
        except OSError as exc:
            unreadable[path] = describe_os_error(exc)
    quick: dict[Path, tuple[str, int]] = {}
    for path, st in stamps.items():
        prev = known.get(f"raw_outputs/{path.name}")
        if prev is not None and prev.mtime_ns == st.st_mtime_ns and prev.size == st.st_size and not prev.damaged:
            quick[path] = (prev.sha256, prev.size)
    to_hash = [p for p in paths if p not in quick and p not in unreadable]
    for path, result in zip(to_hash, sha256_files_each(to_hash)):
        if isinstance(result, OSError):
            unreadable[path] = describe_os_error(result)
        else:
            quick[path] = result
    old_by_file: dict[str, list[Scenario]] = {}
    for s in existing.scenarios:
        if s.source is not None:
            old_by_file.setdefault(s.source.file, []).append(s)
    scenarios: list[Scenario] = []
    records: list[RawFile] = []
    problems: list[Problem] = []
    skipped: list[SkippedScenario] = []
    read = reused = 0

    def keep_recorded(label: str, reason: str) -> None:
        """parse never forgets a measured scenario: a raw file imported before that is now
        missing, unreadable or corrupt keeps its recorded scenarios and is marked damaged."""
        kept = [_rejudged(s, spec, same_slo) for s in old_by_file[label]]
        scenarios.extend(kept)
        prev = known.get(label)
        records.append(prev.model_copy(update={"damaged": reason}) if prev is not None else
                       RawFile(file=label, sha256="", size=0, runs=len(kept), damaged=reason))
        warnings.append(f"{display_name(label)}: {reason}; kept its {len(kept)} recorded scenario(s) and marked it "
                        "damaged (the next RESUME measures it again)")

    # content hashes decide what is read again
    for path in paths:
        label = f"raw_outputs/{path.name}"
        if path in unreadable:
            if label in old_by_file:
                keep_recorded(label, f"cannot read: {unreadable[path]}")
            else:
                problem = Problem(label, None, f"cannot read: {unreadable[path]}")
                problems.append(problem)
                skipped.append(_skip_entry(problem, name_hints(path.stem)))
            continue
        digest, size = quick[path]
        mtime_ns = stamps[path].st_mtime_ns
        try:
            sides = sidecar_paths(run_dir, path.stem)
            side_digest = sidecar_digest(sides)
        except OSError as exc:
            warnings.append(f"side files of {display_name(label)}: cannot read: {describe_os_error(exc)}; ignored")
            sides, side_digest = [], None
        prev = known.get(label)
        if same_slo and prev and prev.sha256 == digest and prev.sidecar_sha256 == side_digest and label in old_by_file \
                and not prev.damaged and all(s.validity is not None for s in old_by_file[label]):
            scenarios.extend(s.model_copy() for s in old_by_file[label])  # shallow: renaming must not touch `existing`
            records.append(prev if prev.mtime_ns == mtime_ns else prev.model_copy(update={"mtime_ns": mtime_ns}))
            reused += 1
            continue
        read += 1
        hints = name_hints(path.stem)
        # the error boundary of one file: whatever goes wrong costs this file (or line) only
        built: list[Scenario] = []
        try:
            outcome = read_raw_file(path, label, hints, digest=False)  # hashed above
            file_problems = list(outcome.problems)
            accept, gpu = _sidecar_values(run_dir, path.stem, len(outcome.runs), warnings)
            for run in outcome.runs:
                try:
                    scenario = build_scenario(run, spec, Source(file=label, line=run.line, index=run.index, sha256=digest,
                                                                     format=run.format),
                                              cap=cap)
                    if accept is not None and scenario.accept_length is None:
                        scenario.accept_length = accept
                        scenario.reconstructed["accept_length"] = "server_metrics"
                    scenario.accelerator_usage = gpu
                    if run.started is not None:  # the run's own time (the client's `date`)
                        scenario.timestamp = _local(run.started).replace(microsecond=0).isoformat()
                    scenario.validity = judge_run(run, run_dir, path.stem, len(outcome.runs), thresholds)
                    check_writable(scenario)
                except Exception as exc:  # noqa: BLE001 - one run's boundary
                    file_problems.append(Problem(label, run.line, unexpected(exc), run.index))
                    continue
                built.append(scenario)
        except Exception as exc:  # noqa: BLE001
            file_problems = [Problem(label, None, unexpected(exc))]
            built = []
        if file_problems and label in old_by_file:
            keep_recorded(label, f"now unreadable or corrupt ({file_problems[0]})")
            continue
        problems.extend(file_problems)
        skipped.extend(_skip_entry(p, hints) for p in file_problems)
        scenarios.extend(built)
        records.append(RawFile(file=label, sha256=digest, size=size, runs=len(built), sidecar_sha256=side_digest,
                               mtime_ns=mtime_ns))
    listed = {f"raw_outputs/{p.name}" for p in paths}
    for label in sorted(set(old_by_file) - listed):
        if label.startswith("raw_outputs/"):
            keep_recorded(label, "missing")
        else:  # imported from elsewhere (import-legacy): kept as recorded
            scenarios.extend(s.model_copy() for s in old_by_file[label])
            if label in known:
                records.append(known[label])
    scenarios.extend(s.model_copy() for s in existing.scenarios if s.source is None)
    skip_csv = run_dir / "skipped_after_oom.csv"
    if skip_csv.is_file():
        try:
            skipped = read_skipped(skip_csv) + skipped
        except RawFormatError as exc:
            problems.append(Problem(str(skip_csv.relative_to(run_dir)), None, str(exc).split(": ", 1)[-1]))
    fmt = name_format or existing.config.scenario_name_format
    config = existing.config
    if name_format and name_format != config.scenario_name_format:
        config = config.model_copy(update={"scenario_name_format": name_format})
    results = existing.model_copy(update={
        "scenarios": name_scenarios(scenarios, fmt), "raw_files": records, "slo": spec, "skipped": skipped,
        "metadata": existing.metadata.model_copy(update={"tool_version": __version__}), "config": config,
        "validity_thresholds": thresholds,
    })
    if read or results != existing:  # an unchanged run is not rewritten
        save_run(results, file)
    return ParseOutcome(results, problems, warnings, read, reused)


def _rejudged(scenario: Scenario, spec: SloSpec, same_slo: bool) -> Scenario:
    """A recorded scenario kept without its raw file, judged against the current SLO."""
    if same_slo:
        return scenario.model_copy()
    lat = scenario.latencies
    return scenario.model_copy(update={"slo_status": slo_status(lat.ttft_ms.p95, lat.tpot_ms.mean, spec),
                                       "slo_attainment": None})


def _sidecar_values(run_dir: Path, stem: str, runs: int, warnings: list[str]) -> tuple[Optional[float], Any]:
    before = run_dir / "server_metrics" / f"{stem}.before.prom"
    after = run_dir / "server_metrics" / f"{stem}.after.prom"
    gpu_csv = run_dir / "gpu_logs" / f"{stem}.csv"
    accept = gpu = None
    if before.is_file() and after.is_file():
        if runs == 1:
            try:
                accept = accept_length_between(read_metrics(before), read_metrics(after))
            except RawFormatError as exc:
                warnings.append(f"{exc}; accept length not recorded")
        else:
            warnings.append(f"server_metrics/{stem}.*.prom: {runs} runs in the raw file; metrics apply to one scenario only, ignored")
    xpu_log = run_dir / "gpu_logs" / f"{stem}.xpu-smi.log"
    if gpu_csv.is_file():
        try:
            gpu = summarize_gpu_log(gpu_csv)
        except RawFormatError as exc:
            warnings.append(str(exc))
    elif xpu_log.is_file():
        try:
            gpu = summarize_xpu_log(xpu_log)
        except RawFormatError as exc:
            warnings.append(str(exc))
        if gpu is None:
            warnings.append(f"gpu_logs/{xpu_log.name}: no device rows (`N MiB / N MiB`) found; accelerator usage not recorded")
    return accept, gpu


# ---------------------------------------------------------------- import-legacy

@dataclass
class Platform:
    chip: str
    accelerator: Optional[str] = None
    hardware: Optional[str] = None
    engine: Optional[str] = None
    name: Optional[str] = None
    chip_given: bool = True  # False: no --chip/--platform, chip is 'unknown'


def read_platform_file(path: Path) -> Platform:
    """KEY=VALUE lines of platforms/<chip>.env (quotes stripped; nothing is executed)."""
    values: dict[str, str] = {}
    try:
        lines = read_checked(path, "text file").decode("utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{display_name(path)}: cannot read platform file: {describe_os_error(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{display_name(path)}: not UTF-8 text (byte {exc.start}); is this a platforms/<chip>.env file?") from None
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        try:
            parts = shlex.split(value, comments=True)
        except ValueError:
            parts = [value]
        values[key.strip()] = parts[0] if parts else ""
    if not values.get("CHIP"):
        raise ConfigError(f"{path}: no CHIP=... line; is this a platforms/<chip>.env file?")
    return Platform(chip=values["CHIP"], accelerator=values.get("ACCELERATOR") or None,
                    hardware=values.get("HARDWARE") or None, engine=values.get("ENGINE") or None, name=path.stem)


@dataclass
class ImportOutcome:
    run_dirs: list[Path]
    problems: list[Problem]
    warnings: list[str]
    # --dry-run: one line per file and run, what would be imported or skipped and why
    plan: list[str] = field(default_factory=list)
    replaced: list[Path] = field(default_factory=list)


ReportRenderer = Callable[[Results, Path], str]
NOT_RECORDED = "not recorded: imported from raw client outputs by sskj-results import-legacy"
UNKNOWN = "unknown"


def default_import_dir(raw_dir: Path) -> Path:
    """`imported/` beside RAW_DIR (never inside it)."""
    return raw_dir.resolve().parent / "imported"


def check_import_dir(raw_dir: Path, out: Path) -> None:
    """The output directory must not lie inside RAW_DIR: a second import would read the first one's files."""
    raw, target = raw_dir.resolve(), out.resolve()
    if target == raw or raw in target.parents:
        raise UsageError(f"--out {out} is inside RAW_DIR {raw_dir}; the next import would read its own output. "
                         f"Choose a directory outside it (default: {default_import_dir(raw_dir)})")


@dataclass(frozen=True)
class RawSource:
    """A raw file to import, or one to leave out and why (sweep summaries, warm-ups, failure records)."""

    path: Path
    label: str
    skip: Optional[str] = None


_SWEEP_RUN = re.compile(r"^run=\d+\.json$")


def collect_raw_sources(raw_dir: Path, ignored: Optional[list[tuple[str, str]]] = None) -> list[RawSource]:
    """Every *.jsonl/*.json under raw_dir (subdirectories too, hidden ones left out), in a stable order.

    In a `vllm bench sweep serve` directory (`run=N.json` files), `summary.json` repeats the runs and
    `warmup.json` is the unmeasured warm-up: both are left out; `summary.json` alone is imported.
    """
    sources: list[RawSource] = []
    root = raw_dir
    paths: list[Path] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        walked = path.is_dir() and not path.is_symlink()  # rglob walks it
        if any(part.startswith(".") for part in rel.parts) or walked or path.suffix.lower() not in RAW_SUFFIXES:
            # listed, never silently skipped (a hidden directory once, not each file in it)
            hidden_below = any(part.startswith(".") for part in rel.parts[:-1])
            if ignored is not None and not hidden_below and not (walked and not rel.name.startswith(".")):
                why = "hidden, not read" if rel.name.startswith(".") else "not a raw output (*.jsonl or *.json), not read"
                ignored.append((str(rel), why))
            elif ignored is not None and not hidden_below and walked and path.suffix.lower() in RAW_SUFFIXES:
                try:
                    inside = "empty" if not any(path.iterdir()) else "the raw files inside it are read"
                except OSError as exc:
                    inside = f"cannot list it: {describe_os_error(exc)}"
                ignored.append((str(rel), f"a directory named like a raw output, not a file: not read as one ({inside})"))
            continue
        paths.append(path)  # special files named like raw files are kept: reading them reports the refusal
    sweep_dirs = {p.parent for p in paths if _SWEEP_RUN.match(p.name)}
    for path in paths:
        label = str(path.relative_to(root))
        siblings_runs = path.parent in sweep_dirs
        if path.name == "summary.json" and siblings_runs:
            sources.append(RawSource(path, label, "sweep summary: repeats the run=N.json files beside it, each imported once"))
        elif path.name == "warmup.json" and siblings_runs:
            sources.append(RawSource(path, label, "sweep warm-up run: not measured"))
        elif path.name.endswith(".failure.json"):
            sources.append(RawSource(path, label, _failure_reason(path)))
        else:
            sources.append(RawSource(path, label))
    return sources


def _failure_reason(path: Path) -> str:
    """The error a `vllm bench sweep` failure record keeps."""
    try:
        data = json.loads(read_checked(path, "raw output").decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return "sweep failure record: the benchmark did not produce results"
    if isinstance(data, dict) and data.get("error"):
        kind = f"{data.get('error_type')}: " if data.get("error_type") else ""
        return f"benchmark failed ({kind}{str(data['error']).strip().splitlines()[0][:300]})"
    return "sweep failure record: the benchmark did not produce results"


def _local(dt: datetime) -> datetime:
    """An aware datetime; naive times (the clients write local time without a zone) take this machine's zone."""
    return dt.astimezone() if dt.tzinfo is None else dt


def run_time(run: RawRun, hints: NameHints, mtime: float) -> tuple[datetime, str]:
    """When a raw run ran: its `date` key, else the name's MMDD with the year of the file's mtime, else the mtime."""
    if run.started is not None:
        return _local(run.started).replace(microsecond=0), "date"
    modified = datetime.fromtimestamp(mtime).astimezone()
    if hints.mmdd is not None:
        try:
            day = datetime(modified.year, int(hints.mmdd[:2]), int(hints.mmdd[2:]))
            if day.date() > modified.date():  # a December run written to disk in January
                day = day.replace(year=modified.year - 1)
            return _local(day), "name"
        except ValueError:
            pass
    return modified.replace(microsecond=0), "mtime"


@dataclass
class _Group:
    engine: str
    model: Optional[str]
    chip: str
    scenarios: list[Scenario] = field(default_factory=list)
    skipped: list[SkippedScenario] = field(default_factory=list)
    sources: dict[Path, tuple[str, int, int]] = field(default_factory=dict)
    times: list[datetime] = field(default_factory=list)
    recorded_hardware: set[str] = field(default_factory=set)


@dataclass
class FileImport:
    """What one raw file gives: scenarios with their (engine, model, chip), problems, plan lines."""

    source: RawSource
    runs: list[tuple[tuple[str, Optional[str], str], Scenario, datetime]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[SkippedScenario] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    file_key: Optional[tuple[str, Optional[str], str]] = None
    digest: tuple[str, int, int] = ("", 0, 0)
    # per (engine, model, chip): the chip texts the runs record (`gpu: "8x NVIDIA H200"` …)
    hardware: dict[tuple[str, Optional[str], str], set[str]] = field(default_factory=dict)


def _where(run: RawRun) -> str:
    """`line`, or `line[i]` for the i-th run of a JSON array."""
    return f"{run.line}" if run.index is None else f"{run.line}[{run.index}]"


def _describe_shape(s: Scenario) -> str:
    load = f"concurrency {s.concurrency}" if s.concurrency is not None else f"open loop at {format_rate(s.request_rate)} req/s"
    if s.concurrency is not None and s.request_rate is not None:
        load += f", rate {format_rate(s.request_rate)} req/s"
    return f"input {s.input_len}, output {s.output_len}, {load}"


def import_file(source: RawSource, platform: Platform, spec: SloSpec, *, engine: Optional[str], model: Optional[str],
                strict: bool, cap: int, pattern: Optional[re.Pattern[str]], options: ReadOptions,
                validity: Optional[ValidityThresholds] = None) -> FileImport:
    """Read and attribute one raw file (the unit a per-file error boundary wraps)."""
    result = FileImport(source)
    path, label = source.path, source.label
    hints = name_hints(path.stem, pattern)
    if source.skip is not None:
        result.plan.append(f"skip {label}: {source.skip}")
        if path.name.endswith(".failure.json"):
            result.warnings.append(f"{label}: not imported: {source.skip}")
        return result
    outcome = read_raw_file(path, label, hints, strict=strict, options=options)
    result.problems.extend(outcome.problems)
    if outcome.sha256 is None:  # unreadable: one problem says why (read_raw_file), nothing is attributed
        for problem in outcome.problems:
            result.plan.append(f"skip {problem}")
        return result
    digest, size, lines = outcome.sha256, outcome.size, outcome.lines
    result.digest = (digest, size, lines)
    mtime = path.stat().st_mtime
    # a chip the name states wins over the given one (a kunlun_p800_* file never joins an H200 run);
    # the first part of `{prefix}_{engine}_…` counts only when it is a known chip
    name_chip = hints.chip if hints.chip_known else None
    chip = name_chip or platform.chip
    if name_chip and platform.chip_given and name_chip != platform.chip:
        result.warnings.append(f"{label}: the file name says chip {name_chip}; imported under {name_chip}, "
                               f"not under the given chip {platform.chip}")
    # sglang.bench_serving's default names start with the request format (sglang-oai, vllm-chat…): its engine
    file_engine = engine or (ENGINE_OF_BACKEND.get(hints.engine.lower(), hints.engine) if hints.engine else None)
    result.file_key = (file_engine or UNKNOWN, model or hints.model, chip)
    for run in outcome.runs:
        for note in run.notes:
            if note.startswith("file name says"):
                result.warnings.append(f"{label}:{_where(run)}: {note}")
        run_engine = file_engine or run.engine or UNKNOWN
        run_model = model or run.model or hints.model
        try:  # one run's boundary
            scenario = build_scenario(run, spec, Source(file=str(path), line=run.line, index=run.index, sha256=digest,
                                                 format=run.format),
                                      cap=cap)
            scenario.validity = judge_run(run, thresholds=validity)  # raw files only: no side files
            check_writable(scenario)
        except Exception as exc:  # noqa: BLE001
            problem = Problem(label, run.line, unexpected(exc), run.index)
            if strict:
                raise RawFormatError(f"{problem} (--strict: stopped at the first bad run)") from None
            outcome.problems.append(problem)
            result.problems.append(problem)
            continue
        when, how = run_time(run, hints, mtime)
        scenario.timestamp = when.isoformat()
        if how == "mtime":
            scenario.notes.append("run time unknown (no date in the run or its file name): the file's modification time")
        run_chip = chip
        if run.chip is not None and run.chip_source is not None:
            # the chip the run itself records wins: it was written when the run ran
            run_chip = run.chip
            where, text = run.chip_source
            scenario.notes.append(f"chip {run.chip} from the run's own `{where}` key ({text!r})")
            result.hardware.setdefault((run_engine, run_model, run_chip), set()).add(text)
            other = name_chip or (platform.chip if platform.chip_given else None)
            if other is not None and other != run.chip:
                said = "the file name says" if name_chip else "the given chip is"
                result.warnings.append(f"{label}:{_where(run)}: the run records chip {run.chip} (`{where}`: {text!r}) "
                                       f"but {said} {other}; imported under {run.chip}")
        key = (run_engine, run_model, run_chip)
        result.runs.append((key, scenario, when))
        result.plan.append(
            f"import {label}:{_where(run)}: engine {run_engine}, model {run_model or UNKNOWN}, chip {run_chip}, "
            f"{_describe_shape(scenario)} -> {scenario.name}"
        )
    for problem in outcome.problems:
        result.plan.append(f"skip {problem}")
        result.skipped.append(_skip_entry(problem, hints))
    return result


@_bulk
def import_legacy(
    raw_dir: Path,
    out: Path,
    platform: Platform,
    engine: Optional[str] = None,
    model: Optional[str] = None,
    experiment: Optional[str] = None,
    slo: Optional[SloSpec] = None,
    strict: bool = False,
    server_args: Optional[str] = None,
    command: Optional[str] = None,
    now: Optional[datetime] = None,
    cap: int = RAW_REQUESTS_CAP,
    name_format: Optional[str] = None,
    name_pattern: Optional[str] = None,
    input_len: Optional[int] = None,
    output_len: Optional[int] = None,
    dry_run: bool = False,
    render_report: Optional[ReportRenderer] = None,
    validity: Optional[ValidityThresholds] = None,
) -> ImportOutcome:
    """Import every raw file under raw_dir into one run directory per (engine, model, chip) under out.

    `render_report(results, run_dir)` gives the text of each run's report.md
    (the CLI passes `publish.report_text`); without it no report.md is written.

    Re-running on the same raw_dir replaces the run directories it wrote before (same names: the
    names come from the runs' own times), so an import is idempotent.
    """
    check_import_dir(raw_dir, out)
    ignored: list[tuple[str, str]] = []
    sources = collect_raw_sources(raw_dir, ignored)
    if not sources:
        raise ConfigError(f"{raw_dir}: no *.jsonl or *.json files to import")
    try:
        pattern = compile_name_pattern(name_pattern) if name_pattern else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    options = ReadOptions(input_len=input_len, output_len=output_len)
    spec = slo or resolve_slo()
    stamp = (now or datetime.now().astimezone()).replace(microsecond=0)
    groups: dict[tuple[str, Optional[str], str], _Group] = {}
    problems: list[Problem] = []
    warnings: list[str] = [f"{display_name(label)}: {why}" for label, why in ignored]
    plan: list[str] = []
    if not platform.chip_given:
        warnings.append("no chip given (--platform or --chip): runs that record no chip, in files whose name names none, are imported with "
                        "chip 'unknown'; set it later with `sskj-results metadata RUN_DIR --chip CHIP --hardware TEXT`")
    for source in sources:
        # the error boundary of one file: whatever goes wrong costs this file (or line) only
        try:
            done = import_file(source, platform, spec, engine=engine, model=model, strict=strict, cap=cap,
                               pattern=pattern, options=options, validity=validity)
        except RawFormatError:
            raise  # --strict
        except Exception as exc:  # noqa: BLE001
            done = FileImport(source, problems=[Problem(source.label, None, unexpected(exc))])
            done.plan.append(f"skip {done.problems[0]}")
        problems.extend(done.problems)
        warnings.extend(done.warnings)
        plan.extend(done.plan)
        keys = []
        for key, scenario, when in done.runs:
            group = groups.setdefault(key, _Group(*key))
            group.scenarios.append(scenario)
            group.times.append(when)
            group.sources[source.path] = done.digest
            group.recorded_hardware |= done.hardware.get(key, set())
            keys.append(key)
        if done.skipped:
            owner = keys[0] if keys else done.file_key
            if owner is not None:
                group = groups.setdefault(owner, _Group(*owner))
                group.skipped.extend(done.skipped)
                group.sources.setdefault(source.path, done.digest)
    for key, group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        if not group.scenarios:
            continue
        for name in sorted({Path(s.source.file).name for s in group.scenarios if s.source}):
            if group.engine == UNKNOWN:
                warnings.append(f"{name}: not attributed to an engine (neither the file name nor the runs' backend "
                                "names one); recorded as 'unknown': give --engine or a --name-pattern with {engine}")
            if group.model is None:
                warnings.append(f"{name}: not attributed to a model (the runs do not name it); recorded as 'unknown' "
                                f"under engine {group.engine}: give --model")
    if dry_run:
        return ImportOutcome([], problems, warnings, plan)
    run_dirs: list[Path] = []
    replaced: list[Path] = []
    out.mkdir(parents=True, exist_ok=True)
    raw_abs = str(raw_dir.resolve())
    per_chip_engine: dict[tuple[str, str], int] = {}
    for key in groups:
        if groups[key].scenarios:
            per_chip_engine[(key[2], key[0])] = per_chip_engine.get((key[2], key[0]), 0) + 1
    for key, group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        if not group.scenarios:
            continue
        eng, run_model, chip = key
        # the error boundary of one run directory: a group that cannot be written costs that group only
        try:
            started = min(group.times)
            run_id = started.strftime("%Y%m%d-%H%M%S")
            hardware, accelerator = (platform.hardware, platform.accelerator) if chip == platform.chip else (None, None)
            if chip == UNKNOWN:
                hardware = UNKNOWN
            elif len(group.recorded_hardware) == 1 and chip != platform.chip:
                hardware = next(iter(group.recorded_hardware))  # as the runs record it
            srcs = [(p, *group.sources[p]) for p in sorted(group.sources)]
            results = Results(
                metadata=Metadata(
                    experiment=experiment or f"import_{raw_dir.resolve().name}", run_id=run_id,
                    timestamp=started.isoformat(), model=run_model or UNKNOWN, engine=eng, backend=eng,
                    hardware=hardware, accelerator=accelerator, chip=chip,
                    platform=platform.name if chip == platform.chip else None, script="sskj-results import-legacy",
                    client=_client_of(group.scenarios), tool_version=__version__,
                    description=f"imported from {len(srcs)} raw file(s) in {raw_dir}",
                    imported_at=stamp.isoformat(), imported_from=raw_abs,
                ),
                config=Config(server_args=server_args or NOT_RECORDED, scenario_name_format=name_format),
                scenarios=name_scenarios(group.scenarios, name_format), slo=spec, skipped=group.skipped,
                raw_files=[RawFile(file=str(p), sha256=d, size=s,
                                   runs=sum(1 for x in group.scenarios if x.source and x.source.file == str(p)))
                           for p, d, s, _ in srcs],
                validity_thresholds=validity,
            )
            base = f"{_safe(chip)}_{_safe(eng)}"
            if per_chip_engine[(chip, eng)] > 1:
                base += f"_{_safe(Path(run_model).name if run_model else UNKNOWN)}"
            target = out / f"{base}_{run_id}"
            previous = _own_previous(target, raw_abs, key)
            if previous:
                replaced.append(target)
            else:
                target = _unique_dir(target)
            _write_run_dir_atomically(target, results, srcs, command, render_report, replace=previous)
            run_dirs.append(target)
            # an earlier import of the same raw directory and group under another time (files were added or removed)
            for stale in sorted(out.glob(f"{base}_*")):
                if stale != target and stale.is_dir() and _own_previous(stale, raw_abs, key):
                    shutil.rmtree(stale)
                    if target not in replaced:
                        replaced.append(target)
        except Exception as exc:  # noqa: BLE001
            first = sorted(group.sources)[0] if group.sources else raw_dir
            label = str(first.relative_to(raw_dir)) if first != raw_dir and first.is_relative_to(raw_dir) else str(first)
            reason = describe_os_error(exc) if isinstance(exc, OSError) else unexpected(exc)
            problems.append(Problem(label, None, f"run directory of engine {eng}, model {run_model or UNKNOWN}, chip {chip} "
                                    f"({len(group.scenarios)} scenario(s)) not written: {reason}"))
    return ImportOutcome(run_dirs, problems, warnings, plan, replaced)


def _own_previous(target: Path, raw_abs: str, key: tuple[str, Optional[str], str]) -> bool:
    """target holds an earlier import of the same raw directory and (engine, model, chip): it may be replaced."""
    file = target / RESULTS_NAME
    if not file.is_file():
        return False
    try:
        meta = json.loads(file.read_bytes()).get("metadata") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return (isinstance(meta, dict) and meta.get("imported_from") == raw_abs and meta.get("engine") == key[0]
            and meta.get("chip") == key[2] and meta.get("model") == (key[1] or UNKNOWN))


def _client_of(scenarios: list[Scenario]) -> Optional[str]:
    formats = {s.source.format for s in scenarios if s.source and s.source.format}
    names = {"sglang-bench-serving": "sglang.bench_serving", "vllm-bench-serve": "vllm bench serve"}
    return ", ".join(sorted(names.get(f, f) for f in formats)) or None


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "-" for c in text)


def _unique_dir(path: Path) -> Path:
    candidate, n = path, 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}-{n}")
        n += 1
    return candidate


def _write_run_dir_atomically(target: Path, results: Results, sources: list[tuple[Path, str, int, int]],
                              command: Optional[str], render_report: Optional[ReportRenderer],
                              replace: bool = False) -> None:
    """Build the run directory under a temporary name, then rename it into place (replacing an earlier import)."""
    tmp = target.with_name(f".{target.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        save_run(results, tmp / RESULTS_NAME)
        if render_report is not None:
            atomic_write_text(tmp / "report.md", render_report(results, target))
        atomic_write_text(tmp / "README.md", provenance_readme(results, sources, command))
        if replace and target.exists():
            old = target.with_name(f".{target.name}.old")
            if old.exists():
                shutil.rmtree(old)
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def provenance_readme(results: Results, sources: Iterable[tuple[Path, str, int, int]], command: Optional[str]) -> str:
    meta = results.metadata
    lines = [
        f"# Provenance of {meta.chip}_{meta.engine}_{meta.run_id}",
        "",
        f"Imported by sskj-results {__version__} on {meta.imported_at or meta.timestamp}; the runs started "
        f"{meta.timestamp} (from the raw runs: the client's `date` key, else the file name's MMDD with the year of "
        "the file's modification time; times without a zone are this machine's local time).",
        "",
        "Command:",
        "",
        "```",
        redact(command) if command else "(not recorded)",
        "```",
        "",
        f"Engine `{meta.engine}`, model `{meta.model}` and chip `{meta.chip}` come from the command line, else the "
        "file name (`{chip}_{engine}_…`, a chip prefix, or --name-pattern), else the runs' own keys (`backend`, "
        "`model_id`, `server_info.model_path`); `unknown` where none of them says.",
        "",
        "## Source files",
        "",
        "| file | sha256 | lines | bytes |",
        "|---|---|---:|---:|",
    ]
    for path, digest, size, nlines in sources:
        lines.append(f"| {path} | `{digest}` | {nlines} | {size} |")
    lines.append("")
    return "\n".join(lines)
