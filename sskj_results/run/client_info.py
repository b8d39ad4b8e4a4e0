"""client_info/<stem>.json: the load client of one scenario, as the run loop runs it.

Written by the run loop's `step` before the client starts (the command it
builds from the same settings); read by `parse` into the scenario's `client`
(ingest/clientprint.py). Keys: client, module, implementation, version, seed,
warmup_requests (null when the flag is not passed), temperature (the requests' sampling temperature, with
CLIENT_EXTRA_ARGS over the client's default: catalog/clients.client_temperature), streaming (false when
CLIENT_EXTRA_ARGS turn the client's streaming off: catalog/clients.client_streams).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..catalog.clients import choose_module, client_streams, client_temperature, implementation
from ..contract.errors import ConfigError
from ..contract.io import atomic_write_text

CLIENT_INFO_DIR = "client_info"


def client_record(client: str, module: str, impl: str, version: str, seed: str,
                  warmup_requests: str, extra: str = "") -> dict[str, object]:
    """The record of one scenario's client. Raises ConfigError for an unknown client, module or implementation."""
    try:
        row = choose_module(client, module=module or None)
        implementation(client, impl)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    def whole(text: str) -> Optional[int]:
        return int(text) if text.strip().lstrip("-").isdigit() else None

    return {"client": client, "module": row.module, "implementation": impl, "version": version or None,
            "seed": whole(seed), "warmup_requests": whole(warmup_requests) if row.warmup_flag else None,
            "temperature": client_temperature(client, extra), "streaming": client_streams(client, extra)}


def write_client_info(run_dir: Path, stem: str, **fields: str) -> Path:
    """Write client_info/<stem>.json atomically; returns its path."""
    path = run_dir / CLIENT_INFO_DIR / f"{stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(client_record(**fields), indent=2, sort_keys=True) + "\n")
    return path
