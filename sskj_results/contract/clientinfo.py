"""Two parts of a scenario of results.json: which load client measured it, and its acceptance length.

The load clients moved in 2026 (sglang.benchmark.serving, Rust load
generators, new seed and warmup defaults) while writing the same keys, so each
scenario records its client's fingerprint; and the engines report speculative
acceptance from different sources, so each scenario records where its
acceptance length came from (docs/METRICS.md, "Client fingerprint" and
"Acceptance length").
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, JsonValue

from .base import _Model

Implementation = Literal["python", "rust"]


class ClientFingerprint(_Model):
    """The load client of one scenario: what a record says, null where it says nothing."""

    module: Optional[str] = Field(
        default=None,
        description="The client's Python module as it ran: `sglang.benchmark.serving`, `sglang.bench_serving` or "
        "`vllm.entrypoints.cli.main` (`vllm bench serve`); null when unknown (a raw file does not name it).",
    )
    version: Optional[str] = Field(
        default=None,
        description="Version of the client's package (never the server's `server_info.version`); null when unknown.",
    )
    implementation: Optional[Implementation] = Field(
        default=None,
        description="`python` or `rust` (sglang `--rust-client`, vLLM `VLLM_USE_RUST_BENCH=1`): the load generator "
        "that timed the requests; null when unknown (the Rust clients write the Python ones' keys).",
    )
    implementation_source: Optional[Literal["command", "file", "declared"]] = Field(
        default=None,
        description="Where implementation comes from: `command` (the command the run loop ran), `file` (keys only "
        "a Rust client writes: sglang `protocol` or a string `request_rate`, vLLM `max_model_len`, "
        "`input_throughput`, `steady_state`), `declared` (`import-legacy --client-impl`); null with implementation.",
    )
    seed: Optional[int] = Field(default=None, description="The client's `--seed` as it ran; null when unknown.")
    seed_default: Optional[int] = Field(
        default=None,
        description="The module's default `--seed` (sglang.benchmark.serving 42, sglang.bench_serving 1, vLLM 0): "
        "the seed of a run that gave none; null when the module is unknown.",
    )
    warmup_requests: Optional[int] = Field(
        default=None, ge=0, description="The client's own warmup requests (sglang `--warmup-requests`); null when unknown.",
    )
    warmup_policy: Optional[Literal["respects_max_concurrency", "all_at_once"]] = Field(
        default=None,
        description="How the module's own warmup sends its requests: `respects_max_concurrency` "
        "(sglang.benchmark.serving, vLLM) or `all_at_once` (sglang.bench_serving: every warmup request at once, "
        "which inflated the TTFT of later points); null when the module is unknown.",
    )
    temperature: Optional[float] = Field(
        default=None, ge=0,
        description="Sampling temperature the client's requests asked for (vLLM `--temperature`, sskj passes 0; "
        "sglang's request bodies 0.0 unless `--extra-request-body` sets it): speculative acceptance depends on it; "
        "null when unknown (raw files do not record it).",
    )
    source: Literal["run", "file"] = Field(
        description="`run`: recorded by the run loop from the command it ran (client_info/<stem>.json); `file`: read "
        "from the raw file and import-legacy's options.",
    )


class Acceptance(_Model):
    """Speculative acceptance of one scenario, with where it came from (docs/METRICS.md)."""

    length: float = Field(
        description="Acceptance length: tokens emitted per verification step, 1 + accepted draft tokens / drafting "
        "steps (as scenario.accept_length).",
    )
    source: Literal["client_counters", "server_metrics", "server_info_lifetime"] = Field(
        description="`client_counters`: the vLLM client's own /metrics change over the benchmark "
        "(`spec_decode_*` keys); `server_metrics`: the run loop's /metrics before and after the scenario "
        "(vLLM `vllm:spec_decode_*` counters; SGLang `sglang:generation_tokens_total` / "
        "`sglang:spec_verify_calls_total`); `server_info_lifetime`: the SGLang client's `accept_length` "
        "(`server_info.internal_states[0].avg_spec_accept_length`: the first scheduler's average over the "
        "server's lifetime).",
    )
    weighting: Literal["token", "request"] = Field(
        description="`token`: pooled over every verification step of every request (Σ accepted / Σ steps, so "
        "longer requests weigh more); `request`: mean over requests of each request's value.",
    )
    scope: Literal["scenario", "server_lifetime"] = Field(
        description="`scenario`: measured over this scenario only; `server_lifetime`: since the server started "
        "(earlier scenarios and warmups included).",
    )
    draft_length: Optional[int] = Field(
        default=None, ge=1,
        description="Draft tokens per step (positions of per_position, else the run's spec_tokens); null when unknown.",
    )
    per_position: Optional[list[float]] = Field(
        default=None,
        description="Acceptance rate of each draft position (accepted at position k / drafting steps); null when "
        "not reported.",
    )
    reliable: Optional[bool] = Field(
        default=None,
        description="false when the value is known not to describe the scenario's engine: an SGLang lifetime value "
        "under data-parallel decode (dp_size > 1: one scheduler's average only); true for a scenario-scoped count; "
        "null when unknown (a lifetime value of one scheduler).",
    )
    note: Optional[str] = Field(default=None, description="Why reliable is what it is, in one line.")


class QueueStats(_Model):
    """Queue time of a scenario's successful requests, ms (numpy linear percentiles, as the latencies)."""

    mean: Optional[float] = Field(default=None, description="Mean, ms.")
    p50: Optional[float] = Field(default=None, description="Median, ms.")
    p90: Optional[float] = Field(default=None, description="90th percentile, ms.")
    p95: Optional[float] = Field(default=None, description="95th percentile, ms.")
    p99: Optional[float] = Field(default=None, description="99th percentile, ms.")
    count: int = Field(ge=0, description="Requests behind the statistics.")


class ClientExtras(_Model):
    """What the newer clients write beyond the statistics (docs/METRICS.md); null where a client wrote nothing."""

    client_queue_ms: Optional[QueueStats] = Field(
        default=None, description="vLLM `queue_times`: per request, the wait in the client for a concurrency slot "
        "(send time minus arrival time); not part of TTFT or E2E.",
    )
    server_queue_ms: Optional[QueueStats] = Field(
        default=None, description="vLLM `server_queue_times`: per request, the server's reported queueing time.",
    )
    max_model_len: Optional[int] = Field(default=None, ge=1, description="vLLM Rust client: the server's context length.")
    steady_state: Optional[JsonValue] = Field(
        default=None, description="vLLM Rust client: its `steady_state` object, as written.",
    )
    protocol: Optional[str] = Field(default=None, description="sglang Rust client: the protocol it spoke (`http`).")
