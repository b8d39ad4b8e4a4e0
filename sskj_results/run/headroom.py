"""Context headroom: the context a phase gives its server covers every scenario of the grid (preflight).

A scenario needs input + output tokens, plus the speculative tokens the
engine drafts past the last one (`spec_tokens` of the server command), plus
a margin (CONTEXT_MARGIN_PCT, default 1 % of input + output: room for the
special tokens a template or tokenizer adds, and for prompt methods that are
not exact, docs/METRICS.md). The context is the server command's own
(`--context-length`, `--max-model-len`, read by catalog.engines); `auto` or
no flag means the model's own maximum (config.json `max_position_embeddings`),
checked when the model's config is readable here and not otherwise.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

DEFAULT_MARGIN_PCT = 1.0


@dataclass(frozen=True)
class Need:
    name: str
    input_len: int
    output_len: int
    spec_tokens: int
    margin: int

    @property
    def total(self) -> int:
        return self.input_len + self.output_len + self.spec_tokens + self.margin


def need(name: str, input_len: int, output_len: int, spec_tokens: Optional[int], margin_pct: float) -> Need:
    margin = math.ceil((input_len + output_len) * margin_pct / 100)
    return Need(name, input_len, output_len, spec_tokens or 0, margin)


def model_max_len(model: str) -> Optional[int]:
    """max_position_embeddings of a local model's config.json (or of its text_config); None when unknown."""
    try:
        data = json.loads((Path(model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for part in (data, data.get("text_config") if isinstance(data, dict) else None):
        value = part.get("max_position_embeddings") if isinstance(part, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def context_problem(engine: str, argv: Sequence[str], model: str, rows: Sequence[tuple[str, int, int]],
                    margin_pct: float) -> Optional[tuple[str, str]]:
    """(what, fix) when the phase's context is too small for some scenarios (name, input, output); else None."""
    from ..catalog.engines import config_from_server_args, engine as engine_row

    config = config_from_server_args(shlex.join(argv))
    if not config:
        return None  # a command not understood: nothing is claimed about it
    flag = engine_row(engine).flags["max_model_len"][0]
    context = config.get("max_model_len")
    source = f"{flag} {context}"
    if not isinstance(context, int):  # auto, or not given: the model's own maximum
        context = model_max_len(model)
        if context is None:
            return None
        source = f"{flag} {config.get('max_model_len') or 'not given'}: the model's max_position_embeddings {context}"
    spec = config.get("spec_tokens")
    needs = [need(name, i, o, spec if isinstance(spec, int) else None, margin_pct) for name, i, o in rows]
    short = [n for n in needs if n.total > context]
    if not short:
        return None
    worst = max(short, key=lambda n: n.total)
    listed = ", ".join(n.name for n in short)
    spec_part = f" + {worst.spec_tokens} speculative" if worst.spec_tokens else ""
    what = (f"engine {engine}: context {context} ({source}) is too small for {len(short)} of {len(needs)} "
            f"scenarios ({listed}); the largest, {worst.name}, needs {worst.total} = {worst.input_len} input + "
            f"{worst.output_len} output{spec_part} + {worst.margin} margin ({margin_pct:g} %)")
    fix = (f"give the phase a context of at least {worst.total} (the experiment's context setting, e.g. "
           f"CONTEXT_LEN or MAX_MODEL_LEN in config.env), `auto` where the engine takes it, or leave these "
           "scenarios out of the grid")
    return what, fix
