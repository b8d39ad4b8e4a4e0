"""Grades of validity: which failed check qualifies a point (⚠) and which disqualifies it (✖). Pure: no I/O.

Two questions, two grades (docs/VALIDITY.md):

* *Does this number describe the engine under steady load?* A breach of the
  workload's shape — too few prompts per slot, a low achieved concurrency, a
  small share of failed requests (at most ``max_qualified_failed_share``) —
  **qualifies** the point: its numbers describe what was measured (a burst,
  a run with a failure), and an A/B verdict on two such points stands, with
  the qualification beside it.
  A speculative phase with no acceptance length qualifies its points too:
  the numbers stand, but nothing shows the engine decoded speculatively.
* *Is this measurement broken?* Client bottleneck, outputs cut short,
  client/server token mismatch, zero-token successes, many failures
  **disqualify** the point: no verdict is made on it.
* *Is one of its metrics broken?* A failed check with a scope
  (`validity.UNRELIABLE_WHEN_FAILED`: a stream that arrived in bursts makes
  TPOT and ITL time chunks, not tokens) makes **unreliable** only the metrics
  it names and those derived from them (contract/metrics.py `follows`): their
  verdicts are refused, their values marked; the point's other metrics keep
  their verdicts. The point is then graded ``partial`` (◐).

The grades are read from a validity block as recorded (the checks' `ok` and
`value`) and the thresholds it was judged against, so results.json keeps its
format; `regrade` judges recorded values again against other thresholds
(`compare --validity`). `planned_problems` is what can be known before a run
(prompts per slot of every planned scenario), for preflight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Literal, Mapping, Optional, Sequence

from ..contract.errors import UsageError
from ..contract.validity_models import Validity, ValidityCheck, ValidityThresholds
from .plausibility import ACCEPT_FLOOR, accept_limit
from ..contract.metrics import BY_NAME, follows
from .validity import DEFAULT_THRESHOLDS, UNRELIABLE_WHEN_FAILED, unreliable

if TYPE_CHECKING:  # a planned grid is graded without loading the results models
    from ..contract.models import Scenario

Severity = Literal["qualifying", "disqualifying"]
Grade = Literal["valid", "qualified", "partial", "disqualified"]
QUALIFIED_MARK = "⚠"
DISQUALIFIED_MARK = "✖"
PARTIAL_MARK = "◐"  # some metrics of the point unreliable, the others stand
VALID_MARK = "✔"
ENV_PREFIX = "VALIDITY_"
# A qualifying breach of these must be shared by both sides of an A/B test (a burst against a steady load is
# not a comparison); the others qualify a verdict from either side.
SHARED_CHECKS = ("prompts_per_slot",)


@dataclass(frozen=True)
class Rule:
    """How a check is graded and moved: its severity, the threshold field, what a better measurement needs."""

    severity: Severity
    field: str
    better: str


RULES: dict[str, Rule] = {
    "prompts_per_slot": Rule("qualifying", "min_prompts_per_slot",
                             "send more prompts: PROMPTS_PER_CONCURRENCY / MIN_PROMPTS in config.env, or a fourth "
                             "column of scenarios.tsv"),
    "achieved_concurrency": Rule("qualifying", "min_concurrency_fraction",
                                 "more prompts per slot (a longer steady phase); with enough prompts, a client that "
                                 "keeps up (see client_cpu)"),
    "output_length": Rule("disqualifying", "max_short_output_share",
                          "make the client ignore EOS (`vllm bench serve --ignore-eos`), check max_model_len "
                          "against input + output"),
    "zero_token_successes": Rule("disqualifying", "max_zero_token_successes",
                                 "find why the engine answered with no token (engine log: context length, stop strings)"),
    "output_token_parity": Rule("disqualifying", "max_token_mismatch",
                                "client and server must count the same tokens (outputs cut short? other traffic?)"),
    "prompt_token_parity": Rule("disqualifying", "max_token_mismatch",
                                "prompts whose text encodes back to the client's token ids (docs/VALIDITY.md)"),
    "client_cpu": Rule("disqualifying", "max_client_cpu",
                       "split the load over two client processes, or move the client to another core or machine"),
    "completeness": Rule("qualifying", "max_failed_share",
                         "fix the failures' cause (report.md, Failed requests: the first error)"),
    "streaming_granularity": Rule("disqualifying", "max_bursty_share",
                                  "a stream the client sees token by token: no buffering proxy between client and "
                                  "engine, the engine's per-token streaming (docs/VALIDITY.md)"),
    "acceptance": Rule("qualifying", "",
                       "record the engine's acceptance: its /metrics before and after each scenario "
                       "(server_metrics/), or a client that reports it; check that speculation was on"),
    "retokenized_tokens": Rule("disqualifying", "max_retokenized_shortfall",
                               "outputs whose every counted token arrives as text: look at the generated texts "
                               "(cut short? empty or special tokens?) and the client's token counting"),
    "latency_order": Rule("disqualifying", "",
                          "statistics computed over the same successful requests, under their own keys: look at the "
                          "client version that wrote the file"),
    "streaming_summary": Rule("disqualifying", "min_median_itl_share",
                              "a stream the client sees token by token (no buffering proxy); the client's per-request "
                              "gaps (sglang --output-details, vllm --save-detailed) to judge each request"),
    "acceptance_bound": Rule("disqualifying", "max_accept_length_excess",
                             "record the draft tokens per step the engine really used (config spec_tokens) and "
                             "an acceptance measured over the scenario (server_metrics/), not a lifetime average"),
    "repetitive_outputs": Rule("qualifying", "max_repetitive_share",
                               "real-text prompts (PROMPT_METHOD, docs/METRICS.md) and a real model; look at the "
                               "generated texts"),
}


def thresholds_of(recorded: Optional[ValidityThresholds]) -> ValidityThresholds:
    return recorded or DEFAULT_THRESHOLDS


def severity(check: ValidityCheck, thresholds: Optional[ValidityThresholds] = None) -> Optional[Severity]:
    """The grade of a failed check; None when it passed or is unknown."""
    if check.ok is not False:
        return None
    if check.name == "completeness":
        t = thresholds_of(thresholds)
        limit = max(t.max_failed_share, t.max_qualified_failed_share)
        return "qualifying" if check.value is not None and check.value <= limit else "disqualifying"
    return RULES[check.name].severity


def failed(validity: Optional[Validity], thresholds: Optional[ValidityThresholds], grade: Severity) -> list[str]:
    """Names of the failed checks of one severity."""
    qualifying, disqualifying = breaches(validity, thresholds)
    return qualifying if grade == "qualifying" else disqualifying


def scoped(name: str) -> bool:
    """A failed check of this name makes only some metrics unreliable (validity.UNRELIABLE_WHEN_FAILED)."""
    return name in UNRELIABLE_WHEN_FAILED


def breaches(validity: Optional[Validity], thresholds: Optional[ValidityThresholds]) -> tuple[list[str], list[str]]:
    """(qualifying, disqualifying): the names of the failed checks of each severity, in one pass; a scoped check
    (`partial_breaches`) is in neither: it does not grade the whole point."""
    found: dict[str, list[str]] = {"qualifying": [], "disqualifying": []}
    for c in validity.checks if validity is not None else []:
        sev = severity(c, thresholds)
        if sev is not None and not scoped(c.name):
            found[sev].append(c.name)
    return found["qualifying"], found["disqualifying"]


def partial_breaches(validity: Optional[Validity]) -> list[str]:
    """The failed scoped checks: each makes some metrics of the point unreliable, not the point."""
    return [c.name for c in validity.checks if c.ok is False and scoped(c.name)] if validity is not None else []


def unreliable_of(partial: Sequence[str]) -> list[str]:
    """The metrics that the failed scoped checks make unreliable, with the metrics derived from them."""
    found: list[str] = []
    for name in partial:
        found.extend(m for m in UNRELIABLE_WHEN_FAILED.get(name, ()) if m not in found)
    return list(follows(found)) if found else []


def grade(validity: Optional[Validity], thresholds: Optional[ValidityThresholds] = None) -> Optional[Grade]:
    """`disqualified` (a measurement-integrity check failed), `partial` (a scoped check failed: some metrics are
    unreliable), `qualified` (only workload-shape breaches), `valid` (every check passed), None (never judged, or
    some check unknown and none failed)."""
    return grade_of(validity, *breaches(validity, thresholds), partial_breaches(validity))


def grade_of(validity: Optional[Validity], qualifying: Sequence[str], disqualifying: Sequence[str],
             partial: Sequence[str] = ()) -> Optional[Grade]:
    """`grade` of a validity block whose breaches are known already."""
    if validity is None:
        return None
    if disqualifying:
        return "disqualified"
    if partial:
        return "partial"
    if qualifying:
        return "qualified"
    return "valid" if validity.ok is True else None


def mark(validity: Optional[Validity], thresholds: Optional[ValidityThresholds] = None) -> str:
    """`✔`, `⚠ <qualifying>`, `◐ <metrics> unreliable: <scoped checks> (⚠ …)`, `✖ <disqualifying> (⚠ …)` or ""
    (unknown, never judged)."""
    qualifying, disqualifying = breaches(validity, thresholds)
    partial = partial_breaches(validity)
    return mark_of(grade_of(validity, qualifying, disqualifying, partial), qualifying, disqualifying, partial)


def short_names(metrics: Sequence[str]) -> str:
    """`TPOT, ITL`: metrics by their short labels."""
    return ", ".join(BY_NAME[m].short if m in BY_NAME else m for m in metrics)


def mark_of(g: Optional[str], qualifying: Sequence[str], disqualifying: Sequence[str],
            partial: Sequence[str] = ()) -> str:
    """The mark of a grade and its breaches (a comparison row carries them, not the thresholds)."""
    qual = f" ({QUALIFIED_MARK} {', '.join(qualifying)})" if qualifying else ""
    if g == "disqualified":
        return f"{DISQUALIFIED_MARK} " + ", ".join([*disqualifying, *partial]) + qual
    if g == "partial":
        declared = [m for name in partial for m in UNRELIABLE_WHEN_FAILED.get(name, ())]
        return f"{PARTIAL_MARK} {short_names(declared)} unreliable: {', '.join(partial)}" + qual
    if g == "qualified":
        return f"{QUALIFIED_MARK} " + ", ".join(qualifying)
    return VALID_MARK if g == "valid" else ""


EVERY_METRIC = "*"  # in doubtful_metrics: the point is disqualified, none of its metrics is to be believed


def doubtful_metrics(validity: Optional[Validity], thresholds: Optional[ValidityThresholds] = None) -> frozenset[str]:
    """The metrics of a point not to be believed: {EVERY_METRIC} for a disqualified point, else the metrics the
    failed scoped checks make unreliable (with those derived from them); empty when every one can be."""
    qualifying, disqualifying = breaches(validity, thresholds)
    if disqualifying:
        return frozenset((EVERY_METRIC,))
    return frozenset(unreliable_of(partial_breaches(validity)))


def doubtful_of_names(failed: Sequence[str], failed_share: Optional[float],
                      thresholds: Optional[ValidityThresholds] = None) -> frozenset[str]:
    """doubtful_metrics of a point known only by its failed checks' names (the runs table's `validity_failed`) and
    its failed share of requests (completeness is qualifying up to max_qualified_failed_share; unknown: beyond)."""
    t = thresholds_of(thresholds)
    limit = max(t.max_failed_share, t.max_qualified_failed_share)
    for name in failed:
        if name not in RULES or scoped(name):
            continue
        if name == "completeness":
            if failed_share is None or failed_share > limit:
                return frozenset((EVERY_METRIC,))
        elif RULES[name].severity == "disqualifying":
            return frozenset((EVERY_METRIC,))
    return frozenset(unreliable_of([n for n in failed if scoped(n)]))


def believed(doubtful: frozenset[str], *metrics: str) -> bool:
    """None of the metrics is in doubt at a point (doubtful_metrics)."""
    return EVERY_METRIC not in doubtful and not doubtful.intersection(metrics)


def metric_reliable(g: Optional[str], partial: Sequence[str], metric: str) -> bool:
    """Whether one metric of a point can be believed: not on a disqualified point, not in a failed check's scope."""
    if g == "disqualified":
        return False
    return metric not in unreliable_of(partial)


# --------------------------------------------------------------------------- judging recorded values again


def _limit(name: str, t: ValidityThresholds, scenario: Scenario) -> Optional[float]:
    if not RULES[name].field:
        return None  # a check without a threshold (acceptance) is what it was
    if name == "achieved_concurrency":
        return t.min_concurrency_fraction * scenario.concurrency if scenario.concurrency is not None else None
    if name == "acceptance_bound":
        draft = scenario.acceptance.draft_length if scenario.acceptance is not None else None
        return accept_limit(draft, t, scenario.output_len) if draft else None
    return float(getattr(t, RULES[name].field))


def _passes(name: str, value: float, limit: float) -> bool:
    if name in ("prompts_per_slot", "achieved_concurrency", "streaming_summary"):
        return value >= limit
    if name in ("output_token_parity", "prompt_token_parity"):
        return abs(value) <= limit
    if name == "client_cpu":
        return value < limit
    if name == "acceptance_bound":  # limit = (1 + k)(1 + excess); below 1 no step can be
        return ACCEPT_FLOOR <= value <= limit
    return value <= limit


def regrade(validity: Optional[Validity], scenario: Scenario, thresholds: ValidityThresholds) -> Optional[Validity]:
    """The recorded checks judged again against other thresholds (their recorded values; unknown stays unknown)."""
    if validity is None:
        return None
    checks = []
    for c in validity.checks:
        limit = _limit(c.name, thresholds, scenario)
        if c.value is None or limit is None or limit == c.threshold:
            checks.append(c)
            continue
        ok: Optional[bool] = _passes(c.name, c.value, limit)
        if c.name == "achieved_concurrency" and not ok and scenario.failed:
            ok = None  # failed requests held slots for unrecorded times (as validity.achieved_concurrency)
        verdict = "passes" if ok else "fails" if ok is False else "unknown (failed requests held slots)"
        field = RULES[c.name].field
        checks.append(c.model_copy(update={
            "ok": ok, "threshold": limit,
            "message": f"{c.message} — judged again with {field}={getattr(thresholds, field):g}: {verdict}",
        }))
    if any(c.ok is False for c in checks):
        ok_all: Optional[bool] = False
    elif checks and all(c.ok is True for c in checks):
        ok_all = True
    else:
        ok_all = None
    return Validity(ok=ok_all, checks=checks, unreliable_metrics=unreliable(checks))


# --------------------------------------------------------------------------- thresholds: options and config.env


def env_key(field: str) -> str:
    """`min_prompts_per_slot` -> `VALIDITY_MIN_PROMPTS_PER_SLOT` (the config.env key)."""
    return ENV_PREFIX + field.upper()


def env_items(environ: Mapping[str, str]) -> list[str]:
    """`NAME=VALUE` settings from `VALIDITY_<NAME>` variables (config.env, exported by the shell); empty ones ignored."""
    fields = ValidityThresholds.model_fields
    items = []
    for key in sorted(environ):
        if not key.startswith(ENV_PREFIX) or not environ[key].strip():
            continue
        name = key[len(ENV_PREFIX):].lower()
        if name not in fields:
            raise UsageError(f"{key}: not a validity threshold; use one of "
                             + ", ".join(env_key(f) for f in fields) + " (docs/VALIDITY.md)")
        value = environ[key].strip()
        try:
            float(value)
        except ValueError:
            raise UsageError(f"{key}={value!r}: not a number (docs/VALIDITY.md)") from None
        items.append(f"{name}={value}")
    return items


def how_to_move(field: str, value: float) -> str:
    """The options and config key that set one threshold."""
    text = f"{value:g}"
    return (f"`--validity {field}={text}` (compare, parse, import-legacy) or `{env_key(field)}=\"{text}\"` "
            "in the experiment's config.env")


Point = tuple[ValidityCheck, Optional[int]]  # a failed check and the point's concurrency


def passing_limit(name: str, points: Sequence[Point]) -> Optional[float]:
    """The threshold at which every listed failed point of check `name` would pass (None when unknown)."""
    values = [c.value for c, _ in points if c.value is not None]
    if not values or name == "acceptance_bound":  # an impossible value: no threshold should make it pass
        return None
    if name == "prompts_per_slot":
        return math.floor(min(values) * 100) / 100
    if name == "streaming_summary":  # a lower bound, like prompts_per_slot
        return math.floor(min(values) * 1e4) / 1e4
    if name == "achieved_concurrency":
        fractions = [c.value / conc for c, conc in points if c.value is not None and conc]
        return math.floor(min(fractions) * 100) / 100 if fractions else None
    if name in ("output_token_parity", "prompt_token_parity"):
        return math.ceil(max(abs(v) for v in values) * 1e4) / 1e4
    if name == "client_cpu":
        return math.floor(max(values) * 100) / 100 + 0.01
    if name == "zero_token_successes":
        return float(math.ceil(max(values)))
    return math.ceil(max(values) * 1e4) / 1e4


REAL_TEXT_PREFIX = "text of "  # scenarios[].prompt_source of prompts cut from a real text


def better_measurement(name: str, points: Sequence[Point], real_text: bool = False) -> str:
    """What a measurement that passes would need; for prompts_per_slot the prompt count of each concurrency; for
    repetitive_outputs on prompts that were real text already (`real_text`), not real-text prompts again."""
    rule = RULES[name]
    if name == "repetitive_outputs" and real_text:
        return ("the prompts were real text already: a real model (a tiny or random-weight one repeats itself), "
                "a sampling temperature above 0; look at the generated texts")
    if name == "prompts_per_slot":
        limits = {c.threshold for c, _ in points if c.threshold is not None}
        limit = max(limits) if limits else DEFAULT_THRESHOLDS.min_prompts_per_slot
        need = sorted({(conc, math.ceil(limit * conc)) for _, conc in points if conc is not None})
        counts = ", ".join(f"≥ {n} at concurrency {c}" for c, n in need)
        return f"send ≥ {limit:g} prompts per slot ({counts}): {rule.better}"
    return rule.better


# --------------------------------------------------------------------------- before the run: preflight


@dataclass(frozen=True)
class PlannedScenario:
    """A scenario the run loop will measure: its name, concurrency and prompts."""

    name: str
    concurrency: int
    num_prompts: int


def planned_problems(planned: Iterable[PlannedScenario], thresholds: Optional[ValidityThresholds] = None) -> list[str]:
    """One line per planned scenario that breaks a rule known before the run (prompts per slot),
    with the prompt count that would pass; [] when every scenario satisfies its rules."""
    t = thresholds_of(thresholds)
    limit = t.min_prompts_per_slot
    lines = []
    for p in planned:
        per_slot = p.num_prompts / p.concurrency
        if per_slot >= limit:
            continue
        need = math.ceil(limit * p.concurrency)
        lines.append(
            f"{p.name}: {p.num_prompts} prompts for concurrency {p.concurrency} = {per_slot:.2f} per slot, below "
            f"min_prompts_per_slot {limit:g}: every point will be qualified (⚠ prompts_per_slot); send ≥ {need} "
            f"prompts (PROMPTS_PER_CONCURRENCY={math.ceil(limit)}, or a fourth column of scenarios.tsv), or set "
            f"{env_key('min_prompts_per_slot')}=\"{math.floor(per_slot * 100) / 100:g}\" in config.env with a comment why"
        )
    return lines
