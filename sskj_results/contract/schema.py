"""The JSON Schema of results.json, generated from the models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .models import SCHEMA_ID, Results

SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
COMMITTED_SCHEMA = Path(__file__).resolve().parents[2] / "schema" / "results.schema.json"
REGENERATE_COMMAND = "sskj-results schema --write schema/results.schema.json"
COMMITTED_RUN_SET_SCHEMA = COMMITTED_SCHEMA.parent / "runset.schema.json"
REGENERATE_RUN_SET_COMMAND = "sskj-results schema --run-set --write schema/runset.schema.json"


def results_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of results.json."""
    schema = Results.model_json_schema(mode="validation")
    schema["$schema"] = SCHEMA_DRAFT
    schema["$id"] = SCHEMA_ID
    # schema_version is optional (absent means 1): pydantic already leaves it out of `required`.
    return schema


def schema_text() -> str:
    """Deterministic text of the schema: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(results_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"



def run_set_schema() -> dict[str, Any]:
    """The JSON Schema of a run-set index (the results.json of a multi-phase run directory)."""
    from .runset import RUN_SET_SCHEMA_ID, RunSet

    schema = RunSet.model_json_schema(mode="validation")
    schema["$schema"] = SCHEMA_DRAFT
    schema["$id"] = RUN_SET_SCHEMA_ID
    return schema


def run_set_schema_text() -> str:
    return json.dumps(run_set_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
