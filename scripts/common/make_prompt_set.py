#!/usr/bin/env python3
"""Write prompt sets that the served model's tokenizer reads back at exactly the requested length.

    CLIENT_PYTHON make_prompt_set.py --tokenizer DIR --seed S --set LENGTH:COUNT:OUT [--set ...]

A bench client that sends text (every OpenAI-compatible backend) makes the
server tokenize the prompt again. Random token ids decoded to text do not
come back as the same ids (byte tokens that are parts of a character, merges
across ids), so client and server count other prompt tokens. The prompts
here do: each is a sequence of words, every word one whole vocabulary token
` word` (a space and ASCII letters) that the tokenizer encodes alone as that
one token; a byte-level or space-splitting pre-tokenizer then cuts the text
at every space, and the whole prompt, encoded as the client and the server
encode it (special tokens included), has exactly LENGTH tokens. Every prompt
is checked that way before it is written; a tokenizer for which no exact
prompt is found is an error (exit 1), never a silent approximation.

Each OUT is in the form of its client, by its name: `.json` a ShareGPT list
of two-turn conversations (sglang.bench_serving `--dataset-name sharegpt`,
every release since 0.5), `.jsonl` one `{"prompt": ...}` a line (vllm bench
serve `--dataset-name custom`). Prompt i of a length depends
only on (seed, LENGTH, i), so the set of COUNT prompts is the first COUNT of
a longer one. An OUT that exists is kept (the caller names files by
tokenizer, length, count and seed); new files are written atomically.

The tokenizer is loaded as the clients load it (transformers AutoTokenizer),
or from DIR/tokenizer.json with `tokenizers` where transformers is missing.
Standard library besides that, so any client environment runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

WORD = re.compile(r" [A-Za-z]{2,}")
ADJUST_ROUNDS = 8


class PromptSetError(Exception):
    pass


class Tokenizer:
    """encode (special tokens as the client adds them), batch encode without them, batch decode, vocabulary size."""

    def __init__(self, encode: Callable[[str], list[int]], encode_plain: Callable[[list[str]], list[list[int]]],
                 decode_batch: Callable[[list[list[int]]], list[str]], vocab_size: int) -> None:
        self.encode, self.encode_plain, self.decode_batch, self.vocab_size = encode, encode_plain, decode_batch, vocab_size


def from_tokenizers(tok: Any) -> Tokenizer:
    """A `tokenizers.Tokenizer` (what transformers' fast tokenizers run)."""
    return Tokenizer(lambda text: tok.encode(text, add_special_tokens=True).ids,
                     lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)],
                     lambda batch: tok.decode_batch(batch, skip_special_tokens=False), tok.get_vocab_size())


def from_transformers(tok: Any) -> Tokenizer:
    """A transformers tokenizer, encoding as the clients do (`tokenizer.encode(prompt)`)."""
    return Tokenizer(lambda text: list(tok.encode(text)),
                     lambda texts: [list(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]],
                     lambda batch: tok.batch_decode(batch), len(tok))


def load(path: str) -> Tokenizer:
    try:
        from transformers import AutoTokenizer
    except ImportError:
        file = Path(path) / "tokenizer.json"
        try:
            from tokenizers import Tokenizer as RustTokenizer
        except ImportError:
            raise PromptSetError("neither transformers nor tokenizers is installed in this Python") from None
        if not file.is_file():
            raise PromptSetError(f"{file} does not exist (without transformers only tokenizer.json can be read)")
        return from_tokenizers(RustTokenizer.from_file(str(file)))
    try:
        # as sglang.bench_serving loads it (trust_remote_code=True): the tokenizer the client counts with
        return from_transformers(AutoTokenizer.from_pretrained(path, trust_remote_code=True))
    except (OSError, ValueError) as exc:
        raise PromptSetError(f"cannot load the tokenizer of {path}: {exc}") from None


def word_pool(tok: Tokenizer) -> list[str]:
    """The words ` word` that decode from one token and encode alone back to that token, sorted."""
    ids, words = [], []
    for i, text in enumerate(tok.decode_batch([[i] for i in range(tok.vocab_size)])):
        if WORD.fullmatch(text):
            ids.append(i)
            words.append(text)
    pool = sorted({w for i, w, back in zip(ids, words, tok.encode_plain(words)) if back == [i]})
    if len(pool) < 64:
        raise PromptSetError(f"only {len(pool)} single-token words in the vocabulary; "
                             "this tokenizer needs PROMPT_METHOD=client-random-text")
    return pool


def prompt(tok: Tokenizer, pool: Sequence[str], seed: str, length: int, index: int) -> str:
    """Prompt `index` of `length` tokens: words drawn by (seed, length, index), their count adjusted until exact."""
    rng = random.Random(f"{seed}:{length}:{index}")
    words = [rng.choice(pool) for _ in range(length + 8)]
    n = max(1, length - (len(tok.encode(words[0])) - 1))
    for _ in range(ADJUST_ROUNDS):
        text = "".join(words[:n])
        got = len(tok.encode(text))
        if got == length:
            return text
        n += length - got
        if n < 1 or n > len(words):
            break
    raise PromptSetError(f"no prompt of exactly {length} tokens found (prompt {index}); "
                         "use PROMPT_METHOD=client-random-text for this tokenizer")


def write_set(tok: Tokenizer, pool: Sequence[str], seed: str, length: int, count: int, out: Path) -> None:
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    sharegpt = out.suffix == ".json"
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write("[\n" if sharegpt else "")
            for i in range(count):
                text = prompt(tok, pool, seed, length, i)
                row = ({"conversations": [{"from": "human", "value": text}, {"from": "gpt", "value": "ok"}]}
                       if sharegpt else {"prompt": text})
                end = ("," if i + 1 < count else "") if sharegpt else ""
                handle.write(json.dumps(row, ensure_ascii=True, separators=(",", ":")) + end + "\n")
            handle.write("]\n" if sharegpt else "")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _parse_set(text: str) -> tuple[int, int, Path]:
    length, count, out = text.split(":", 2)
    if not (length.isdigit() and count.isdigit() and int(length) >= 2 and int(count) >= 1
            and out.endswith((".json", ".jsonl"))):
        raise ValueError(text)
    return int(length), int(count), Path(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="LENGTH:COUNT:OUT")
    args = parser.parse_args(argv)
    try:
        sets = [_parse_set(s) for s in args.sets]
    except ValueError as exc:
        print(f"make_prompt_set.py: --set {exc}: expected LENGTH:COUNT:OUT (LENGTH >= 2, COUNT >= 1, "
              "OUT ending in .json or .jsonl)", file=sys.stderr)
        return 2
    todo = [(length, count, out) for length, count, out in sets if not out.is_file()]
    if not todo:
        return 0
    try:
        tok = load(args.tokenizer)
        pool = word_pool(tok)
        for length, count, out in todo:
            write_set(tok, pool, args.seed, length, count, out)
            print(f"{out}: {count} prompts of {length} tokens ({args.tokenizer})", file=sys.stderr)
    except (PromptSetError, OSError) as exc:
        print(f"make_prompt_set.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
