"""The commands of one scenario besides the client's: warmup, prefix-cache reset, /metrics snapshots.

The run loop runs them and a dry run prints them from the same functions.
Settings are read from a mapping (the run's environment): SERVER_HOST, PORT,
SERVED_MODEL_NAME / MODEL_PATH, WARMUP_PYTHON / CLIENT_PYTHON,
WARMUP_MAX_TOKENS, WARMUP_TIMEOUT_S.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from ..catalog.engines import engine


def base_url(settings: Mapping[str, str]) -> str:
    return f"http://{settings.get('SERVER_HOST') or '127.0.0.1'}:{settings.get('PORT', '')}"


def warmup_argv(settings: Mapping[str, str], repo: Path, input_len: int, requests: int) -> list[str]:
    """scripts/common/warmup.py with the client's Python: `requests` short requests of `input_len` tokens."""
    python = settings.get("WARMUP_PYTHON") or settings.get("CLIENT_PYTHON") or "python3"
    return [python, str(repo / "scripts" / "common" / "warmup.py"),
            "--base-url", base_url(settings),
            "--model", settings.get("SERVED_MODEL_NAME") or settings.get("MODEL_PATH", ""),
            "--input-len", str(input_len), "--num-requests", str(requests),
            "--max-tokens", settings.get("WARMUP_MAX_TOKENS") or "8",
            "--timeout", settings.get("WARMUP_TIMEOUT_S") or "600"]


def reset_argv(settings: Mapping[str, str], engine_name: str, out: Path) -> list[str]:
    """POST to the engine's prefix-cache reset path (its row's reset_path: sglang /flush_cache, vLLM
    /reset_prefix_cache; an engine without one gets no reset command), the answer
    (status line, headers, body) into OUT: vLLM refuses with 200 `{"success": false}`, which `curl -f` cannot
    see; parse judges it (ingest/sidecars.py cache_reset)."""
    return ["curl", "-sS", "-i", "-o", str(out), "--max-time", "60", "-X", "POST",
            base_url(settings) + engine(engine_name).reset_path]


def metrics_url(settings: Mapping[str, str]) -> str:
    """The engine's Prometheus endpoint."""
    return base_url(settings) + "/metrics"


def metrics_argv(settings: Mapping[str, str], out: Path) -> list[str]:
    """GET /metrics into a file (the server's token and speculative-decoding counters)."""
    return ["curl", "-fsS", "--max-time", "30", "-o", str(out), metrics_url(settings)]


@dataclass
class ScenarioCommands:
    """Everything the shell runs for one scenario, in order (empty lists: not run)."""

    warmup: list[str] = field(default_factory=list)
    reset: list[str] = field(default_factory=list)
    metrics_before: list[str] = field(default_factory=list)
    client: list[str] = field(default_factory=list)
    metrics_after: list[str] = field(default_factory=list)
    supervise: list[str] = field(default_factory=list)  # `run-client` options before --server-pid ...
    reset_out: str = ""  # where `reset` writes the server's answer (empty when the server could not be reached)
    metrics_url: str = ""  # the engine's /metrics (empty: the engine has none)
    metrics_after_out: str = ""  # where `metrics_after` saves it


def scenario_commands(settings: Mapping[str, str], repo: Path, run_dir: Path, engine_name: str, stem: str,
                      raw: Path, concurrency: int, input_len: int, output_len: int,
                      client: list[str], warmup_requests: Optional[int] = None) -> ScenarioCommands:
    requests = int(settings.get("WARMUP_REQUESTS") or 0) if warmup_requests is None else warmup_requests
    metrics = run_dir / "server_metrics" / stem
    after = Path(f"{metrics}.after.prom")
    row = engine(engine_name)
    has_metrics = row.metrics == "prometheus"
    return ScenarioCommands(
        warmup=warmup_argv(settings, repo, input_len, requests) if requests > 0 else [],
        reset=reset_argv(settings, engine_name, Path(f"{metrics}.reset.http")) if row.reset_path else [],
        reset_out=f"{metrics}.reset.http" if row.reset_path else "",
        metrics_before=metrics_argv(settings, Path(f"{metrics}.before.prom")) if has_metrics else [],
        client=client,
        metrics_after=metrics_argv(settings, after) if has_metrics else [],
        metrics_url=metrics_url(settings) if has_metrics else "",
        metrics_after_out=str(after) if has_metrics else "",
        supervise=[str(run_dir), "--stem", stem, "--concurrency", str(concurrency), "--input-len", str(input_len),
                   "--output-len", str(output_len), "--oom-pattern", settings.get("OOM_PATTERN", ""),
                   "--client-log", str(run_dir / "logs" / f"client_{stem}.log"), "--raw", str(raw)],
    )
