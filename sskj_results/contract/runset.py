"""Run sets: the index of a multi-phase run directory (`results/<RUN_ID>/results.json`).

A multi-phase experiment writes one run per phase (`results/<RUN_ID>/phase1_sglang/`,
`phase2_vllm/`, ...), each with its own results.json and report.md. The run-set
directory itself holds an *index* — a results.json whose `kind` is `run-set` —
listing the phases in order with their directories relative to it, so that a
glob for `results/*/results.json` finds every run of an experiment and
`validate`, `report` and `compare` act on the phases when given the run-set
directory (`compare` compares them, baseline = phase 1 unless the index says
otherwise). `schema/runset.schema.json` is generated from `RunSet`.

`build_run_set` (re)builds the index from the phase directories present, so
writing it after every phase is safe: the same phases give the same bytes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ResultsError, UsageError
from .io import RESULTS_NAME, RUN_SET_KIND, atomic_write_text, first_model_error, read_json_text

PathLike = Union[str, "os.PathLike[str]"]
RUN_SET_SCHEMA_ID = "https://sskj.dev/schema/runset.schema.json"
PHASE_DIR = re.compile(r"^phase(\d+)_")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RunSetPhase(_Model):
    """One phase of a run set: a run directory with its own results.json."""

    dir: str = Field(description="The phase's run directory, relative to the run-set directory (POSIX separators), "
                                 "e.g. `phase1_sglang`.")
    phase: Optional[str] = Field(default=None, description="metadata.phase of the run, e.g. `phase1_sglang`.")
    engine: Optional[str] = Field(default=None, description="metadata.engine, else metadata.backend.")
    chip: Optional[str] = Field(default=None, description="metadata.chip, else metadata.accelerator.")
    model: Optional[str] = Field(default=None, description="metadata.model.")
    spec_method: Optional[str] = Field(default=None, description="config.spec_method (null when not speculative).")
    scenarios: int = Field(ge=0, description="Scenarios measured when the index was written.")
    skipped: int = Field(default=0, ge=0, description="Scenarios recorded as skipped when the index was written.")

    @field_validator("dir")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        p = PurePosixPath(value)
        if not value or p.is_absolute() or ".." in p.parts or "\\" in value or value in (".", "./"):
            raise ValueError("must be a subdirectory of the run-set directory, relative, without `..`")
        return value


class RunSet(_Model):
    """results.json of a multi-phase run directory: the index of its phases (not a run)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, json_schema_extra={"$id": RUN_SET_SCHEMA_ID},
                              title="sskj run-set index (results.json of a multi-phase run)")

    kind: Literal["run-set"] = Field(description="`run-set`: this results.json indexes the phases below; "
                                                 "each phase directory has its own results.json.")
    schema_version: Literal[1] = Field(default=1, description="Version of this format.")
    experiment: Optional[str] = Field(default=None, description="metadata.experiment of the phases (null when they differ).")
    run_id: Optional[str] = Field(default=None, description="metadata.run_id of the phases (null when they differ).")
    phases: list[RunSetPhase] = Field(description="The phases in order; the first is the comparison's baseline "
                                                  "unless `baseline` names another.")
    baseline: Optional[str] = Field(default=None, description="`dir` of the phase `compare DIR` takes as baseline "
                                                              "(as given while no phase matches it yet); null: the first phase.")
    title: Optional[str] = Field(default=None, description="Title `compare DIR` gives the comparison (null: the default).")
    matrix: Optional[str] = Field(default=None, description="Matrix name `compare DIR` puts in the default title.")


# --------------------------------------------------------------------------- reading


def is_run_set_data(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == RUN_SET_KIND


# An index is a few kilobytes; a larger results.json is a run and is not read twice to find out.
MAX_INDEX_BYTES = 1 << 20


def is_index_file(file: Path) -> bool:
    """FILE is a run-set index (a small results.json whose `kind` is `run-set`); False for a run or an unreadable file."""
    try:
        if not file.is_file() or file.stat().st_size > MAX_INDEX_BYTES:
            return False
        if b"run-set" not in file.read_bytes():  # a run's results.json: not parsed to find out
            return False
        return is_run_set_data(read_json_text(file))
    except (OSError, ResultsError):
        return False


def index_file(path: PathLike) -> Path:
    p = Path(path)
    return p / RESULTS_NAME if p.is_dir() else p


def parse_run_set(data: Any, file: Path) -> RunSet:
    try:
        return RunSet.model_validate(data)
    except ValidationError as exc:
        raise ResultsError(first_model_error(file, exc) + "; rebuild the index with "
                           f"`sskj-results runset {file.parent}`") from None


def load_run_set(path: PathLike) -> Optional[RunSet]:
    """The index at PATH (a run-set directory or its results.json); None when PATH holds a run or no results.json."""
    file = index_file(path)
    if not is_index_file(file):
        return None
    return parse_run_set(read_json_text(file), file)


def phase_paths(path: PathLike, run_set: RunSet) -> list[Path]:
    """The phase directories of a run set, as paths below PATH (the run-set directory as given)."""
    base = Path(path)
    if base.name == RESULTS_NAME and base.is_file():
        base = base.parent
    out = []
    for phase in run_set.phases:
        p = base / phase.dir
        if not (p / RESULTS_NAME).is_file():
            raise ResultsError(f"{index_file(path)}: phase {phase.dir!r} has no {p / RESULTS_NAME}; "
                               f"rebuild the index with `sskj-results runset {base}`")
        out.append(p)
    return out


def runs_inside(path: PathLike) -> list[Path]:
    """The run directories directly inside a folder that is neither a run nor a run set (`imported/`,
    `results/`, a dry run's `results/<RUN_ID>/` without an index): each subdirectory holding a results.json,
    `phase<N>_*` by N then the others by name; [] for anything else."""
    p = Path(path)
    if not p.is_dir() or os.path.lexists(p / RESULTS_NAME):
        return []
    return [d for d in discover_phases(p) if not d.name.startswith(".")]


def expand(paths: Sequence[PathLike]) -> tuple[list[PathLike], list[RunSet]]:
    """Each run-set directory replaced by its phase directories, in order, and each folder of runs
    (runs_inside) by its runs (a run set among them by its phases); and the run sets found."""
    out: list[PathLike] = []
    sets: list[RunSet] = []
    for path in paths:
        inside = runs_inside(path)
        if inside:
            more, found = expand(inside)
            out.extend(more)
            sets.extend(found)
            continue
        run_set = load_run_set(path) if Path(path).exists() else None
        if run_set is None:
            out.append(path)
            continue
        sets.append(run_set)
        out.extend(phase_paths(path, run_set))
    return out, sets


def job_runs(dirs: Sequence[PathLike]) -> tuple[list[Path], list[Path]]:
    """The runs of job run directories (a multi-phase run: each DIR/*/results.json, in name order; else DIR
    itself when it holds results.json); and the directories that hold neither (the job recorded nothing)."""
    runs: list[Path] = []
    empty: list[Path] = []
    for d in map(Path, dirs):
        phases = sorted(f.parent for f in d.glob("*/results.json") if f.is_file())
        if phases:
            runs += phases
        elif (d / "results.json").is_file():
            runs.append(d)
        else:
            empty.append(d)
    return runs, empty


# --------------------------------------------------------------------------- building


def _phase_order(p: Path) -> tuple[int, int, str]:
    m = PHASE_DIR.match(p.name)
    return (0, int(m.group(1)), p.name) if m else (1, 0, p.name)


def _run_summary(run_dir: Path, rel: str) -> RunSetPhase:
    file = run_dir / RESULTS_NAME
    data = read_json_text(file)
    if is_run_set_data(data):
        raise ResultsError(f"{file}: is itself a run-set index; a phase must be a run")
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
        raise ResultsError(f"{file}: not a run's results.json (no metadata object); "
                           f"check it with `sskj-results validate {file}`")
    meta: dict[str, Any] = data["metadata"]
    config: dict[str, Any] = data["config"] if isinstance(data.get("config"), dict) else {}
    scenarios: list[Any] = data["scenarios"] if isinstance(data.get("scenarios"), list) else []
    skipped: list[Any] = data["skipped"] if isinstance(data.get("skipped"), list) else []

    def text(value: Any) -> Optional[str]:
        return value if isinstance(value, str) and value else None

    return RunSetPhase(
        dir=rel, phase=text(meta.get("phase")), engine=text(meta.get("engine")) or text(meta.get("backend")),
        chip=text(meta.get("chip")) or text(meta.get("accelerator")), model=text(meta.get("model")),
        spec_method=text(config.get("spec_method")), scenarios=len(scenarios), skipped=len(skipped),
    )


def discover_phases(run_set_dir: Path) -> list[Path]:
    """Subdirectories holding a run's results.json: `phase<N>_*` by N, then the others by name."""
    found = []
    for child in run_set_dir.iterdir():
        file = child / RESULTS_NAME
        if child.is_dir() and file.is_file():
            found.append(child)
    return sorted(found, key=_phase_order)


def build_run_set(
    run_set_dir: PathLike,
    phases: Optional[Sequence[PathLike]] = None,
    baseline: Optional[str] = None,
    title: Optional[str] = None,
    matrix: Optional[str] = None,
    previous: Optional[RunSet] = None,
) -> RunSet:
    """The index of RUN_SET_DIR: the given phase directories in that order, else every one present.
    baseline/title/matrix default to those of `previous` (the index being rebuilt)."""
    root = Path(run_set_dir)
    if phases:
        dirs = []
        for p in phases:
            given = Path(p)
            d = given if given.is_absolute() or given.exists() else root / given
            try:
                rel = d.resolve().relative_to(root.resolve())
            except ValueError:
                raise UsageError(f"{p}: not inside {root}; a run set indexes its own subdirectories") from None
            if not rel.parts:
                raise UsageError(f"{p}: is the run-set directory itself; give its phase subdirectories")
            if not (d / RESULTS_NAME).is_file():
                raise ResultsError(f"{d}: no {RESULTS_NAME}; is this a phase's run directory?")
            dirs.append((d, rel.as_posix()))
    else:
        dirs = [(d, d.name) for d in discover_phases(root)]
    entries = [_run_summary(d, rel) for d, rel in dirs]
    seen = [e.dir for e in entries]
    if len(set(seen)) != len(seen):
        raise UsageError(f"{root}: a phase is given twice ({', '.join(seen)})")
    if previous is not None:
        baseline = baseline if baseline is not None else previous.baseline
        title = title if title is not None else previous.title
        matrix = matrix if matrix is not None else previous.matrix
    if baseline is not None:
        baseline = resolve_baseline(baseline, entries)
        if baseline == (entries[0].dir if entries else None):
            baseline = None
    experiments = {e for e in (_meta_value(d, "experiment") for d, _ in dirs)}
    run_ids = {e for e in (_meta_value(d, "run_id") for d, _ in dirs)}
    return RunSet(
        kind="run-set", phases=entries, baseline=baseline, title=title or None, matrix=matrix or None,
        experiment=experiments.pop() if len(experiments) == 1 else None,
        run_id=run_ids.pop() if len(run_ids) == 1 else None,
    )


def resolve_baseline(name: str, phases: Sequence[RunSetPhase]) -> str:
    """The `dir` of the phase NAME designates (its dir, its basename, its metadata.phase, or its name
    without the `phase<N>_` prefix, as COMPARE_BASELINE gives it); NAME itself while no phase matches
    (the baseline phase may not have run yet)."""
    for phase in phases:
        base = Path(phase.dir).name
        if name in (phase.dir, base, phase.phase, PHASE_DIR.sub("", base)):
            return phase.dir
    return name


def _meta_value(run_dir: Path, key: str) -> Optional[str]:
    data = read_json_text(run_dir / RESULTS_NAME)
    value = data.get("metadata", {}).get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def run_set_text(run_set: RunSet) -> str:
    return json.dumps(run_set.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def write_run_set(
    run_set_dir: PathLike,
    phases: Optional[Sequence[PathLike]] = None,
    baseline: Optional[str] = None,
    title: Optional[str] = None,
    matrix: Optional[str] = None,
) -> tuple[Optional[Path], RunSet]:
    """(Re)write RUN_SET_DIR/results.json as the index of its phases; idempotent.

    Returns (file written or None, index). Nothing is written when no phase
    directory exists yet or when RUN_SET_DIR/results.json is a run (a
    single-phase run needs no index); a run's results.json is never replaced.
    """
    root = Path(run_set_dir)
    if not root.is_dir():
        raise UsageError(f"{run_set_dir}: no such directory")
    file = root / RESULTS_NAME
    previous: Optional[RunSet] = None
    if os.path.lexists(file) and not file.is_file():
        read_json_text(file)  # a FIFO, device, directory or bad link: raises its one-line reason, never replaced
    if file.is_file():
        data = read_json_text(file)
        if not is_run_set_data(data):
            if phases or discover_phases(root):
                raise ResultsError(f"{file}: is a run's results.json, but {root} also has phase directories; "
                                   "move that run into its own phase directory, then run `sskj-results runset` again")
            return None, build_run_set(root, [])
        try:
            previous = RunSet.model_validate(data)
        except ValidationError:
            previous = None  # a damaged index is rebuilt from the phases present
    run_set = build_run_set(root, phases, baseline, title, matrix, previous)
    if not run_set.phases:
        return None, run_set
    text = run_set_text(run_set)
    if not (file.is_file() and file.read_text(encoding="utf-8") == text):
        atomic_write_text(file, text)
    return file, run_set


# --------------------------------------------------------------------------- checking


def check_run_set(data: Any, file: Path) -> list[tuple[str, str, bool]]:
    """Problems of an index file as (json path, message, is_error): the model, the phases it lists
    (present and runs) and the phase directories it does not list."""
    rebuild = f"rebuild the index with `sskj-results runset {file.parent}`"
    try:
        run_set = RunSet.model_validate(data)
    except ValidationError as exc:
        from .io import format_loc, model_message

        return [(format_loc(e["loc"]), model_message(e), True) for e in exc.errors()]
    problems: list[tuple[str, str, bool]] = []
    if not run_set.phases:
        problems.append(("phases", "lists no phase", False))
    listed = set()
    for i, phase in enumerate(run_set.phases):
        d = file.parent / phase.dir
        listed.add(d.resolve())
        phase_file = d / RESULTS_NAME
        if not phase_file.is_file():
            problems.append((f"phases[{i}].dir", f"{phase.dir}: no {RESULTS_NAME} there; {rebuild}", True))
            continue
        try:
            is_index = is_run_set_data(read_json_text(phase_file))
        except ResultsError:
            continue  # reported when the phase itself is validated
        if is_index:
            problems.append((f"phases[{i}].dir", f"{phase.dir}: is a run-set index, not a run", True))
    for d in discover_phases(file.parent):
        if d.resolve() not in listed:
            problems.append(("phases", f"{d.name}/ holds a run that the index does not list; {rebuild}", False))
    if run_set.baseline is not None and run_set.baseline not in {p.dir for p in run_set.phases}:
        problems.append(("baseline", f"{run_set.baseline!r} names no phase (yet); `compare` needs it: {rebuild} "
                                     "--baseline PHASE", False))
    if len(run_set.phases) > 1 and not (file.parent / "comparison.md").is_file():
        problems.append(("", f"no comparison.md; write it with `sskj-results compare {file.parent} --out {file.parent}`",
                         False))
    return problems
