"""Preflight of a DSpark phase: its speculative tokens against the drafter's block size (docs/VALIDITY.md).

A DSpark (DFlash-family) drafter is trained to propose a block of tokens at
once; its checkpoint's config.json says how many (`block_size`, or
`dflash_config.block_size`). Run with another number of speculative tokens,
its acceptance collapses (a public vLLM report: 2.74 at k = 5 with a block
of 5, 1.31 at k = 7). Preflight refuses such a phase when the checkpoint says
its block size, and warns when it cannot tell.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Optional, Sequence

from ..catalog.engines import config_from_server_args
from .preflight import Problem

BLOCK_METHODS = ("dspark", "dflash")


def drafter_block_size(model: str) -> tuple[Optional[int], str]:
    """The block size a drafter checkpoint's config.json states, or None with why it is unknown."""
    config = Path(model) / "config.json"
    if not config.is_file():
        return None, f"{config} is not readable here (a hub id, or a path inside the container)"
    try:
        data: Any = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{config}: not JSON ({exc})"
    if not isinstance(data, dict):
        return None, f"{config}: not a JSON object"
    nested = data.get("dflash_config")
    for where, value in (("dflash_config.block_size", nested.get("block_size") if isinstance(nested, dict) else None),
                         ("block_size", data.get("block_size"))):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value, where
    return None, f"{config} names no block_size (nor dflash_config.block_size)"


def block_size_check(phase: str, argv: Sequence[str]) -> tuple[Optional[Problem], Optional[str]]:
    """(a refusal, a warning) for a phase whose server command runs a DSpark/DFlash drafter; (None, None) else."""
    config = config_from_server_args(shlex.join(argv)) if argv else {}
    method = str(config.get("spec_method") or "").lower()
    if method not in BLOCK_METHODS:
        return None, None
    tokens, model = config.get("spec_tokens"), config.get("spec_model")
    who = f"the {method} phase of engine {phase or '?'}"
    if not model:
        return None, f"{who}: no drafter model in its server command; its block size against the speculative " \
                     f"tokens ({tokens if tokens else 'unset'}) is not checked"
    block, where = drafter_block_size(str(model))
    if block is None:
        return None, (f"{who}: the drafter's block size is unknown ({where}); acceptance collapses when the "
                      f"speculative tokens ({tokens if tokens else 'unset'}) differ from it: check them by hand")
    if tokens != block:
        return Problem(f"{who} runs {tokens if tokens else 'an unset number of'} speculative tokens, but its drafter "
                       f"{model} has a block size of {block} ({where} of its config.json): its acceptance collapses "
                       "when they differ",
                       f"set the speculative tokens to {block} (SPEC_TOKENS or --spec-tokens / "
                       "num_speculative_tokens)"), None
    return None, None
