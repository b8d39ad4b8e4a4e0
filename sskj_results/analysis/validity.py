"""Validity of a measured point: did it measure the engine? Pure: no I/O (docs/VALIDITY.md).

A latency is only as good as the run behind it. Each check below compares one
recorded value with a limit of `models.ValidityThresholds`; a check whose
inputs were not recorded (or that does not apply to the run) is unknown
(`ok` null), never failed.

| check | value | passes when |
|---|---|---|
| prompts_per_slot | num_prompts / concurrency | >= min_prompts_per_slot (4) |
| achieved_concurrency | sum of request latencies / duration (Little's law) | >= min_concurrency_fraction (0.8) x concurrency |
| output_length | share of successes with fewer output tokens than requested | <= max_short_output_share (1 %) |
| zero_token_successes | successes with no output token | <= max_zero_token_successes (0) |
| output_token_parity | (client - server) / server output tokens | abs <= max_token_mismatch (1 %) |
| prompt_token_parity | (client - server) / server prompt tokens | abs <= max_token_mismatch (1 %) |
| client_cpu | client (user + system CPU) / wall, cores | < max_client_cpu (0.9) |
| completeness | failed / all requests | <= max_failed_share (0) |
| streaming_granularity | share of successes whose output tokens / streamed chunks (gaps under 0.1 ms join one chunk) exceed max_tokens_per_chunk (1.5; 1 + draft tokens in a speculative phase) | <= max_bursty_share (0.25) |
| acceptance | a speculative phase's acceptance length | recorded (not speculative: passes) |
| retokenized_tokens | 1 - retokenized / counted output tokens, the client's two totals | <= max_retokenized_shortfall (0.2) |
| latency_order | the largest excess of a TTFT statistic over the same E2E statistic, ms | <= 0 |
| streaming_summary | median ITL / mean ITL (else TPOT mean), files without per-request gaps | >= min_median_itl_share (0.1) |
| acceptance_bound, repetitive_outputs | see plausibility.py | |

The block is false when any check failed, true when every check passed, and
null otherwise. A check's scope (`UNRELIABLE_WHEN_FAILED`: the metrics its
failure makes unreliable, the metrics derived from them following) is
declared here; how a failed check grades the point (⚠ qualified, ◐ some
metrics unreliable, ✖ disqualified) is `grades.py`'s. `remeasure_prompts` is the SLO search's rule
for an invalid point: measure it once more, with more prompts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Optional, Sequence

from ..contract.errors import UsageError
from ..contract.metrics import follows
from ..contract.validity_models import CheckName, Validity, ValidityCheck, ValidityThresholds

if TYPE_CHECKING:  # the rules take the caller's arrays; checking a planned grid loads neither numpy nor the results models
    import numpy as np

    from ..contract.models import Scenario

CHECK_ORDER: tuple[CheckName, ...] = (
    "prompts_per_slot", "achieved_concurrency", "output_length", "zero_token_successes",
    "output_token_parity", "prompt_token_parity", "client_cpu", "completeness", "streaming_granularity", "acceptance",
    "retokenized_tokens", "latency_order", "streaming_summary",
    "acceptance_bound", "repetitive_outputs",  # analysis/plausibility.py, after the others
)
# the statistics a TTFT and an E2E summary share that each request's TTFT <= E2E orders (std is no order statistic)
ORDERED_STATS = ("mean", "p50", "p90", "p95", "p99", "p99_9")
STAT_WORDS = {"p50": "median", "p99_9": "P99.9"}
# streamed chunks closer than this were read together, not produced apart: no engine emits a token 0.1 ms after
# the last (10,000 tokens/s for one request); the client timed them at read (streaming_granularity)
CHUNK_GAP_FLOOR_MS = 0.1
# A check's scope: the metrics its failure makes unreliable, the others keep their meaning and their verdicts
# (the metrics derived from them follow: contract/metrics.py `follows`). A check not listed here distorts every
# number of the point when it fails (docs/VALIDITY.md, "What a failed check refuses"). Bursts of tokens per chunk
# make the gaps between chunks, not between tokens: TPOT and ITL; the first chunk's arrival (TTFT), the last's
# (E2E) and the tokens counted (throughput) are what the client saw. A TTFT above the E2E in the client's own
# summaries leaves its TTFT, E2E and the TPOT made of them unbelievable, not its counts. Retokenized outputs far
# below the counted ones (tokens never produced) distort every token figure: not listed.
UNRELIABLE_WHEN_FAILED: dict[str, tuple[str, ...]] = {
    "streaming_granularity": ("tpot_ms", "itl_ms"), "streaming_summary": ("tpot_ms", "itl_ms"),
    "latency_order": ("ttft_ms", "e2e_ms", "tpot_ms")}
DEFAULT_THRESHOLDS = ValidityThresholds()
RANDOM_DATASETS = ("random", "random-ids")


@dataclass(frozen=True)
class Evidence:
    """What one scenario recorded that the checks read. None = not recorded.

    * ``output_lens``: per-request output tokens of the successful requests (as the client counted them);
    * ``latencies_s``: per-request end-to-end latency of the successful requests, seconds;
    * ``fixed_length``: the prompts asked for exactly ``output_len`` tokens each (random dataset, no length range);
    * ``client_*_tokens``: the client's totals over successful requests;
    * ``server_*_tokens``: the change of the server's /metrics token counters over the scenario;
    * ``client_cpu_s`` / ``client_wall_s``: the client process's user + system CPU time and wall time;
    * ``tokens_per_chunk``: per successful request with output, its output tokens / the chunks that streamed them;
    * ``speculative``: the phase decodes speculatively (config.spec_method), with ``spec_method``,
      ``draft_tokens`` (draft tokens per step) and ``accept_length`` (the scenario's acceptance length);
    * ``counted_output_tokens`` / ``retokenized_output_tokens``: the client's own output totals as it wrote them
      (sglang's total_output_tokens and total_output_tokens_retokenized: its generated texts tokenized again);
    * ``summaries``: the client's own statistics, metric -> statistic -> ms (``ttft_ms``, ``e2e_ms``, ``itl_ms``,
      ``tpot_ms``; statistics ``mean``, ``p50``, ...).
    """

    concurrency: Optional[int]  # None: open loop (a request rate, no concurrency limit)
    output_len: int
    success: int
    failed: Optional[int]  # None: unknown (the client wrote only its completed requests)
    num_prompts: Optional[int] = None
    rate_limited: bool = False
    duration_s: Optional[float] = None
    latencies_s: Optional[np.ndarray] = None
    output_lens: Optional[np.ndarray] = None
    fixed_length: Optional[bool] = None
    client_output_tokens: Optional[float] = None
    client_prompt_tokens: Optional[float] = None
    server_output_tokens: Optional[float] = None
    server_prompt_tokens: Optional[float] = None
    client_cpu_s: Optional[float] = None
    client_wall_s: Optional[float] = None
    tokens_per_chunk: Optional[np.ndarray] = None
    speculative: Optional[bool] = None
    spec_method: Optional[str] = None
    draft_tokens: Optional[int] = None
    accept_length: Optional[float] = None
    counted_output_tokens: Optional[float] = None
    retokenized_output_tokens: Optional[float] = None
    summaries: Optional[Mapping[str, Mapping[str, float]]] = None
    unknown_reasons: tuple[tuple[str, str], ...] = ()

    def why(self, check: str, default: str) -> str:
        """Why a check's inputs are missing: a reason given for it by the reader, else default."""
        for name, reason in self.unknown_reasons:
            if name == check:
                return reason
        return default


def _check(name: CheckName, ok: Optional[bool], value: Optional[float], threshold: Optional[float],
           message: str) -> ValidityCheck:
    if value is not None and not math.isfinite(value):
        value = None
    return ValidityCheck(name=name, ok=ok, value=value, threshold=threshold, message=message)


def _unknown(name: CheckName, threshold: Optional[float], message: str) -> ValidityCheck:
    return _check(name, None, None, threshold, message)


def prompts_per_slot(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    limit = t.min_prompts_per_slot
    if ev.concurrency is None:
        return _unknown("prompts_per_slot", limit, "not applicable: open-loop run (a request rate, no concurrency limit)")
    if ev.num_prompts is None:
        return _unknown("prompts_per_slot", limit, "number of prompts not recorded")
    value = ev.num_prompts / ev.concurrency
    ok = value >= limit
    verb = "at least" if ok else "below"
    hint = "" if ok else f": the run never reached steady state; send at least {math.ceil(limit * ev.concurrency)} prompts"
    return _check("prompts_per_slot", ok, value, limit,
                  f"{ev.num_prompts} prompts / concurrency {ev.concurrency} = {value:.2f}, {verb} {limit:g}{hint}")


def achieved_concurrency(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    if ev.concurrency is None or ev.rate_limited:
        return _unknown("achieved_concurrency", None,
                        "not applicable: a request rate, not the concurrency limit, set the load")
    need = t.min_concurrency_fraction * ev.concurrency
    if ev.latencies_s is None or ev.duration_s is None or ev.duration_s <= 0:
        what = "per-request latencies" if ev.latencies_s is None else "the benchmark duration"
        return _unknown("achieved_concurrency", need, ev.why("achieved_concurrency", f"{what} not recorded"))
    achieved = float(ev.latencies_s.sum()) / ev.duration_s
    ok: Optional[bool] = achieved >= need
    text = (f"achieved concurrency {achieved:.2f} (sum of request latencies / duration {ev.duration_s:.3g} s), "
            f"{'at least' if ok else 'below'} {t.min_concurrency_fraction:g} x {ev.concurrency} = {need:.2f}")
    if not ok and ev.failed is None:
        ok = None
        text += "; unknown: the failure count is unknown, and failed requests hold slots for unrecorded times"
    elif not ok and ev.failed:
        # failed requests held a slot for a time nobody recorded: the true value may be higher
        ok = None
        text += f"; unknown: {ev.failed} failed request(s) held slots for unrecorded times"
    elif not ok:
        text += ": the client did not keep the requested number of requests in flight"
    return _check("achieved_concurrency", ok, achieved, need, text)


def output_length(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    limit = t.max_short_output_share
    if ev.fixed_length is None:
        return _unknown("output_length", limit, ev.why("output_length", "requested length per request not recorded"))
    if not ev.fixed_length:
        return _unknown("output_length", limit,
                        "not applicable: requests asked for different output lengths (length range or non-random dataset)")
    if ev.output_lens is None:
        return _unknown("output_length", limit, "per-request output lengths not recorded (run the client with details)")
    n = int(ev.output_lens.size)
    if n == 0:
        return _unknown("output_length", limit, "no successful request")
    short = int((ev.output_lens < ev.output_len).sum())
    share = short / n
    ok = share <= limit
    text = (f"{short} of {n} successful requests returned fewer than {ev.output_len} output tokens "
            f"({share:.1%}), {'at most' if ok else 'above'} {limit:.1%}")
    if not ok:
        text += ": TPOT and throughput were measured on shorter outputs than asked (EOS not ignored?)"
    return _check("output_length", ok, share, limit, text)


def zero_token_successes(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    limit = float(t.max_zero_token_successes)
    if ev.output_len == 0:
        return _unknown("zero_token_successes", limit, "not applicable: no output tokens were requested")
    if ev.output_lens is None:
        return _unknown("zero_token_successes", limit, "per-request output lengths not recorded (run the client with details)")
    zero = int((ev.output_lens == 0).sum())
    ok = zero <= limit
    text = f"{zero} successful request(s) with no output token, {'at most' if ok else 'above'} {limit:g}"
    if not ok:
        text += ": they count as successes but measured no decoding"
    return _check("zero_token_successes", ok, float(zero), limit, text)


def _parity(name: CheckName, what: str, client: Optional[float], server: Optional[float], ev: Evidence,
            t: ValidityThresholds) -> ValidityCheck:
    limit = t.max_token_mismatch
    if client is None:
        return _unknown(name, limit, ev.why(name, f"client {what} tokens not recorded"))
    if server is None:
        return _unknown(name, limit, ev.why(name, f"server {what}-token counters not recorded (server_metrics/)"))
    if ev.failed is None:
        return _unknown(name, limit, "unknown: the failure count is unknown, and failed requests count on the server "
                        "but not in the client's totals")
    if ev.failed:
        return _unknown(name, limit, f"unknown: {ev.failed} failed request(s) count on the server but not in the client's totals")
    if server <= 0:
        return _unknown(name, limit, f"the server counted no {what} tokens over the scenario (counter missing or reset?)")
    diff = (client - server) / server
    ok = abs(diff) <= limit
    text = (f"client {client:.0f} vs server {server:.0f} {what} tokens ({diff:+.2%}), "
            f"{'within' if ok else 'beyond'} {limit:.1%}")
    if not ok:
        text += ": client and server did not count the same tokens"
    return _check(name, ok, diff, limit, text)


def output_token_parity(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    return _parity("output_token_parity", "output", ev.client_output_tokens, ev.server_output_tokens, ev, t)


def prompt_token_parity(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    return _parity("prompt_token_parity", "prompt", ev.client_prompt_tokens, ev.server_prompt_tokens, ev, t)


def client_cpu(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    limit = t.max_client_cpu
    if ev.client_cpu_s is None or ev.client_wall_s is None or ev.client_wall_s <= 0:
        return _unknown("client_cpu", limit, ev.why("client_cpu", "client CPU times not recorded (client_stats/)"))
    cores = ev.client_cpu_s / ev.client_wall_s
    ok = cores < limit
    text = (f"client used {cores:.2f} core(s) (user + system {ev.client_cpu_s:.2f} s over {ev.client_wall_s:.2f} s wall), "
            f"{'below' if ok else 'not below'} {limit:g}")
    if not ok:
        text += ": the client, not the engine, may have set the pace"
    return _check("client_cpu", ok, cores, limit, text)


def completeness(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    limit = t.max_failed_share
    if ev.failed is None:
        return _unknown("completeness", limit, "failed count unknown: the client recorded only its completed requests")
    total = ev.success + ev.failed
    if total == 0:
        return _unknown("completeness", limit, "no requests recorded")
    share = ev.failed / total
    ok = share <= limit
    return _check("completeness", ok, share, limit,
                  f"{ev.failed} of {total} requests failed ({share:.1%}), {'at most' if ok else 'above'} {limit:.1%}")


def chunk_limit(ev: Evidence, t: ValidityThresholds) -> float:
    """Output tokens per streamed chunk a request may show: max_tokens_per_chunk, or 1 + the draft tokens per
    step of a speculative phase when that is more (a verification step emits up to 1 + k tokens at once)."""
    if ev.speculative and ev.draft_tokens:
        return max(t.max_tokens_per_chunk, 1.0 + ev.draft_tokens)
    return t.max_tokens_per_chunk


def streaming_granularity(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    limit = t.max_bursty_share
    if ev.tokens_per_chunk is None:
        return _unknown("streaming_granularity", limit,
                        ev.why("streaming_granularity", "per-request chunk gaps not recorded (run the client with details)"))
    n = int(ev.tokens_per_chunk.size)
    if n == 0:
        return _unknown("streaming_granularity", limit, "no successful request with output tokens")
    if ev.speculative and not ev.draft_tokens:
        return _unknown("streaming_granularity", limit,
                        "speculative phase with an unknown number of draft tokens per step: the tokens a chunk "
                        "may carry are unknown")
    per_chunk = chunk_limit(ev, t)
    bursty = int((ev.tokens_per_chunk > per_chunk).sum())
    share = bursty / n
    ok = share <= limit
    allowed = f"{per_chunk:g} (1 + {ev.draft_tokens} draft tokens)" if per_chunk > t.max_tokens_per_chunk else f"{per_chunk:g}"
    text = (f"{bursty} of {n} successful requests got more than {allowed} output tokens per streamed chunk "
            f"(chunks less than {CHUNK_GAP_FLOOR_MS:g} ms apart count as one) "
            f"({share:.1%}; up to {float(ev.tokens_per_chunk.max()):.1f} per chunk), "
            f"{'at most' if ok else 'above'} {limit:.1%}")
    if not ok:
        text += (": the client timed chunks, not tokens; TPOT and ITL are unreliable, and what is derived from them "
                 "(interactivity, goodput); TTFT is the time to the first chunk, E2E and throughput stand (stream "
                 "buffered by a proxy, or an engine that sends several tokens per chunk)")
    return _check("streaming_granularity", ok, share, limit, text)


def acceptance(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    if ev.speculative is None:
        return _unknown("acceptance", None, ev.why("acceptance", "whether the phase decodes speculatively is not recorded"))
    if not ev.speculative:
        return _check("acceptance", True, None, None, "not speculative: no acceptance length expected")
    method = f" ({ev.spec_method})" if ev.spec_method else ""
    if ev.accept_length is None:
        return _check("acceptance", False, None, None,
                      f"speculative phase{method} without an acceptance length: "
                      + ev.why("acceptance", "neither the client nor the server's /metrics (server_metrics/) "
                               "reported one")
                      + "; nothing shows that the measured engine decoded speculatively")
    return _check("acceptance", True, ev.accept_length, None,
                  f"speculative phase{method}: acceptance length {ev.accept_length:.2f}")


def retokenized_tokens(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    """The client's counted output tokens against its generated texts tokenized again (both totals in its file)."""
    limit = t.max_retokenized_shortfall
    counted, retokenized = ev.counted_output_tokens, ev.retokenized_output_tokens
    if counted is None or retokenized is None:
        return _check("retokenized_tokens", True, None, limit,
                      "not applicable: the client wrote no retokenized output total beside its counted one "
                      "(sglang's total_output_tokens_retokenized)")
    if counted <= 0:
        return _check("retokenized_tokens", True, None, limit, "the client counted no output token: nothing to retokenize")
    shortfall = (counted - retokenized) / counted
    ok = shortfall <= limit
    text = (f"the client counted {counted:,.0f} output tokens; its generated texts retokenize to {retokenized:,.0f} "
            f"({retokenized / counted:.1%} of them), {'at most' if ok else 'more than'} {limit:.0%} fewer")
    if not ok:
        text += (": the throughput and TPOT rest on tokens whose text never arrived (outputs cut short, empty or "
                 "special tokens, a client counting chunks as tokens)")
    return _check("retokenized_tokens", ok, shortfall, limit, text)


def _stat_word(stat: str) -> str:
    return STAT_WORDS.get(stat, stat)


def latency_order(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    """Each request's TTFT is part of its E2E: no order statistic (nor the mean) of TTFT can exceed E2E's."""
    ttft = (ev.summaries or {}).get("ttft_ms") or {}
    e2e = (ev.summaries or {}).get("e2e_ms") or {}
    shared = [k for k in ORDERED_STATS if k in ttft and k in e2e
              and math.isfinite(ttft[k]) and math.isfinite(e2e[k])]
    if not shared:
        return _check("latency_order", True, None, 0.0,
                      "TTFT and E2E share no statistic in the client's summaries: nothing to order")
    # exact: rounding is monotone, so statistics of TTFT_i <= E2E_i keep their order in floating point too
    above = [k for k in shared if ttft[k] > e2e[k]]
    excess = max(ttft[k] - e2e[k] for k in shared)
    if not above:
        return _check("latency_order", True, min(excess, 0.0), 0.0,
                      f"TTFT at most E2E at every statistic both have ({', '.join(map(_stat_word, shared))})")
    each = "; ".join(f"{_stat_word(k)} TTFT {ttft[k]:.3f} ms > {_stat_word(k)} E2E {e2e[k]:.3f} ms" for k in above)
    return _check("latency_order", False, excess, 0.0,
                  f"{each}: impossible, each request's TTFT is part of its E2E; the statistics were not computed over "
                  "the same requests, or the keys are mislabeled: TTFT and E2E are unreliable")


def streaming_summary(ev: Evidence, t: ValidityThresholds) -> ValidityCheck:
    """Chunked streaming seen in the summaries alone (no per-request gaps): most gaps far below the mean gap."""
    limit = t.min_median_itl_share
    if ev.tokens_per_chunk is not None:
        return _check("streaming_summary", True, None, limit,
                      "not applicable: per-request gaps recorded (streaming_granularity judges each request)")
    itl = (ev.summaries or {}).get("itl_ms") or {}
    tpot = (ev.summaries or {}).get("tpot_ms") or {}
    median = itl.get("p50")
    base, what = (itl["mean"], "mean ITL") if itl.get("mean") else (tpot.get("mean"), "TPOT mean")
    if median is None or not base or not math.isfinite(base) or base <= 0 or not math.isfinite(median):
        return _check("streaming_summary", True, None, limit,
                      "no median ITL beside a mean ITL or TPOT mean in the client's summaries: nothing to judge")
    if ev.speculative:
        return _unknown("streaming_summary", limit, "speculative phase: a step's tokens may stream back to back, so "
                        "the summaries cannot tell chunking from speculation")
    share = median / base
    ok = share >= limit
    text = (f"median ITL {median:.3g} ms against {what} {base:.3g} ms ({share:.1%}), "
            f"{'at least' if ok else 'below'} {limit:.0%}")
    if not ok:
        text += (": most gaps fall between tokens of one streamed chunk, read together; the client timed chunks, not "
                 "tokens, so TPOT and ITL are unreliable (a stream buffered by a proxy, or an engine that sends "
                 "several tokens per chunk)")
    return _check("streaming_summary", ok, share, limit, text)


CHECKS = (prompts_per_slot, achieved_concurrency, output_length, zero_token_successes,
          output_token_parity, prompt_token_parity, client_cpu, completeness, streaming_granularity, acceptance,
          retokenized_tokens, latency_order, streaming_summary)


def overall(checks: Sequence[ValidityCheck]) -> Optional[bool]:
    """False when any check failed, true when all passed, else null."""
    if any(c.ok is False for c in checks):
        return False
    if checks and all(c.ok is True for c in checks):
        return True
    return None


def judge(ev: Evidence, thresholds: Optional[ValidityThresholds] = None) -> Validity:
    """Every check of one scenario, in CHECK_ORDER."""
    t = thresholds or DEFAULT_THRESHOLDS
    checks = [check(ev, t) for check in CHECKS]
    return Validity(ok=overall(checks), checks=checks, unreliable_metrics=unreliable(checks))


def unreliable(checks: Sequence[ValidityCheck]) -> list[str]:
    """The metrics that the failed scoped checks make unreliable, with those derived from them, in registry order."""
    found: list[str] = []
    for c in checks:
        if c.ok is False:
            found.extend(m for m in UNRELIABLE_WHEN_FAILED.get(c.name, ()) if m not in found)
    return list(follows(found)) if found else []


# --------------------------------------------------------------------------- thresholds from the command line


def parse_thresholds(items: Iterable[str], base: Optional[ValidityThresholds] = None) -> Optional[ValidityThresholds]:
    """`NAME=VALUE` settings (ValidityThresholds field names) over base; None when there are none and no base."""
    items = list(items)
    if not items:
        return base
    values = (base or DEFAULT_THRESHOLDS).model_dump()
    fields = ValidityThresholds.model_fields
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in fields:
            raise UsageError(f"--validity {item!r}: expected NAME=VALUE with NAME one of {', '.join(fields)}")
        try:
            values[name] = float(text)
        except ValueError:
            raise UsageError(f"--validity {item!r}: {text!r} is not a number") from None
        if name == "max_zero_token_successes":
            if values[name] != int(values[name]):
                raise UsageError(f"--validity {item!r}: a whole number of requests")
            values[name] = int(values[name])
    try:
        return ValidityThresholds(**values)
    except ValueError as exc:
        first = str(exc).splitlines()
        raise UsageError(f"--validity: {first[-1].strip() if first else exc}") from None


# --------------------------------------------------------------------------- views


def invalid_checks(scenario: Scenario) -> list[str]:
    """Failed check names of a scenario ([] when valid or never judged)."""
    return scenario.validity.failing if scenario.validity is not None else []


# --------------------------------------------------------------------------- SLO search


def remeasure_prompts(measurements: Sequence[Scenario], thresholds: Optional[ValidityThresholds] = None) -> Optional[int]:
    """Prompts for one more measurement of a concurrency whose point is invalid, or None.

    `measurements` are every scenario measured at one concurrency and shape,
    in order. An invalid point is measured once more, with more prompts:
    twice as many, and at least enough for prompts_per_slot. Then the latest
    point is recorded whatever it says (None: no re-measure).
    """
    if len(measurements) != 1:
        return None
    point = measurements[0]
    if point.validity is None or point.validity.ok is not False:
        return None
    t = thresholds or DEFAULT_THRESHOLDS
    sent = point.num_prompts if point.num_prompts is not None else point.success + (point.failed or 0)
    steady = math.ceil(t.min_prompts_per_slot * point.concurrency) if point.concurrency is not None else 0
    return max(2 * sent, steady, 1)
