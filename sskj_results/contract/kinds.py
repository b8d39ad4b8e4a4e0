"""Vocabularies of results.json that code outside the models reads too, kept light (no pydantic): the
launch side (catalog, run) can name them without building the models."""

from __future__ import annotations

from typing import Literal

# how a scenario's prompts reached the server (docs/METRICS.md, "Prompt tokens")
PromptMethod = Literal["token-ids", "round-trip-set", "client-random-text", "client-dataset"]
