"""What a raw file says about its load client and its speculative acceptance (docs/METRICS.md).

* The client: the Rust load generators write the Python clients' keys, plus a
  few of their own: sglang's `--rust-client` adds `"protocol"` and writes
  `request_rate` as the string `"inf"` (the Python client writes a number or a
  bare `Infinity`); vLLM's Rust client (`VLLM_USE_RUST_BENCH=1`) adds
  `max_model_len`, `input_throughput` and `steady_state`. Without those keys
  the file cannot tell: the implementation is what `import-legacy
  --client-impl` declares, else unknown. No client writes its module, and
  none but a wrapper its version (rawkeys.CLIENT_VERSION_KEYS).
* Acceptance: vLLM's client writes its own /metrics change
  (`spec_decode_num_drafts`, `spec_decode_accepted_tokens`,
  `spec_decode_per_position_acceptance_rates`); SGLang's writes
  `accept_length`, the first scheduler's lifetime average
  (`server_info.internal_states[0].avg_spec_accept_length`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..analysis.metrics import summarize
from ..analysis.plausibility import acceptance_bound, mark_synthetic, synthetic_acceptance, with_checks
from ..catalog.clients import CLIENTS, choose_module, module_of_label
from ..contract.clientinfo import Acceptance, ClientExtras, ClientFingerprint, QueueStats
from ..contract.errors import RawFormatError
from ..contract.io import display_name
from ..contract.models import Scenario, ValidityThresholds
from ..contract.redact import redact_text
from .sidecars import read_side_text
from .rawkeys import SGLANG, VLLM, _number

# keys only a Rust client writes, per raw format
RUST_KEYS: dict[str, tuple[str, ...]] = {
    SGLANG: ("protocol",),
    VLLM: ("max_model_len", "input_throughput", "steady_state"),
}


def rust_marks(data: dict[str, Any], fmt: str) -> list[str]:
    """The keys (and key forms) of this run that only a Rust client writes."""
    marks = [key for key in RUST_KEYS.get(fmt, ()) if key in data]
    if fmt == SGLANG and isinstance(data.get("request_rate"), str) and data["request_rate"].strip().lower() == "inf":
        marks.append('request_rate "inf" (a string)')
    return marks


def file_fingerprint(data: dict[str, Any], fmt: str, version: Optional[str],
                     declared_impl: Optional[str] = None) -> tuple[ClientFingerprint, Optional[str]]:
    """The client as the raw run says (a declared implementation where it cannot tell), and a note when the
    declared implementation contradicts the file (the file wins)."""
    marks = rust_marks(data, fmt)
    note = None
    if marks:
        impl: Optional[str] = "rust"
        source: Optional[str] = "file"
        if declared_impl == "python":
            note = (f"--client-impl python given, but the run has keys only a Rust client writes "
                    f"({', '.join(marks)}): recorded as rust")
    elif declared_impl:
        impl, source = declared_impl, "declared"
    else:
        impl = source = None
    return ClientFingerprint(version=version, implementation=impl,  # type: ignore[arg-type]
                             implementation_source=source, source="file"), note  # type: ignore[arg-type]


def recorded_fingerprint(record: dict[str, Any]) -> ClientFingerprint:
    """The fingerprint the run loop recorded for one scenario (client_info/<stem>.json, see
    run/client_info.py); the module's defaults come from the client catalog. Raises ValueError when malformed."""
    def whole(key: str) -> Optional[int]:
        value = record.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, bool) or not str(value).lstrip("-").isdigit():
            raise ValueError(f"{key} must be a whole number, got {value!r}")
        return int(value)

    client = record.get("client")
    module = record.get("module") if isinstance(record.get("module"), str) else None
    if client not in CLIENTS:
        raise ValueError(f"client must be one of {', '.join(CLIENTS)}, got {client!r}")
    row = choose_module(str(client), module=module) if module else None
    impl = record.get("implementation")
    if impl not in ("python", "rust"):
        raise ValueError(f"implementation must be python or rust, got {impl!r}")
    version = record.get("version") if isinstance(record.get("version"), str) and record.get("version") else None
    temperature = record.get("temperature")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not math.isfinite(temperature) or temperature < 0):
        raise ValueError(f"temperature must be a number of at least 0, got {temperature!r}")
    return ClientFingerprint(
        module=module, version=version, implementation=impl, implementation_source="command",
        seed=whole("seed"), seed_default=row.seed_default if row else None, warmup_requests=whole("warmup_requests"),
        warmup_policy=row.warmup_policy if row else None, source="run",  # type: ignore[arg-type]
        temperature=float(temperature) if temperature is not None else None,
    )


def _positions(data: dict[str, Any]) -> Optional[list[float]]:
    rates = data.get("spec_decode_per_position_acceptance_rates")
    if not isinstance(rates, list) or not rates:
        return None
    if not all(isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r) for r in rates):
        return None
    return [float(r) for r in rates]


def _dp_size(data: dict[str, Any]) -> Optional[int]:
    """sglang's data-parallel size from the run's server_info (the decode server's, for a prefill/decode pair)."""
    info = data.get("server_info")
    if isinstance(info, dict) and isinstance(info.get("decode"), list) and info["decode"]:
        info = info["decode"][0]
    if not isinstance(info, dict):
        return None
    value = info.get("dp_size")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _draft_tokens(data: dict[str, Any]) -> Optional[int]:
    info = data.get("server_info")
    if isinstance(info, dict) and isinstance(info.get("decode"), list) and info["decode"]:
        info = info["decode"][0]
    value = info.get("speculative_num_draft_tokens") if isinstance(info, dict) else None
    # sglang's draft tokens count the verified root token too: the draft length is one less
    return value - 1 if isinstance(value, int) and not isinstance(value, bool) and value >= 2 else None


def file_acceptance(data: dict[str, Any], fmt: str, length: Optional[float]) -> Optional[Acceptance]:
    """The acceptance this run reports, with its source; None when it reports none (`length` is the reader's
    accept_length of the run)."""
    if length is None or not math.isfinite(length):
        return None
    drafts = _number(data, "spec_decode_num_drafts")
    if fmt == VLLM or drafts is not None or "spec_decode_acceptance_length" in data:
        positions = _positions(data)
        draft_tokens = _number(data, "spec_decode_draft_tokens")
        draft_length = len(positions) if positions else None
        if draft_length is None and drafts and draft_tokens is not None and float(draft_tokens / drafts).is_integer():
            draft_length = int(draft_tokens / drafts)
        return Acceptance(length=length, source="client_counters", weighting="token", scope="scenario",
                          draft_length=draft_length or None, per_position=positions, reliable=True,
                          note="the vLLM client's /metrics change over its benchmark")
    dp = _dp_size(data)
    if dp is not None and dp > 1:
        reliable: Optional[bool] = False
        note = f"server lifetime average of the first of {dp} data-parallel schedulers: not this scenario's engine"
    else:
        reliable = None
        note = "server lifetime average (earlier scenarios and warmups included) of the first scheduler"
    return Acceptance(length=length, source="server_info_lifetime", weighting="token", scope="server_lifetime",
                      draft_length=_draft_tokens(data), reliable=reliable, note=note)


def _queue(values: Any, success: Optional[np.ndarray]) -> Optional[QueueStats]:
    if not isinstance(values, list) or not values:
        return None
    keep = [i for i, v in enumerate(values) if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) and v >= 0 and (success is None or (i < len(success) and success[i]))]
    if not keep:
        return None
    stats = summarize(np.array([float(values[i]) for i in keep], dtype=np.float64))
    return QueueStats(mean=stats["mean"], p50=stats["p50"], p90=stats["p90"], p95=stats["p95"], p99=stats["p99"],
                      count=len(keep))


def _json_or_none(value: Any) -> Any:
    """value when it is small, finite JSON (no NaN/Infinity anywhere), else None."""
    if value is None:
        return None
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None
    # free text from a raw file: never kept when it holds anything the one redaction would change
    return value if len(text) <= 20_000 and redact_text(text) == text else None


def file_extras(data: dict[str, Any], success: Optional[np.ndarray]) -> Optional[ClientExtras]:
    """The newer clients' keys beyond the statistics: queue times, the Rust clients' extras."""
    length = data.get("max_model_len")
    steady = data.get("steady_state")
    protocol = data.get("protocol")
    extras = ClientExtras(
        client_queue_ms=_queue(data.get("queue_times"), success),
        server_queue_ms=_queue(data.get("server_queue_times"), success),
        max_model_len=length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else None,
        steady_state=_json_or_none(steady),
        protocol=redact_text(protocol[:40]) if isinstance(protocol, str) and protocol else None,
    )
    return extras if extras != ClientExtras() else None


def client_of_run(scenario: Scenario, record: Optional[dict[str, Any]], label: Optional[str],
                  version: Optional[str]) -> None:
    """The scenario's fingerprint in parse: the run loop's record (client_info/<stem>.json) when there is one,
    checked against the file's own marks; else the file's, with the module and version the run's metadata
    records (metadata.client, metadata.client_version). In place."""
    found = scenario.client or ClientFingerprint(source="file")
    try:
        recorded = recorded_fingerprint(record) if record is not None else None
    except ValueError as exc:
        scenario.notes.append(f"client_info: {exc}; the client fingerprint is taken from the raw file")
        recorded = None
    if recorded is not None:
        if found.implementation_source == "file" and found.implementation != recorded.implementation:
            scenario.notes.append(f"the client ran as {recorded.implementation} (client_info) but the raw file has "
                                  f"keys of a {found.implementation} client")
        scenario.client = recorded.model_copy(update={"version": recorded.version or found.version})
        return
    row = module_of_label(label)
    update: dict[str, Any] = {}
    if found.module is None and row is not None:
        update.update(module=row.module, seed_default=row.seed_default, warmup_policy=row.warmup_policy)
    if found.version is None and version:
        update["version"] = version
    scenario.client = found.model_copy(update=update)


def best_acceptance(scenario: Scenario, measured: Optional[Acceptance], spec_tokens: Optional[int]) -> None:
    """The scenario's acceptance from the best source (docs/METRICS.md): the client's own scenario-scoped
    counters, else the run loop's /metrics change, else a lifetime value (kept, marked). In place.
    `spec_tokens` (the run's draft tokens per step, vLLM's num_speculative_tokens) is the draft length when no
    source said it."""
    current = scenario.acceptance
    if measured is not None and (current is None or current.scope == "server_lifetime"):
        if current is not None:
            scenario.notes.append(f"the client's accept_length {current.length:g} is a server lifetime average; "
                                  f"replaced by {measured.length:g} from /metrics over the scenario")
        if current is not None and measured.draft_length is None and current.draft_length is not None:
            measured = measured.model_copy(update={"draft_length": current.draft_length})
        scenario.acceptance = current = measured
        scenario.accept_length = measured.length
        scenario.reconstructed["accept_length"] = "server_metrics"
    if current is not None and current.draft_length is None and spec_tokens:
        scenario.acceptance = current.model_copy(update={"draft_length": spec_tokens})


def draft_length(scenario: Scenario, spec_tokens: Optional[int]) -> Optional[int]:
    """Draft tokens per step of a scenario: its acceptance's draft length, else the run's (vLLM) spec_tokens."""
    if scenario.acceptance is not None and scenario.acceptance.draft_length:
        return scenario.acceptance.draft_length
    return spec_tokens


def apply_server_args(scenarios: list[Scenario], command: Optional[str], draft_tokens: Optional[int],
                      thresholds: Optional[ValidityThresholds]) -> None:
    """import-legacy: what the server command says about acceptance: synthetic settings mark it, and its draft
    length goes on every scenario whose acceptance has none, their acceptance_bound judged with it. In place."""
    synthetic = synthetic_acceptance(command)
    t = thresholds or ValidityThresholds()
    for scenario in scenarios:
        scenario.acceptance = mark_synthetic(scenario.acceptance, synthetic)
        if not draft_tokens:
            continue
        if scenario.acceptance is None or scenario.acceptance.draft_length:
            continue
        best_acceptance(scenario, None, draft_tokens)
        scenario.validity = with_checks(scenario.validity,
                                        [acceptance_bound(scenario.accept_length, draft_tokens, t, scenario.output_len)])


def saved_texts(data: dict[str, Any], success: Optional[np.ndarray]) -> Optional[list[str]]:
    """The generated texts the client saved (`generated_texts`, both clients with details), of the successful
    requests when the outcome per request is known; None when the client saved none (or not one per request)."""
    texts = data.get("generated_texts")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) or t is None for t in texts):
        return None
    if success is not None and len(success) == len(texts):
        return [t or "" for t, ok in zip(texts, success) if ok]
    return [t or "" for t in texts]


def read_client_info(path: Path) -> Optional[dict[str, Any]]:
    """client_info/<stem>.json (None when absent). Raises RawFormatError naming the file when unreadable."""
    if not path.is_file():
        return None
    try:
        data = json.loads(read_side_text(path, "text file"))
    except ValueError as exc:
        raise RawFormatError(f"{display_name(path)}: not JSON ({exc}); the client fingerprint is not recorded") from None
    if not isinstance(data, dict):
        raise RawFormatError(f"{display_name(path)}: expected a JSON object; the client fingerprint is not recorded")
    return data
