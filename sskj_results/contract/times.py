"""The forms a recorded time takes in results.json: a full date-time, or as much of it as is known."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal, Optional

TIMESTAMP_PATTERN = (
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
)
_TIMESTAMP_RE = re.compile(TIMESTAMP_PATTERN)
# a time as precise as it is known: a full date-time with its offset, a date (`2026-03-24`), or a month and day
# without a year (ISO 8601's `--10-15`)
PARTIAL_TIMESTAMP_PATTERN = (
    r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})|\d{4}-\d{2}-\d{2}|--\d{2}-\d{2})$"
)
TimePrecision = Literal["second", "day", "month-day"]
TimeSource = Literal["run", "file name", "clock", "given"]
_PRECISION_FORM = {
    "second": _TIMESTAMP_RE,
    "day": re.compile(r"^\d{4}-\d{2}-\d{2}$"),
    "month-day": re.compile(r"^--\d{2}-\d{2}$"),
}
TIMESTAMP_PRECISION_DESCRIPTION = (
    "How much of the time is known: `second` (a full date-time), `day` (a date, `2026-03-24`), `month-day` (a month "
    "and day without a year, `--10-15`); null for a full date-time of a file of schema version 1, or no time."
)
TIMESTAMP_SOURCE_DESCRIPTION = (
    "Where the time came from: `run` (the raw run's own time key, e.g. vLLM's `date`), `file name` (the raw file's "
    "name), `clock` (the workflow's clock when it created the run), `given` (set by hand); null when unknown or not said."
)


def check_time_form(value: Optional[str], precision: Optional[str]) -> Optional[str]:
    """Why a timestamp does not have the form its precision says, or None."""
    if value is None:
        return "a precision is given but the timestamp is null" if precision is not None else None
    form = _PRECISION_FORM.get(precision or "second")
    if form is not None and not form.match(value):
        shown = precision or "a full date-time (no precision given)"
        return f"timestamp {value!r} does not have the form of precision {shown}"
    return None


def precision_of(value: str) -> Optional[TimePrecision]:
    """The precision a written time's form says (a full date-time, a date, a month and day), or None."""
    precisions: tuple[TimePrecision, ...] = ("second", "day", "month-day")
    for precision in precisions:
        if _PRECISION_FORM[precision].match(value):
            return precision
    return None


def now_iso() -> str:
    """Now, ISO-8601 with the local UTC offset, to the second."""
    return datetime.now().astimezone().isoformat(timespec="seconds")
