"""Plausibility of a point's speculative decoding and outputs. Pure: no I/O (docs/VALIDITY.md).

Two checks join a scenario's validity block after the others (`with_checks`):

| check | value | passes when |
|---|---|---|
| acceptance_bound | the scenario's acceptance length | 1 <= value <= (1 + draft tokens) x max(1 + max_accept_length_excess (0.02), n / (n - 1)) on n-token outputs |
| repetitive_outputs | share of saved outputs whose repeated word 4-grams exceed max_repeated_ngram_share (0.5); whitespace-only and digit-run outputs are repetitive (share 1); other outputs under 11 words count as not repetitive; each on at most its last 65,536 characters; read whole when they total at most 32,768 characters, else as a sequential sample (batches of 16 in a fixed order until decided) | <= max_repetitive_share (0.25) |

A verification step emits the target's own token plus at most k accepted
draft tokens, so an acceptance length outside [1, 1 + k] was not measured on
the engine. Outputs that repeat themselves are what a drafter predicts
perfectly: they make speculative decoding look faster than on real text.

`tpot_bound` is compare's check of a pair: the TPOT speedup of a speculative
point over a plain point of the same engine family and shape can be at most
about 1 + k (each step costs at least one target forward).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from ..catalog.engines import json_option_flags, synthetic_acceptance_settings
from ..contract.clientinfo import Acceptance
from ..contract.validity_models import Validity, ValidityCheck, ValidityThresholds
from .validity import overall

NGRAM = 4
# an output is measured when it has at least this many n-grams (NGRAM + MIN_NGRAMS - 1 words)
MIN_NGRAMS = 8
# CJK and kana characters are words of their own (their text has no spaces); other words are runs of
# letters and digits; punctuation marks are one word each
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+|[^\\w\\s]")
PLAUSIBILITY_CHECKS = ("acceptance_bound", "repetitive_outputs")
# The repetition measure's work per point is bounded: a point whose saved outputs total at most SAMPLE_BUDGET
# characters is read whole; a larger one as a sequential sample, in a fixed pseudo-random order (seeded by their
# count: the same order every time, and no aliasing with a periodic order of requests), SAMPLE_BATCH at a time, until
# the 95 % (Wilson) interval of the repetitive share lies wholly on one side of the limit, or every output is read.
# A point far from the limit is judged on 16 outputs; one near it is read further, up to whole. Each output is
# measured on at most its last SAMPLE_CHARS characters (a loop, once a model falls into it, lasts to the end of the
# output).
SAMPLE_BUDGET = 32768
SAMPLE_BATCH = 16
SAMPLE_CHARS = 65536
SAMPLE_Z = 1.96
# 1 + accepted / steps is at least 1 by definition (rounding aside): no excess is allowed below
ACCEPT_FLOOR = 1.0 - 1e-9


def words(text: str) -> list[str]:
    """The words of a text as the repetition measure counts them (no tokenizer needed): `_WORD.findall(text)`.

    Split at whitespace first (as the pattern does: no word holds any); a piece of ASCII letters and digits is one
    word as it is, and only the others (punctuation, `_`, CJK, other scripts) go through the pattern: the same
    words at about half the cost."""
    pieces = text.split()
    if text.isascii() and all(map(str.isalnum, pieces)):
        return pieces
    out: list[str] = []
    add, extend, find = out.append, out.extend, _WORD.findall
    for piece in pieces:
        if piece.isalnum() and piece.isascii():
            add(piece)
        else:
            extend(find(piece))
    return out


# an output of no letter with at least this many digits is a digit run (NGRAM + MIN_NGRAMS - 1: as long, in
# characters, as the shortest measured output is in words)
MIN_DIGIT_RUN = NGRAM + MIN_NGRAMS - 1
_LETTER = re.compile(f"[^\\W\\d_]|[{_CJK}]")


def degenerate(text: str) -> bool:
    """An output made only of whitespace (a non-empty text), or only of digits, blanks and punctuation with at least
    MIN_DIGIT_RUN digits: the most degenerate outputs, which the word n-grams see as one word or none."""
    if not text:
        return False
    if not text.strip():
        return True
    return _LETTER.search(text) is None and sum(c.isdigit() for c in text) >= MIN_DIGIT_RUN


def repeated_ngram_share(text: str, n: int = NGRAM, min_ngrams: int = MIN_NGRAMS) -> Optional[float]:
    """Share of a text's word n-grams that repeat an earlier one: 1 - distinct / all; 1 for a degenerate output
    (whitespace only, a digit run); None when too short."""
    if degenerate(text):
        return 1.0
    w = words(text)
    count = len(w) - n + 1
    if count < min_ngrams:
        return None
    distinct = len(set(zip(*(w[i:] for i in range(n)))))  # the n-grams, as tuples (zip stops at the last one)
    return 1.0 - distinct / count


def sample_order(count: int) -> list[int]:
    """The order in which the repetition measure reads a point's ``count`` outputs: a permutation seeded by the
    count (deterministic)."""
    order = list(range(count))
    random.Random(count).shuffle(order)
    return order


def wilson_interval(hits: int, n: int, z: float = SAMPLE_Z) -> tuple[float, float]:
    """The Wilson score interval of a share hits / n (n > 0)."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def sequential_shares(texts: Sequence[str], limit: float, per_output: float,
                      batch: int = SAMPLE_BATCH) -> tuple[int, list[float]]:
    """(outputs read, the repeated shares of those long enough to judge): every output when they total at most
    SAMPLE_BUDGET characters, else outputs read in sample_order, a batch at a time, until the interval of the
    repetitive share (shares above per_output, over the outputs read) is decided against limit, or all are read."""
    order = sample_order(len(texts))
    step = len(order) if sum(map(len, texts)) <= SAMPLE_BUDGET else batch
    shares: list[float] = []
    read = 0
    while read < len(order):
        for i in order[read:read + step]:
            s = repeated_ngram_share(texts[i][-SAMPLE_CHARS:])
            if s is not None:
                shares.append(s)
        read = min(read + step, len(order))
        low, high = wilson_interval(sum(1 for s in shares if s > per_output), read)
        if high <= limit or low > limit:
            break
    return read, shares


def repetitive_outputs(texts: Optional[Sequence[str]], t: ValidityThresholds) -> ValidityCheck:
    """The share of saved outputs that repeat more than max_repeated_ngram_share of their 4-grams (a sequential
    sample: as many as it takes to decide)."""
    limit = t.max_repetitive_share
    if texts is None:
        return ValidityCheck(name="repetitive_outputs", ok=None, value=None, threshold=limit,
                             message="the client saved no generated texts (run it with details: "
                             "sglang `--output-details`, vllm `--save-detailed`)")
    if not texts:
        return ValidityCheck(name="repetitive_outputs", ok=None, value=None, threshold=limit,
                             message="no saved output (no successful request)")
    # an output too short to measure counts as not repetitive: it cannot degenerate far (whitespace and digit runs
    # are measured as wholly repetitive: `degenerate`)
    per_output = t.max_repeated_ngram_share
    read, shares = sequential_shares(texts, limit, per_output)
    repetitive = sum(1 for s in shares if s > per_output)
    share = repetitive / read
    ok = share <= limit
    mean = f"; mean repeated share {sum(shares) / len(shares):.0%}" if shares else ""
    what = (f"{len(texts)} saved outputs" if read == len(texts)
            else f"{read} saved outputs sampled from {len(texts)} (enough to decide)")
    text = (f"{repetitive} of {what} repeat more than {per_output:.0%} of their word "
            f"{NGRAM}-grams ({share:.1%}; {len(shares)} long enough to judge, {NGRAM + MIN_NGRAMS - 1} words or "
            f"more, at most the last {SAMPLE_CHARS:,} characters of each{mean}), {'at most' if ok else 'above'} {limit:.0%}")
    if not ok:
        text += (": degenerate outputs, which a drafter predicts easily (random prompts? a tiny model?); "
                 "speculative speedups measured on them do not carry over to real text")
    return ValidityCheck(name="repetitive_outputs", ok=ok, value=share, threshold=limit, message=text)


def accept_limit(draft_tokens: int, t: ValidityThresholds, output_len: Optional[int] = None) -> float:
    """The largest acceptance length a step of k draft tokens can give, with the counting excess allowed: a
    source that counts each request's first (prefill) token among the decoded ones (SGLang's completion tokens /
    verification calls) reaches (1 + k) x n / (n - 1) on n-token outputs, so the excess is at least that."""
    excess = 1.0 + t.max_accept_length_excess
    if output_len is not None and output_len > 1:
        excess = max(excess, output_len / (output_len - 1.0))
    return (1.0 + draft_tokens) * excess


def acceptance_bound(accept_length: Optional[float], draft_tokens: Optional[int],
                     t: ValidityThresholds, output_len: Optional[int] = None) -> ValidityCheck:
    """The acceptance length within [1, 1 + draft tokens]; unknown without either."""
    if accept_length is None:  # a speculative phase without one is the acceptance check's to flag
        return ValidityCheck(name="acceptance_bound", ok=True, value=None, threshold=None,
                             message="no acceptance length recorded: nothing to bound")
    if not draft_tokens:
        return ValidityCheck(name="acceptance_bound", ok=None, value=accept_length, threshold=None,
                             message=f"acceptance length {accept_length:.2f} with an unknown number of draft "
                             "tokens per step: its upper bound 1 + k is unknown")
    upper = accept_limit(draft_tokens, t, output_len)
    ok = ACCEPT_FLOOR <= accept_length <= upper
    text = f"acceptance length {accept_length:.2f}, {'within' if ok else 'outside'} [1, 1 + {draft_tokens}]"
    if not ok:
        text += (": a step emits one target token plus at most the accepted drafts; the value was not measured "
                 "on this engine (wrong draft count, a lifetime average, or another source's definition)")
    return ValidityCheck(name="acceptance_bound", ok=ok, value=accept_length, threshold=upper, message=text)


def with_checks(validity: Optional[Validity], checks: Sequence[ValidityCheck]) -> Validity:
    """validity with `checks` added after its own (replacing earlier ones of the same names); `ok` recomputed."""
    names = {c.name for c in checks}
    kept = [c for c in validity.checks if c.name not in names] if validity is not None else []
    every = [*kept, *checks]
    ok = overall(every)
    if validity is None:
        return Validity(ok=ok, checks=every)
    return validity.model_copy(update={"ok": ok, "checks": every})


def judge_plausibility(validity: Optional[Validity], texts: Optional[Sequence[str]], accept_length: Optional[float],
                       draft_tokens: Optional[int], thresholds: Optional[ValidityThresholds] = None,
                       output_len: Optional[int] = None) -> Validity:
    """A scenario's validity with both plausibility checks."""
    t = thresholds or ValidityThresholds()
    return with_checks(validity, [acceptance_bound(accept_length, draft_tokens, t, output_len),
                                  repetitive_outputs(texts, t)])


def draft_tokens_of(engine_name: Optional[str], spec_tokens: Optional[int]) -> Optional[int]:
    """A run's config.spec_tokens as draft tokens per step, as its engine row says (catalog/engines.py): vLLM's
    num_speculative_tokens as it is; SGLang's `--speculative-num-draft-tokens` counts the verified root token too,
    so one less; None for an unknown engine."""
    from ..catalog.engines import recorded_engine
    from ..contract.errors import SskjError

    if not spec_tokens:
        return None
    try:
        row = recorded_engine(engine_name or "")
    except SskjError:
        return None
    if row.spec_tokens_are_draft:
        return spec_tokens
    return spec_tokens - 1 if row.spec_tokens_count_root and spec_tokens >= 2 else None


# --------------------------------------------------------------------------- synthetic acceptance

# Engine settings that make acceptance a setting rather than a measurement (profiling tools), as the engine
# rows name them: environment variables (SGLang's) and keys of a JSON option (vLLM's `--speculative-config`).
SYNTHETIC_ENV, SYNTHETIC_SPEC_KEYS = synthetic_acceptance_settings()
JSON_OPTIONS = json_option_flags()


def synthetic_acceptance(command: Optional[str]) -> list[str]:
    """The settings of a server command that make its acceptance synthetic (`NAME=VALUE` each); [] when none.

    Environment words anywhere in the command (`env K=V`, `docker exec --env K=V`) and the JSON of
    `--speculative-config`."""
    import json
    import shlex

    if not command:
        return []
    try:
        argv = shlex.split(command)
    except ValueError:
        return []
    found = []
    for i, word in enumerate(argv):
        name, sep, value = word.partition("=")
        if sep and name in SYNTHETIC_ENV and value.strip():
            found.append(word)
        spec_json = value if sep and name in JSON_OPTIONS else (
            argv[i + 1] if word in JSON_OPTIONS and i + 1 < len(argv) else None)
        if spec_json is None:
            continue
        try:
            spec = json.loads(spec_json)
        except ValueError:
            continue
        if isinstance(spec, dict):
            if spec.get("rejection_sample_method") == "synthetic":
                found.append("rejection_sample_method=synthetic")
            found.extend(f"{key}={spec[key]}" for key in SYNTHETIC_SPEC_KEYS if spec.get(key) is not None)
    return found


def synthetic_settings(config: Any) -> list[str]:
    """The synthetic-acceptance settings a run's config records: in its server command, and the engine
    environment variables the run loop recorded as `acceptance_env` (a phase's exported settings)."""
    found = synthetic_acceptance(getattr(config, "server_args", None))
    extra = getattr(config, "model_extra", None) or {}
    recorded = extra.get("acceptance_env")
    for word in recorded.split() if isinstance(recorded, str) else []:
        if word.partition("=")[0] in SYNTHETIC_ENV and word not in found:
            found.append(word)
    return found


def acceptance_env(environ: Mapping[str, str]) -> str:
    """`NAME=VALUE` words of the synthetic-acceptance variables set in an environment (the run loop records them
    as config `acceptance_env`: an engine started from it inherits them); "" when none is set."""
    return " ".join(f"{name}={environ[name].strip()}" for name in SYNTHETIC_ENV if environ.get(name, "").strip())


def mark_synthetic(acceptance: Optional[Acceptance], settings: Sequence[str]) -> Optional[Acceptance]:
    """The acceptance marked unreliable when the server's settings made it synthetic (unchanged otherwise)."""
    if acceptance is None or not settings:
        return acceptance
    note = (f"synthetic acceptance: {', '.join(settings)} (server command or environment) set it; it describes "
            "the setting, not the drafter")
    return acceptance.model_copy(update={"reliable": False, "note": note})


# --------------------------------------------------------------------------- compare: the draft bound of a TPOT speedup


@dataclass(frozen=True)
class SpeedupBound:
    """A speculative point's TPOT speedup over a plain point of the same engine family and shape."""

    speedup: float  # plain TPOT / speculative TPOT
    bound: float  # 1 + draft tokens
    draft_tokens: int
    plain: str  # the plain run's label
    ok: bool

    @property
    def message(self) -> str:
        verb = "within" if self.ok else "beyond"
        text = (f"TPOT {self.speedup:.2f}x faster than {self.plain} (plain decoding), {verb} the draft bound "
                f"1 + {self.draft_tokens} = {self.bound:g}x")
        if not self.ok:
            text += (": a step emits at most 1 + k tokens and costs at least one target forward; suspect "
                     "degenerate outputs (repetitive_outputs), synthetic acceptance or a wrong draft count")
        return text


def tpot_bound(spec_tpot_ms: Optional[float], plain_tpot_ms: Optional[float], draft_tokens: Optional[int],
               plain: str) -> Optional[SpeedupBound]:
    """The draft bound of one speculative point against one plain point; None when a value is unknown."""
    if (spec_tpot_ms is None or plain_tpot_ms is None or not draft_tokens or spec_tpot_ms <= 0
            or not math.isfinite(spec_tpot_ms) or not math.isfinite(plain_tpot_ms)):
        return None
    speedup = plain_tpot_ms / spec_tpot_ms
    bound = 1.0 + draft_tokens
    return SpeedupBound(speedup=speedup, bound=bound, draft_tokens=draft_tokens, plain=plain, ok=speedup <= bound)
