#!/usr/bin/env python3
"""Write prompts.json: prompts the tiny model's tokenizer reads back token for token.

    envs/client/bin/python experiments/cpu/tiny_vllm_ngram/make_prompts.py [MODEL_DIR] [OUT]

sglang.bench_serving with an OpenAI-compatible backend sends text: for
`--dataset-name random` it encodes a dataset prompt, cuts or repeats the ids
to the requested input length and decodes them back to text, which the server
encodes again. The server counts the requested length only when that text
encodes to the same ids. With `random-ids` (consecutive token ids) it does not:
byte tokens that are parts of a UTF-8 character decode to U+FFFD and the
merges differ, so the tiny Llama's server saw 14-21 % more prompt tokens.

Every prompt here is a space followed by words joined by single spaces, each
word a whole vocabulary token `Ġword` (lower-case ASCII letters) that the
tokenizer encodes alone as that one token. Byte-level pre-tokenization splits
such text before every space, so any cut at a token boundary and any
repetition (the prompt starts with a space) encodes back to the same ids.
`main` checks that for every prompt at the experiment's input lengths before
writing. The file is ShareGPT-shaped (two turns per conversation), the form
`--dataset-path` expects; it has 512 conversations, so up to 512 prompts a
scenario (the client sends fewer when the file has fewer).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from transformers import AutoTokenizer

HERE = Path(__file__).resolve().parent
CONVERSATIONS = 512
WORDS_PER_PROMPT = 32
SEED = 20240705
CHECK_LENGTHS = (1, 31, 32, 33, 128, 1024)


def main(argv: list[str]) -> int:
    model_dir = argv[1] if len(argv) > 1 else str(HERE.parents[2] / "models" / "tiny-llama")
    out = Path(argv[2]) if len(argv) > 2 else HERE / "prompts.json"
    tok = AutoTokenizer.from_pretrained(model_dir)
    vocab = tok.get_vocab()
    words = sorted(
        t[1:] for t, i in vocab.items()
        if t.startswith("Ġ") and t[1:].isascii() and t[1:].isalpha() and t[1:].islower()
        and tok.encode(" " + t[1:]) == [i]
    )
    rng = random.Random(SEED)
    prompts = [" " + " ".join(rng.choice(words) for _ in range(WORDS_PER_PROMPT)) for _ in range(CONVERSATIONS)]
    for prompt in prompts:
        ids = tok.encode(prompt)
        for length in CHECK_LENGTHS:
            # sglang.bench_serving's cut/repeat of the ids (sample_random_requests)
            cut = (ids * ((length + len(ids) - 1) // len(ids)))[:length]
            again = tok.encode(tok.decode(cut))
            if again != cut:
                print(f"{out}: prompt {prompt[:40]!r}... at {length} tokens reads back as {len(again)} tokens",
                      file=sys.stderr)
                return 1
    conversations = [{"conversations": [{"from": "human", "value": p}, {"from": "gpt", "value": "ok"}]}
                     for p in prompts]
    out.write_text(json.dumps(conversations, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{out}: {len(prompts)} prompts from {len(words)} single-token words")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
