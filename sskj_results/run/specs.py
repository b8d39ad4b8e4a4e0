"""The run loop's small values: a phase spec `NAME[:ENGINE][:KEY=VALUE]...` (PHASES in config.env),
parsed and checked, a grid row, and the grid (scenarios.tsv or CONCURRENCIES x SHAPES, ordered) with
its prompts rule.

Kept apart from the planner so that loading a run's configuration, checking it before the run
(`preflight`), or starting a client under `run-client`, imports no models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from ..contract.errors import ConfigError


@dataclass(frozen=True)
class GridRow:
    """One row of the grid: a concurrency and a shape, with the grid's own prompt count if it has one."""

    concurrency: int
    input_len: int
    output_len: int
    num_prompts: Optional[int] = None

    @property
    def name(self) -> str:
        return f"c{self.concurrency}_i{self.input_len}_o{self.output_len}"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.input_len, self.output_len)


_PHASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class PhaseSpec:
    """`NAME[:ENGINE][:KEY=VALUE]...`: the phase's name, its engine (default NAME), settings exported while it runs."""

    name: str
    engine: str
    settings: tuple[str, ...]


def parse_phase_spec(spec: str) -> PhaseSpec:
    from ..catalog.engines import engine as engine_row

    fields = spec.split(":")
    name, engine, settings = fields[0], "", []
    if not _PHASE_NAME.match(name):
        raise ConfigError(f"invalid phase spec {spec!r}: expected NAME[:ENGINE][:KEY=VALUE]...")
    for field in fields[1:]:
        if _ASSIGNMENT.match(field):
            settings.append(field)
        elif not engine and not settings and field:
            engine = field
        else:
            raise ConfigError(f"invalid phase spec {spec!r}: unexpected {field!r}")
    engine = engine or name
    engine_row(engine)  # an unknown engine is an error here, before anything starts
    return PhaseSpec(name, engine, tuple(settings))


# ---------------------------------------------------------------- the grid

_SHAPE = re.compile(r"^([1-9][0-9]*)x([1-9][0-9]*)$")
_POSITIVE = re.compile(r"^[1-9][0-9]*$")


@dataclass(frozen=True)
class PromptsRule:
    """Prompts of a scenario: the grid's value, else num_prompts, else max(c * per_concurrency, minimum)."""

    num_prompts: Optional[int] = None
    per_concurrency: int = 4
    minimum: int = 8

    def prompts(self, row: GridRow) -> int:
        if row.num_prompts is not None:
            return row.num_prompts
        if self.num_prompts is not None:
            return self.num_prompts
        return max(row.concurrency * self.per_concurrency, self.minimum)


def order_grid(rows: Iterable[GridRow]) -> list[GridRow]:
    """Shapes in order of first appearance, ascending concurrency within a shape; a repeated (c, shape) keeps its first row."""
    shape_index: dict[tuple[int, int], int] = {}
    unique: dict[tuple[int, int, int], GridRow] = {}
    for row in rows:
        shape_index.setdefault(row.shape, len(shape_index))
        unique.setdefault((row.concurrency, *row.shape), row)
    return sorted(unique.values(), key=lambda r: (shape_index[r.shape], r.concurrency))


def read_scenarios_file(path: Path) -> list[GridRow]:
    """scenarios.tsv: `concurrency input_len output_len [num_prompts]` per line; `#` comments; optional header."""
    rows: list[GridRow] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; expected 'concurrency input_len output_len [num_prompts]' lines") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if not rows and fields[0] == "concurrency":
            continue  # header
        if not 3 <= len(fields) <= 4:
            raise ConfigError(f"{path}:{number}: expected 'concurrency input_len output_len [num_prompts]'")
        for field in fields:
            if not _POSITIVE.match(field):
                raise ConfigError(f"{path}:{number}: {field!r} is not a positive integer")
        values = [int(f) for f in fields]
        rows.append(GridRow(values[0], values[1], values[2], values[3] if len(values) == 4 else None))
    return rows


def grid_from_lists(concurrencies: str, shapes: str) -> list[GridRow]:
    """CONCURRENCIES="1 4 16" x SHAPES="128x64 1024x128"."""
    rows: list[GridRow] = []
    cs = concurrencies.split()
    for c in cs:
        if not _POSITIVE.match(c):
            raise ConfigError(f"CONCURRENCIES: {c!r} is not a positive integer")
    for shape in shapes.split():
        match = _SHAPE.match(shape)
        if not match:
            raise ConfigError(f"SHAPES: {shape!r} is not INPUTxOUTPUT (e.g. 1024x128)")
        rows.extend(GridRow(int(c), int(match.group(1)), int(match.group(2))) for c in cs)
    return rows


def load_grid(scenarios_file: Optional[Path], concurrencies: Optional[str], shapes: Optional[str]) -> list[GridRow]:
    """The experiment's grid, ordered: scenarios_file when it exists, else CONCURRENCIES x SHAPES."""
    if scenarios_file is not None and scenarios_file.is_file():
        rows = read_scenarios_file(scenarios_file)
    elif concurrencies and shapes:
        rows = grid_from_lists(concurrencies, shapes)
    else:
        where = scenarios_file or "scenarios.tsv"
        raise ConfigError(f"no scenarios: create {where} or set CONCURRENCIES and SHAPES in config.env")
    if not rows:
        raise ConfigError("the scenario grid is empty")
    return order_grid(rows)
