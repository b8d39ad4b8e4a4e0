"""A damaged results.json rebuilt from its run directory (`sskj-results parse`, `reparse`).

A results.json that is no longer JSON, or no longer a valid run, while the run's raw_outputs/ are there,
is not a dead end: its scenarios come back from the raw files (and the sidecars beside them) by `parse`
as on the first import. Before that the damaged file is kept aside (`results.json.damaged-<UTC time>`,
never overwritten), and whatever of its metadata, config, SLO and validity thresholds still validates is
carried over, field by field; a phase of a multi-phase run also takes its engine, chip, model and phase
from the run set's index, and the engine and chip that every raw file's name gives alike are taken too. What could not be recovered is named, with the command that
sets it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from ..contract.errors import ResultsError
from ..contract.io import RESULTS_NAME, RUN_SET_KIND, display_name, load_run, read_json_text, save_run
from ..contract.models import Config, Metadata, Results, SloSpec
from ..contract.validity_models import ValidityThresholds
from .filenames import name_hints
from .rawsources import list_raw_dir

# What a results.json must say about the run that the raw files cannot: unknown until set again.
_REQUIRED = {"experiment": "unknown", "run_id": "unknown", "timestamp": None, "model": "unknown"}
# The run set's index records these of each phase (contract/runset.RunSetPhase).
_FROM_INDEX = ("phase", "engine", "chip", "model")


@dataclass(frozen=True)
class Rebuilt:
    """A damaged results.json replaced by a fresh one: where the damaged file was kept and what came back."""

    file: Path
    kept_as: Path
    reason: str
    recovered: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def line(self) -> str:
        said = (f"{self.file}: damaged ({self.reason}); rebuilt from raw_outputs/, the damaged file kept as "
                f"{self.kept_as.name}")
        said += f"; recovered: {', '.join(self.recovered)}" if self.recovered else "; nothing recovered"
        if self.unknown:
            said += (f"; unknown now: {', '.join(self.unknown)} (set them with `sskj-results metadata "
                     f"{self.file.parent} --meta KEY=VALUE`)")
        return said


def _salvage(model: Any, value: Any, required: dict[str, Any]) -> tuple[Any, list[str], list[str]]:
    """MODEL from the dict VALUE, each field that does not validate left out (a REQUIRED one set to its
    placeholder, as a missing one is). Returns the model (None when even that does not validate), the
    fields kept, and those left out or set to their placeholder."""
    from pydantic import ValidationError

    data = dict(value) if isinstance(value, dict) else {}
    lost = {k for k in required if k not in data}
    data.update({k: required[k] for k in lost})
    while True:
        try:
            built = model.model_validate(data)
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]} & (set(data) - lost)
            if not bad:  # a rule over several fields (timestamp_precision without its timestamp): their companions
                bad = {k for k in set(data) - lost if any(k.startswith(f"{gone}_") for gone in lost)}
            if not bad:
                return None, [], sorted(lost)
            for key in bad:
                lost.add(key)
                if key in required:
                    data[key] = required[key]
                else:
                    data.pop(key)
            continue
        return built, [k for k, v in data.items() if k not in lost and v is not None], sorted(lost)


def _index_entry(run_dir: Path) -> dict[str, Any]:
    """The run set index's record of this phase directory, if its parent holds one."""
    try:
        data = read_json_text(run_dir.parent / RESULTS_NAME)
    except ResultsError:
        return {}
    if not (isinstance(data, dict) and data.get("kind") == RUN_SET_KIND and isinstance(data.get("phases"), list)):
        return {}
    for entry in data["phases"]:
        if isinstance(entry, dict) and entry.get("dir") == run_dir.name:
            return entry
    return {}


def _named(raws: list[Path]) -> dict[str, str]:
    """The engine and chip every raw file's name gives alike (the run loop's `{chip}_{engine}_...` names)."""
    hints = [name_hints(p.stem) for p in raws]
    named: dict[str, str] = {}
    for key in ("engine", "chip"):
        values = {getattr(h, key) for h in hints}
        if len(values) == 1 and isinstance(next(iter(values)), str):
            named[key] = next(iter(values))
    return named


def _aside(file: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = file.with_name(f"{file.name}.damaged-{stamp}")
    n = 1
    while os.path.lexists(target):
        n += 1
        target = file.with_name(f"{file.name}.damaged-{stamp}-{n}")
    return target


def rebuild_damaged(run_dir: Path) -> Optional[Rebuilt]:
    """When RUN_DIR/results.json is a regular file that cannot be loaded as a run (not JSON, or invalid)
    and RUN_DIR/raw_outputs/ holds raw files: copy it aside, write a results.json with what of it still
    validates, and say so (`parse` then reads every raw file again). None when there is nothing to rebuild:
    the file loads, is missing or not a regular file, is a run set's index, or no raw file is there."""
    file = run_dir / RESULTS_NAME
    try:
        st = os.lstat(file)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or not os.access(file, os.R_OK):
        return None
    try:
        load_run(file, hand_on=True)  # parse, next, loads it: taken from here, not read again
        return None
    except ResultsError as exc:
        reason = str(exc)
    try:
        data: Any = read_json_text(file)
    except ResultsError:
        data = None
    if isinstance(data, dict) and data.get("kind") == RUN_SET_KIND:
        return None  # an index, not a damaged run: load_run's message says what to give instead
    raws = list_raw_dir(run_dir / "raw_outputs").files
    if not raws:
        return None
    reason = re.sub(r"; run `sskj-results validate [^`]*`\)$", ")", reason)  # the file is aside by then
    shown = display_name(file)
    if reason.startswith(f"{shown}:"):  # said once, before it: its position in the file (line:column) stays
        reason = RESULTS_NAME + reason[len(shown):]
    parts = data if isinstance(data, dict) else {}
    meta_in = dict(parts["metadata"]) if isinstance(parts.get("metadata"), dict) else {}
    entry = _index_entry(run_dir)
    from_index = [k for k in _FROM_INDEX if meta_in.get(k) is None and isinstance(entry.get(k), str)]
    meta_in.update({k: entry[k] for k in from_index})
    named = _named(raws)
    from_names = [k for k in named if meta_in.get(k) is None]
    meta_in.update({k: named[k] for k in from_names})
    metadata, meta_kept, meta_unknown = _salvage(Metadata, meta_in, _REQUIRED)
    config, config_kept, _ = _salvage(Config, parts.get("config"), {})
    slo, slo_kept, _ = _salvage(SloSpec, parts.get("slo"), {}) if isinstance(parts.get("slo"), dict) else (None, [], [])
    validity, validity_kept, _ = (_salvage(ValidityThresholds, parts.get("validity_thresholds"), {})
                                  if isinstance(parts.get("validity_thresholds"), dict) else (None, [], []))
    own = [k for k in meta_kept if k not in from_index + from_names]
    recovered = [f"metadata ({len(own)} field(s))"] if own else []
    recovered += [f"config ({len(config_kept)} field(s))"] if config_kept else []
    recovered += ["slo"] if slo_kept else []
    recovered += ["validity_thresholds"] if validity_kept else []
    recovered += [f"metadata.{k} (from the run set's index)" for k in from_index]
    recovered += [f"metadata.{k} (from the raw file names)" for k in from_names]
    if metadata is None:
        metadata = Metadata.model_validate(_REQUIRED)
        meta_unknown = sorted(set(meta_unknown) | set(_REQUIRED))
    unknown = [f"metadata.{k}" for k in meta_unknown]
    if config is None:
        config = Config()
    if not any(k.endswith("server_args") for k in config_kept):
        unknown.append("config.server_args")
    kept_as = _aside(file)
    shutil.copy2(file, kept_as)
    fresh = Results(metadata=metadata, config=config, scenarios=[], slo=slo, validity_thresholds=validity)
    save_run(fresh, file)
    return Rebuilt(file, kept_as, reason, recovered, unknown)
