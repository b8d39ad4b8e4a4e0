"""The run planner: which scenario the shell measures next (`sskj-results next`).

Everything the run loop decides lives here, so it is tested in Python: the
scenario grid (scenarios.tsv or CONCURRENCIES x SHAPES), the prompts rule,
resume (what is already measured), the skip-larger-after-failure policy
(skipped_after_oom.csv, written and read here) and the SLO search
(sskj_results.slo_search). The planner is stateless between calls apart from
files in the run directory: results.json, skipped_after_oom.csv and a session
file (one scenario name a line) that lists what was already proposed by the
current invocation of the run loop, so that nothing is proposed twice in one
session (a scenario whose client failed without a server failure is retried
by the next RESUME=1, not in a loop).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..contract.errors import ConfigError, RawFormatError
from ..contract.io import RESULTS_NAME, atomic_write_text, load_run
from ..contract.models import Results, SkippedScenario, SloSpec
from ..ingest.resume import raw_output_needs_measuring
from .specs import GridRow, PromptsRule, grid_from_lists, load_grid, order_grid, read_scenarios_file  # noqa: F401 - the grid, re-exported

SKIP_CSV = "skipped_after_oom.csv"
SKIP_HEADER = ("scenario", "concurrency", "input_len", "output_len", "reason", "log_excerpt")
SKIPPED_PREFIX = "skipped"  # reasons that are consequences of an earlier failure, not failures themselves
@dataclass(frozen=True)
class Scenario:
    """What the shell runs next."""

    concurrency: int
    input_len: int
    output_len: int
    num_prompts: int
    stem: str
    raw_name: str

    def line(self) -> str:
        """`C INPUT OUTPUT PROMPTS STEM RAW_NAME`: six blank-free fields for bash `read -r`."""
        return f"{self.concurrency} {self.input_len} {self.output_len} {self.num_prompts} {self.stem} {self.raw_name}"


# ---------------------------------------------------------------- what the run directory knows

def stem_date(run_dir: Path, run_id: Optional[str]) -> str:
    """MMDD of raw file stems: RUN_ID's date (YYYYMMDD-...), else the run's creation date, else today."""
    from datetime import date

    match = re.match(r"^[0-9]{4}([0-9]{4})-", run_id or "")
    if match:
        return match.group(1)
    if (run_dir / RESULTS_NAME).is_file():
        created = re.match(r"^[0-9]{4}-([0-9]{2})-([0-9]{2})T", load_run(run_dir).metadata.timestamp or "")
        if created:
            return created.group(1) + created.group(2)
    return date.today().strftime("%m%d")


def read_skips(run_dir: Path) -> list[SkippedScenario]:
    from ..ingest.sidecars import read_skipped

    path = run_dir / SKIP_CSV
    if not path.is_file():
        return []
    try:
        return read_skipped(path)
    except RawFormatError as exc:
        raise ConfigError(f"{exc}; fix or remove the row (the scenario is then measured again)") from None


def record_skip(run_dir: Path, row: GridRow, reason: str, excerpt: str = "") -> None:
    """Append one row to skipped_after_oom.csv (header written once, every field quoted), atomically."""
    path = run_dir / SKIP_CSV
    old = path.read_text(encoding="utf-8", errors="replace") if path.is_file() and path.stat().st_size else ""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
    if not old:
        buffer.write(",".join(SKIP_HEADER) + "\n")
    elif not old.endswith("\n"):
        buffer.write("\n")
    writer.writerow([row.name, row.concurrency, row.input_len, row.output_len, reason, excerpt])
    atomic_write_text(path, old + buffer.getvalue())


def measured(run_dir: Path, results: Optional[Results]) -> dict[tuple[int, int, int], int]:
    """(c, input, output) -> how many scenarios of that shape results.json holds from a raw file still present
    and unchanged (a shape run REPEATS times counts each repeat).

    A raw file that is missing, empty, changed since it was imported, marked
    damaged by parse, or not a regular readable file does not count
    (`rawio.raw_output_needs_measuring`), nor one whose record lacks a part
    (`incomplete`), so RESUME=1 measures that scenario again. A raw file on disk that parse never saw is not counted either:
    the shell parses the run once before asking on resume.
    """
    if results is None:
        return {}
    done: dict[tuple[int, int, int], int] = {}
    verdicts: dict[str, Optional[str]] = {}
    recorded = [rf.model_dump() for rf in results.raw_files]
    for s in results.scenarios:
        if s.source is None or s.concurrency is None:  # open-loop runs are not grid scenarios
            continue
        name = s.source.file
        if name not in verdicts:
            raw = name[len("raw_outputs/"):] if name.startswith("raw_outputs/") else None
            verdicts[name] = ("outside raw_outputs" if raw is None
                              else raw_output_needs_measuring(run_dir, raw, recorded) or incomplete(run_dir, raw))
        if verdicts[name] is None:
            key = (s.concurrency, s.input_len, s.output_len)
            done[key] = done.get(key, 0) + 1
    return done


def incomplete(run_dir: Path, raw_name: str) -> Optional[str]:
    """What a scenario the run loop measured (client_info/<stem>.json, written before its client starts) lacks of
    its record: the client's statistics (client_stats/<stem>.json, written when the client ended) or, when the
    /metrics snapshot before it was saved, the one after it (a stop just after the client). None: complete."""
    stem = raw_name.rsplit(".", 1)[0]
    if not (run_dir / "client_info" / f"{stem}.json").is_file():
        return None  # not made by the run loop (imported): its raw file is its record
    if not (run_dir / "client_stats" / f"{stem}.json").is_file():
        return f"no client_stats/{stem}.json"
    metrics = run_dir / "server_metrics"
    if (metrics / f"{stem}.before.prom").is_file() and not (metrics / f"{stem}.after.prom").is_file():
        return f"no server_metrics/{stem}.after.prom"
    return None


def failed_at(skips: list[SkippedScenario]) -> dict[tuple[int, int], int]:
    """Per shape, the smallest concurrency that failed (server death / OOM); consequential skips do not count."""
    out: dict[tuple[int, int], int] = {}
    for k in skips:
        if k.reason.startswith(SKIPPED_PREFIX) or k.concurrency is None or k.input_len is None or k.output_len is None:
            continue
        shape = (k.input_len, k.output_len)
        out[shape] = min(out.get(shape, k.concurrency), k.concurrency)
    return out


def read_session(path: Optional[Path]) -> list[str]:
    if path is None or not path.is_file():
        return []
    return [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]


def note_session(path: Optional[Path], name: str) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(name + "\n")


# ---------------------------------------------------------------- the decision

@dataclass(frozen=True)
class Planner:
    run_dir: Path
    grid: list[GridRow]
    prompts: PromptsRule
    chip: str
    engine: str
    mmdd: str
    raw_ext: str = "jsonl"
    session: Optional[Path] = None
    record: bool = True  # False (a dry run): a consequential skip is said, not written to skipped_after_oom.csv

    def scenario(self, row: GridRow, repeat: Optional[int] = None) -> Scenario:
        """The row's scenario; `repeat` n >= 2 names a further measurement (stem suffix `_r{n}`)."""
        stem = f"{self.chip}_{self.engine}_{self.mmdd}_{row.concurrency}_{row.input_len}_{row.output_len}"
        if repeat is not None:
            stem += f"_r{repeat}"
        return Scenario(row.concurrency, row.input_len, row.output_len, self.prompts.prompts(row), stem,
                        f"{stem}.{self.raw_ext}")

    def _results(self) -> Optional[Results]:
        return load_run(self.run_dir) if (self.run_dir / RESULTS_NAME).is_file() else None

    def _propose(self, row: GridRow, repeat: Optional[int] = None) -> Scenario:
        note_session(self.session, row.name if repeat is None else f"{row.name}_r{repeat}")
        return self.scenario(row, repeat)

    def next_in_grid(self, log: list[str], repeats: int = 1) -> Optional[Scenario]:
        """The first grid scenario not measured, not skipped and not proposed in this session.

        With repeats N > 1 every scenario is measured N times, round by round
        (round r of the whole grid before round r + 1, so that the repeats of
        one scenario are spread over the phase): repeat r (>= 2) is the
        stem `_r{r}`, its own raw file, and is done when results.json holds
        r scenarios of that shape. Larger concurrencies of a shape whose
        smaller concurrency failed are recorded as skipped (and not run).
        """
        done = measured(self.run_dir, self._results())
        skips = read_skips(self.run_dir)
        skipped = {k.scenario for k in skips}
        cut = failed_at(skips)
        tried = set(read_session(self.session))
        for repeat in range(1, repeats + 1):
            for row in self.grid:
                name = row.name if repeat == 1 else f"{row.name}_r{repeat}"
                if name in tried or row.name in skipped:
                    continue
                if done.get((row.concurrency, *row.shape), 0) >= repeat:
                    if repeats == 1:
                        log.append(f"scenario {row.name} already done; skipping")
                    elif repeat == repeats:
                        log.append(f"scenario {row.name} already done {repeats} times; skipping")
                    continue
                limit = cut.get(row.shape)
                if limit is not None and row.concurrency > limit:
                    reason = f"{SKIPPED_PREFIX}: c{limit} of this shape failed"
                    if self.record:
                        record_skip(self.run_dir, row, reason)
                    skipped.add(row.name)
                    log.append(f"scenario {row.name} {'recorded in' if self.record else 'would be recorded in'} "
                               f"{SKIP_CSV}: {reason}")
                    continue
                return self._propose(row, repeat if repeat > 1 else None)
        return None

    def next_in_slo_search(self, log: list[str], spec: Optional[SloSpec], lo: Optional[int], hi: Optional[int],
                           max_steps: int, resolution: float = 0.1, remeasure: bool = True) -> Optional[Scenario]:
        """Per shape (grid order), the concurrency the SLO search measures next.

        Bounds default to the grid's smallest and largest concurrency of the
        shape. A shape stops when the search converged, when it proposes a
        measurement this session already ran without a result (the client
        failed), or after max_steps measurements in this session.

        With remeasure (the default), a concurrency whose only point is
        invalid (docs/VALIDITY.md) is measured once more before the search
        reads its verdict: with the prompts of `validity.remeasure_prompts`,
        into a new raw file `<stem>_r2` beside the first one (kept). With two
        points at that concurrency the search reads the latest, valid or not,
        so a point is re-measured at most once.
        """
        tried = read_session(self.session)
        shapes: dict[tuple[int, int], list[int]] = {}
        for row in self.grid:
            shapes.setdefault(row.shape, []).append(row.concurrency)
        for (input_len, output_len), cs in shapes.items():
            low, high = lo or min(cs), hi or max(cs)
            steps = sum(1 for name in tried if _session_shape(name) == (input_len, output_len))
            results = self._results()
            repeat: Optional[int] = None
            if results is None:
                proposal: Optional[int] = low
                row = GridRow(low, input_len, output_len)
            else:
                from ..analysis.slo_search import next_concurrency  # the SLO search only: its validity rules load numpy

                decision = next_concurrency(self.run_dir, input_len, output_len, low, high, resolution,
                                            remeasure=remeasure, spec=spec)
                proposal = decision.next_concurrency
                row = GridRow(proposal or 0, input_len, output_len, decision.num_prompts)
                if decision.num_prompts is not None:
                    repeat = 1 + sum(1 for s in results.scenarios if (s.concurrency, s.input_len, s.output_len)
                                     == (proposal, input_len, output_len))
            if proposal is None:
                continue
            session_name = row.name if repeat is None else f"{row.name}_r{repeat}"
            if session_name in tried:
                log.append(f"SLO search {input_len}x{output_len}: c{proposal} was run in this session without a "
                           "result; stopping this shape")
                continue
            if steps >= max_steps:
                log.append(f"SLO search {input_len}x{output_len}: stopped after {max_steps} steps (SLO_MAX_STEPS)")
                continue
            if repeat is None:
                log.append(f"SLO search {input_len}x{output_len}: trying concurrency {proposal}")
            else:
                log.append(f"SLO search {input_len}x{output_len}: the point at concurrency {proposal} is invalid; "
                           f"measuring it once more with {row.num_prompts} prompts")
            return self._propose(row, repeat)
        return None


_SESSION_NAME = re.compile(r"^c[0-9]+_i([0-9]+)_o([0-9]+)(?:_r[0-9]+)?$")


def _session_shape(name: str) -> Optional[tuple[int, int]]:
    """(input, output) of a session line `c{c}_i{in}_o{out}[_r{n}]`."""
    match = _SESSION_NAME.match(name)
    return (int(match.group(1)), int(match.group(2))) if match else None
