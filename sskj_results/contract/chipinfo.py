"""A scenario's power record: which samples its energy came from, or why it has none (docs/METRICS.md#energy)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from .base import _Model

WindowSource = Literal["vllm-date", "client_stats"]


class PowerRecord(_Model):
    """Whether the power samples of a scenario were fit for its energy figures, and which ones were counted."""

    valid: bool = Field(description="The samples bracket the benchmark window, no gap between two samples of a "
                        "counted device exceeds max_gap_limit_s, every served device was sampled and reported power.")
    reason: Optional[str] = Field(default=None, description="Why the energy figures are null; null when valid.")
    sampler: Optional[str] = Field(default=None, description="The sampler that wrote the samples: `nvidia-smi` or "
                                   "`xpu-smi`; null when there were none.")
    window_source: Optional[WindowSource] = Field(
        default=None, description="Where the benchmark window came from: `vllm-date` (vLLM's `date`, written when "
        "the benchmark ended, minus duration_s), `client_stats` (client_stats/<stem>.json's ended_at minus "
        "duration_s); null when unknown.")
    window_start: Optional[str] = Field(default=None, description="Start of the benchmark window, ISO-8601.")
    window_s: Optional[float] = Field(default=None, ge=0, description="Length of the benchmark window, s.")
    devices: list[int] = Field(default_factory=list, description="Indices of the devices counted: those that "
                               "served the phase (DEVICES given, else 0 .. accelerators - 1).")
    samples: int = Field(default=0, ge=0, description="Samples of the counted devices inside the window, edges included.")
    max_gap_s: Optional[float] = Field(default=None, ge=0, description="Longest gap between two samples of a counted "
                                       "device within the window, s.")
    max_gap_limit_s: float = Field(description="The longest gap allowed, s (analysis/energy.py: MAX_GAP_S).")
