"""What a raw run records about itself besides its statistics: when it ran, on which chip (never guessed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from ..catalog.chips import normalize_chip

# keys under which a run records its chip (vllm's --metadata KEY=VALUE lands at the top level; some forks nest a
# `metadata` object), best first
CHIP_KEYS = ("chip", "gpu", "gpu_type", "gpu_name", "gpu_model", "accelerator", "accelerator_type", "device_name",
             "hardware", "device")


def _recorded_chip(data: dict[str, Any]) -> tuple[Optional[str], Optional[tuple[str, str]]]:
    """(chip id, (key, text)) from the run's own keys (top level, then a nested `metadata` object); never guessed."""
    places: list[tuple[str, dict[str, Any]]] = [("", data)]
    nested = data.get("metadata")
    if isinstance(nested, dict):
        places.append(("metadata.", nested))
    for prefix, place in places:
        for key in CHIP_KEYS:
            value = place.get(key)
            if isinstance(value, str) and value.strip():
                chip = normalize_chip(value)
                if chip is not None:
                    return chip, (prefix + key, value.strip()[:200])
    return None, None


# keys that hold when a run ran, first present wins: vLLM's `date`, then what forks and wrappers write
_TIME_KEYS = ("date", "timestamp", "datetime", "start_time", "started_at")
# an epoch in seconds is read only in this window (2015 … 2040): other numbers under these keys are not times
_EPOCH_WINDOW = (1.42e9, 2.21e9)


def _started(data: dict[str, Any], notes: list[str]) -> tuple[Optional[datetime], str]:
    """(when the run ran, precision) from its own keys (_TIME_KEYS): `%Y%m%d-%H%M%S` (vLLM) and other compact forms,
    ISO-8601, or epoch seconds; naive local time or aware. Precision "day" for a date without a time. None when no
    key holds a time."""
    for key in _TIME_KEYS:
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if _EPOCH_WINDOW[0] <= value <= _EPOCH_WINDOW[1]:
                return datetime.fromtimestamp(value).astimezone(), "second"
            continue
        if not isinstance(value, str) or not value.strip():
            continue
        text = value.strip()
        for fmt in ("%Y%m%d-%H%M%S", "%Y%m%d_%H%M%S", "%Y%m%d%H%M%S", "%Y-%m-%d %H:%M:%S"):
            try:
                return datetime.strptime(text, fmt), "second"
            except ValueError:
                pass
        for fmt in ("%Y%m%d", "%Y-%m-%d"):
            try:
                return datetime.strptime(text, fmt), "day"
            except ValueError:
                pass
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")), "second"
        except ValueError:
            notes.append(f"{key} {value!r} not understood as a time")
    return None, "second"
