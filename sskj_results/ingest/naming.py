"""Scenario names: `c{concurrency}_i{input}_o{output}` (or a rate form), unique within a run."""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from ..contract.errors import ConfigError
from ..contract.models import Scenario

DEFAULT_NAME_FORMAT = "c{concurrency}_i{input_len}_o{output_len}"
# open-loop runs (a request rate, no concurrency cap)
DEFAULT_RATE_FORMAT = "r{request_rate}_i{input_len}_o{output_len}"
# a concurrency cap and a finite request rate
DEFAULT_CAPPED_RATE_FORMAT = "c{concurrency}_r{request_rate}_i{input_len}_o{output_len}"

ShapeKey = tuple[int, int, int, float]


def format_rate(rate: Optional[float]) -> str:
    """4.0 -> '4', 0.5 -> '0.5'; None (unlimited) -> 'inf'."""
    return "inf" if rate is None else f"{rate:g}"


def scenario_name(concurrency: Optional[int], input_len: int, output_len: int, fmt: Optional[str] = None,
                  request_rate: Optional[float] = None) -> str:
    """A scenario's name from its shape, by default `c{concurrency}_i{input_len}_o{output_len}`;
    an open-loop run (no concurrency) is `r{request_rate}_i{input_len}_o{output_len}` unless fmt uses {request_rate}."""
    if fmt is None and request_rate is not None:
        fmt = DEFAULT_CAPPED_RATE_FORMAT if concurrency is not None else DEFAULT_RATE_FORMAT
    elif concurrency is None and not (fmt and "{request_rate}" in fmt):
        fmt = DEFAULT_RATE_FORMAT
    try:
        return (fmt or DEFAULT_NAME_FORMAT).format(concurrency=concurrency, input_len=input_len, output_len=output_len,
                                                   request_rate=format_rate(request_rate))
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"scenario name format {fmt!r} is invalid ({exc}); use {{concurrency}}, {{input_len}}, {{output_len}} "
            "and {request_rate}"
        ) from None


def shape_of(s: Scenario) -> ShapeKey:
    """(concurrency, input, output, rate): an open-loop run has concurrency 0; an unlimited rate is inf."""
    rate = s.request_rate if s.request_rate is not None else math.inf
    return (s.concurrency or 0, s.input_len, s.output_len, rate)


def _name_of(key: ShapeKey, fmt: Optional[str]) -> str:
    concurrency, input_len, output_len, rate = key
    return scenario_name(concurrency or None, input_len, output_len, fmt, None if math.isinf(rate) else rate)


def _natural(file: str) -> tuple[tuple[int, str], ...]:
    """A file name's sort key with its numbers as numbers: the run loop's `<stem>_r10` after `<stem>_r9`."""
    return tuple((int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"([0-9]+)", file))


def name_scenarios(scenarios: list[Scenario], fmt: Optional[str] = None) -> list[Scenario]:
    """Sort by shape then concurrency; the 2nd, 3rd… run of one shape get `_r2`, `_r3` (repeat set on all)."""
    def order(s: Scenario) -> tuple[Any, ...]:
        src = s.source
        key = shape_of(s)
        return (s.input_len, s.output_len, key[0], key[3], _natural(src.file) if src else (), src.line if src else 0,
                src.index or 0 if src else 0)

    ordered = sorted(scenarios, key=order)
    counts: dict[ShapeKey, int] = {}
    owner: dict[str, ShapeKey] = {}
    for s in ordered:
        key = shape_of(s)
        counts[key] = counts.get(key, 0) + 1
        base = _name_of(key, fmt)
        if owner.setdefault(base, key) != key:
            shown = [k[:3] if math.isinf(k[3]) else (f"rate {format_rate(k[3])}", *k[1:3]) for k in (owner[base], key)]
            raise ConfigError(
                f"scenario name format {fmt!r} gives {base!r} to two shapes {shown[0]} and {shown[1]} "
                "(concurrency, input, output); include each of {concurrency}, {input_len}, {output_len} that varies"
            )
    seen: dict[ShapeKey, int] = {}
    for s in ordered:
        key = shape_of(s)
        seen[key] = seen.get(key, 0) + 1
        base = _name_of(key, fmt)
        s.repeat = seen[key] if counts[key] > 1 else None
        s.name = base if seen[key] == 1 else f"{base}_r{seen[key]}"
    return ordered

