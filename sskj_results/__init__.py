"""sskj_results: the results.json contract of the sskj benchmark workflow.

Library entry points (imported on first use, so the CLI starts fast)::

    import sskj_results
    run = sskj_results.load_run("experiments/p800/dsv4_p800_sglang/results/20260708-120000")
    run.scenarios[0].latencies.ttft_ms.p95
    sskj_results.save_run(run, "copy/")      # atomic: temp file + rename
    df = sskj_results.load_runs(["experiments/"])  # pandas DataFrame: one row per scenario per run
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "load_run", "load_runs", "save_run", "Results", "SskjError", "ResultsError"]

_LAZY = {
    "load_run": ("contract.io", "load_run"),
    "save_run": ("contract.io", "save_run"),
    "load_runs": ("analysis.runtable", "load_runs"),
    "Results": ("contract.models", "Results"),
    "SskjError": ("contract.errors", "SskjError"),
    "ResultsError": ("contract.errors", "ResultsError"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
