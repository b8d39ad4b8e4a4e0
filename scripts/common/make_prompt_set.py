#!/usr/bin/env python3
"""Write prompt sets that the served model's tokenizer reads back at exactly the requested length.

    CLIENT_PYTHON make_prompt_set.py --tokenizer DIR --seed S [--text FILE [--chat-template]]
                                     --set LENGTH:COUNT:OUT [--set ...]

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

With --text, the prompts are real text instead: each is a run of whole lines
cut from FILE (a ShareGPT `.json` list or `.jsonl` of conversations, a
`.jsonl` of `{"text"|"prompt": ...}`, plain UTF-8 text, or a directory of
`.md`/`.txt` files read in name order), starting at a line drawn by
(seed, LENGTH, i), wrapping around at the end of the text, and its last line
cut to the token that makes LENGTH exact. The lines are counted once, each
encoded alone; a prompt's count is the sum of its lines' (lines end with a
newline and the next one starts with no space, where the pre-tokenizers of
byte-level BPE tokenizers cut), plus the special tokens. Every prompt of up to
FULL_CHECK_TOKENS tokens, and the first prompt of every length, is encoded
whole and checked; a tokenizer whose count differs from the sum is an error.
With --chat-template each prompt is the user turn of the tokenizer's chat
template (transformers), and every prompt is encoded whole and checked.

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
from typing import Any, Callable, Iterable, Optional, Sequence

WORD = re.compile(r" [A-Za-z]{2,}")
ADJUST_ROUNDS = 8
FULL_CHECK_TOKENS = 32768  # real-text prompts up to this length are all encoded whole and checked
TEXT_SUFFIXES = (".md", ".txt")


class PromptSetError(Exception):
    pass


class Tokenizer:
    """encode (special tokens as the client adds them), batch encode without them, batch decode, vocabulary size,
    and the chat template of one user turn where the tokenizer has one (transformers)."""

    def __init__(self, encode: Callable[[str], list[int]], encode_plain: Callable[[list[str]], list[list[int]]],
                 decode_batch: Callable[[list[list[int]]], list[str]], vocab_size: int,
                 template: Optional[Callable[[str], str]] = None) -> None:
        self.encode, self.encode_plain, self.decode_batch, self.vocab_size = encode, encode_plain, decode_batch, vocab_size
        self.template = template


def from_tokenizers(tok: Any) -> Tokenizer:
    """A `tokenizers.Tokenizer` (what transformers' fast tokenizers run)."""
    return Tokenizer(lambda text: tok.encode(text, add_special_tokens=True).ids,
                     lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)],
                     lambda batch: tok.decode_batch(batch, skip_special_tokens=False), tok.get_vocab_size())


def _chat_template(tok: Any) -> Optional[Callable[[str], str]]:
    """One user turn in the tokenizer's chat template, as text; a BOS the encoder adds anyway is not repeated."""
    if not getattr(tok, "chat_template", None):
        return None
    bos = getattr(tok, "bos_token", None)
    adds_bos = bos is not None and getattr(tok, "bos_token_id", None) in tok.encode("")

    def apply(content: str) -> str:
        text = tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                       add_generation_prompt=True)
        return text[len(bos):] if adds_bos and bos and text.startswith(bos) else text
    return apply


def from_transformers(tok: Any) -> Tokenizer:
    """A transformers tokenizer, encoding as the clients do (`tokenizer.encode(prompt)`)."""
    return Tokenizer(lambda text: list(tok.encode(text)),
                     lambda texts: [list(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]],
                     lambda batch: tok.batch_decode(batch), len(tok), _chat_template(tok))


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


# ---------------------------------------------------------------- real text

def _row_text(row: Any, where: str) -> str:
    """The text of one row of a dataset: a ShareGPT/messages conversation's turns, else its text or prompt."""
    if isinstance(row, str):
        return row
    if isinstance(row, dict):
        for key in ("conversations", "messages", "conversation"):
            turns = row.get(key)
            if isinstance(turns, list):
                return "\n\n".join(str(t.get("value", t.get("content", ""))) for t in turns if isinstance(t, dict))
        for key in ("text", "prompt", "content"):
            if isinstance(row.get(key), str):
                return str(row[key])
    raise PromptSetError(f"{where}: no text (expected a string, conversations/messages, text or prompt)")


def read_text(path: Path) -> list[str]:
    """The texts of PATH: a directory's .md/.txt files in name order, a .json list or .jsonl of rows, else the file."""
    try:
        if path.is_dir():
            files = sorted(f for f in path.rglob("*") if f.suffix in TEXT_SUFFIXES and f.is_file())
            if not files:
                raise PromptSetError(f"{path}: no {' or '.join(TEXT_SUFFIXES)} file in this directory")
            return [f.read_text(encoding="utf-8") for f in files]
        data = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            rows = json.loads(data)
            if not isinstance(rows, list):
                raise PromptSetError(f"{path}: expected a JSON list of conversations or texts")
            return [_row_text(row, f"{path}: [{i}]") for i, row in enumerate(rows)]
        if path.suffix == ".jsonl":
            return [_row_text(json.loads(line), f"{path}:{n}") for n, line in enumerate(data.splitlines(), 1)
                    if line.strip()]
        return [data]
    except UnicodeDecodeError:
        raise PromptSetError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise PromptSetError(f"{path}: not valid JSON ({exc})") from None


def text_pieces(texts: Sequence[str]) -> list[str]:
    """The texts as lines, each ending with a newline and followed by one that starts with no space: a line that
    starts with a space, a tab or is empty joins the one before (no piece but the first starts with white space)."""
    pieces: list[str] = []
    for text in texts:
        for line in text.replace("\r\n", "\n").replace("\r", "\n").splitlines(keepends=True):
            line = line if line.endswith("\n") else line + "\n"
            if pieces and (line[0].isspace() or not line.strip()):
                pieces[-1] += line
            else:
                pieces.append(line)
    pieces = [piece for piece in pieces if piece.strip()]
    if not pieces:
        raise PromptSetError("the text is empty")
    return pieces


class TextSource:
    """The pieces of a text and their token counts (each encoded alone), counted as far as the prompts need."""

    BATCH = 4096

    def __init__(self, tok: Tokenizer, pieces: list[str]) -> None:
        self.tok, self.pieces = tok, pieces
        self.counts: list[int] = []
        self.specials = len(tok.encode(""))
        self.additive = True  # a prompt's count is the sum of its pieces' (proven per length by a whole check)

    def count_until(self, tokens: int) -> None:
        """Count pieces until the counted ones hold `tokens` tokens or the text ends."""
        total = sum(self.counts)
        while total < tokens and len(self.counts) < len(self.pieces):
            batch = self.pieces[len(self.counts):len(self.counts) + self.BATCH]
            found = [len(ids) for ids in self.tok.encode_plain(batch)]
            self.counts.extend(found)
            total += sum(found)

    def cut(self, piece: str, tokens: int) -> Optional[str]:
        """The prefix of `piece` that encodes alone to exactly `tokens` tokens (None: no such prefix)."""
        def count(end: int) -> int:
            return len(self.tok.encode_plain([piece[:end]])[0])
        low, high = 1, len(piece)
        while low < high:  # the shortest prefix with at least `tokens` tokens
            mid = (low + high) // 2
            if count(mid) < tokens:
                low = mid + 1
            else:
                high = mid
        for end in range(low, min(len(piece), low + 8) + 1):
            got = count(end)
            if got == tokens:
                return piece[:end]
            if got > tokens + 1:
                break
        return None

    def assemble(self, start: int, tokens: int) -> Optional[str]:
        """Pieces from `start` on (wrapping around the counted ones) holding exactly `tokens` tokens alone, the last
        one cut; None when the cut finds no exact prefix."""
        parts: list[str] = []
        n, i = len(self.counts), start
        left = tokens
        while left > 0:
            piece, size = self.pieces[i % n], self.counts[i % n]
            if size <= left:
                parts.append(piece)
                left -= size
            else:
                last = self.cut(piece, left)
                if last is None:
                    return None
                parts.append(last)
                left = 0
            i += 1
        return "".join(parts)


def text_prompt(src: TextSource, seed: str, length: int, index: int, check: bool) -> str:
    """Prompt `index` of `length` tokens cut from the text; with `check` (or a tokenizer not proven additive, or a
    chat template) encoded whole, its length adjusted until exact."""
    rng = random.Random(f"text:{seed}:{length}:{index}")
    tok = src.tok
    overhead = src.specials
    if tok.template is not None:
        overhead = len(tok.encode(tok.template("x"))) - len(tok.encode_plain(["x"])[0])
    for attempt in range(ADJUST_ROUNDS):
        start = rng.randrange(len(src.counts))
        target = length - overhead
        for _ in range(ADJUST_ROUNDS):
            content = src.assemble(start, target) if target >= 1 else None
            if content is None:
                break
            text = tok.template(content) if tok.template is not None else content
            if not (check or tok.template is not None or not src.additive):
                return text
            got = len(tok.encode(text))
            if got == length:
                return text
            if tok.template is None:
                src.additive = False  # a join counts otherwise: every prompt is checked whole from now on
            target += length - got
    raise PromptSetError(f"no real-text prompt of exactly {length} tokens found (prompt {index}); "
                         "try another text (PROMPT_TEXT) or PROMPT_TEXT=none")


def text_prompts(src: TextSource, seed: str, length: int, count: int) -> list[str]:
    """The first `count` real-text prompts of a length: the first, and every prompt up to FULL_CHECK_TOKENS, is
    encoded whole and checked."""
    src.count_until(3 * length)
    if sum(src.counts) < length:
        print(f"make_prompt_set.py: the text holds {sum(src.counts)} tokens, fewer than {length}: "
              "its prompts repeat it", file=sys.stderr)
    return [text_prompt(src, seed, length, i, check=i == 0 or length <= FULL_CHECK_TOKENS) for i in range(count)]


def write_text_set(src: TextSource, seed: str, length: int, count: int, out: Path) -> None:
    _write_rows(out, text_prompts(src, seed, length, count), count)


def write_set(tok: Tokenizer, pool: Sequence[str], seed: str, length: int, count: int, out: Path) -> None:
    _write_rows(out, (prompt(tok, pool, seed, length, i) for i in range(count)), count)


def _write_rows(out: Path, prompts: Iterable[str], count: int) -> None:
    """Write the prompts in the client's form (by OUT's suffix), atomically."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    sharegpt = out.suffix == ".json"
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write("[\n" if sharegpt else "")
            for i, text in enumerate(prompts):
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
    parser.add_argument("--text", type=Path, default=None, metavar="FILE",
                        help="cut the prompts from this real text (a file or a directory of .md/.txt files)")
    parser.add_argument("--chat-template", action="store_true",
                        help="with --text: each prompt is the user turn of the tokenizer's chat template")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="LENGTH:COUNT:OUT")
    args = parser.parse_args(argv)
    try:
        sets = [_parse_set(s) for s in args.sets]
    except ValueError as exc:
        print(f"make_prompt_set.py: --set {exc}: expected LENGTH:COUNT:OUT (LENGTH >= 2, COUNT >= 1, "
              "OUT ending in .json or .jsonl)", file=sys.stderr)
        return 2
    if args.chat_template and args.text is None:
        print("make_prompt_set.py: --chat-template needs --text FILE", file=sys.stderr)
        return 2
    todo = [(length, count, out) for length, count, out in sets if not out.is_file()]
    if not todo:
        return 0
    try:
        tok = load(args.tokenizer)
        if args.text is not None:
            if args.chat_template and tok.template is None:
                raise PromptSetError(f"the tokenizer of {args.tokenizer} has no chat template (or transformers is "
                                     "missing): drop PROMPT_CHAT_TEMPLATE")
            if not args.chat_template:
                tok.template = None
            src = TextSource(tok, text_pieces(read_text(args.text)))
            made: dict[int, list[str]] = {}  # the prompts of a length, made once for all its sets
            for length, count, out in sorted(todo, key=lambda s: (s[0], -s[1])):
                if length not in made:
                    made[length] = text_prompts(src, args.seed, length, count)
                _write_rows(out, made[length][:count], count)
                print(f"{out}: {count} prompts of {length} tokens of text from {args.text} ({args.tokenizer})",
                      file=sys.stderr)
            return 0
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
