"""The run loop's small values: a phase spec `NAME[:ENGINE][:KEY=VALUE]...` (PHASES in config.env),
parsed and checked, and a grid row.

Kept apart from the planner so that loading a run's configuration, or starting a client under
`run-client`, imports no models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

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
