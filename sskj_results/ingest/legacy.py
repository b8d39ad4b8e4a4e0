"""Raw client outputs -> results.json scenarios: `sskj-results parse` and `import-legacy`.

Fidelity rule: where the raw run carries the client's own value of a
statistic, results.json reports exactly that value. Statistics the file lacks
are computed from the per-request arrays and listed in Scenario.reconstructed.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Optional

from .. import __version__
from ..analysis.plausibility import draft_tokens_of, judge_plausibility
from ..analysis.slo import resolve_slo
from ..catalog.engines import config_from_server_args
from ..contract.errors import ConfigError, RawFormatError, UsageError
from ..contract.io import check_writable, describe_os_error, display_name, read_checked
from ..contract.locking import locked, recover_backups
from ..contract.names import MAX_SEGMENT, path_segment
from ..contract.models import (
    Config,
    Metadata,
    RawFile,
    Results,
    Scenario,
    SkippedScenario,
    SloSpec,
    Source,
    ValidityThresholds,
)
from .clientprint import apply_server_args, draft_length
from .evidence import judge_run
from .filenames import compile_name_pattern, folder_dated, name_hints
from .groups import GroupKey, RunGroup, day_of, join_unknown_models
from .naming import format_rate, name_scenarios
from .plausible import FLAG
from .rawsources import RawSource, collect_raw_sources
from .rawkeys import engine_of
from .readers import RawRun, ReadOptions
from .run_dir import (
    UNKNOWN,
    ReportRenderer,
    _client_of,
    _own_previous,
    _safe,
    _unique_dir,
    _write_run_dir_atomically,
    remove_own_stale,
)
from .scenario import (
    RAW_REQUESTS_CAP,
    Problem,
    RunTime,
    _bulk,
    _skip_entry,
    build_scenario,
    read_raw_file,
    run_time,
    stamp_time,
    unexpected,
)

# ---------------------------------------------------------------- import-legacy

@dataclass
class Platform:
    chip: str
    accelerator: Optional[str] = None
    hardware: Optional[str] = None
    engine: Optional[str] = None
    name: Optional[str] = None
    chip_given: bool = True  # False: no --chip/--platform, chip is 'unknown'
    # the platform file says HARDWARE=auto: described by the machine a run runs on, which an import is not
    hardware_auto: bool = False


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
    hardware = values.get("HARDWARE") or None
    return Platform(chip=values["CHIP"], accelerator=values.get("ACCELERATOR") or None,
                    hardware=None if hardware == "auto" else hardware, engine=values.get("ENGINE") or None,
                    name=path.stem, hardware_auto=hardware == "auto")


@dataclass
class ImportOutcome:
    run_dirs: list[Path]
    problems: list[Problem]
    warnings: list[str]
    # --dry-run: one line per file and run, what would be imported or skipped and why
    plan: list[str] = field(default_factory=list)
    replaced: list[Path] = field(default_factory=list)
NOT_RECORDED = "not recorded: imported from raw client outputs by sskj-results import-legacy"


def default_import_dir(raw_dir: Path) -> Path:
    """`imported/` beside RAW_DIR (never inside it)."""
    return raw_dir.resolve().parent / "imported"


def check_import_dir(raw_dir: Path, out: Path) -> None:
    """The output directory must not lie inside RAW_DIR: a second import would read the first one's files."""
    raw, target = raw_dir.resolve(), out.resolve()
    if target == raw or raw in target.parents:
        raise UsageError(f"--out {out} is inside RAW_DIR {raw_dir}; the next import would read its own output. "
                         f"Choose a directory outside it (default: {default_import_dir(raw_dir)})")


def group_time(times: list[RunTime]) -> tuple[RunTime, str]:
    """(start, run id) of a run directory: its earliest fully dated run (`YYYYMMDD-HHMMSS`, `YYYYMMDD` for a date);
    else its earliest month and day without a year (`MMDD`); else unknown (`undated`)."""
    dated = [t for t in times if t.order is not None]
    if dated:
        first = min(dated, key=lambda t: t.order or datetime.min)
        assert first.order is not None
        return first, first.order.strftime("%Y%m%d" if first.precision == "day" else "%Y%m%d-%H%M%S")
    partial = sorted((t for t in times if t.value is not None), key=lambda t: t.value or "")
    if partial:
        return partial[0], (partial[0].value or "").replace("-", "")
    return RunTime(), "undated"


def _engine_of(run: RawRun, given: Optional[str], file_engine: Optional[str], where: str, warnings: list[str]) -> str:
    """The engine of one run: --engine; else the server the run itself names (`framework`, `server_info`), which
    outranks the file name and `backend` (both name the request format in sglang.bench_serving's default names);
    else the file name's engine; else the engine `backend` names; else unknown."""
    if given:
        return given
    server = run.server_engine
    if server is not None:
        if file_engine and file_engine != server and file_engine.startswith(server + "-"):
            return file_engine  # the name refines the server's engine (vllm-dspark is a vllm server)
        if file_engine and file_engine != server:
            warnings.append(f"{where}: the run names its server {server} (`{run.server_engine_source}`) but the file name "
                            f"says {file_engine}; imported under {server}")
        return server
    return file_engine or run.engine or UNKNOWN


@dataclass
class FileImport:
    """What one raw file gives: scenarios with their (engine, model, chip), problems, plan lines."""

    source: RawSource
    runs: list[tuple[tuple[str, Optional[str], str], Scenario, RawRun, RunTime]] = field(default_factory=list)
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
    hints = folder_dated(name_hints(path.stem, pattern), path)
    if source.skip is not None:
        result.plan.append(f"skip {label}: {source.skip}")
        if path.name.endswith(".failure.json"):
            result.warnings.append(f"{label}: not imported: {source.skip}")
        return result
    outcome = read_raw_file(path, label, hints, strict=strict, options=options)
    result.warnings.extend(outcome.warnings)  # runs written twice, counted once
    if source.skip_items:
        left_out = dict(source.skip_items)
        for run in outcome.runs:
            index = run.index if run.index is not None else 0
            if index in left_out:
                result.plan.append(f"skip {label}:{_where(run)}: {left_out[index]}")
        outcome.runs = [r for r in outcome.runs if (r.index if r.index is not None else 0) not in left_out]
        if outcome.runs:
            result.warnings.append(f"{label}: {len(outcome.runs)} sweep summary element(s) with no run=N.json beside "
                                   f"them ({', '.join(_where(r) for r in outcome.runs)}): imported from the summary")
    result.problems.extend(outcome.problems)
    if outcome.sha256 is None:  # unreadable: one problem says why (read_raw_file), nothing is attributed
        for problem in outcome.problems:
            result.plan.append(f"skip {problem}")
        return result
    digest, size, lines = outcome.sha256, outcome.size, outcome.lines
    result.digest = (digest, size, lines)
    # a chip the name states wins over the given one (a kunlun_p800_* file never joins an H200 run);
    # the first part of `{prefix}_{engine}_…` counts only when it is a known chip
    name_chip = hints.chip if hints.chip_known else None
    chip = name_chip or platform.chip
    if name_chip and platform.chip_given and name_chip != platform.chip:
        result.warnings.append(f"{label}: the file name says chip {name_chip}; imported under {name_chip}, "
                               f"not under the given chip {platform.chip}")
    # sglang.bench_serving's default names start with the request format (sglang-oai, vllm-chat…): its engine
    file_engine = engine or ((engine_of(hints.engine) or hints.engine) if hints.engine else None)
    result.file_key = (file_engine or UNKNOWN, model or hints.model, chip)
    for run in outcome.runs:
        for note in run.notes:
            # counts that disagree, numbers that cannot be
            if note.startswith(("file name says", "client says completed=", "errors: ", FLAG)):
                result.warnings.append(f"{label}:{_where(run)}: {note}")
        run_engine = _engine_of(run, engine, file_engine, f"{label}:{_where(run)}", result.warnings)
        run_model = model or run.model or hints.model
        try:  # one run's boundary
            scenario = build_scenario(run, spec, Source(file=str(path), line=run.line, index=run.index, sha256=digest,
                                                 format=run.format),
                                      cap=cap)
            scenario.validity = judge_plausibility(  # raw files only: no side files
                judge_run(run, thresholds=validity), run.generated_texts, scenario.accept_length,
                draft_length(scenario, None), validity, scenario.output_len)
            check_writable(scenario)
        except Exception as exc:  # noqa: BLE001
            problem = Problem(label, run.line, unexpected(exc), run.index)
            if strict:
                raise RawFormatError(f"{problem} (--strict: stopped at the first bad run)") from None
            outcome.problems.append(problem)
            result.problems.append(problem)
            continue
        when = run_time(run, hints)
        stamp_time(scenario, when)
        if run.engine_version is not None:
            scenario.notes.append(f"engine version {run.engine_version} from the run's `{run.engine_version_source}`")
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
        result.runs.append((key, scenario, run, when))
        result.plan.append(
            f"import {label}:{_where(run)}: engine {run_engine}, model {run_model or UNKNOWN}, chip {run_chip}, "
            f"{_describe_shape(scenario)} -> {scenario.name}"
        )
    for problem in outcome.problems:
        result.plan.append(f"skip {problem}")
        result.skipped.append(_skip_entry(problem, hints))
    return result


def _run_dir_base(key: tuple[str, Optional[str], str], per_chip_engine: dict[tuple[str, str], int]) -> str:
    """`<chip>_<engine>` of a run directory (`_<model>` added when the chip and engine have several models)."""
    eng, run_model, chip = key
    base = f"{_safe(chip)}_{_safe(eng)}"
    if per_chip_engine[(chip, eng)] > 1:
        base += f"_{_safe(Path(run_model).name if run_model else UNKNOWN)}"
    return base if len(base) <= MAX_SEGMENT else path_segment(base, "-", UNKNOWN)  # a long model name fits NAME_MAX


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
    progress: Optional[Callable[[int, int, str], None]] = None,
    client_impl: Optional[str] = None,
) -> ImportOutcome:
    """Import every raw file under raw_dir into one run directory per (engine, model, chip) under out.
    `progress(done, total, file)` is called before each raw file is read and once at the end.

    `render_report(results, run_dir)` gives the text of each run's report.md
    (the CLI passes `publish.report_text`); without it no report.md is written.

    Re-running on the same raw_dir replaces the run directories it wrote before (same names: the
    names come from the runs' own times), so an import is idempotent.
    """
    check_import_dir(raw_dir, out)
    # the raw files are recorded by absolute path: `reparse` and `parse` of the run directory find them from
    # wherever they run, not only from the directory the import ran in
    raw_dir = Path(os.path.abspath(raw_dir))
    ignored: list[tuple[str, str]] = []
    sources = collect_raw_sources(raw_dir, ignored)
    if not sources:
        raise ConfigError(f"{raw_dir}: no *.jsonl or *.json files to import")
    try:
        pattern = compile_name_pattern(name_pattern) if name_pattern else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    options = ReadOptions(input_len=input_len, output_len=output_len, client_impl=client_impl)
    spec = slo or resolve_slo()
    stamp = (now or datetime.now().astimezone()).replace(microsecond=0)
    groups: dict[GroupKey, RunGroup] = {}
    unnamed: dict[tuple[str, str, Optional[str]], RunGroup] = {}
    problems: list[Problem] = []
    warnings: list[str] = [f"{display_name(label)}: {why}" for label, why in ignored]
    plan: list[str] = []
    copies: dict[tuple[str, frozenset[tuple[str, Optional[str], str]]], str] = {}  # -> the first file with those bytes
    if platform.hardware_auto and platform.hardware is None:
        warnings.append(f"platform {platform.name}: HARDWARE=auto describes the machine a run runs on, and an import "
                        "cannot tell which machine measured the raw files: hardware recorded as unknown unless the runs "
                        "record it; give --hardware TEXT, or set it later with `sskj-results metadata RUN_DIR --hardware TEXT`")
    unknown_chip: list[str] = []  # files with a run under chip 'unknown' (no chip given, none recorded or named)
    for number, source in enumerate(sources):
        if progress is not None:
            progress(number, len(sources), str(source.label))
        # the error boundary of one file: whatever goes wrong costs this file (or line) only
        try:
            done = import_file(source, platform, spec, engine=engine, model=model, strict=strict, cap=cap,
                               pattern=pattern, options=options, validity=validity)
        except RawFormatError:
            raise  # --strict
        except Exception as exc:  # noqa: BLE001
            done = FileImport(source, problems=[Problem(source.label, None, unexpected(exc))])
            done.plan.append(f"skip {done.problems[0]}")
        # `cp a b`: the same runs under a second name, into the same run directories, are not more evidence
        same = (done.digest[0], frozenset(key for key, *_ in done.runs))
        twin = copies.setdefault(same, source.label) if done.digest[0] and done.runs else source.label
        if twin != source.label:
            said = (f"{display_name(source.label)}: the same bytes as {display_name(twin)} (sha256 "
                    f"{done.digest[0][:12]}…): the same run(s) under a second name; counted once, from {display_name(twin)}")
            warnings.append(said)
            plan.append(f"skip {said}")
            continue
        problems.extend(done.problems)
        warnings.extend(done.warnings)
        plan.extend(done.plan)
        keys = []
        if not platform.chip_given and any(key[2] == platform.chip for key, *_ in done.runs):
            unknown_chip.append(display_name(source.label))
        for key, scenario, run, when in done.runs:
            if key[1] is None:  # no model named: joined below to the one model its engine, chip and day name
                group = unnamed.setdefault((key[0], key[2], day_of(when)), RunGroup(*key))
            else:
                group = groups.setdefault(key, RunGroup(*key))
            group.add(scenario, run, when, source.path, done.digest, done.hardware.get(key, set()))
            keys.append(key)
        if done.skipped:
            owner = keys[0] if keys else done.file_key
            if owner is not None:
                group = groups.setdefault(owner, RunGroup(*owner))
                group.skipped.extend(done.skipped)
                group.sources.setdefault(source.path, done.digest)
    if progress is not None:
        progress(len(sources), len(sources), "")
    if unknown_chip:  # said only where it happens: a file name's or a run's own chip is no unknown one
        warnings.insert(0, f"no chip given (--platform or --chip): {len(unknown_chip)} file(s) whose runs record no "
                        f"chip and whose name names none ({', '.join(unknown_chip[:3])}{', …' * (len(unknown_chip) > 3)}) "
                        "are imported with chip 'unknown'; set it later with `sskj-results metadata RUN_DIR --chip "
                        "CHIP --hardware TEXT`")
    join_unknown_models(groups, unnamed, warnings)
    for key, group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        if not group.scenarios:
            continue
        for name in sorted({Path(s.source.file).name for s in group.scenarios if s.source}):
            if group.engine == UNKNOWN:
                warnings.append(f"{display_name(name)}: not attributed to an engine (neither the file name nor the runs' backend "
                                "names one); recorded as 'unknown': give --engine or a --name-pattern with {engine}")
            if group.model is None:
                warnings.append(f"{display_name(name)}: not attributed to a model (the runs do not name it); recorded as 'unknown' "
                                f"under engine {group.engine}: give --model")
    raw_abs = str(raw_dir.resolve())
    per_chip_engine: dict[tuple[str, str], int] = {}
    for key in groups:
        if groups[key].scenarios:
            per_chip_engine[(key[2], key[0])] = per_chip_engine.get((key[2], key[0]), 0) + 1
    if dry_run:
        for key, group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
            if group.scenarios:
                name = _run_dir_base(key, per_chip_engine) + "_" + group_time(group.times)[1]
                verb = "would replace" if _own_previous(out / name, raw_abs, key) else "would write"
                plan.append(f"{verb} run folder {out / name}: engine {key[0]}, model {key[1] or UNKNOWN}, chip {key[2]}, "
                            f"{len(group.scenarios)} scenario(s) from {len(group.sources)} file(s)")
        return ImportOutcome([], problems, warnings, plan)
    out.mkdir(parents=True, exist_ok=True)
    # one import into `out` at a time: choosing a name, replacing an earlier import and the sweep below
    # read and change the directory as a whole
    with locked(out):
        recover_backups(out)  # a run directory a killed import had moved aside comes back first
        return _write_groups(raw_dir, out, groups, platform, experiment, stamp, server_args, name_format, spec,
                             validity, command, render_report, problems, warnings, plan, per_chip_engine)


def _write_groups(raw_dir: Path, out: Path, groups: dict[GroupKey, RunGroup], platform: Platform,
                  experiment: Optional[str], stamp: datetime, server_args: Optional[str], name_format: Optional[str],
                  spec: SloSpec, validity: Optional[ValidityThresholds], command: Optional[str],
                  render_report: Optional[ReportRenderer], problems: list[Problem], warnings: list[str],
                  plan: list[str], per_chip_engine: dict[tuple[str, str], int]) -> ImportOutcome:
    raw_abs = str(raw_dir.resolve())
    run_dirs: list[Path] = []
    replaced: list[Path] = []
    for key, group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        if not group.scenarios:
            continue
        eng, run_model, chip = key
        # the error boundary of one run directory: a group that cannot be written costs that group only
        try:
            started, run_id = group_time(group.times)
            if len(group.engine_versions) > 1:
                warnings.append(f"run directory of engine {eng}, model {run_model or UNKNOWN}, chip {chip}: its runs record "
                                f"engine versions {', '.join(sorted(group.engine_versions))}; each scenario's notes say which")
            hardware, accelerator = (platform.hardware, platform.accelerator) if chip == platform.chip else (None, None)
            if chip == UNKNOWN:
                hardware = UNKNOWN
            elif len(group.recorded_hardware) == 1 and (chip != platform.chip or hardware is None):
                hardware = next(iter(group.recorded_hardware))  # as the runs record it
            srcs = [(p, *group.sources[p]) for p in sorted(group.sources)]
            # the settings the server command gives, as `metadata --config server_args=...` derives them
            derived = config_from_server_args(server_args) if server_args else {}
            apply_server_args(group.scenarios, server_args, draft_tokens_of(eng, derived.get("spec_tokens")), validity)
            runs_of = Counter(s.source.file for s in group.scenarios if s.source)  # one pass, not one per file
            results = Results(
                metadata=Metadata(
                    experiment=experiment or f"import_{raw_dir.resolve().name}", run_id=run_id,
                    timestamp=started.value, timestamp_precision=started.precision, timestamp_source=started.source,
                    engine_version=", ".join(sorted(group.engine_versions)) or None,
                    client_version=", ".join(sorted(group.client_versions)) or None,
                    model=run_model or UNKNOWN, engine=eng, backend=eng,
                    hardware=hardware, accelerator=accelerator, chip=chip,
                    platform=platform.name if chip == platform.chip else None, script="sskj-results import-legacy",
                    client=_client_of(group.scenarios), tool_version=__version__,
                    description=f"imported from {len(srcs)} raw file(s) in {raw_dir}",
                    imported_at=stamp.isoformat(), imported_from=raw_abs,
                ),
                config=Config(server_args=server_args or NOT_RECORDED, scenario_name_format=name_format, **derived),
                scenarios=name_scenarios(group.scenarios, name_format), slo=spec, skipped=group.skipped,
                raw_files=[RawFile(file=str(p), sha256=d, size=s, runs=runs_of.get(str(p), 0)) for p, d, s, _ in srcs],
                validity_thresholds=validity,
            )
            base = _run_dir_base(key, per_chip_engine)
            target = out / f"{base}_{run_id}"
            previous = _own_previous(target, raw_abs, key)
            if previous:
                replaced.append(target)
            else:
                target = _unique_dir(target)
            kept = _write_run_dir_atomically(target, results, srcs, command, render_report, replace=previous)
            if kept:
                warnings.append(f"{display_name(target)}: kept {', '.join(map(display_name, kept))} "
                                "(not written by import-legacy) in the re-imported run directory")
            run_dirs.append(target)
            # an earlier import of the same raw directory and group under another time (files were added or
            # removed), or of the same raw files under another chip (an earlier import without --platform)
            files = frozenset((Path(p).name, d) for p, d, _, _ in srcs)
            for stale in sorted(out.glob(f"{base}_*")) + sorted(out.glob(f"*_{_safe(eng)}_*")):
                if stale != target and stale.is_dir() and _own_previous(stale, raw_abs, key, files):
                    left = remove_own_stale(stale)
                    if left:
                        warnings.append(f"{display_name(stale)}: an earlier import of these raw files, replaced by "
                                        f"{display_name(target.name)}; kept {', '.join(map(display_name, left))} "
                                        "(not written by import-legacy) there, removed the rest")
                    if target not in replaced:
                        replaced.append(target)
        except Exception as exc:  # noqa: BLE001
            first = sorted(group.sources)[0] if group.sources else raw_dir
            label = str(first.relative_to(raw_dir)) if first != raw_dir and first.is_relative_to(raw_dir) else str(first)
            reason = describe_os_error(exc) if isinstance(exc, OSError) else unexpected(exc)
            problems.append(Problem(label, None, f"run directory of engine {eng}, model {run_model or UNKNOWN}, chip {chip} "
                                    f"({len(group.scenarios)} scenario(s)) not written: {reason}"))
    return ImportOutcome(run_dirs, problems, warnings, plan, replaced)
