"""import-legacy's run directories before they are written: one group per (engine, model, chip), and the runs
whose model no file names joined to the one model the other runs of their engine, chip and date name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..contract.models import Scenario, SkippedScenario
from ..contract.redact import redact
from .readers import RawRun
from .scenario import RunTime

GroupKey = tuple[str, Optional[str], str]  # (engine, model or None when unknown, chip)


@dataclass
class RunGroup:
    engine: str
    model: Optional[str]
    chip: str
    scenarios: list[Scenario] = field(default_factory=list)
    skipped: list[SkippedScenario] = field(default_factory=list)
    sources: dict[Path, tuple[str, int, int]] = field(default_factory=dict)
    times: list[RunTime] = field(default_factory=list)
    recorded_hardware: set[str] = field(default_factory=set)
    engine_versions: dict[str, str] = field(default_factory=dict)  # version -> the key it came from
    client_versions: set[str] = field(default_factory=set)
    days: set[Optional[str]] = field(default_factory=set)  # `MM-DD` of each run (None: undated)

    def add(self, scenario: Scenario, run: RawRun, when: RunTime, source: Path, digest: tuple[str, int, int],
            hardware: set[str]) -> None:
        self.scenarios.append(scenario)
        self.times.append(when)
        self.days.add(day_of(when))
        if run.engine_version is not None:
            self.engine_versions.setdefault(run.engine_version, run.engine_version_source or "")
        if run.client_version is not None:
            self.client_versions.add(run.client_version)
        self.sources[source] = digest
        self.recorded_hardware |= hardware

    def take(self, other: RunGroup) -> None:
        """Everything of `other` joins this group."""
        self.scenarios += other.scenarios
        self.skipped += other.skipped
        self.sources.update(other.sources)
        self.times += other.times
        self.days |= other.days
        self.recorded_hardware |= other.recorded_hardware
        for version, key in other.engine_versions.items():
            self.engine_versions.setdefault(version, key)
        self.client_versions |= other.client_versions


def day_of(when: RunTime) -> Optional[str]:
    """The month and day a run ran (`MM-DD`: a file name's MMDD has no year), None when unknown."""
    if when.value is None:
        return None
    if when.precision == "month-day":
        return when.value[2:7]  # --MM-DD
    return when.value[5:10]  # YYYY-MM-DD[THH:MM:SS…]


def join_unknown_models(groups: dict[GroupKey, RunGroup], unnamed: dict[tuple[str, str, Optional[str]], RunGroup],
                        warnings: list[str]) -> None:
    """Runs whose model neither the command line, the run nor its file name gives (`unnamed`, by engine, chip
    and day) join the run directory of the one model the other runs of that engine and chip name on that day
    (on any day, for an undated run); else, none or several models, they stay under model unknown."""
    named: dict[tuple[str, str], list[RunGroup]] = {}
    for (eng, model, chip), group in groups.items():
        if model is not None and group.scenarios:
            named.setdefault((eng, chip), []).append(group)
    for (eng, chip, day), group in sorted(unnamed.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        models = {g.model for g in named.get((eng, chip), []) if day is None or day in g.days}
        if len(models) == 1 and group.scenarios:
            model = models.pop()
            assert model is not None
            groups[(eng, model, chip)].take(group)
            when = f"on {day}" if day else "(these runs are undated)"
            for scenario in group.scenarios:
                scenario.notes.append(f"model {redact(model)} from the other runs of engine {eng}, chip {chip} {when}: "
                                      "this run and its file name do not name one")
            files = sorted({Path(s.source.file).name for s in group.scenarios if s.source})
            warnings.append(f"{files[0]}{f' and {len(files) - 1} more file(s)' if len(files) > 1 else ''}: "
                            f"the runs name no model; imported under model {redact(model)}, the only model the other runs "
                            f"of engine {eng}, chip {chip} {when} name (give --model to choose)")
        else:
            groups.setdefault((eng, None, chip), RunGroup(eng, None, chip)).take(group)
