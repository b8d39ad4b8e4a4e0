"""What a raw run and its side files recorded that the validity checks read (docs/VALIDITY.md).

* the raw run (`readers.RawRun`): prompts, concurrency, request rate, duration,
  per-request latencies and output lengths, the client's token totals, its
  random-length spread;
* ``server_metrics/<stem>.before.prom`` / ``.after.prom``: the change of the
  server's own token counters over the scenario (``vllm:prompt_tokens_total``,
  ``vllm:generation_tokens_total``; SGLang's ``sglang:`` ones likewise);
* ``client_stats/<stem>.json``: the client process's CPU and wall time, written
  by ``sskj-results run-client`` (keys ``user_cpu_s``, ``system_cpu_s``, ``wall_s``);
* the phase's speculative setting and the scenario's acceptance (`Speculation`, from the caller).

Side files describe one scenario: a raw file with several runs gets none of them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ..analysis.metrics import itl_sums
from ..catalog.engines import counter_names
from ..contract.models import Validity, ValidityThresholds
from .rawkeys import SGLANG, VLLM
from .readers import Details, RawRun
from .sidecars import acceptance_counter_names, prometheus_counters
from ..analysis.validity import CHUNK_GAP_FLOOR_MS, RANDOM_DATASETS, Evidence, judge


@dataclass(frozen=True)
class Speculation:
    """A phase's speculative setting and one scenario's acceptance (what the acceptance and streaming checks read)."""

    speculative: Optional[bool]  # None: unknown (raw files only)
    method: Optional[str] = None
    draft_tokens: Optional[int] = None
    accept_length: Optional[float] = None

PROMPT_COUNTERS = counter_names("prompt_tokens")  # every engine row's, under its own name
GENERATION_COUNTERS = counter_names("generation_tokens")
CLIENT_STATS_DIR = "client_stats"


def server_token_deltas(before: str, after: str) -> tuple[Optional[float], Optional[float]]:
    """(prompt, generation) tokens the server counted between two /metrics texts; None when a counter is absent."""
    b, a = prometheus_counters(before), prometheus_counters(after)

    def delta(names: tuple[str, ...]) -> Optional[float]:
        for name in names:
            if name in a:
                change = a[name] - b.get(name, 0.0)
                return change if change >= 0 else None  # counter reset: the server restarted
        return None

    return delta(PROMPT_COUNTERS), delta(GENERATION_COUNTERS)


def read_client_stats(path: Path) -> tuple[Optional[float], Optional[float], Optional[str]]:
    """(user + system CPU s, wall s, why unknown) from client_stats/<stem>.json."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, None, f"{CLIENT_STATS_DIR}/{path.name}: unreadable ({exc})"
    if not isinstance(data, dict):
        return None, None, f"{CLIENT_STATS_DIR}/{path.name}: expected a JSON object"

    def number(key: str) -> Optional[float]:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            return None
        return float(value)

    user, system, wall = number("user_cpu_s"), number("system_cpu_s"), number("wall_s")
    if user is None or system is None or wall is None:
        return None, None, f"{CLIENT_STATS_DIR}/{path.name}: no user_cpu_s, system_cpu_s and wall_s numbers"
    return user + system, wall, None


def _fixed_length(run: RawRun) -> tuple[Optional[bool], Optional[str]]:
    """Did every request ask for exactly output_len tokens? From the client's range ratio, else the prompts."""
    if run.dataset_name is not None and run.dataset_name not in RANDOM_DATASETS:
        # a dataset with a fixed output length (the round-trip sets: docs/METRICS.md) asks every request for it
        return (True, None) if run.fixed_output_len is not None and run.fixed_output_len == run.output_len \
            else (False, None)
    ratio = run.random_range_ratio
    if ratio is not None and run.format == SGLANG:
        return ratio == 1.0, None  # sglang draws lengths from [len * ratio, len]
    if ratio is not None and run.format == VLLM:
        return ratio == 0.0, None  # vllm draws them from [len * (1 - ratio), len * (1 + ratio)]
    details = run.details
    if details is not None and details.input_lens.size and bool(np.all(details.input_lens == run.input_len)):
        return True, None  # every prompt has the requested length: no length range was used
    return None, "the client recorded no random range ratio and the prompt lengths vary"


def tokens_per_chunk(details: Details) -> tuple[Optional[np.ndarray], Optional[str]]:
    """Output tokens / streamed chunks of each successful request with output, or why unknown. A chunk is the
    first one and one per inter-token gap of at least CHUNK_GAP_FLOOR_MS: chunks closer than that were read
    together (a burst the client timed at read, not at arrival), so they count as one (docs/VALIDITY.md)."""
    if details.itl_flat.size == 0:
        return None, "the client recorded no inter-token gaps (no streaming, or no details)"
    counts = details.itl_counts.astype(np.int64)
    real = (details.itl_flat >= CHUNK_GAP_FLOOR_MS / 1000.0).astype(np.int64)
    gaps = np.zeros(counts.size, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    filled = counts > 0
    if filled.any():
        gaps[filled] = np.add.reduceat(real, starts[filled])
    ok = details.success & (details.output_lens > 0)
    return details.output_lens[ok] / (gaps[ok] + 1.0), None


def evidence(run: RawRun, run_dir: Optional[Path] = None, stem: Optional[str] = None,
             runs_in_file: int = 1, spec: Optional[Speculation] = None) -> Evidence:
    """Everything the checks read about one run; side files only under run_dir and for one run per file."""
    reasons: list[tuple[str, str]] = []
    details = run.details
    latencies = output_lens = per_chunk = None
    client_out, client_in = run.total_output_tokens, run.total_input_tokens
    if details is not None:
        ok = details.success
        e2e = details.latencies if details.latencies is not None else details.ttfts + itl_sums(details.itl_flat, details.itl_counts)
        latencies = e2e[ok]
        output_lens = details.output_lens[ok]
        client_out = float(output_lens.sum())
        client_in = float(details.input_lens[ok].sum())
        per_chunk, why_chunks = tokens_per_chunk(details)
        if why_chunks:
            reasons.append(("streaming_granularity", why_chunks))
    fixed, why = _fixed_length(run)
    if why:
        reasons.append(("output_length", why))
    server_in = server_out = cpu = wall = None
    if run_dir is None:
        for name in ("output_token_parity", "prompt_token_parity"):
            reasons.append((name, "server token counters not recorded (imported from raw files only)"))
        reasons.append(("client_cpu", "client CPU times not recorded (imported from raw files only)"))
    elif runs_in_file != 1:
        for name in ("output_token_parity", "prompt_token_parity", "client_cpu"):
            reasons.append((name, f"{runs_in_file} runs in one raw file: its side files describe one scenario only"))
    else:
        before = run_dir / "server_metrics" / f"{stem}.before.prom"
        after = run_dir / "server_metrics" / f"{stem}.after.prom"
        if before.is_file() and after.is_file():
            server_in, server_out = server_token_deltas(before.read_text(errors="replace"), after.read_text(errors="replace"))
            for name, value, what in (("prompt_token_parity", server_in, "prompt"), ("output_token_parity", server_out, "generation")):
                if value is None:
                    reasons.append((name, f"server_metrics/{stem}.*.prom: no {what}-token counter, or it went backwards"))
        stats = run_dir / CLIENT_STATS_DIR / f"{stem}.json"
        if stats.is_file():
            cpu, wall, why = read_client_stats(stats)
            if why:
                reasons.append(("client_cpu", why))
    if spec is not None and spec.speculative and spec.accept_length is None:
        reasons.append(("acceptance", _why_no_acceptance(run_dir, stem, runs_in_file)))
    return Evidence(
        concurrency=run.concurrency, output_len=run.output_len, success=run.success, failed=run.failed,
        num_prompts=run.num_prompts, rate_limited=run.request_rate is not None, duration_s=run.duration_s,
        latencies_s=latencies, output_lens=output_lens, fixed_length=fixed,
        client_output_tokens=client_out, client_prompt_tokens=client_in,
        server_output_tokens=server_out, server_prompt_tokens=server_in,
        client_cpu_s=cpu, client_wall_s=wall, tokens_per_chunk=per_chunk,
        speculative=spec.speculative if spec else None, spec_method=spec.method if spec else None,
        draft_tokens=spec.draft_tokens if spec else None, accept_length=spec.accept_length if spec else None,
        counted_output_tokens=run.total_output_tokens, retokenized_output_tokens=run.total_output_tokens_retokenized,
        summaries=run.client, unknown_reasons=tuple(reasons),
    )


def _why_no_acceptance(run_dir: Optional[Path], stem: Optional[str], runs_in_file: int) -> str:
    """Why a speculative scenario has no acceptance length: the raw file reported none, and the side files."""
    base = "the client reported none"
    if run_dir is None:
        return base + " (imported from raw files only: no server_metrics/)"
    if runs_in_file != 1:
        return base + f"; {runs_in_file} runs in one raw file: its server_metrics/ describe none of them"
    files = [run_dir / "server_metrics" / f"{stem}.{side}.prom" for side in ("before", "after")]
    missing = [f"server_metrics/{f.name}" for f in files if not f.is_file()]
    if missing:
        return base + f", and {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing"
    return (base + f", and server_metrics/{stem}.*.prom hold no speculative counters that moved over the scenario "
            f"({', '.join(acceptance_counter_names())})")


def file_speculation(run: RawRun) -> Optional[Speculation]:
    """The speculative setting a raw file shows by itself: the vLLM client's own `spec_decode_*` counters over its
    benchmark (draft tokens per step and acceptance, as a live run's phase gives them); None without them."""
    acceptance = run.acceptance
    if acceptance is None or acceptance.source != "client_counters":
        return None
    return Speculation(speculative=True, draft_tokens=acceptance.draft_length, accept_length=acceptance.length)


def judge_run(run: RawRun, run_dir: Optional[Path] = None, stem: Optional[str] = None, runs_in_file: int = 1,
              thresholds: Optional[ValidityThresholds] = None, spec: Optional[Speculation] = None) -> Validity:
    """The validity block of one raw run (parse: with its run directory and the phase's speculative setting;
    import-legacy: without, the file's own speculative counters standing for it)."""
    return judge(evidence(run, run_dir, stem, runs_in_file, spec or file_speculation(run)), thresholds)
