"""`sskj-results parse`: a run directory's raw_outputs/ (and sidecars) -> its results.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .. import __version__
from ..analysis.plausibility import draft_tokens_of, judge_plausibility, mark_synthetic, synthetic_settings
from ..analysis.slo import resolve_slo, slo_status
from ..contract.metrics import METRICS
from ..contract.clientinfo import Acceptance
from ..contract.errors import RawFormatError, ResultsError
from ..contract.locking import locked, recover_backup
from ..contract.io import RESULTS_NAME, check_writable, describe_os_error, display_name, load_run, save_run
from ..contract.models import RawFile, Results, Scenario, SkippedScenario, SloSpec, Source, ValidityThresholds
from .evidence import Speculation, judge_run
from .power import chip_figures, per_accel_figures
from .filenames import name_hints
from .hashing import sha256_files_each
from .naming import name_scenarios
from .plausible import FLAG
from .clientprint import best_acceptance, client_of_run, draft_length, read_client_info
from .streaming import command_streaming
from .rawsources import list_raw_dir
from .scenario import RAW_REQUESTS_CAP, Problem, _bulk, _skip_entry, build_scenario, read_raw_file, run_time, unexpected
from .sidecars import (
    acceptance_between,
    cache_reset,
    read_metrics,
    read_skipped,
    prompt_method_of,
    sidecar_digest,
    sidecar_paths,
    summarize_gpu_log,
    summarize_xpu_log,
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
    """The raw outputs of a directory (any case of .jsonl/.json; see rawsources.list_raw_dir)."""
    return list_raw_dir(directory).files


@_bulk
def parse_run_dir(run_dir: Path, slo: Optional[SloSpec] = None, cap: int = RAW_REQUESTS_CAP,
                  name_format: Optional[str] = None, validity: Optional[ValidityThresholds] = None) -> ParseOutcome:
    """Merge RUN_DIR/raw_outputs/* into RUN_DIR/results.json (idempotent, atomic).

    Scenario names follow name_format, else config.scenario_name_format, else
    `c{concurrency}_i{input_len}_o{output_len}`; a given format is recorded in config.
    Validity thresholds: the given ones, else the recorded ones, else the defaults.
    Holds the run's lock from reading results.json to writing it (a `metadata` meanwhile waits).
    """
    recover_backup(run_dir)  # a re-import killed while it swapped this run directory
    with locked(run_dir):
        return _parse_locked(run_dir, slo, cap, name_format, validity)


def _parse_locked(run_dir: Path, slo: Optional[SloSpec], cap: int, name_format: Optional[str],
                  validity: Optional[ValidityThresholds]) -> ParseOutcome:
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
    # quick check (as rsync and make do): a file whose size, mtime and ctime are those
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
        if prev is not None and prev.mtime_ns == st.st_mtime_ns and prev.size == st.st_size and not prev.damaged \
                and prev.ctime_ns == st.st_ctime_ns:  # `cp -p` keeps size and mtime, never ctime
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
    versions: dict[str, set[str]] = {"engine_version": set(), "client_version": set()}
    draft_tokens = _draft_tokens(existing)
    synthetic = synthetic_settings(existing.config)

    def keep_recorded(label: str, reason: str, old: Optional[list[Scenario]] = None,
                      record: Optional[RawFile] = None) -> None:
        """parse never forgets a measured scenario: a raw file imported before that is now
        missing, unreadable or corrupt keeps its recorded scenarios (`old`: those of its lines
        that are not read now) and is marked damaged."""
        kept = [_rejudged(s, spec, same_slo) for s in (old_by_file[label] if old is None else old)]
        scenarios.extend(kept)
        prev = record or known.get(label)
        records.append(prev.model_copy(update={"damaged": reason}) if prev is not None else
                       RawFile(file=label, sha256="", size=0, runs=len(kept), damaged=reason))
        warnings.append(f"{display_name(label)}: {reason}; kept its {len(kept)} recorded scenario(s) and marked it "
                        "damaged (the next RESUME measures it again)")

    copies: dict[str, str] = {}  # sha256 -> the first raw file with those bytes
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
        mtime_ns, ctime_ns = stamps[path].st_mtime_ns, stamps[path].st_ctime_ns
        twin = copies.setdefault(digest, label)
        if twin != label:  # `cp a b`: the same runs under a second name are not more evidence
            warnings.append(f"{display_name(label)}: the same bytes as {display_name(twin)} (sha256 {digest[:12]}…): "
                            f"the same run(s) under a second name; counted once, from {display_name(twin)}")
            records.append(RawFile(file=label, sha256=digest, size=size, runs=0, mtime_ns=mtime_ns,
                                   ctime_ns=ctime_ns))
            continue
        try:
            sides = sidecar_paths(run_dir, path.stem)
            side_digest = sidecar_digest(sides)
        except OSError as exc:
            warnings.append(f"side files of {display_name(label)}: cannot read: {describe_os_error(exc)}; ignored")
            sides, side_digest = [], None
        prev = known.get(label)
        # a scenario parsed before power records existed is read again when it has power samples
        kept = old_by_file.get(label, [])
        unpowered = len(kept) == 1 and kept[0].power is None and any(p.parent.name == "gpu_logs" for p in sides)
        if same_slo and prev and prev.sha256 == digest and prev.sidecar_sha256 == side_digest and label in old_by_file \
                and not prev.damaged and all(s.validity is not None for s in old_by_file[label]) and not unpowered:
            for s in old_by_file[label]:  # shallow copies: renaming must not touch `existing`
                scenarios.append(s.model_copy())
                per_accel_figures(scenarios[-1], existing.metadata, existing.config)  # the metadata may have changed
            same = (prev.mtime_ns, prev.ctime_ns) == (mtime_ns, ctime_ns)
            records.append(prev if same else prev.model_copy(update={"mtime_ns": mtime_ns, "ctime_ns": ctime_ns}))
            reused += 1
            continue
        read += 1
        hints = name_hints(path.stem)
        # the error boundary of one file: whatever goes wrong costs this file (or line) only
        built: list[Scenario] = []
        try:
            outcome = read_raw_file(path, label, hints, digest=False)  # hashed above
            file_problems = list(outcome.problems)
            warnings.extend(outcome.warnings)  # runs written twice, counted once
            warnings.extend(f"{label}:{run.line}{'' if run.index is None else f'[{run.index}]'}: {note}"
                            for run in outcome.runs for note in run.notes if note.startswith(FLAG))
            accept, gpu = _sidecar_values(run_dir, path.stem, len(outcome.runs), warnings)
            info = _client_info(run_dir, path.stem, len(outcome.runs), warnings)
            reset, why = cache_reset(run_dir / "server_metrics" / f"{path.stem}.reset.http")
            if reset is False:
                warnings.append(f"server_metrics/{path.stem}.reset.http: prefix cache not reset ({why}); "
                                "the scenario may have run on a warm cache")
            method, source = prompt_method_of(run_dir, path.stem, warnings)
            for run in outcome.runs:
                try:
                    command_streaming(run, info)
                    scenario = build_scenario(run, spec, Source(file=label, line=run.line, index=run.index, sha256=digest,
                                                                     format=run.format),
                                              cap=cap)
                    best_acceptance(scenario, accept, draft_tokens)
                    scenario.acceptance = mark_synthetic(scenario.acceptance, synthetic)
                    client_of_run(scenario, info, existing.metadata.client, existing.metadata.client_version)
                    scenario.accelerator_usage = gpu
                    scenario.prefix_cache_reset = reset
                    scenario.prompt_method, scenario.prompt_source = method, source
                    when = run_time(run)  # the run's own time keys only (the client's `date`)
                    if when.value is not None:
                        scenario.timestamp, scenario.timestamp_precision = when.value, when.precision
                        scenario.timestamp_source = when.source
                    _note_server(run, existing.metadata.engine, label, versions, warnings)
                    draft = draft_length(scenario, draft_tokens)
                    speculation = Speculation(speculative=bool(existing.config.spec_method),
                                              method=existing.config.spec_method, draft_tokens=draft,
                                              accept_length=scenario.accept_length)
                    scenario.validity = judge_plausibility(
                        judge_run(run, run_dir, path.stem, len(outcome.runs), thresholds, speculation),
                        run.generated_texts, scenario.accept_length, draft, thresholds, scenario.output_len)
                    chip_figures(scenario, run, run_dir, path.stem, len(outcome.runs), existing.metadata,
                                 existing.config, warnings)
                    check_writable(scenario)
                except Exception as exc:  # noqa: BLE001 - one run's boundary
                    file_problems.append(Problem(label, run.line, unexpected(exc), run.index))
                    continue
                built.append(scenario)
        except Exception as exc:  # noqa: BLE001
            file_problems = [Problem(label, None, unexpected(exc))]
            built = []
        # the unit is the line: every line read now counts, each bad one is named, and a scenario recorded
        # from a line that is not read now is kept
        fresh = {(s.source.line, s.source.index) for s in built if s.source is not None}
        old = [s for s in old_by_file.get(label, []) if s.source is None or (s.source.line, s.source.index) not in fresh]
        whole = next((p for p in file_problems if p.line is None), None)
        if file_problems and (old or (whole and label in old_by_file)):
            covered = {(s.source.line, s.source.index) for s in old if s.source is not None}
            said = whole or (None if built else file_problems[0])  # nothing read: the file's line names it
            for problem in file_problems:
                if problem is said:
                    continue
                if (problem.line, problem.index) in covered:
                    warnings.append(f"{problem}; kept the scenario recorded from this line")
                else:
                    problems.append(problem)
                    skipped.append(_skip_entry(problem, hints))
            scenarios.extend(built)
            reason = f"now unreadable or corrupt ({said})" if said else \
                f"{len(file_problems)} run(s) now unreadable or corrupt (each named)"
            keep_recorded(label, reason, old, None if whole else RawFile(
                file=label, sha256=digest, size=size, runs=len(built) + len(old), sidecar_sha256=side_digest,
                mtime_ns=mtime_ns, ctime_ns=ctime_ns))
            continue
        problems.extend(file_problems)
        skipped.extend(_skip_entry(p, hints) for p in file_problems)
        scenarios.extend(built)
        records.append(RawFile(file=label, sha256=digest, size=size, runs=len(built), sidecar_sha256=side_digest,
                               mtime_ns=mtime_ns, ctime_ns=ctime_ns))
    listed = {f"raw_outputs/{p.name}" for p in paths}
    left_out = {f"raw_outputs/{p.name}": why for p, why in listing.ignored}  # a recorded file renamed `.x`: said
    for label in sorted(set(old_by_file) - listed):
        if label.startswith("raw_outputs/"):
            keep_recorded(label, left_out.get(label, "missing"))
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
    meta_update: dict[str, Any] = {"tool_version": __version__}
    for key, found in versions.items():
        if getattr(existing.metadata, key) is None and found:  # what the runs record, when nothing else did
            meta_update[key] = ", ".join(sorted(found))
    results = existing.model_copy(update={
        "scenarios": name_scenarios(scenarios, fmt), "raw_files": records, "slo": spec, "skipped": skipped,
        "metadata": existing.metadata.model_copy(update=meta_update), "config": config,
        "validity_thresholds": thresholds,
    })
    if read or results != existing:  # an unchanged run is not rewritten
        save_run(results, file)
    return ParseOutcome(results, problems, warnings, read, reused)


def _note_server(run: Any, engine: Optional[str], label: str, versions: dict[str, set[str]], warnings: list[str]) -> None:
    """Collect the versions a run records; warn when the server it names is not the run's recorded engine."""
    if run.engine_version is not None:
        versions["engine_version"].add(run.engine_version)
    if run.client_version is not None:
        versions["client_version"].add(run.client_version)
    server = run.server_engine
    if server is not None and engine and server != engine and not engine.startswith(server + "-"):
        warnings.append(f"{display_name(label)}:{run.line}: the run names its server {server} "
                        f"(`{run.server_engine_source}`) but the run directory records engine {engine}")


def _rejudged(scenario: Scenario, spec: SloSpec, same_slo: bool) -> Scenario:
    """A recorded scenario kept without its raw file, judged against the current SLO: the registry's metrics
    judged against the SLO (goodput) become unknown."""
    if same_slo:
        return scenario.model_copy()
    lat = scenario.latencies
    return scenario.model_copy(update={"slo_status": slo_status(lat.ttft_ms.p95, lat.tpot_ms.mean, spec),
                                       **{m.name: None for m in METRICS if m.slo_dependent}})


def _draft_tokens(results: Results) -> Optional[int]:
    """config.spec_tokens as a draft length (analysis/plausibility.draft_tokens_of: the engine row's rule)."""
    return draft_tokens_of(results.metadata.engine or results.metadata.backend, results.config.spec_tokens)


def _client_info(run_dir: Path, stem: str, runs: int, warnings: list[str]) -> Optional[dict[str, Any]]:
    """The run loop's record of the client of raw file <stem> (one scenario per file only)."""
    try:
        info = read_client_info(run_dir / "client_info" / f"{stem}.json")
    except RawFormatError as exc:
        warnings.append(str(exc))
        return None
    if info is not None and runs != 1:
        warnings.append(f"client_info/{stem}.json: {runs} runs in the raw file; it describes one scenario only, ignored")
        return None
    return info


def _sidecar_values(run_dir: Path, stem: str, runs: int, warnings: list[str]) -> tuple[Optional[Acceptance], Any]:
    before = run_dir / "server_metrics" / f"{stem}.before.prom"
    after = run_dir / "server_metrics" / f"{stem}.after.prom"
    gpu_csv = run_dir / "gpu_logs" / f"{stem}.csv"
    accept = gpu = None
    if before.is_file() and after.is_file():
        if runs == 1:
            try:
                accept = acceptance_between(read_metrics(before), read_metrics(after))
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

