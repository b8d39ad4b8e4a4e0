"""The metric registry: one row per metric a scenario records, read by every consumer.

A row says what the metric is (name, unit, labels, direction), where results.json
keeps it, how it is summarised (a distribution over requests, or one value per
scenario) and compared (per request or across repeats), whether the client wrote
it or sskj computes it, and where docs/METRICS.md defines it. From the rows follow:

* the results.json fields (`models.Latencies`, the distribution fields of
  `models.Scenario`, the row fields of `comparison_models.Row`), each with the
  row's description; the schema is generated from them (`make schema`);
* `comparison_models.MetricName` and compare's tests (`analysis/compare.py`);
* the per-request samples of a loaded run (`analysis/rundata.py`);
* the labels of the verdict table and the metric sections of report.md and
  comparison.md (`render/report.py`: `SECTIONS`);
* the statistics validate checks (`analysis/validate.py`) and the runs
  table's columns (`analysis/runtable.py`, derived from the models).

A metric sskj computes per request names its computation (`derive`): a
function registered under that name in `analysis/metrics.py` (`per_request_metric`),
and the per-request inputs it reads (`inputs`): rows of `REQUEST_INPUTS`, the one
declaration of the columns both the scenario builder (`ingest/scenario.py`) and a
loaded run (`analysis/rundata.py`) hand to it. A run whose raw_requests never
recorded one of them shows the metric as unknown. Pure data: no numpy, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Sequence

Direction = Literal["lower", "higher"]
# distribution: statistics over the successful requests (mean, p50, p90, p95, p99, std, count);
# scalar: one value per scenario (and per repeat);
# window: one value per scenario over a window of its run found from its requests' times, recorded with that window
# (`<name>_window`: contract/figures.py, Window), computed by sskj from the requests' columns (`derive`, `inputs`)
Summary = Literal["distribution", "scalar", "window"]
# per-request: Mann-Whitney U over the pooled per-request values; per-repeat: a t-test over the repeats' values (analysis/pooled.py)
Comparison = Literal["per-request", "per-repeat"]
Origin = Literal["client", "sskj"]
# latencies: a statistics object under scenarios[].latencies (the seed-002 table's metrics);
# scenario: a field of scenarios[] (a distribution metric of this place gets its own report section)
Place = Literal["latencies", "scenario"]


@dataclass(frozen=True)
class RequestInput:
    """A per-request value the metrics sskj computes read: one column of a scenario's successful requests (floats,
    NaN where unknown), recorded on raw_requests[] under its name."""

    name: str  # the column's name and its raw_requests[] field
    unit: str
    description: str  # the raw_requests[] field's description
    # the raw file's per-request list it is read from (ingest/readers.py), the first one present; empty: an array of
    # the scenario builder's own (ingest/scenario.py: its column of the request's tokens, TTFT or E2E)
    raw: tuple[str, ...] = ()
    scale: float = 1.0  # the raw value times scale is the column's unit (seconds -> ms: 1000)
    relative: bool = False  # recorded from the scenario's earliest value (clock readings without a common origin)


# every per-request input of a metric sskj computes, in raw_requests[]' order; one read from a raw list (`raw`) adds
# its own raw_requests[] field (contract/models.py: RawRequest)
REQUEST_INPUTS: tuple[RequestInput, ...] = (
    RequestInput("input_tokens", "tokens", "Prompt tokens."),
    RequestInput("output_tokens", "tokens", "Output tokens as the client counted them."),
    RequestInput("e2e_ms", "ms", "End-to-end latency, ms (see latencies.e2e_ms for its source)."),
    RequestInput("ttft_ms", "ms", "Time to first token, ms."),
    RequestInput("start_ms", "ms", "When the request was sent, ms after the scenario's first request was sent (the "
                 "client's per-request start times: vllm bench serve's `start_times`); null when the raw file has "
                 "none.", raw=("start_times",), scale=1000.0, relative=True),
)


@dataclass(frozen=True)
class Metric:
    """One metric of a scenario."""

    name: str  # its key in results.json (and comparison.json's `metric`)
    unit: str  # ms, tok/s, req/s
    label: str  # long label: the verdict table's Metric column (the statistic compared, with its unit)
    short: str  # short label: lists of metrics, section titles
    direction: Direction  # which way is better
    summary: Summary
    compared: Optional[Comparison]  # None: recorded, not tested
    origin: Origin  # `client`: the client's own value where it wrote it; `sskj`: always computed by sskj
    place: Place
    description: str  # the results.json field's description
    docs: str  # its definition: docs/METRICS.md#<anchor>
    request_field: Optional[str] = None  # the per-request value: a field of raw_requests[] (`RawRequest`)
    derive: Optional[str] = None  # or the name of its per-request computation in analysis/metrics.py
    inputs: tuple[str, ...] = ()  # what that computation reads: names of REQUEST_INPUTS rows
    section: Optional[str] = None  # report and comparison section title (scenario distributions and windows)
    intro: str = ""  # the section's first paragraph: what the figure says, in words
    noun: str = ""  # the metric in a sentence ("prefill rate"); empty: the short label
    reading: int = 100  # position in compare's tests (the seed table's order: TTFT, TPOT, E2E); ties: registry order
    slo_dependent: bool = False  # judged against the run's SLO: unknown when a comparison judges against another
    # a whole-server figure that grows with the devices serving (a throughput, a rate): across runs of different
    # accelerator counts compare judges it per accelerator, never whole-server (docs/COMPARE.md, Across chips)
    scales_with_devices: bool = False
    per_accel_of: Optional[str] = None  # a per-accelerator row: the whole-server row it divides (and replaces)
    # the metrics this one is computed from: what makes them unreliable makes it unreliable too (`follows`)
    derived_from: tuple[str, ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    @property
    def words(self) -> str:
        """The metric in a sentence."""
        return self.noun or self.short


# in results.json's order (the order its keys were always written in)
METRICS: tuple[Metric, ...] = (
    Metric(
        name="e2e_ms", reading=3, unit="ms", label="E2E median (ms)", short="E2E", direction="lower",
        summary="distribution",
        compared="per-request", origin="client", place="latencies", request_field="e2e_ms",
        docs="docs/METRICS.md#per-request-metrics",
        description="End-to-end latency per successful request: send to last token. "
        "From the client's per-request latencies when the raw file has them (vLLM); otherwise ttft + sum(itls).",
    ),
    Metric(
        name="ttft_ms", reading=1, unit="ms", label="TTFT median (ms)", short="TTFT", direction="lower",
        summary="distribution",
        compared="per-request", origin="client", place="latencies", request_field="ttft_ms",
        docs="docs/METRICS.md#per-request-metrics", description="Time to first token per successful request.",
    ),
    Metric(
        name="tpot_ms", reading=2, unit="ms", label="TPOT median (ms)", short="TPOT", direction="lower",
        summary="distribution",
        compared="per-request", origin="client", place="latencies", request_field="tpot_ms",
        docs="docs/METRICS.md#per-request-metrics",
        description="Time per output token per successful request with more than one output token: "
        "(e2e - ttft) / (output_tokens - 1); statistics over requests.",
    ),
    Metric(
        name="itl_ms", unit="ms", label="ITL median (ms)", short="ITL", direction="lower", summary="distribution",
        compared=None, origin="client", place="latencies", request_field="itl_ms",
        docs="docs/METRICS.md#per-request-metrics",
        description="Inter-token latency: every gap between streamed chunks of every successful request, pooled.",
    ),
    Metric(
        name="output_token_throughput", unit="tok/s", label="OutTok/s mean", short="OutTok/s", noun="output throughput", direction="higher",
        summary="scalar", compared="per-repeat", origin="client", place="scenario",
        docs="docs/METRICS.md#throughput", description="Output tokens per second (client's value).",
        scales_with_devices=True,
    ),
    Metric(
        name="request_throughput", unit="req/s", label="Req/s mean", short="Req/s", direction="higher",
        summary="scalar", compared=None, origin="client", place="scenario", docs="docs/METRICS.md#throughput",
        scales_with_devices=True,
        description="Completed requests per second (client's value).",
    ),
    Metric(
        name="input_token_throughput", unit="tok/s", label="InTok/s mean", short="InTok/s", direction="higher",
        summary="scalar", compared=None, origin="client", place="scenario", docs="docs/METRICS.md#throughput",
        scales_with_devices=True,
        description="Input tokens per second (client's value).",
    ),
    Metric(
        name="total_token_throughput", unit="tok/s", label="TotTok/s mean", short="TotTok/s", direction="higher",
        summary="scalar", compared=None, origin="client", place="scenario", docs="docs/METRICS.md#throughput",
        scales_with_devices=True,
        description="Input plus output tokens per second.",
    ),
    Metric(
        name="accept_length", unit="tokens/step", label="Accept length", short="Accept len", direction="higher",
        summary="scalar", compared=None, origin="client", place="scenario",
        docs="docs/METRICS.md#acceptance-length",
        description="Mean speculative acceptance length (1 + accepted / drafts); null when not speculative.",
    ),
    Metric(
        name="slo_attainment", unit="share", label="In SLO share", short="In SLO", direction="higher",
        summary="scalar", compared=None, origin="sskj", place="scenario", docs="docs/METRICS.md#goodput",
        slo_dependent=True, derived_from=("ttft_ms", "tpot_ms"),
        description="Goodput share: fraction of all requests (failed ones included) that succeeded with their own "
        "TTFT and TPOT below the tier's thresholds (docs/METRICS.md); null without per-request data.",
    ),
    Metric(
        name="request_goodput", unit="req/s", label="Goodput mean (req/s)", short="Goodput", noun="goodput", direction="higher",
        summary="scalar", compared="per-repeat", origin="sskj", place="scenario", docs="docs/METRICS.md#goodput",
        scales_with_devices=True,
        slo_dependent=True, derived_from=("slo_attainment",),
        description="Goodput rate, req/s: the requests counted in slo_attainment's numerator divided by duration_s "
        "(docs/METRICS.md); null without per-request data or a duration.",
    ),
    Metric(
        name="prefill_tok_s", unit="tok/s", label="Prefill median (tok/s)", short="Prefill", direction="higher",
        summary="distribution", compared="per-request", origin="sskj", place="scenario", derive="prefill_tok_s",
        inputs=("input_tokens", "output_tokens", "ttft_ms"), derived_from=("ttft_ms",),
        docs="docs/METRICS.md#prefill-rate", section="Prefill rate", noun="prefill rate",
        scales_with_devices=True,
        intro="Input tokens over time to first token, per successful request with output: how fast a prompt gets "
        "through the engine, in tok/s; statistics over every such request whose input length and TTFT are known.",
        description="Prefill rate per successful request with output: input tokens / TTFT, tok/s (higher is better); "
        "statistics over the requests whose input length and TTFT are known (docs/METRICS.md); null without "
        "per-request data.",
    ),
    Metric(
        name="steady_output_throughput", unit="tok/s", label="Steady OutTok/s mean", short="Steady OutTok/s",
        noun="steady-state output throughput", direction="higher", summary="window", compared="per-repeat",
        origin="sskj", place="scenario", derive="steady_output_throughput",
        inputs=("output_tokens", "e2e_ms", "ttft_ms", "start_ms"), derived_from=("ttft_ms", "e2e_ms"),
        scales_with_devices=True, docs="docs/METRICS.md#steady-state-throughput", section="Steady-state throughput",
        intro="Output tokens per second over the window in which every concurrency slot held a request: from the "
        "moment the last slot filled to the moment the first slot emptied for good (warm-up and cool-down left out), "
        "with that window's length and its share of the run; from the successful requests' send times, TTFT and "
        "latencies.",
        description="Steady-state output throughput, tok/s: the successful requests' output tokens that arrived in "
        "the window in which every concurrency slot was busy (from the concurrency-th request sent to the first "
        "request finished after the last one was sent; tokens placed at the first token and evenly to the request's "
        "end), over the window's length (docs/METRICS.md); null without per-request send times, TTFT or latencies, "
        "with a request rate, or when no such window exists.",
    ),
)

# per accelerator, interactivity, energy and cost (docs/METRICS.md#per-accelerator, #energy): sskj's figures of a
# scenario from its throughput, its accelerators (`scenarios[].accelerators`) and its power samples (`power`)
_PER_DEVICE = "; null when the accelerator count is unknown (docs/METRICS.md#per-accelerator)."
_ENERGY = "; null when the power samples do not cover the benchmark window (`power.reason` says why)."
CHIP_METRICS: tuple[Metric, ...] = (
    Metric(
        name="output_throughput_per_accel", unit="tok/s/accel", label="OutTok/s per accel mean",
        short="OutTok/s/accel", noun="output throughput per accelerator", direction="higher", summary="scalar",
        compared="per-repeat", reading=4, origin="sskj", place="scenario", docs="docs/METRICS.md#per-accelerator",
        per_accel_of="output_token_throughput", derived_from=("output_token_throughput",),
        description="Output tokens per second per accelerator: output_token_throughput / accelerators" + _PER_DEVICE,
    ),
    Metric(
        name="total_throughput_per_accel", unit="tok/s/accel", label="TotTok/s per accel mean",
        short="TotTok/s/accel", direction="higher", summary="scalar", compared=None, origin="sskj", place="scenario",
        docs="docs/METRICS.md#per-accelerator",
        per_accel_of="total_token_throughput", derived_from=("total_token_throughput",),
        description="Input plus output tokens per second per accelerator: total_token_throughput / accelerators"
        + _PER_DEVICE,
    ),
    Metric(
        name="interactivity", unit="tok/s/user", label="Interactivity (tok/s/user)", short="Interactivity",
        direction="higher", summary="scalar", compared=None, origin="sskj", place="scenario",
        docs="docs/METRICS.md#per-accelerator", derived_from=("tpot_ms",),
        description="Tokens per second one user sees: 1000 / latencies.tpot_ms.mean; null when TPOT is unknown.",
    ),
    Metric(
        name="energy_j", unit="J", label="Energy (J)", short="Energy", direction="lower", summary="scalar",
        compared=None, origin="sskj", place="scenario", docs="docs/METRICS.md#energy",
        description="Energy of the devices that served the phase over the benchmark window, J (power samples "
        "integrated per device, summed)" + _ENERGY,
    ),
    Metric(
        name="joules_per_output_token", unit="J/tok", label="J per output token mean", short="J/OutTok",
        noun="energy per output token", direction="lower", summary="scalar", compared="per-repeat", reading=5,
        origin="sskj", place="scenario", docs="docs/METRICS.md#energy",
        description="energy_j / the successful requests' output tokens" + _ENERGY,
    ),
    Metric(
        name="output_tokens_per_kwh", unit="tok/kWh", label="OutTok per kWh", short="OutTok/kWh", direction="higher",
        summary="scalar", compared=None, origin="sskj", place="scenario", docs="docs/METRICS.md#energy",
        description="Output tokens per kilowatt-hour: 3.6e6 / joules_per_output_token" + _ENERGY,
    ),
    Metric(
        name="cost_per_million_output_tokens", unit="price/Mtok", label="User's price per M output tokens",
        short="Price/MOutTok", direction="lower", summary="scalar", compared=None, origin="sskj", place="scenario",
        docs="docs/METRICS.md#cost", derived_from=("output_token_throughput",),
        description="The user's price per accelerator-hour (PRICE_PER_ACCEL_HOUR of the platform file) x "
        "accelerators / (output_token_throughput x 3600) x 1e6; a price the user gave, not a measurement; null "
        "without a price or an accelerator count.",
    ),
)
METRICS = METRICS + CHIP_METRICS
CHIP_NAMES = tuple(m.name for m in CHIP_METRICS)

BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
if len(BY_NAME) != len(METRICS):  # pragma: no cover - a registry error, caught by the tests at import
    raise RuntimeError("contract/metrics.py: two rows share a name")
if any(d not in BY_NAME for m in METRICS for d in m.derived_from):  # pragma: no cover - a registry error
    raise RuntimeError("contract/metrics.py: a row is derived from a metric the registry does not have")
INPUTS_BY_NAME: dict[str, RequestInput] = {r.name: r for r in REQUEST_INPUTS}
if any(i not in INPUTS_BY_NAME for m in METRICS for i in m.inputs):  # pragma: no cover - a registry error
    raise RuntimeError("contract/metrics.py: a row reads a per-request input REQUEST_INPUTS does not declare")
# the columns the computations read, in REQUEST_INPUTS' order; those read from a raw list, each a raw_requests[] field
REQUEST_COLUMNS = tuple(r.name for r in REQUEST_INPUTS if any(r.name in m.inputs for m in METRICS))
READ_INPUTS: tuple[RequestInput, ...] = tuple(r for r in REQUEST_INPUTS if r.raw)


def follows(names: Sequence[str]) -> tuple[str, ...]:
    """The named metrics and every metric derived from them, directly or through another (`derived_from`), in
    registry order: what makes TPOT unreliable makes interactivity (1000 / TPOT) and goodput unreliable too."""
    found = set(names)
    grown = True
    while grown:
        more = {m.name for m in METRICS if m.name not in found and found.intersection(m.derived_from)}
        found |= more
        grown = bool(more)
    return tuple(m.name for m in METRICS if m.name in found) + tuple(n for n in names if n not in BY_NAME)


def request_input(name: str) -> RequestInput:
    """The per-request input of that name (KeyError for an unknown name: a programming error)."""
    return INPUTS_BY_NAME[name]


def metric(name: str) -> Metric:
    """The row of that name (KeyError for an unknown name: a programming error)."""
    return BY_NAME[name]


def names(**where: object) -> tuple[str, ...]:
    """Names of the rows whose attributes equal the given values, in registry order."""
    return tuple(m.name for m in METRICS if all(getattr(m, k) == v for k, v in where.items()))


LATENCY_NAMES = names(place="latencies")  # scenarios[].latencies.<name>, statistics in ms
# distributions recorded on scenarios[] itself, each with its own section in report.md and comparison.md
SECTION_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.place == "scenario" and m.summary == "distribution")
# values over a window of the run, each with its own section in report.md and comparison.md
WINDOW_METRICS: tuple[Metric, ...] = tuple(m for m in METRICS if m.summary == "window")
COMPARED = tuple(m.name for m in METRICS if m.compared is not None)
# compare's tests of one scenario, in reading order
PER_REQUEST_COMPARED = tuple(m.name for m in sorted(METRICS, key=lambda m: m.reading) if m.compared == "per-request")
PER_REPEAT_COMPARED = tuple(m.name for m in sorted(METRICS, key=lambda m: m.reading) if m.compared == "per-repeat")


def and_words(words: Sequence[str]) -> str:
    """Metrics in a sentence: `a, b and c`."""
    return ", ".join(words[:-1]) + f" and {words[-1]}" if len(words) > 1 else "".join(words)
