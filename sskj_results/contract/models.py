"""The results.json format: one pydantic model per object, every field described.

This module owns the contract between the shell experiments, the importer,
the reports and the team's own scripts. `schema/results.schema.json` is
generated from these models (`sskj-results schema --write`).

Metric definitions used throughout (also in docs/METRICS.md):

* Statistics follow the reference clients (sglang.bench_serving and
  ``vllm bench serve``): arithmetic mean, population std (ddof 0) and
  ``numpy.percentile`` with its default ``linear`` method, computed on
  seconds and reported in milliseconds.
* Only successful requests (the client's ``errors[i] == ""``) enter latency
  statistics.
* TTFT: time from sending the request to the first streamed token.
* E2E: time from sending the request to the last token.
* TPOT (per request): ``(e2e - ttft) / (output_tokens - 1)`` for requests with
  more than one output token; scenario TPOT statistics are over requests.
* ITL: every gap between consecutive streamed chunks of every request, pooled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from .base import _Model
from .figures import Distribution, Window, metric_fields, window_fields  # noqa: F401 - part of the contract
from .metrics import LATENCY_NAMES, READ_INPUTS, SECTION_METRICS, WINDOW_METRICS, metric, request_input
from .validity_models import CheckName, Validity, ValidityCheck, ValidityThresholds  # noqa: F401 - part of the contract
from .clientinfo import Acceptance, ClientExtras, ClientFingerprint
from .chipinfo import PowerRecord
from .redact import redact_text, redact_value_of

# 2: `failed` may be null (unknown), timestamps may be null or partial, with their precision and source
SCHEMA_VERSION: Final = 2
SCHEMA_VERSIONS = (1, 2)
SCHEMA_ID = "https://sskj.dev/schema/results.schema.json"

SloMark = Literal["✅", "⚠️", "❌", "❔"]
from .kinds import PromptMethod  # noqa: E402 - part of the contract

from .times import (  # noqa: E402 - re-exported: the timestamp forms are part of the contract
    _TIMESTAMP_RE,
    PARTIAL_TIMESTAMP_PATTERN,
    TIMESTAMP_PATTERN,  # noqa: F401
    TIMESTAMP_PRECISION_DESCRIPTION,
    TIMESTAMP_SOURCE_DESCRIPTION,
    TimePrecision,
    TimeSource,
    check_time_form,
)

NonNegInt = Annotated[int, Field(ge=0)]


def _redact_attrs(obj: BaseModel, names: tuple[str, ...]) -> None:
    """Every text attribute named goes through the one redaction (in place, no re-validation)."""
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, str):
            cleaned = redact_text(value)
            if cleaned != value:
                object.__setattr__(obj, name, cleaned)


class Metadata(_Model):
    """Who ran what, where, with which engine. Never inferred from paths."""

    experiment: str = Field(description="Experiment name, e.g. `dsv4_h200_dspark`.")
    run_id: str = Field(description="Run identifier, by default `YYYYMMDD-HHMMSS`.")
    timestamp: Optional[str] = Field(
        pattern=PARTIAL_TIMESTAMP_PATTERN,
        description="Start of the run, ISO-8601 with a UTC offset, e.g. `2026-07-07T13:26:41+08:00`; as much of it as "
        "is known (see timestamp_precision: `2026-03-24`, `--10-15`); null when unknown (never completed from a "
        "file's modification time).",
    )
    timestamp_precision: Optional[TimePrecision] = Field(default=None, description=TIMESTAMP_PRECISION_DESCRIPTION)
    timestamp_source: Optional[TimeSource] = Field(default=None, description=TIMESTAMP_SOURCE_DESCRIPTION)
    model: str = Field(description="Model path or name served by the engine.")
    backend: Optional[str] = Field(
        default=None,
        description="Serving backend, e.g. `vllm-dspark`, `sglang`. At least one of backend/engine is set.",
    )
    engine: Optional[str] = Field(
        default=None,
        description="Inference engine, e.g. `vllm`, `vllm-dspark`, `sglang`, `vllm-xpu`. At least one of backend/engine is set.",
    )
    hardware: Optional[str] = Field(
        default=None, description="Human-readable hardware, e.g. `8x NVIDIA H200 143GB`, `2 nodes x 8x NVIDIA H200 143GB`."
    )
    accelerator: Optional[str] = Field(
        default=None,
        description="Accelerator family, e.g. `NVIDIA H200`, `Kunlun XPU`. At least one of accelerator/chip is set.",
    )
    chip: Optional[str] = Field(
        default=None,
        description="Chip identifier, e.g. `NVIDIA H200` or the platform's CHIP. At least one of accelerator/chip is set.",
    )
    script: Optional[str] = Field(default=None, description="Script that produced the run, relative to the repository.")
    env: Optional[str] = Field(default=None, description="Python environment or container used by the engine.")
    image: Optional[str] = Field(
        default=None,
        description="Container image the engine ran in (the image of a `docker:` env, e.g. `lmsysorg/sglang:v0.5.4`); "
        "null when the engine did not run in a container or the image is not known.",
    )
    git_commit: Optional[str] = Field(default=None, description="Git commit of the benchmark repository.")
    description: Optional[str] = Field(default=None, description="Free-text note.")
    platform: Optional[str] = Field(default=None, description="Platform file used, e.g. `nvidia_h200` (platforms/<platform>.env).")
    phase: Optional[str] = Field(default=None, description="Phase of a multi-phase experiment, e.g. `phase2_vllm_ngram`.")
    engine_version: Optional[str] = Field(default=None, description="Version of the inference engine as it reported it.")
    client: Optional[str] = Field(default=None, description="Benchmark client, e.g. `sglang.bench_serving` or `vllm bench serve`.")
    client_version: Optional[str] = Field(default=None, description="Version of the benchmark client.")
    driver_version: Optional[str] = Field(default=None, description="Accelerator driver version (nvidia-smi / xpu-smi), when found.")
    runtime_version: Optional[str] = Field(default=None, description="Accelerator runtime version (CUDA / XPU runtime), when found.")
    devices: Optional[str] = Field(
        default=None,
        description="Devices the server was limited to, as the variable it was given (e.g. `CUDA_VISIBLE_DEVICES=0,1,2,3`); null: all devices.",
    )
    host: Optional[str] = Field(default=None, description="Host name of the machine that ran the client.")
    price_per_accel_hour: Optional[float] = Field(default=None, ge=0, description="The user's price of one "
        "accelerator-hour (the platform file's PRICE_PER_ACCEL_HOUR), in the user's currency; null when not given.")
    nodes: Optional[int] = Field(
        default=None, ge=1,
        description="Nodes the engine spanned (multi-node runs under Slurm; null when it ran on one machine).",
    )
    gpus_per_node: Optional[int] = Field(default=None, ge=1, description="Accelerators of each node of a multi-node run "
                                         "(GPUS_PER_NODE, else the count of the per-node `HARDWARE`).")
    node_names: Optional[list[str]] = Field(
        default=None, description="Slurm node name of each engine rank, in node-rank order (rank 0 serves the API).",
    )
    node_hostnames: Optional[list[str]] = Field(
        default=None, description="Host name of each engine rank's node, in node-rank order.",
    )
    tool_version: Optional[str] = Field(default=None, description="Version of sskj-results that last wrote this file.")
    imported_at: Optional[str] = Field(
        default=None,
        description="When `sskj-results import-legacy` imported the raw files (ISO-8601); `timestamp` is when the runs ran.",
    )
    imported_from: Optional[str] = Field(
        default=None, description="Absolute path of the raw-output directory an import-legacy run was imported from.",
    )

    @model_validator(mode="after")
    def _timestamp_has_offset(self) -> "Metadata":
        if self.timestamp is not None and self.timestamp_precision is None and not _TIMESTAMP_RE.match(self.timestamp):
            raise ValueError("timestamp must be ISO-8601 with a UTC offset, e.g. 2026-07-07T13:26:41+08:00")
        problem = check_time_form(self.timestamp, self.timestamp_precision)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _no_secrets(self) -> "Metadata":
        """Every text field goes through the one redaction (URLs with credentials, tokens)."""
        _redact_attrs(self, tuple(type(self).model_fields))
        return self


class Config(BaseModel):
    """Engine configuration. Known keys are typed; engines have many more, so extra keys are kept.

    The exact server launch command is required as `server_args`, or as
    `phase<N>_server_args` for experiments that start the server in phases.
    """

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    tp: Optional[int] = Field(default=None, ge=1, description="Tensor-parallel size.")
    kv_cache_dtype: Optional[str] = Field(default=None, description="KV-cache dtype, e.g. `fp8`, `auto`.")
    spec_method: Optional[str] = Field(default=None, description="Speculative-decoding method (`dspark`, `ngram`, `eagle`, …); null when not speculative.")
    spec_tokens: Optional[int] = Field(default=None, ge=0, description="Speculative tokens per step; null when not speculative.")
    block_size: Optional[int] = Field(default=None, ge=1, description="KV-cache block size.")
    max_num_seqs: Optional[int] = Field(default=None, ge=1, description="Maximum concurrent sequences in the engine.")
    extra_args: Optional[str] = Field(default=None, description="Extra engine arguments, as passed on the command line.")
    server_args: Optional[str] = Field(
        default=None,
        description="Exact server launch command (shell-quoted, secrets redacted). Alternatively `phase<N>_server_args` per phase.",
    )
    scenario_name_format: Optional[str] = Field(
        default=None,
        description="Format of scenario names with {concurrency}, {input_len}, {output_len}; "
        "null means `c{concurrency}_i{input_len}_o{output_len}`. Repeats of a shape get `_r2`, `_r3`, ...",
    )

    @model_validator(mode="after")
    def _no_secrets(self) -> "Config":
        """No secret is ever recorded: a key with a secret name (hf_token, api_key, ...) keeps only
        `<redacted>` (it was set), every text value goes through the one redaction."""
        extra = self.__pydantic_extra__ or {}
        for name in [*type(self).model_fields, *extra]:
            value = extra[name] if name in extra else getattr(self, name)
            if value is None or isinstance(value, bool):
                continue
            if isinstance(value, str) or redact_value_of(name, "x") != "x":
                cleaned = redact_value_of(name, value if isinstance(value, str) else str(value))
                if cleaned != value:
                    if name in extra:
                        extra[name] = cleaned
                    else:
                        object.__setattr__(self, name, cleaned)
        return self


class Percentiles(_Model):
    """Summary statistics of one latency metric in milliseconds (numpy linear percentiles)."""

    mean: Optional[float] = Field(description="Arithmetic mean, ms.")
    p50: Optional[float] = Field(description="50th percentile (median), ms, numpy linear interpolation.")
    p90: Optional[float] = Field(description="90th percentile, ms, numpy linear interpolation.")
    p95: Optional[float] = Field(description="95th percentile, ms, numpy linear interpolation.")
    p99: Optional[float] = Field(description="99th percentile, ms, numpy linear interpolation.")
    std: Optional[float] = Field(default=None, description="Population standard deviation (ddof 0), ms.")
    p99_9: Optional[float] = Field(default=None, description="99.9th percentile, ms, when the client wrote it (`p99.9_*_ms`).")
    extra: dict[str, float] = Field(
        default_factory=dict,
        description="Other statistics the client wrote for this metric, keyed as the client named them "
        "(e.g. `p25`, `p75`, `p99.99`, `min`, `max`), ms.",
    )
    count: Optional[int] = Field(
        default=None, ge=0,
        description="Number of samples behind the statistics we computed; null when the file has no per-request data.",
    )


class _LatenciesBase(_Model):
    """Latency statistics of a scenario."""

    if TYPE_CHECKING:  # the fields are the registry's latency rows (contract/metrics.py)
        def __getattr__(self, name: str) -> Percentiles: ...


if TYPE_CHECKING:
    Latencies = _LatenciesBase
else:
    Latencies = create_model("Latencies", __base__=_LatenciesBase, __module__=__name__, __doc__=_LatenciesBase.__doc__,
                             **metric_fields(map(metric, LATENCY_NAMES), Percentiles))


class SloStatus(_Model):
    """SLO verdict of a scenario against the run's tier (see top-level `slo`)."""

    ttft_p95_ok: Optional[bool] = Field(
        description="TTFT P95 is below the tier's threshold; null when TTFT P95 was not measured (unknown, not failed)."
    )
    tpot_mean_ok: Optional[bool] = Field(
        description="TPOT mean is below the tier's threshold; null when TPOT mean was not measured (unknown, not failed)."
    )
    overall: SloMark = Field(
        description="✅ both met, ⚠️ exactly one met, ❌ neither met, ❔ not measured (a value needed for the verdict is unknown)."
    )


class _RawRequestBase(_Model):
    """One request as the client measured it."""

    request_id: str = Field(description="Index of the request in the raw file (or the client's id).")
    input_tokens: Optional[int] = Field(default=None, ge=0, description=request_input("input_tokens").description)
    output_tokens: Optional[int] = Field(default=None, ge=0, description=request_input("output_tokens").description)
    e2e_ms: Optional[float] = Field(default=None, ge=0, description=request_input("e2e_ms").description)
    ttft_ms: Optional[float] = Field(default=None, ge=0, description=request_input("ttft_ms").description)
    tpot_ms: Optional[float] = Field(default=None, ge=0, description="(e2e - ttft) / (output_tokens - 1), ms; null for one output token or a failure.")
    itl_ms: Optional[float] = Field(default=None, ge=0, description="Mean of this request's inter-token gaps, ms; null without gaps.")
    accept_length: Optional[float] = Field(default=None, description="Speculative acceptance length of this request, when the client reports it.")
    success: bool = Field(description="The client recorded no error for this request.")
    error: Optional[str] = Field(default=None, description="The client's error text for a failed request (secrets redacted).")

    @model_validator(mode="after")
    def _no_secrets(self) -> "_RawRequestBase":
        _redact_attrs(self, ("error",))
        return self


if TYPE_CHECKING:
    RawRequest = _RawRequestBase
else:  # the per-request inputs read from a raw list (contract/metrics.py: READ_INPUTS) follow the fields above
    RawRequest = create_model("RawRequest", __base__=_RawRequestBase, __module__=__name__, __doc__=_RawRequestBase.__doc__,
                              **{r.name: (Optional[float], Field(default=None, description=r.description)) for r in READ_INPUTS})


class Source(_Model):
    """Where a scenario came from."""

    file: str = Field(description="Raw output file, relative to the run directory (or as given on import).")
    line: int = Field(ge=1, description="1-based line of the run in that file.")
    index: Optional[int] = Field(
        default=None, ge=0,
        description="0-based position of the run when the file (or that line) is one JSON array of runs; null otherwise.",
    )
    sha256: Optional[str] = Field(default=None, description="SHA-256 of the whole raw file when it was read.")
    format: Optional[str] = Field(default=None, description="Detected format: `sglang-bench-serving` or `vllm-bench-serve`.")


class AcceleratorSummary(_Model):
    """Accelerator samples taken during the scenario (gpu_logs/)."""

    samples: int = Field(ge=0, description="Number of samples.")
    devices: Optional[int] = Field(default=None, ge=0, description="Number of distinct devices sampled.")
    util_mean_pct: Optional[float] = Field(default=None, description="Mean utilization over samples and devices, %.")
    util_max_pct: Optional[float] = Field(default=None, description="Maximum utilization, %.")
    mem_used_mean_mib: Optional[float] = Field(default=None, description="Mean memory used per device, MiB.")
    mem_used_max_mib: Optional[float] = Field(default=None, description="Maximum memory used on a device, MiB.")
    power_mean_w: Optional[float] = Field(default=None, description="Mean power per device, W.")
    power_max_w: Optional[float] = Field(default=None, description="Maximum power of a device, W.")


class _ScenarioBase(_Model):
    """One measured scenario: one run of the bench client at one concurrency and shape."""

    name: str = Field(description="Scenario name, by default `c{concurrency}_i{input}_o{output}` (`_r{n}` for repeats).")
    concurrency: Optional[int] = Field(
        ge=1,
        description="Maximum concurrent requests (the client's max-concurrency); null for an open-loop run "
        "(a finite request rate without a concurrency cap, see request_rate).",
    )
    input_len: int = Field(ge=0, description="Requested input length in tokens.")
    output_len: int = Field(ge=0, description="Requested output length in tokens.")
    duration_s: Optional[float] = Field(ge=0, description="Benchmark duration as the client measured it, s.")
    success: NonNegInt = Field(description="Successful requests.")
    failed: Optional[NonNegInt] = Field(
        description="Failed requests; null when unknown (the client wrote only its completed requests: no failure "
        "count, no request count, no per-request outcome). Never 0 for want of data.",
    )
    request_throughput: Optional[float] = Field(ge=0, description=metric("request_throughput").description)
    input_token_throughput: Optional[float] = Field(ge=0, description=metric("input_token_throughput").description)
    output_token_throughput: Optional[float] = Field(ge=0, description=metric("output_token_throughput").description)
    total_token_throughput: Optional[float] = Field(ge=0, description=metric("total_token_throughput").description)
    accept_length: Optional[float] = Field(description=metric("accept_length").description)
    latencies: Latencies = Field(description="Latency statistics.")
    slo_status: SloStatus = Field(description="SLO verdict against the run's tier.")
    raw_requests: list[RawRequest] = Field(default_factory=list, description="Every request, unless capped (see raw_requests_capped).")
    raw_requests_capped: bool = Field(
        default=False,
        description="True when raw_requests holds only the first requests of a huge run; the raw file (source) has all.",
    )
    slo_attainment: Optional[float] = Field(
        default=None, ge=0, le=1,
        description=metric("slo_attainment").description,
    )
    request_goodput: Optional[float] = Field(default=None, ge=0, description=metric("request_goodput").description)
    reconstructed: dict[str, str] = Field(
        default_factory=dict,
        description="Values not written by the client, keyed by path (e.g. `latencies.e2e_ms.p90`), with how they were computed: "
        "`per_request` (numpy over the per-request arrays), `ttft_plus_itls` (per-request E2E taken as ttft + sum(itls)), "
        "`derived` (from other client values), `server_metrics` (Prometheus counters), `average` (a requested length "
        "taken as total tokens / completed requests, rounded), `swapped_back` (a client value corrected for a known client bug). "
        "Absent keys are the client's own values.",
    )
    repeat: Optional[int] = Field(default=None, ge=1, description="Repeat index when the same shape was run more than once.")
    streaming: Optional[bool] = Field(default=None, description="Whether the client streamed: true, per-token "
        "timing measured; false (sglang `--disable-stream`): TTFT, TPOT, ITL and what rests on them (SLO attainment, "
        "goodput, prefill rate) are not measured, null, the client's values in `unmeasured`; null: not known.")
    streaming_source: Optional[str] = Field(default=None, description="How `streaming` is known, with the evidence: "
        "`command: …` (the client command the run loop recorded, client_info/), `file: …` (what the raw run holds).")
    unmeasured: dict[str, dict[str, float]] = Field(default_factory=dict, description="The client's own statistics "
        "of metrics not measured (`ttft_ms`, `tpot_ms`, `itl_ms` without streaming: TTFT = whole latency, TPOT 0 or "
        "float noise), by statistic as `latencies` names them, ms: provenance, never a measurement.")
    num_prompts: Optional[int] = Field(default=None, ge=0, description="Requests sent.")
    request_rate: Optional[float] = Field(default=None, description="Request rate, req/s; null means unlimited (all at once).")
    empty_outputs: Optional[int] = Field(
        default=None, ge=0,
        description="Successful requests that returned 0 output tokens: counted in `success`, excluded from the "
        "statistics computed from per-request data (the client's own statistics include them); null when unknown.",
    )
    timestamp: Optional[str] = Field(
        default=None, pattern=PARTIAL_TIMESTAMP_PATTERN,
        description="When the client ran this scenario, as much as is known: from the raw run itself (its `date` key "
        "and the other time keys of docs/METRICS.md), else the raw file's name (a full date-time, or a month and day "
        "without a year, `--10-15`); null when neither says (never the file's modification time).",
    )
    timestamp_precision: Optional[TimePrecision] = Field(default=None, description=TIMESTAMP_PRECISION_DESCRIPTION)
    timestamp_source: Optional[TimeSource] = Field(default=None, description=TIMESTAMP_SOURCE_DESCRIPTION)
    dataset_name: Optional[str] = Field(default=None, description="Client dataset, e.g. `random`, `random-ids`.")
    prompt_method: Optional[PromptMethod] = Field(default=None, description="How the prompts reached the server "
        "(prompts/<stem>.json): `token-ids`, `round-trip-set` (text the served model's tokenizer reads back at exactly "
        "the input length), `client-random-text` (random ids decoded to text), `client-dataset`; null when not "
        "recorded (docs/METRICS.md).")
    prompt_source: Optional[str] = Field(default=None, description="What the prompts were (prompts/<stem>.json): "
        "`random ids`, `decoded random` (random ids sent as text), `random words` (a round-trip set of vocabulary "
        "words), `text of <SHA-256>` (a round-trip set cut from a real text, the SHA-256 of its file); null when not "
        "recorded or the client's own dataset (docs/METRICS.md).")
    request_format: Optional[str] = Field(default=None, description="The client's `backend`: the request format it spoke, not the server.")
    accelerator_usage: Optional[AcceleratorSummary] = Field(default=None, description="Accelerator samples during the scenario.")
    # --- per accelerator, energy, cost (contract/metrics.py: CHIP_METRICS; docs/METRICS.md#per-accelerator) ---
    accelerators: Optional[int] = Field(default=None, ge=1, description="Accelerators that served the phase, from its "
        "own command: the devices given (DEVICES), else nodes x gpus_per_node of a multi-node run, else tp x dp of "
        "the server command; null when unknown (see accelerators_source).")
    accelerators_source: Optional[str] = Field(default=None, description="How accelerators was found: `devices`, "
        "`nodes x gpus_per_node`, `tp x dp`, `tp`.")
    output_throughput_per_accel: Optional[float] = Field(default=None, ge=0, description=metric("output_throughput_per_accel").description)
    total_throughput_per_accel: Optional[float] = Field(default=None, ge=0, description=metric("total_throughput_per_accel").description)
    interactivity: Optional[float] = Field(default=None, ge=0, description=metric("interactivity").description)
    energy_j: Optional[float] = Field(default=None, ge=0, description=metric("energy_j").description)
    joules_per_output_token: Optional[float] = Field(default=None, ge=0, description=metric("joules_per_output_token").description)
    output_tokens_per_kwh: Optional[float] = Field(default=None, ge=0, description=metric("output_tokens_per_kwh").description)
    cost_per_million_output_tokens: Optional[float] = Field(default=None, ge=0,
        description=metric("cost_per_million_output_tokens").description)
    power: Optional[PowerRecord] = Field(default=None, description="The power samples behind energy_j, or why there "
        "is no energy figure; null when no power samples were recorded.")
    prefix_cache_reset: Optional[bool] = Field(default=None, description="The server confirmed the prefix-cache reset before "
        "the scenario (false: refused or failed, it may have run on a warm cache; null: not recorded).")
    notes: list[str] = Field(
        default_factory=list,
        description="Warnings about how this scenario was read (inferred lengths, non-streaming runs, count mismatches).",
    )
    source: Optional[Source] = Field(default=None, description="Raw file and 1-based line this scenario was imported from.")
    validity: Optional[Validity] = Field(
        default=None,
        description="Whether this point measured the engine (docs/VALIDITY.md); null or absent when never judged.",
    )
    # --- the load client and the acceptance definition (contract/clientinfo.py) ---
    client: Optional[ClientFingerprint] = Field(
        default=None, description="The load client that measured this scenario; null when never recorded.",
    )
    acceptance: Optional[Acceptance] = Field(
        default=None, description="Acceptance length with its source, weighting and draft length; null when not "
        "speculative or not reported.",
    )
    client_extras: Optional[ClientExtras] = Field(default=None, description="Queue times and other keys of the newer clients.")

    @model_validator(mode="after")
    def _time_form(self) -> "_ScenarioBase":
        problem = check_time_form(self.timestamp, self.timestamp_precision)
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _no_secrets(self) -> "_ScenarioBase":
        """Texts quoted from raw files (notes, the request format, the dataset) go through the one redaction."""
        _redact_attrs(self, ("request_format", "dataset_name"))
        if self.notes:
            object.__setattr__(self, "notes", [redact_text(n) for n in self.notes])
        return self


if TYPE_CHECKING:
    Scenario = _ScenarioBase
else:  # the registry's scenario distributions and windows (contract/metrics.py) follow the fields above
    Scenario = create_model("Scenario", __base__=_ScenarioBase, __module__=__name__, __doc__=_ScenarioBase.__doc__,
                            **metric_fields(SECTION_METRICS, Optional[Distribution], None),
                            **window_fields(WINDOW_METRICS))


class SloSpec(_Model):
    """SLO thresholds the run was judged against."""

    tier: Optional[str] = Field(default=None, description="Tier name from docs/SLO_STANDARDS.md, or null for explicit thresholds.")
    ttft_p95_ms: float = Field(gt=0, description="TTFT P95 must be below this, ms.")
    tpot_mean_ms: float = Field(gt=0, description="TPOT mean must be below this, ms.")


class SkippedScenario(_Model):
    """A scenario that was not measured (server death or out-of-memory)."""

    scenario: str = Field(description="Scenario name.")
    concurrency: Optional[int] = Field(default=None, ge=1, description="Concurrency.")
    input_len: Optional[int] = Field(default=None, ge=0, description="Input length.")
    output_len: Optional[int] = Field(default=None, ge=0, description="Output length.")
    reason: str = Field(description="Why it was skipped.")
    log_excerpt: Optional[str] = Field(default=None, description="Server log lines that show the reason.")

    @model_validator(mode="after")
    def _no_secrets(self) -> "SkippedScenario":
        """The reason and the log lines quote raw files and logs: they go through the one redaction."""
        _redact_attrs(self, ("reason", "log_excerpt"))
        return self


class SloSearchStep(_Model):
    """One probe of an SLO search."""

    concurrency: int = Field(ge=1, description="Concurrency tried.")
    scenario: Optional[str] = Field(default=None, description="Scenario measured, null if it failed.")
    overall: Optional[SloMark] = Field(default=None, description="SLO verdict of that scenario.")
    ok: Optional[bool] = Field(description="Both SLO thresholds met; null when the scenario's verdict is ❔ (not measured) "
                               "or not believed (a failed validity check refuses its TTFT or TPOT: docs/VALIDITY.md).")
    valid: Optional[bool] = Field(
        default=None, description="The scenario's validity (docs/VALIDITY.md): false when it did not measure the engine "
        "(then measured once more with more prompts when the search re-measures), null when unknown.",
    )


class SloSearch(_Model):
    """Search for the largest concurrency that meets the SLO for one shape."""

    input_len: int = Field(ge=0, description="Input length.")
    output_len: int = Field(ge=0, description="Output length.")
    min_concurrency: int = Field(ge=1, description="Lower bound of the search.")
    max_concurrency: int = Field(ge=1, description="Upper bound of the search.")
    steps: list[SloSearchStep] = Field(default_factory=list, description="Probes in the order they ran.")
    best_concurrency: Optional[int] = Field(default=None, description="Largest concurrency meeting the SLO; null if none did.")
    finished: bool = Field(default=False, description="The search has converged.")


class RawFile(_Model):
    """A raw output file already imported, so unchanged files are not read again."""

    file: str = Field(description="Path relative to the run directory.")
    sha256: str = Field(description="SHA-256 of the file's content when imported.")
    size: int = Field(ge=0, description="Size in bytes.")
    runs: int = Field(ge=0, description="Runs (lines/objects) imported from it.")
    sidecar_sha256: Optional[str] = Field(
        default=None, description="SHA-256 over its server_metrics/ and gpu_logs/ side files, when any."
    )
    mtime_ns: Optional[int] = Field(
        default=None,
        description="Modification time (ns) when imported; with an unchanged size and ctime_ns it lets parse skip re-hashing (quick check).",
    )
    ctime_ns: Optional[int] = Field(default=None, description="Status-change time (ns) when imported: any write, "
                                    "`touch` or `cp -p` onto the file sets it to now, so the quick check sees a same-size replacement.")
    damaged: Optional[str] = Field(
        default=None,
        description="Why the file could not be read again at the last parse (missing, unreadable, corrupt); "
        "its scenarios are kept as recorded and the workflow's RESUME measures it again. Null when it was read.",
    )


class Results(_Model):
    """results.json: everything one run directory measured."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={"$id": SCHEMA_ID},
        title="sskj results.json",
    )

    schema_version: Literal[1, 2] = Field(
        default=1,
        description="Version of this format; absent means 1. 2 allows an unknown (null) `failed`, null or partial "
        "timestamps and their `timestamp_precision` / `timestamp_source`; a file that needs none of these is written "
        "as version 1 is read.",
    )
    metadata: Metadata = Field(description="Experiment, platform, engine and provenance.")
    config: Config = Field(description="Engine configuration and the exact server launch command.")
    scenarios: list[Scenario] = Field(description="Measured scenarios.")
    slo: Optional[SloSpec] = Field(default=None, description="SLO tier and thresholds behind every slo_status.")
    skipped: list[SkippedScenario] = Field(default_factory=list, description="Scenarios skipped after a server death or out-of-memory.")
    slo_search: list[SloSearch] = Field(default_factory=list, description="SLO searches run in this run.")
    raw_files: list[RawFile] = Field(default_factory=list, description="Raw output files imported, with content hashes.")
    validity_thresholds: Optional[ValidityThresholds] = Field(
        default=None,
        description="Limits every scenario's validity was judged against; null means the defaults "
        "(docs/VALIDITY.md). `parse --validity NAME=VALUE` sets them and later parses keep them.",
    )

    def scenario(self, name: str) -> Optional[Scenario]:
        """Return the scenario of that name, if any."""
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        return None


# keys added by schema version 2 (absent from a version-1 file)
VERSION_2_KEYS = ("timestamp_precision", "timestamp_source")


def needs_version_2(results: Results) -> bool:
    """The run holds something schema version 1 cannot say (an unknown failure count, a null or partial time)."""
    def timed(obj: Any) -> bool:
        return obj.timestamp_precision is not None or obj.timestamp_source is not None

    meta = results.metadata
    if meta.timestamp is None or timed(meta):
        return True
    return any(s.failed is None or timed(s) or (s.timestamp is not None and not _TIMESTAMP_RE.match(s.timestamp))
               for s in results.scenarios)


def dump_dict(results: Results) -> dict[str, Any]:
    """The JSON-ready dictionary written to results.json (every key present).

    A run is written as version 1 (without the keys version 2 added) while it holds nothing only version 2 can say,
    so that every reader of version 1 keeps reading it; else as version 2."""
    data = results.model_dump(mode="json")
    if data.get("schema_version") == 1:
        if needs_version_2(results):
            data["schema_version"] = SCHEMA_VERSION
        else:
            for obj in (data["metadata"], *data["scenarios"]):
                for key in VERSION_2_KEYS:
                    obj.pop(key, None)
    return data
