"""comparison.json: the comparison document's models (the contract of `sskj-results compare`).

Pure data, like `models` for results.json: `compare` builds a `ComparisonDoc`,
`report` renders it, `publish` writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from .clientinfo import Acceptance
from .metrics import CHIP_METRICS, COMPARED, SECTION_METRICS, WINDOW_METRICS
from .models import CheckName, Distribution, SloSpec, SloStatus, Validity, metric_fields, window_fields

# every compared metric of the registry (contract/metrics.py), in its order
if TYPE_CHECKING:
    MetricName = str
else:
    MetricName = Literal[COMPARED]
INVALID_VERDICT_PATTERN = r"^not comparable \(invalid: [a-z_]+(, [a-z_]+)*\)$"
Verdict = Union[
    Literal["faster", "slower", "no significant difference", "insufficient samples", "not comparable"],
    Annotated[str, Field(pattern=INVALID_VERDICT_PATTERN)],
]
# how a comparison treats run-to-run variation (Settings.run_to_run)
RunToRun = Literal["tested", "ignored", "partly"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

class RunInfo(_Doc):
    """One compared run."""

    label: str = Field(description="Unique label used in the table's Backend column and in `run` fields: "
                                   "the engine, with the chip when the runs' chips differ, disambiguated by phase or directory.")
    path: str = Field(description="Run directory (or results.json) as given on the command line.")
    baseline: bool = Field(description="This run is the baseline of every test.")
    engine: str = Field(description="metadata.engine, else metadata.backend.")
    chip: Optional[str] = Field(description="metadata.chip, else metadata.accelerator.")
    hardware: Optional[str] = Field(description="metadata.hardware.")
    model: str = Field(description="metadata.model.")
    experiment: str = Field(description="metadata.experiment.")
    run_id: str = Field(description="metadata.run_id.")
    phase: Optional[str] = Field(description="metadata.phase.")
    client: Optional[str] = Field(description="metadata.client.")
    git_commit: Optional[str] = Field(description="metadata.git_commit.")
    spec_method: Optional[str] = Field(description="config.spec_method (null when not speculative).")
    spec_tokens: Optional[int] = Field(description="config.spec_tokens.")
    display_name: str = Field(default="", description="Name in the title and Summary (e.g. `SGLang`, `DSpark`, `vLLM + ngram`); "
                                                     "the label when the names would not tell the runs apart.")
    speculative_flags: Optional[str] = Field(default=None, description="Speculative-decoding flags of the server command, "
                                                                       "the served model written `<model>`; null without any.")
    recorded_slo: Optional[SloSpec] = Field(description="The SLO recorded in the run's results.json.")
    slo_recomputed: bool = Field(description="The run's SLO marks were recomputed against the comparison's SLO "
                                             "(it recorded another SLO, or none, or --slo-tier was given).")

class _RowBase(_Doc):
    """One row of the side-by-side table: one scenario of one run."""

    run: str = Field(description="Run label.")
    engine: str = Field(description="Engine of the run.")
    chip: Optional[str] = Field(description="Chip of the run.")
    scenario: str = Field(description="The run's own scenario name.")
    repeat: Optional[int] = Field(description="Repeat index, when the shape was run more than once.")
    concurrency: Optional[int] = Field(description="Concurrency; null for an open-loop run (request rate, no cap).")
    input_len: int = Field(description="Input length, tokens.")
    output_len: int = Field(description="Output length, tokens.")
    request_throughput: Optional[float] = Field(description="Req/s.")
    output_token_throughput: Optional[float] = Field(description="Output tokens/s.")
    accelerators: Optional[int] = Field(default=None, description="Accelerators that served the scenario "
                                        "(`scenarios[].accelerators`); null when unknown.")
    ttft_p95_ms: Optional[float] = Field(description="TTFT P95, ms.")
    ttft_p99_ms: Optional[float] = Field(description="TTFT P99, ms.")
    tpot_mean_ms: Optional[float] = Field(description="TPOT mean, ms.")
    tpot_p95_ms: Optional[float] = Field(description="TPOT P95, ms.")
    tpot_p99_ms: Optional[float] = Field(description="TPOT P99, ms.")
    e2e_p99_ms: Optional[float] = Field(description="E2E P99, ms.")
    slo_status: SloStatus = Field(description="SLO verdict against the comparison's SLO.")
    slo_attainment: Optional[float] = Field(
        default=None, description="Goodput share (`scenarios[].slo_attainment`); null without per-request data or when "
                                  "the run recorded another SLO than the comparison's (its marks recomputed).")
    request_goodput: Optional[float] = Field(
        default=None, description="Goodput rate, req/s (`scenarios[].request_goodput`); null as for slo_attainment.")
    speculative: bool = Field(default=False, description="The run decodes speculatively (config.spec_method, or "
                                                         "speculative flags in its server command).")
    accept_length: Optional[float] = Field(default=None, description="`scenarios[].accept_length`; null when not "
                                           "speculative or not recorded (unknown, never 0).")
    acceptance: Optional[Acceptance] = Field(default=None, description="`scenarios[].acceptance`: the accept length "
                                             "with its source, weighting and scope; null when not recorded.")
    validity: Optional[Validity] = Field(default=None, description="The scenario's validity block (docs/VALIDITY.md); "
                                                                   "null when it was never judged.")
    validity_grade: Optional[Literal["valid", "qualified", "partial", "disqualified"]] = Field(
        default=None, description="`qualified`: only workload-shape breaches (⚠); `partial`: a check with a scope failed, "
                                  "the metrics in `unreliable` are not to be believed, the others are (◐); "
                                  "`disqualified`: a measurement-integrity check failed (✖); `valid`: every check "
                                  "passed; null: never judged or unknown.")
    qualifying: list[CheckName] = Field(default_factory=list, description="Failed checks that qualify the point (⚠).")
    disqualifying: list[CheckName] = Field(default_factory=list, description="Failed checks that disqualify it (✖).")
    prompt_source: Optional[str] = Field(default=None, description="`scenarios[].prompt_source`: what the prompts "
                                         "were (`text of <SHA-256>`: real text); null when not recorded.")
    partial: list[CheckName] = Field(default_factory=list, description="Failed checks that make some of its metrics "
                                     "unreliable (◐; docs/VALIDITY.md).")
    unreliable: list[str] = Field(default_factory=list, description="The metrics those checks make unreliable, with "
                                  "the metrics derived from them (contract/metrics.py `derived_from`).")

if TYPE_CHECKING:
    Row = _RowBase
else:  # the registry's scenario distributions follow (`scenarios[].<name>`; null when not recorded)
    Row = create_model("Row", __base__=_RowBase, __module__=__name__, __doc__=_RowBase.__doc__,
                       **metric_fields(SECTION_METRICS, Optional[Distribution], None),
                       **metric_fields(CHIP_METRICS, Optional[float], None), **window_fields(WINDOW_METRICS))


class StatTest(_Doc):
    """One statistical test of a candidate run against the baseline."""

    run: str = Field(description="Candidate run label.")
    metric: MetricName = Field(description="A compared metric of the registry (docs/METRICS.md): per request "
                                           "(`ttft_ms`, `tpot_ms`, `e2e_ms`, …) or across repeats "
                                           "(`output_token_throughput`, `request_goodput`, …).")
    test: str = Field(description="`mann-whitney-u` (per-request values, one run per side), "
                                  "`moderated-t-repeat-trimmed-means` (per-request values of repeated runs: one "
                                  "trimmed mean of the logs per repeat, moderated t with the pooled run-to-run "
                                  "variance), `welch-t-repeat-medians` (the same with a value <= 0: one median per "
                                  "repeat), "
                                  "`moderated-t` (one value per repeat: throughput, goodput) or `welch-t` (one value "
                                  "per run, or a value <= 0 that has no log; docs/COMPARE.md).")
    verdict: Verdict = Field(
        description="faster/slower only when significant and beyond --min-change; "
                    "`not comparable (invalid: <checks>)` when a point of either side is disqualified (or, with "
                    "--strict, failed any validity check).")
    p_value: Optional[float] = Field(description="Holm-Bonferroni adjusted p-value over the whole family; null without a test.")
    p_raw: Optional[float] = Field(description="Unadjusted p-value.")
    ratio: Optional[float] = Field(description="Candidate / baseline: ratio of medians (`mann-whitney-u`), of the "
                                               "geometric means of the repeats' trimmed geometric means or values "
                                               "(`moderated-t-*`) or of means (`welch-t`, `welch-t-repeat-medians`: of "
                                               "the repeats' medians).")
    ci_low: Optional[float] = Field(description="Lower bound of the ratio's confidence interval (never below 0).")
    ci_high: Optional[float] = Field(description="Upper bound of the ratio's confidence interval.")
    n_baseline: int = Field(description="Samples on the baseline side (requests or repeats).")
    n_candidate: int = Field(description="Samples on the candidate side.")
    baseline_value: Optional[float] = Field(description="Baseline median (`mann-whitney-u`), geometric mean of the "
                                                        "repeats' trimmed geometric means or values (`moderated-t-*`) "
                                                        "or mean (`welch-t`, of the repeats' medians with "
                                                        "`welch-t-repeat-medians`).")
    candidate_value: Optional[float] = Field(description="Candidate value, as `baseline_value`.")
    mdc: Optional[float] = Field(default=None, description="Minimum detectable change: the smallest change (a "
                                 "fraction, 0.12 = 12 %) this test would have found with 80 % power at the noise it "
                                 "saw, at Holm's alpha for a lone change and beyond --min-change; null without a test.")
    df: Optional[float] = Field(default=None, description="Degrees of freedom of the test's variance (a test across "
                                "repeats: its own plus those the pooled prior earns); null for a rank test.")
    reason: Optional[str] = Field(description="Why there is no test (insufficient samples, not comparable), or a caveat.")
    qualified: list[CheckName] = Field(default_factory=list, description="Qualifying validity breaches (⚠) of either "
                                       "side: the verdict stands, for what was measured (docs/VALIDITY.md).")
    qualification: Optional[str] = Field(default=None, description="The qualification in words: which side's points "
                                         "breached which check; null when the verdict is unqualified.")

class DraftBound(_Doc):
    """A speculative run's TPOT speedup over a plain run of the same engine family at one shape (docs/VALIDITY.md)."""

    run: str = Field(description="Label of the speculative run.")
    plain: str = Field(description="Label of the plain (non-speculative) run of the same engine family.")
    speedup: float = Field(description="Plain TPOT mean / speculative TPOT mean (means of the repeats' means).")
    bound: float = Field(description="1 + draft tokens per step: a step emits at most that many tokens and costs at "
                                     "least one target forward.")
    draft_tokens: int = Field(description="Draft tokens per step (the run's acceptance draft length, else spec_tokens).")
    ok: bool = Field(description="speedup <= bound; false: beyond the draft bound, not a speedup speculative "
                                 "decoding can give.")
    message: str = Field(description="One line: the speedup against the bound, and what to suspect when beyond it.")


class ScenarioComparison(_Doc):
    """A scenario shape present in every run."""

    name: str = Field(description="Scenario name (the runs' common name, else `c{conc}_i{in}_o{out}`).")
    concurrency: Optional[int] = Field(description="Concurrency; null for an open-loop run (request rate, no cap).")
    input_len: int = Field(description="Input length, tokens.")
    output_len: int = Field(description="Output length, tokens.")
    rows: list[Row] = Field(description="One row per run per scenario (repeats are separate rows).")
    tests: list[StatTest] = Field(description="Tests of each candidate run against the baseline.")
    draft_bounds: list[DraftBound] = Field(default_factory=list, description="Each speculative run against each plain "
                                           "run of its engine family: the TPOT speedup's draft bound.")

class Unmatched(_Doc):
    """A scenario of a run whose shape is missing from some other run."""

    run: str = Field(description="Run label that has the scenario.")
    scenario: str = Field(description="Scenario name in that run.")
    concurrency: Optional[int] = Field(description="Concurrency; null for an open-loop run (request rate, no cap).")
    input_len: int = Field(description="Input length.")
    output_len: int = Field(description="Output length.")
    missing_in: list[str] = Field(description="Runs without this shape.")
    skipped: dict[str, str] = Field(default_factory=dict, description="Runs that recorded the shape as skipped, with the reason.")

class Settings(_Doc):
    """Parameters of the statistics."""

    alpha: float = Field(description="Significance level of the Holm-adjusted p-values.")
    min_change: float = Field(description="Practical threshold: a change counts only when |ratio - 1| exceeds it.")
    confidence: float = Field(description="Confidence level of the intervals.")
    bootstrap_resamples: int = Field(description="Bootstrap resamples of the median ratio.")
    seed: int = Field(description="Seed of the bootstrap generator.")
    correction: Literal["holm"] = Field(default="holm", description="Multiple-testing correction.")
    family_size: int = Field(description="Number of hypotheses with a p-value (the Holm family): a derived "
                                         "metric's test with its source's p-value (the prefill rate's, TTFT's: the "
                                         "same numbers inverted) counts once.")
    validity: list[str] = Field(default_factory=list, description="`compare --validity NAME=VALUE` threshold overrides "
                                                                  "the points were judged again with.")
    strict: bool = Field(default=False, description="`compare --strict`: any failed validity check refused a test, "
                                                    "qualified points too.")
    run_to_run: RunToRun = Field(default="ignored", description="`tested`: every matched shape was repeated on some "
                                 "side, the repeat is the unit of its tests (one trimmed geometric mean per repeat, a t-test across "
                                 "repeats with the pooled run-to-run variance); `ignored`: no shape was repeated, per-request tests within one run ignore "
                                 "run-to-run variation; `partly`: some shapes were (docs/COMPARE.md).")

class ConfigDifference(_Doc):
    """A setting whose recorded value is not the same in every compared run."""

    setting: str = Field(description="`engine`, `chip`, `model`, `metadata.<field>`, `config.<key>`, `server flags` "
                                     "(flags not given identically to every run), `speculative flags`, `dataset`, "
                                     "`request format`.")
    axis: Optional[str] = Field(description="What a difference in this setting belongs to: `chip`, `engine`, "
                                            "`speculative decoding`, `configuration`, `model`, `client`, `provenance`; "
                                            "null for a metadata field of no known axis.")
    expected: bool = Field(description="The difference is part of what the comparison compares (or provenance only); "
                                       "false marks the title `(configurations differ)`.")
    values: dict[str, JsonValue] = Field(description="Run label -> recorded value (null: not recorded).")

class ComparisonDoc(_Doc):
    """comparison.json: everything comparison.md shows, as data."""

    schema_version: Literal[1] = Field(default=1, description="Version of this format.")
    title: str = Field(description="Title of comparison.md.")
    baseline: str = Field(description="Label of the baseline run.")
    runs: list[RunInfo] = Field(description="Compared runs, baseline first.")
    slo: SloSpec = Field(description="SLO the marks are judged against.")
    settings: Settings = Field(description="Statistics parameters.")
    scenarios: list[ScenarioComparison] = Field(description="Matched scenarios, sorted by name.")
    unmatched: list[Unmatched] = Field(description="Scenarios present in only some runs.")
    compared: list[str] = Field(default_factory=list, description="What the comparison compares: `chip`, `engine`, "
                                                                  "`speculative decoding` (those that differ), else "
                                                                  "`configuration` (docs/COMPARE.md).")
    config_differences: list[ConfigDifference] = Field(default_factory=list, description="Every recorded setting that "
                                                                                         "differs between the runs.")
    configurations_differ: bool = Field(default=False, description="Some setting outside the compared axes differs "
                                                                   "(an unexpected difference): the title says so.")
    throughput_basis: Optional[str] = Field(default=None, description="Why whole-server throughput is not compared "
                                            "when the runs' accelerator counts differ (the verdicts are per "
                                            "accelerator then); null when the counts are the same.")
    plots: list[str] = Field(default_factory=list, description="PNG files written beside comparison.md.")
    itl_not_comparable: Optional[str] = Field(default=None, description="Why ITL is not comparable between these "
                                              "runs (their speculative settings differ); null when it is.")
    draft_bound_unpaired: list[str] = Field(default_factory=list, description="One line per speculative run held "
                                            "to no draft bound, saying why (engine family unknown, no plain run of "
                                            "its family, draft tokens unknown).")

    def run(self, label: str) -> RunInfo:
        for info in self.runs:
            if info.label == label:
                return info
        raise KeyError(label)
