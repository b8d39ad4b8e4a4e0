"""Each engine row's /metrics counters, read by ingest under the row's own names (parametrized over the rows).

A row's token counters give the server's token deltas; its acceptance counters give the scenario's
acceptance (1 + accepted / drafts, with per-position rates, or generation tokens / verification steps); a
row without them gives none. The Prometheus texts are written from the rows, in the format the engines
expose (a counter's samples summed over label sets)."""

from __future__ import annotations

import pytest

from sskj_results.catalog.engines import ENGINES, Engine
from sskj_results.ingest.evidence import server_token_deltas
from sskj_results.ingest.sidecars import acceptance_between, acceptance_counter_names


def prom(samples: dict[str, float], labels: str = '{model_name="m"}') -> str:
    return "".join(f"# TYPE {name} counter\n{name}{labels} {value}\n" for name, value in samples.items())


@pytest.mark.parametrize("row", [r for r in ENGINES if r.metrics], ids=lambda r: r.name)
def test_token_counters_under_the_rows_names(row: Engine) -> None:
    c = row.counters
    before = prom({n: 100.0 for n in (c.prompt_tokens, c.generation_tokens) if n})
    after = prom({n: v for n, v in ((c.prompt_tokens, 612.0), (c.generation_tokens, 356.0)) if n})
    prompt, generation = server_token_deltas(before, after)
    assert prompt == (512.0 if c.prompt_tokens else None)
    assert generation == (256.0 if c.generation_tokens else None)


@pytest.mark.parametrize("row", [r for r in ENGINES if r.counters.acceptance], ids=lambda r: r.name)
def test_acceptance_from_the_rows_counters(row: Engine) -> None:
    c = row.counters
    if c.acceptance == "drafted":
        before = prom({c.drafts: 10.0, c.accepted: 5.0})
        after = prom({c.drafts: 110.0, c.accepted: 205.0})
        if c.accepted_per_position:
            before += "".join(f'{c.accepted_per_position}_total{{position="{k}"}} 0\n' for k in range(3))
            after += "".join(f'{c.accepted_per_position}_total{{position="{k}"}} {v}\n'
                             for k, v in enumerate((90.0, 70.0, 40.0)))
        got = acceptance_between(before, after)
        assert got is not None and got.length == pytest.approx(3.0)  # 1 + 200 / 100
        assert got.per_position == ([0.9, 0.7, 0.4] if c.accepted_per_position else None)
        assert got.note == f"{c.drafts_family or c.drafts} counters over the scenario"
    else:
        got = acceptance_between(prom({c.generation_tokens: 0.0, c.verify_calls: 0.0}),
                                 prom({c.generation_tokens: 300.0, c.verify_calls: 120.0}))
        assert got is not None and got.length == pytest.approx(2.5)
    assert (c.drafts_family if c.acceptance == "drafted" else c.verify_calls) in acceptance_counter_names()


def test_counters_of_no_row_give_nothing() -> None:
    other = prom({"tgi_generation_tokens_total": 5.0})
    assert acceptance_between(other, other) is None and server_token_deltas(other, other) == (None, None)
