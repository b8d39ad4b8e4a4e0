"""Re-parse a run directory, or every phase of a run set: results.json, report.md/.html, the index and comparison.md/.html.

What `experiments/<platform>/<name>/parse_results.py` runs (through
`sskj-results reparse`): the same steps as the end of an experiment —
`parse` and `report` per run, then for a run set its index (`runset`) and
the comparison of its phases into the run-set directory (`compare DIR --out
DIR`, with the baseline, title and matrix name the index records).
A run whose recorded raw files are missing (raw_outputs/ is not committed)
keeps its results.json as it is: only its report is rewritten. A damaged
results.json beside raw outputs is rebuilt from them (ingest/rebuild.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from ..analysis.compare import CompareOptions
from ..contract.errors import UsageError
from ..ingest.parse_run import ParseOutcome, parse_run_dir
from ..ingest.rebuild import Rebuilt, rebuild_damaged
from ..contract.io import RESULTS_NAME, load_run
from ..contract.models import SloSpec
from ..render.publish import ComparisonOutput, ReportOptions, ReportOutput, write_comparison, write_report
from ..contract.runset import PHASE_DIR, discover_phases, load_run_set, phase_paths, write_run_set

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class RunOutcome:
    run_dir: Path
    parsed: Optional[ParseOutcome]
    report: ReportOutput
    missing_raw: list[str] = field(default_factory=list)
    rebuilt: Optional[Rebuilt] = None


@dataclass
class ReparseOutcome:
    runs: list[RunOutcome] = field(default_factory=list)
    index: Optional[Path] = None
    comparison: Optional[ComparisonOutput] = None

    @property
    def problems(self) -> int:
        return sum(len(r.parsed.problems) for r in self.runs if r.parsed is not None)


def missing_raw_files(run_dir: Path) -> list[str]:
    """Raw files results.json was imported from that are not in the run directory (raw_outputs/ is not
    committed, so a clone has none): parsing without them would drop their scenarios."""
    results = load_run(run_dir)
    recorded = [rf.file for rf in results.raw_files] + [s.source.file for s in results.scenarios if s.source]
    return [f for f in dict.fromkeys(recorded) if not (run_dir / f).is_file()]


def reparse_targets(path: PathLike) -> list[Path]:
    """What `reparse PATH` works on: PATH itself when it is a run, a run set or a multi-phase run (its
    subdirectories `phase<N>_*`); for a folder of runs (`results/`, `imported/`) each run or run set in it."""
    directory = Path(path)
    if not directory.is_dir() or (directory / RESULTS_NAME).is_file():
        return [directory]
    children = sorted(d for d in directory.iterdir() if d.is_dir() and not d.name.startswith(".")
                      and ((d / RESULTS_NAME).is_file() or discover_phases(d)))
    if not children or all(PHASE_DIR.match(d.name) for d in children):
        return [directory]
    return children


def reparse(path: PathLike, slo: Optional[SloSpec] = None, plots: bool = True, html: bool = True) -> ReparseOutcome:
    """parse + report of a run directory; of a run-set directory: of every phase, then its index and comparison."""
    directory = Path(path)
    if not directory.is_dir():
        raise UsageError(f"{path}: no such run directory")
    if not (directory / RESULTS_NAME).is_file() and discover_phases(directory):
        write_run_set(directory)  # a multi-phase run written before its index existed
    run_set = load_run_set(directory)
    dirs = phase_paths(directory, run_set) if run_set is not None else [directory]
    out = ReparseOutcome()
    for run_dir in dirs:
        rebuilt = rebuild_damaged(run_dir)  # a damaged results.json beside its raw outputs
        missing = missing_raw_files(run_dir)
        parsed = None if missing else parse_run_dir(run_dir, slo)
        report = write_report(run_dir, ReportOptions(slo=slo, plots=plots, html=html))
        out.runs.append(RunOutcome(run_dir, parsed, report, missing, rebuilt))
    if run_set is not None:
        out.index, run_set = write_run_set(directory)
        if len(run_set.phases) > 1:
            out.comparison = write_comparison([directory], directory, CompareOptions(slo=slo, plots=plots),
                                              html=html)
    return out
