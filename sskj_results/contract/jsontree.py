"""The JSON tree check: what no reader of results.json can take (too deep, integers outside 64 bits, numbers that
overflowed, NaN), by JSON path. Pure: no I/O."""

from __future__ import annotations

import math
from typing import Any, Optional


def format_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """Render a pydantic/jsonschema location as a JSON path: `scenarios[0].latencies.ttft_ms.p95`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "$"



# A results.json is a few levels deep; anything much deeper is not one (and
# would exhaust the recursion of the readers that walk it).
MAX_DEPTH = 64
INT64 = 1 << 63


def check_json_tree(data: Any, max_depth: int = MAX_DEPTH) -> Optional[str]:
    """`json path: what is wrong` for the first value no reader of results.json
    can take (nesting deeper than max_depth, an integer outside 64 bits, a
    number that overflowed to infinity, NaN), None when there is none.
    Iterative: any depth is walked without recursion."""
    return _check_tree(data, max_depth, math.inf)


_WIDE_FLOAT = "a float of magnitude 2**63 or more"  # what _check_tree says of one when asked (by identity)


def _check_tree(data: Any, max_depth: int, float_limit: float) -> Optional[str]:
    """check_json_tree; a finite float whose magnitude is float_limit or more is _WIDE_FLOAT."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, loc = stack.pop()
        kind = type(node)
        if kind is dict or kind is list:
            if len(loc) >= max_depth:
                return f"{format_loc(loc)}: nested deeper than {max_depth} levels; not a results.json"
            if kind is list and len(node) > 8 and (_numbers_in_range(node, float_limit) or (
                    len(loc) + 1 < max_depth and _flat_records_in_range(node, float_limit))):
                continue
            items = node.items() if kind is dict else enumerate(node)
            for key, value in items:
                vkind = type(value)
                if vkind is dict or vkind is list:
                    stack.append((value, loc + (key,)))
                elif vkind is int:
                    if not -INT64 <= value < INT64:
                        return (f"{format_loc(loc + (key,))}: integer of {value.bit_length()} bits is outside "
                                "the 64-bit range; not a measured value")
                elif vkind is float and (value - value != 0.0 or not -float_limit < value < float_limit):
                    if value - value == 0.0:
                        return _WIDE_FLOAT
                    return f"{format_loc(loc + (key,))}: number out of range ({value!r}); write null for a missing value"
        elif kind is int and not -INT64 <= node < INT64:
            return f"$: integer of {node.bit_length()} bits is outside the 64-bit range"
        elif kind is float and (node - node != 0.0 or not -float_limit < node < float_limit):
            return _WIDE_FLOAT if node - node == 0.0 else f"$: number out of range ({node!r})"
    return None


def _numbers_in_range(values: list[Any], float_limit: float) -> bool:
    """True when every item is a number (no container, string or null) that the walk below would pass: finite,
    within 64 bits and under float_limit in magnitude. Three passes in C (fsum raises on anything not a number and
    ends NaN or infinite when an item is). False means only "walk it", never "bad"."""
    try:
        total = math.fsum(values)
        low, high = min(values), max(values)
    except (TypeError, ValueError, OverflowError):
        return False
    bound = min(float(INT64), float_limit)
    return math.isfinite(total) and -bound < low and high < bound


def _flat_records_in_range(records: list[Any], float_limit: float) -> bool:
    """True when every item is a dict of the same keys whose values are scalars the walk would pass, checked a
    column at a time (per-request records: most of a run's values). False means only "walk it", never "bad"."""
    first = records[0]
    if type(first) is not dict:
        return False
    keys = first.keys()
    if not all(type(r) is dict and r.keys() == keys for r in records):
        return False
    for key in keys:
        column = [r[key] for r in records]
        kinds = set(map(type, column))
        if kinds <= _TEXT_KINDS:
            continue
        numbers = [v for v in column if v is not None] if type(None) in kinds else column
        if not kinds - {type(None)} <= _NUMBER_KINDS or (numbers and not _numbers_in_range(numbers, float_limit)):
            return False
    return True


_TEXT_KINDS = {str, bool, type(None)}
_NUMBER_KINDS = {int, float}
