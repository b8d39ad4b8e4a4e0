"""The shared configuration of every results.json model (models.py, clientinfo.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    """Shared configuration: unknown keys are errors, finite floats only."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        validate_assignment=False,
        populate_by_name=True,
    )
