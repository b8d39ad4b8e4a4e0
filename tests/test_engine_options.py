"""Each engine row checked against something outside it: its engine's own CLI definition.

tests/data/engine_options/<lineage>.txt holds the options of each engine's server command, extracted from the
real parser where it installs here (SGLang, vLLM: /opt/argv-check) and from the released source otherwise
(TensorRT-LLM's trtllm-serve, LMDeploy's api_server argparse, llama.cpp's arg.cpp); each file says where it
came from and which version, and carries `# key`, `# values` and `# spec_tokens` lines for the config-file
keys, the accepted values and what the draft-token option counts. Every spelling a row holds must be one of
its engine's options (or, where the engine's parser is argparse, a unique prefix of exactly one), every
config-file key one of its keys, every value the row spells one its option accepts, and the row's draft-token
semantics the one its engine's source states.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sskj_results.catalog.engines import ENGINES, Engine, engine

OPTIONS = Path(__file__).resolve().parent / "data" / "engine_options"


@dataclasses.dataclass
class CliDefinition:
    options: set[str]
    abbreviations: bool
    keys: set[str]
    values: dict[str, set[str]]
    spec_tokens: str  # draft | root | "" (not stated)


def definition(row: Engine) -> CliDefinition:
    text = (OPTIONS / f"{row.lineage}.txt").read_text(encoding="utf-8")
    out = CliDefinition(set(), False, set(), {}, "")
    for line in text.splitlines():
        if line.startswith("-"):
            out.options.add(line.strip())
        elif line.startswith("# abbreviations: argparse"):
            out.abbreviations = True
        elif line.startswith("# key "):
            out.keys.add(line.split()[2])
        elif line.startswith("# values "):
            key, _, rest = line[len("# values "):].partition(":")
            out.values[key.strip()] = set(rest.split("(")[0].split())
        elif line.startswith("# spec_tokens: "):
            out.spec_tokens = line.split()[2]
    return out


def problems(row: Engine) -> list[str]:
    """What in the row its engine's CLI does not define."""
    cli = definition(row)
    found = []
    for flag in sorted(row.spellings):
        if flag in cli.options:
            continue
        prefixed = [o for o in cli.options if o.startswith(flag)]
        if not (cli.abbreviations and flag.startswith("--") and len(prefixed) == 1):
            found.append(f"{row.name}: {flag} is no option of its engine")
    found += [f"{row.name}: config-file key {k} is not its engine's" for k in row.file_keys.values()
              if k not in cli.keys]
    for key, spellings in row.values.items():
        allowed = cli.values.get(key)
        found += [f"{row.name}: {key} value {v!r} is not one its engine accepts" for v in spellings.values()
                  if allowed is not None and v not in allowed]
    if row.speculative:
        counts = "draft" if row.spec_tokens_are_draft else "root" if row.spec_tokens_count_root else ""
        if counts != cli.spec_tokens:
            found.append(f"{row.name}: spec_tokens counts {counts or 'nothing stated'}, its engine's option "
                         f"counts {cli.spec_tokens or 'nothing stated'}")
    return found


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_every_spelling_of_the_row_is_its_engines(row: Engine) -> None:
    assert (OPTIONS / f"{row.lineage}.txt").is_file(), f"no option list of {row.lineage} in {OPTIONS}"
    assert not problems(row)


def test_a_misspelled_or_flipped_trtllm_row_is_caught() -> None:
    row = engine("trtllm")
    misspelled = dataclasses.replace(row, flags={**row.flags, "max_num_seqs": ("--max-batch-size",)})
    assert problems(misspelled) == ["trtllm: --max-batch-size is no option of its engine"]
    flipped = dataclasses.replace(row, spec_tokens_are_draft=False, spec_tokens_count_root=True)
    assert problems(flipped) == ["trtllm: spec_tokens counts root, its engine's option counts draft"]
    key = dataclasses.replace(row, file_keys={**row.file_keys, "spec_tokens": "speculative_config.num_draft_tokens"})
    assert problems(key) == ["trtllm: config-file key speculative_config.num_draft_tokens is not its engine's"]
    value = dataclasses.replace(row, values={"spec_method": {**row.values["spec_method"], "eagle": "EAGLE"}})
    assert problems(value) == ["trtllm: spec_method value 'EAGLE' is not one its engine accepts"]


def test_an_abbreviation_counts_only_where_the_parser_takes_it_and_it_is_unique() -> None:
    sglang = engine("sglang")
    assert "--tp" in sglang.flags["tp"] and not problems(sglang)  # argparse's prefix of --tp-size alone
    ambiguous = dataclasses.replace(sglang, flags={**sglang.flags, "max_num_seqs": ("--max",)})
    assert problems(ambiguous) == ["sglang: --max is no option of its engine"]
    trtllm = engine("trtllm")  # click: no abbreviations
    short = dataclasses.replace(trtllm, flags={**trtllm.flags, "max_model_len": ("--max_seq",)})
    assert problems(short) == ["trtllm: --max_seq is no option of its engine"]
