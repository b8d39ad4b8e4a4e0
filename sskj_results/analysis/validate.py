"""Validation of results.json files and run directories: every problem, one line each.

Layers, all reported together: JSON syntax, the committed JSON Schema, the
pydantic model, then the workflow rules of BENCHMARK_WORKFLOW.md and the
run-directory checklist.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

from pydantic import ValidationError

from ..contract.errors import ResultsError
from ..contract.io import RESULTS_NAME, format_loc, model_message, read_json_text
from ..contract.io import display_name, one_line, read_text_checked
from ..contract.models import Results, Validity, ValidityThresholds
from ..contract.runset import check_run_set, is_index_file, is_run_set_data
from ..contract.metrics import LATENCY_NAMES, SECTION_METRICS, and_words
from .grades import grade, scoped, short_names, unreliable_of
from .slo import overall_mark

ERROR = "error"
WARNING = "warning"
PERCENTILE_KEYS = ("p50", "p90", "p95", "p99")
SECTION_NAMES = tuple(m.name for m in SECTION_METRICS)  # scenarios[].<name>: distributions sskj computes
PHASE_ARGS_RE = re.compile(r"^phase\d+_server_args$")


@dataclass(frozen=True)
class Problem:
    file: str
    path: str
    message: str
    severity: str = ERROR

    def line(self) -> str:
        tag = "warning: " if self.severity == WARNING else ""
        text = f"{self.file}: {self.path}: {tag}{self.message}" if self.path else f"{self.file}: {tag}{self.message}"
        return one_line(text)


@dataclass
class FileReport:
    file: str
    problems: list[Problem]

    @property
    def valid(self) -> bool:
        return not any(p.severity == ERROR for p in self.problems)

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "valid": self.valid,
            "errors": [asdict(p) for p in self.problems if p.severity == ERROR],
            "warnings": [asdict(p) for p in self.problems if p.severity == WARNING],
        }


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    from ..contract.schema import results_schema

    return jsonschema.Draft202012Validator(results_schema())


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _schema_types(schema: dict[str, Any]) -> list[str]:
    if "anyOf" in schema:
        return [t for sub in schema["anyOf"] for t in _schema_types(sub)]
    if "type" in schema:
        kind = schema["type"]
        return list(kind) if isinstance(kind, list) else [kind]
    if "const" in schema:
        return [json.dumps(schema["const"], ensure_ascii=False)]
    if "enum" in schema:
        return [json.dumps(v, ensure_ascii=False) for v in schema["enum"]]
    if "$ref" in schema:
        return ["object"]
    return []


def _schema_message(error: Any) -> tuple[str, str]:
    """(json path, message) for one jsonschema error, phrased for a person."""
    path = list(error.absolute_path)
    kind = error.validator
    if kind == "required":
        missing = re.match(r"'(.+)' is a required property", error.message)
        key = missing.group(1) if missing else "?"
        return format_loc(path + [key]), "missing required key"
    if kind == "additionalProperties":
        extra = re.findall(r"'([^']+)'", error.message.split("(")[-1])
        return format_loc(path), f"unknown key(s) {', '.join(extra)}; see schema/results.schema.json"
    if kind in ("anyOf", "oneOf"):
        for sub in error.context or ():
            if sub.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "pattern"):
                return _schema_message(sub)  # the right type, out of range (e.g. an optional count of 0)
        expected = " or ".join(dict.fromkeys(_schema_types(error.schema))) or "a valid value"
        return format_loc(path), f"expected {expected}, got {_short(error.instance)}"
    if kind == "type":
        expected = error.validator_value
        if isinstance(expected, list):
            expected = " or ".join(expected)
        return format_loc(path), f"expected {expected}, got {_short(error.instance)}"
    if kind == "enum":
        choices = ", ".join(json.dumps(v, ensure_ascii=False) for v in error.validator_value)
        return format_loc(path), f"expected one of {choices}, got {_short(error.instance)}"
    if kind == "const":
        return format_loc(path), f"expected {json.dumps(error.validator_value)}, got {_short(error.instance)}"
    if kind == "pattern" and path and path[-1] == "timestamp":
        return format_loc(path), f"{_short(error.instance)} is not ISO-8601 with a UTC offset (e.g. 2026-07-07T13:26:41+08:00)"
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        return format_loc(path), f"{_short(error.instance)} is out of range ({kind} {error.validator_value})"
    return format_loc(path), error.message


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _rules(data: dict[str, Any], file: str) -> Iterator[Problem]:
    """The workflow rules (seed BENCHMARK_WORKFLOW), on the raw dict, tolerant of wrong types."""
    meta = data.get("metadata")
    if isinstance(meta, dict):
        if not (meta.get("accelerator") or meta.get("chip")):
            yield Problem(file, "metadata", "neither accelerator nor chip is set; record the chip (e.g. --chip or platforms/<chip>.env)")
        elif meta.get("chip") == "unknown":
            run_dir = Path(file).parent
            yield Problem(file, "metadata.chip", "is 'unknown' (imported without a chip); set it with "
                          f"`sskj-results metadata {run_dir} --chip CHIP --hardware TEXT`", WARNING)
        if not (meta.get("engine") or meta.get("backend")):
            yield Problem(file, "metadata", "neither engine nor backend is set; record the inference engine (e.g. --engine)")
    config = data.get("config")
    spec_method = None
    if isinstance(config, dict):
        spec_method = config.get("spec_method")
        has_args = any(
            isinstance(v, str) and v.strip() and (k == "server_args" or PHASE_ARGS_RE.match(k))
            for k, v in config.items()
        )
        if not has_args:
            yield Problem(file, "config.server_args", "missing: record the exact server launch command (server_args or phaseN_server_args)")
    slo = data.get("slo") if isinstance(data.get("slo"), dict) else None
    scenarios = data.get("scenarios")
    if not isinstance(scenarios, list):
        return
    if not scenarios:
        if _is_dry_run(data):
            yield Problem(file, "config.dry_run", "a dry run (DRY_RUN=1): its metadata and server command only, "
                          "nothing was measured; run it without DRY_RUN to measure", WARNING)
        else:
            yield Problem(file, "scenarios", "no scenarios measured yet", WARNING)
    seen: dict[str, int] = {}
    for i, sc in enumerate(scenarios):
        if not isinstance(sc, dict):
            continue
        base = f"scenarios[{i}]"
        name = sc.get("name")
        if isinstance(name, str):
            if name in seen:
                yield Problem(file, f"{base}.name", f"duplicate scenario name {name!r} (also scenarios[{seen[name]}])")
            seen.setdefault(name, i)
        if "accept_length" not in sc:
            yield Problem(file, f"{base}.accept_length", "missing: write null when not speculative, never omit the key")
        elif sc.get("accept_length") is not None and not spec_method:
            yield Problem(file, f"{base}.accept_length", "set although config.spec_method is null; record spec_method", WARNING)
        recon_raw = sc.get("reconstructed")
        recon = recon_raw if isinstance(recon_raw, dict) else {}
        yield from _latency_rules(sc.get("latencies"), f"{base}.latencies", file, recon)
        yield from _order_rules(sc, SECTION_NAMES, base, file, recon)
        yield from _slo_rules(sc, base, file, slo)
        yield from _count_rules(sc, base, file)
        yield from _mean_rules(sc, base, file, recon)
        yield from _validity_rules(sc, base, file, data.get("validity_thresholds"))
        yield from _chip_rules(sc, base, file)


def _chip_rules(sc: dict[str, Any], base: str, file: str) -> Iterator[Problem]:
    """The per-accelerator and energy figures agree with what they are computed from (docs/METRICS.md)."""
    count = sc.get("accelerators")
    for per, whole in (("output_throughput_per_accel", "output_token_throughput"),
                       ("total_throughput_per_accel", "total_token_throughput")):
        value, total = _num(sc.get(per)), _num(sc.get(whole))
        if value is not None and (not isinstance(count, int) or total is None
                                  or not math.isclose(value * count, total, rel_tol=1e-6)):
            yield Problem(file, f"{base}.{per}", f"is not {whole} / accelerators ({total} / {count}); run "
                          "`sskj-results parse` on the run directory to compute it again")
    power = sc.get("power")
    energy = _num(sc.get("energy_j"))
    if energy is not None and not (isinstance(power, dict) and power.get("valid") is True):
        yield Problem(file, f"{base}.energy_j", "set without a valid power record (scenarios[].power.valid); an "
                      "energy figure needs samples that cover the benchmark window")
    per_token, per_kwh = _num(sc.get("joules_per_output_token")), _num(sc.get("output_tokens_per_kwh"))
    if per_token is not None and per_kwh is not None and not math.isclose(per_token * per_kwh, 3.6e6, rel_tol=1e-6):
        yield Problem(file, f"{base}.output_tokens_per_kwh", "is not 3.6e6 / joules_per_output_token")


# the client's own mean and the mean of its per-request arrays (raw_requests) may differ by this much
MEAN_TOLERANCE = 0.10


def _mean_rules(sc: dict[str, Any], base: str, file: str, recon: dict[str, Any]) -> Iterator[Problem]:
    """The client's mean against the mean of the per-request arrays recorded beside it
    (docs/INPUT_LIMITS.md): about 1000x apart, the arrays were written in ms instead of s."""
    requests, lat = sc.get("raw_requests"), sc.get("latencies")
    if not isinstance(requests, list) or not requests or sc.get("raw_requests_capped") or not isinstance(lat, dict):
        return
    for key in ("ttft_ms", "e2e_ms"):
        stats = lat.get(key)
        client = _num(stats.get("mean")) if isinstance(stats, dict) else None
        if client is None or client <= 0 or f"latencies.{key}.mean" in recon:
            continue  # no client value to hold the arrays against
        values = [v for r in requests if isinstance(r, dict) and r.get("success") is True
                  and (v := _num(r.get(key))) is not None]
        if not values:
            continue
        arrays = sum(values) / len(values)
        ratio = arrays / client
        path = f"{base}.latencies.{key}.mean"
        if 300 <= ratio <= 3000 or 1 / 3000 <= ratio <= 1 / 300:
            yield Problem(file, path, f"the client's mean is {client:g} ms but the per-request arrays (raw_requests[].{key}) "
                          f"average {arrays:g} ms, {ratio:.3g}x: the arrays look written in "
                          f"{'ms instead of s' if ratio > 1 else 's instead of ms'}; their statistics are wrong")
        elif abs(ratio - 1) > MEAN_TOLERANCE:
            yield Problem(file, path, f"the client's mean {client:g} ms and the mean of the per-request arrays "
                          f"(raw_requests[].{key}) {arrays:g} ms differ by {abs(ratio - 1):.0%}, more than "
                          f"{MEAN_TOLERANCE:.0%}", WARNING)


# The word of a point's grade in validate's lines (docs/VALIDITY.md "Grades"); a line starts with it.
POINT_WORDS = {"disqualified": "invalid point", "partial": "partly unreliable point", "qualified": "qualified point"}


def _point_grade(validity: dict[str, Any], thresholds: Any) -> Optional[str]:
    """The point's grade (grades.grade) read from its recorded block, None when the block does not parse."""
    try:
        block = Validity.model_validate(validity)
        limits = ValidityThresholds.model_validate(thresholds) if isinstance(thresholds, dict) else None
    except ValidationError:
        return None
    return grade(block, limits)


def _validity_rules(sc: dict[str, Any], base: str, file: str, thresholds: Any = None) -> Iterator[Problem]:
    """A failed validity check (docs/VALIDITY.md) is a warning naming the point's grade: an invalid point (not a
    measurement of the engine), a partly unreliable one (the metrics it names are not believed, the rest stand) or
    a qualified one (measured, with a caveat); `validate --strict` makes every one an error."""
    validity = sc.get("validity")
    checks = validity.get("checks") if isinstance(validity, dict) else None
    if not isinstance(checks, list):
        return
    word = POINT_WORDS.get(_point_grade(validity, thresholds) or "", "invalid point")  # type: ignore[arg-type]
    for j, check in enumerate(checks):
        if isinstance(check, dict) and check.get("ok") is False:
            scope = ""
            if word == POINT_WORDS["partial"] and scoped(str(check.get("name"))):
                scope = f" ({short_names(unreliable_of([str(check.get('name'))]))} unreliable, the other metrics stand)"
            yield Problem(file, f"{base}.validity.checks[{j}]",
                          f"{word} {sc.get('name')}: {check.get('name')}: {check.get('message')}{scope}", WARNING)


VALIDITY_PATH = re.compile(r"^scenarios\[\d+\]\.validity\.")


def graded_points(report: FileReport) -> dict[str, int]:
    """How many points of the file failed a validity check, per grade word (POINT_WORDS' values)."""
    found: dict[str, set[str]] = {word: set() for word in POINT_WORDS.values()}
    for p in report.problems:
        if VALIDITY_PATH.match(p.path):
            for word in found:
                if p.message.startswith(word + " "):
                    found[word].add(p.path.split("]", 1)[0])
    return {word: len(points) for word, points in found.items()}


def invalid_points(report: FileReport) -> int:
    """How many points of the file are invalid (disqualified: a measurement-integrity check failed)."""
    return graded_points(report)[POINT_WORDS["disqualified"]]


def strict_validity(reports: list[FileReport]) -> list[FileReport]:
    """`validate --strict`: invalid points (failed validity checks) become errors."""
    for report in reports:
        report.problems = [Problem(p.file, p.path, p.message, ERROR) if VALIDITY_PATH.match(p.path) else p
                           for p in report.problems]
    return reports


def _latency_rules(lat: Any, base: str, file: str, recon: dict[str, Any]) -> Iterator[Problem]:
    if not isinstance(lat, dict):
        if lat is None:
            yield Problem(file, base, f"missing: every scenario needs {and_words(LATENCY_NAMES)} statistics")
        return
    yield from _order_rules(lat, LATENCY_NAMES, base, file, recon, "latencies.")


def _order_rules(holder: dict[str, Any], keys: Sequence[str], base: str, file: str, recon: dict[str, Any],
                 local: str = "") -> Iterator[Problem]:
    """Percentiles of every distribution named in `keys` must not decrease (p50 <= p90 <= p95 <= p99); a null
    one is a warning, unless nothing was measured (`count` null, or 0 for a distribution sskj computes)."""
    for key in keys:
        stats = holder.get(key)
        if not isinstance(stats, dict):
            continue
        previous: Optional[tuple[str, float]] = None
        for p in PERCENTILE_KEYS:
            if p not in stats:
                continue
            value = _num(stats.get(p))
            if stats.get(p) is None:
                if "count" in stats and (stats.get("count") is None or (not local and stats.get("count") == 0)):
                    continue  # no per-request data: nobody measured this statistic
                yield Problem(file, f"{base}.{key}.{p}", "is null (no samples); skipped in the order check", WARNING)
                continue
            if value is None:
                continue
            if previous is not None and value < previous[1]:
                mixed = f"{local}{key}.{p}" in recon or f"{local}{key}.{previous[0]}" in recon
                if mixed:
                    yield Problem(
                        file, f"{base}.{key}.{p}",
                        f"{value:g} is below {previous[0]} {previous[1]:g}: one is the client's value, the other "
                        "reconstructed from per-request data (see reconstructed)", WARNING,
                    )
                else:
                    yield Problem(
                        file, f"{base}.{key}.{p}",
                        f"{value:g} is below {previous[0]} {previous[1]:g}; percentiles must be non-decreasing "
                        "(p50 <= p90 <= p95 <= p99)",
                    )
            previous = (p, value)


def _slo_rules(sc: dict[str, Any], base: str, file: str, slo: Optional[dict[str, Any]]) -> Iterator[Problem]:
    status = sc.get("slo_status")
    if not isinstance(status, dict):
        return
    ttft_ok, tpot_ok, overall = status.get("ttft_p95_ok"), status.get("tpot_mean_ok"), status.get("overall")
    if all(v is None or isinstance(v, bool) for v in (ttft_ok, tpot_ok)) and isinstance(overall, str):
        expected = overall_mark(ttft_ok, tpot_ok)
        if overall != expected:
            yield Problem(
                file, f"{base}.slo_status.overall",
                f"{overall!r} disagrees with ttft_p95_ok={json.dumps(ttft_ok)}, tpot_mean_ok={json.dumps(tpot_ok)} (expected {expected!r})",
            )
    if slo is None:
        return
    lat_raw = sc.get("latencies")
    lat = lat_raw if isinstance(lat_raw, dict) else {}
    checks = (
        ("ttft_p95_ok", "ttft_ms", "p95", "ttft_p95_ms", ttft_ok),
        ("tpot_mean_ok", "tpot_ms", "mean", "tpot_mean_ms", tpot_ok),
    )
    for flag, metric, stat, limit_key, claimed in checks:
        stats_raw = lat.get(metric)
        stats = stats_raw if isinstance(stats_raw, dict) else {}
        value, limit = _num(stats.get(stat)), _num(slo.get(limit_key))
        if limit is None or not (claimed is None or isinstance(claimed, bool)):
            continue
        truth = None if value is None else value < limit
        if truth != claimed:
            shown = "null" if value is None else f"{value:g}"
            yield Problem(
                file, f"{base}.slo_status.{flag}",
                f"is {'null' if claimed is None else str(claimed).lower()} but {metric}.{stat} = {shown} against slo.{limit_key} = {limit:g}",
            )


def _count_rules(sc: dict[str, Any], base: str, file: str) -> Iterator[Problem]:
    success, failed = sc.get("success"), sc.get("failed")
    if isinstance(success, int) and isinstance(failed, int) and success >= 0 and failed >= 0:
        if success + failed == 0:
            yield Problem(file, f"{base}.success", "no requests at all (success = failed = 0)", WARNING)
        requests = sc.get("raw_requests")
        if isinstance(requests, list) and requests and not sc.get("raw_requests_capped"):
            ok = sum(1 for r in requests if isinstance(r, dict) and r.get("success") is True)
            if len(requests) != success + failed:
                yield Problem(
                    file, f"{base}.raw_requests",
                    f"holds {len(requests)} requests but success + failed = {success + failed}; "
                    "set raw_requests_capped to true when the list is deliberately partial", WARNING,
                )
            elif ok != success:
                yield Problem(file, f"{base}.raw_requests", f"{ok} successful requests but success = {success}")
    if isinstance(success, int) and success > 0 and sc.get("duration_s") == 0:
        yield Problem(file, f"{base}.duration_s", f"0 s for {success} successful requests cannot be (a run takes time); "
                      "parse or import-legacy the raw file again: it records the duration as unknown (null)", WARNING)


def validate_data(data: Any, file: str) -> list[Problem]:
    """Every problem of a parsed results.json document."""
    if not isinstance(data, dict):
        return [Problem(file, "$", f"expected a JSON object at the top level, got {type(data).__name__}")]
    problems: list[Problem] = []
    for error in sorted(_validator().iter_errors(data), key=lambda e: [str(x) for x in e.absolute_path]):
        path, message = _schema_message(error)
        problems.append(Problem(file, path, message))
    if not problems:
        try:
            Results.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                problems.append(Problem(file, format_loc(err["loc"]), model_message(err)))
    flagged = {p.path for p in problems}
    for problem in _rules(data, file):
        if problem.path not in flagged:
            problems.append(problem)
    return problems


def validate_file(path: Path, label: Optional[str] = None) -> FileReport:
    """Validate one results.json."""
    report, _ = _validate_file(path, label)
    return report


def _validate_file(path: Path, label: Optional[str] = None) -> tuple[FileReport, Any]:
    """(report, parsed document or None)."""
    name = label or display_name(path)
    try:
        data = read_json_text(path)
    except ResultsError as exc:
        message = str(exc)
        prefix = display_name(path)
        text = message[len(prefix):].lstrip(": ") if message.startswith(prefix) else message
        if message.startswith(prefix + ":") and text[:1].isdigit():
            # keep `file:line:col: invalid JSON: ...`
            return FileReport(name, [Problem(f"{name}:{text.split(': ', 1)[0]}", "", text.split(": ", 1)[1])]), None
        return FileReport(name, [Problem(name, "", text)]), None
    if is_run_set_data(data):  # the index of a multi-phase run: its phases are validated as runs
        return FileReport(name, [Problem(name, p, m, ERROR if e else WARNING) for p, m, e in check_run_set(data, path)]), None
    return FileReport(name, validate_data(data, name)), data


def _is_index(file: Path) -> bool:
    return is_index_file(file)


def _mentions_provenance(path: Path) -> bool:
    try:
        return "provenance" in read_text_checked(path, "text file").lower()
    except OSError:  # a special file or an unreadable one says nothing
        return False


def _is_dry_run(data: Any) -> bool:
    """The run loop marks what a dry run writes: config.dry_run = true."""
    config = data.get("config") if isinstance(data, dict) else None
    return isinstance(config, dict) and config.get("dry_run") is True


def _resume_command(run_dir: Path, data: Any) -> Optional[str]:
    """The command that resumes a run of the run loop (one that recorded its script and run id, with the
    loop's plan in logs/), as scripts/common/adaptive_bench_lib.sh's bench::resume_command prints it; None
    for any other run."""
    meta = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or not any((run_dir / "logs").glob("plan_*.txt")):
        return None
    run_id, script, platform = meta.get("run_id"), meta.get("script"), meta.get("platform")
    if not (isinstance(run_id, str) and run_id and isinstance(script, str) and script):
        return None
    root = run_dir.resolve()
    if meta.get("phase") and root.name.startswith("phase") and root.parent.name == run_id:
        root = root.parent  # a phase of a multi-phase run: the run is its parent
    words = ["RESUME=1", f"RUN_ID={run_id}"]
    if not (root.name == run_id and root.parent.name == "results"
            and root.parent.parent.name == Path(script).parent.name):
        words.append(f"RESULT_ROOT={root}")  # not the experiment's own results/<RUN_ID>
    if isinstance(platform, str) and platform:
        words.append(f"PLATFORM={platform}")
    return shlex.join(words + ["bash", script])


def _dir_checks(run_dir: Path, data_ok: bool, data: Any = None) -> Iterator[Problem]:
    """The run-directory checklist of BENCHMARK_WORKFLOW.md."""
    label = display_name(run_dir)
    if data_ok and _is_dry_run(data) and not (data.get("scenarios") if isinstance(data, dict) else None):
        return  # a dry run writes no report: nothing was measured (said once, by the file's own check)
    reports = [p for p in run_dir.glob("*.md") if p.name.lower() != "readme.md"]
    if not reports:
        resume = _resume_command(run_dir, data) if data_ok else None
        if resume is not None:
            yield Problem(label, "", "no report.md: the run loop stopped before its end (interrupted or failed); "
                          f"resume it with `{resume}` (or report what it measured: `sskj-results report {label}`)")
        else:
            yield Problem(label, "", "no human-readable report (report.md); run `sskj-results report " + label + "`")
    readme = run_dir / "README.md"
    has_provenance = readme.is_file() or any(_mentions_provenance(p) for p in reports)
    if not has_provenance:
        yield Problem(label, "", "no provenance: add README.md or a Provenance section to the report (`sskj-results report` writes one)")
    if not data_ok:
        return
    meta = data.get("metadata") if isinstance(data, dict) else None
    if not isinstance(meta, dict):
        return
    chip, engine = meta.get("chip"), meta.get("engine") or meta.get("backend")
    if not isinstance(chip, str) or not isinstance(engine, str):
        return
    raw_dir = run_dir / "raw_outputs"
    if chip and engine and raw_dir.is_dir():
        for raw in sorted(raw_dir.iterdir()):
            if raw.suffix.lower() in (".jsonl", ".json") and not raw.name.startswith(f"{chip}_{engine}_"):
                yield Problem(
                    label, f"raw_outputs/{display_name(raw.name)}",
                    f"name does not start with {chip}_{engine}_; raw files from other platforms could collide", WARNING,
                )


def find_results(path: Path) -> list[Path]:
    """results.json files under a path: the file itself, a run directory, or a directory of runs."""
    if path.is_file():
        return [path]
    direct = path / RESULTS_NAME
    if direct.is_file() and not _is_index(direct):
        return [direct]
    return sorted(p for p in path.rglob(RESULTS_NAME) if "raw_outputs" not in p.parts)


def validate_path(path: Path) -> list[FileReport]:
    """Validate a results.json, a run directory, or a directory holding run directories."""
    if path.is_file():
        return [validate_file(path)]
    files = find_results(path)
    if not files:
        return [FileReport(display_name(path), [Problem(display_name(path), "", f"no {RESULTS_NAME} here or below; is this a run directory?")])]
    reports = []
    for file in files:
        report, data = _validate_file(file)
        if not _is_index(file):
            report.problems.extend(_dir_checks(file.parent, report.valid, data))
        reports.append(report)
    return reports


def validate_paths(paths: Iterable[Path]) -> list[FileReport]:
    reports: list[FileReport] = []
    for path in paths:
        reports.extend(validate_path(path))
    return reports
