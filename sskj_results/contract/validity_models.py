"""The validity part of results.json: each scenario's checks and the thresholds they use (docs/VALIDITY.md).

Apart from models.py, which re-exports them, so that each module of the contract stays readable.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from .base import _Model

CheckName = Literal[
    "prompts_per_slot", "achieved_concurrency", "output_length", "zero_token_successes",
    "output_token_parity", "prompt_token_parity", "client_cpu", "completeness", "streaming_granularity",
    "acceptance",
    # the client's own numbers agree with each other (analysis/validity.py)
    "retokenized_tokens", "latency_order", "streaming_summary",
    # plausibility of speculative decoding and of the outputs (analysis/plausibility.py)
    "acceptance_bound", "repetitive_outputs",
]


class ValidityThresholds(_Model):
    """Limits of the validity checks (docs/VALIDITY.md). The defaults are the documented ones."""

    min_prompts_per_slot: float = Field(
        default=4.0, gt=0,
        description="prompts_per_slot: num_prompts / concurrency must be at least this (steady state).",
    )
    min_concurrency_fraction: float = Field(
        default=0.8, gt=0, le=1,
        description="achieved_concurrency: sum of request latencies / duration must be at least this "
        "fraction of the requested concurrency (Little's law; steady state).",
    )
    max_short_output_share: float = Field(
        default=0.01, ge=0, le=1,
        description="output_length: at most this share of successful requests may return fewer output tokens "
        "than requested (fixed-length random prompts only).",
    )
    max_zero_token_successes: int = Field(
        default=0, ge=0, description="zero_token_successes: at most this many successful requests with no output token.",
    )
    max_token_mismatch: float = Field(
        default=0.01, ge=0,
        description="output_token_parity / prompt_token_parity: |client - server| / server at most this "
        "(server = change of its /metrics token counters over the scenario).",
    )
    max_client_cpu: float = Field(
        default=0.9, gt=0,
        description="client_cpu: the client's (user + system CPU time) / wall time, in cores, must stay below this.",
    )
    max_failed_share: float = Field(
        default=0.0, ge=0, le=1, description="completeness: failed / all requests at most this share.",
    )
    max_tokens_per_chunk: float = Field(
        default=1.5, ge=1,
        description="streaming_granularity: a request whose output tokens / streamed chunks exceed this (or, in a "
        "speculative phase, 1 + its draft tokens per step when that is more) arrived in bursts.",
    )
    max_bursty_share: float = Field(
        default=0.25, ge=0, le=1,
        description="streaming_granularity: at most this share of successful requests may arrive in bursts "
        "(beyond max_tokens_per_chunk); above it TPOT and ITL measured chunks, not tokens.",
    )
    max_retokenized_shortfall: float = Field(
        default=0.2, ge=0, le=1,
        description="retokenized_tokens: the client's generated texts, tokenized again, may hold at most this share "
        "fewer tokens than it counted (1 - retokenized / counted; text that retokenizes into more tokens passes).",
    )
    min_median_itl_share: float = Field(
        default=0.1, ge=0, le=1,
        description="streaming_summary (files without per-request gaps): the median ITL must be at least this share "
        "of the mean ITL (else of the TPOT mean); below it most gaps fall inside streamed chunks.",
    )
    max_accept_length_excess: float = Field(
        default=0.02, ge=0,
        description="acceptance_bound: the acceptance length may exceed 1 + draft tokens by this fraction (counters "
        "that count a request's first, prefill token among the decoded ones; at least n / (n - 1) - 1 on n-token "
        "outputs); below 1 it may not.",
    )
    max_repeated_ngram_share: float = Field(
        default=0.5, ge=0, le=1,
        description="repetitive_outputs: an output whose repeated word 4-grams (1 - distinct / all) exceed this "
        "share is repetitive (in public Qwen3.5-27B outputs 8 % exceed 0.5).",
    )
    max_repetitive_share: float = Field(
        default=0.25, ge=0, le=1,
        description="repetitive_outputs: at most this share of a point's saved outputs may be repetitive.",
    )
    max_qualified_failed_share: float = Field(
        default=0.05, ge=0, le=1,
        description="completeness: a failed share above max_failed_share and at most this one qualifies the point "
        "(a small failure share, ⚠); above it the point is disqualified (many failures, ✖).",
    )


class ValidityCheck(_Model):
    """One validity check of a scenario: did the point measure the engine in this respect?"""

    name: CheckName = Field(description="Check name (docs/VALIDITY.md).")
    ok: Optional[bool] = Field(
        description="true passed, false failed, null unknown: an input was not recorded or the check does not apply "
        "(the message says which). Never false for want of data.",
    )
    value: Optional[float] = Field(description="The measured value the check compares (null when unknown).")
    threshold: Optional[float] = Field(description="The limit it is compared with (see ValidityThresholds).")
    message: str = Field(description="One line: what was measured against what, or why it is unknown.")


class Validity(_Model):
    """Whether a scenario measured the engine (not the client, a transient, or truncated outputs)."""

    ok: Optional[bool] = Field(
        description="false when any check failed; true when every check passed; null otherwise (some unknown).",
    )
    checks: list[ValidityCheck] = Field(description="Every check, in the order of docs/VALIDITY.md.")
    unreliable_metrics: list[str] = Field(
        default_factory=list,
        description="Metrics of the scenario that a failed check with a scope says do not describe the engine, with "
        "the metrics derived from them (`tpot_ms`, `itl_ms`, `slo_attainment`, `request_goodput`, `interactivity` "
        "when streaming_granularity failed: the client timed chunks, not tokens); their verdicts are refused, the "
        "other metrics keep theirs (docs/VALIDITY.md). Files written before derived metrics list only the first "
        "two; readers derive the rest from the failed checks.",
    )

    @property
    def failing(self) -> list[str]:
        """Names of the failed checks."""
        return [c.name for c in self.checks if c.ok is False]
