#!/usr/bin/env python3
"""Make a deterministic tiny random-weight Llama model with its own tokenizer.

The model is what the CPU ("embedded default") platform serves: a real Llama
architecture that vLLM's CPU backend loads, small enough to start in about a
minute on two cores. Its weights are random (fixed seed) and its tokenizer is a
byte-level BPE over printable ASCII (every token streams as text) trained with
`tokenizers` on synthetic text made here, so no download is ever needed.

Usage:
    make_tiny_model.py [OUT_DIR] [--force]

OUT_DIR defaults to <repo>/models/tiny-llama. When OUT_DIR already holds a
complete model made by this script (its stamp file names the current recipe
version and every file's sha256 still matches), nothing is rebuilt. The build
happens in a temporary sibling directory that is renamed into place at the end,
so an interrupted run never leaves a half-written OUT_DIR behind.

Run it with the engine venv's python (it needs torch, transformers and
tokenizers). Prints the output path on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Bump when anything below changes the produced files.
# 2: the BPE's alphabet is printable ASCII only (every token decodes to text on its own)
RECIPE_VERSION = 2
STAMP_NAME = ".sskj_tiny_model.json"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT_DIR = REPO_ROOT / "models" / "tiny-llama"

BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
UNK_TOKEN = "<unk>"
PAD_TOKEN = "<pad>"
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN, PAD_TOKEN)


@dataclass(frozen=True)
class Recipe:
    """Every parameter that determines the produced model."""

    seed: int = 20240705
    vocab_size: int = 2048
    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 64
    max_position_embeddings: int = 16384
    rope_theta: float = 10000.0
    corpus_lines: int = 20000
    corpus_lexicon: int = 3000


class TinyModelError(Exception):
    """A failure that is reported as one line, without a traceback."""


# --------------------------------------------------------------------------
# Synthetic corpus
# --------------------------------------------------------------------------

_ONSETS = (
    "",
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "w",
    "z",
    "br",
    "ch",
    "dr",
    "gl",
    "kr",
    "pl",
    "sh",
    "st",
    "th",
    "tr",
)
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "y")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "rk", "st", "x")
_PUNCT = (".", ".", ".", "?", "!", ",")


def _make_word(rng: random.Random) -> str:
    syllables = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
    return "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        for _ in range(syllables)
    )


def synthetic_corpus(recipe: Recipe) -> Iterator[str]:
    """Yield deterministic lines of made-up words, digits and punctuation.

    Word frequencies follow a Zipf-like law so that BPE learns both whole
    frequent words and sub-word pieces; a few lines carry digits and upper
    case so those bytes get merges too.
    """
    rng = random.Random(recipe.seed)
    lexicon = sorted({_make_word(rng) for _ in range(recipe.corpus_lexicon)})
    rng.shuffle(lexicon)
    weights = [1.0 / (rank + 1) for rank in range(len(lexicon))]
    for line_no in range(recipe.corpus_lines):
        length = rng.randint(4, 24)
        words = rng.choices(lexicon, weights=weights, k=length)
        if line_no % 7 == 0:
            words[0] = words[0].capitalize()
        if line_no % 11 == 0:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 99999)))
        yield " ".join(words) + rng.choice(_PUNCT)


# --------------------------------------------------------------------------
# Stamp handling (standard library only, so that reuse is instant)
# --------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_stamp(out_dir: Path) -> dict[str, Any] | None:
    stamp_path = out_dir / STAMP_NAME
    try:
        data = json.loads(stamp_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(out_dir: Path, recipe: Recipe) -> bool:
    """True when out_dir holds this recipe's model with every file intact."""
    stamp = _read_stamp(out_dir)
    if stamp is None:
        return False
    if stamp.get("recipe_version") != RECIPE_VERSION:
        return False
    if stamp.get("recipe") != asdict(recipe):
        return False
    files = stamp.get("files")
    if not isinstance(files, dict) or not files:
        return False
    for name, expected in files.items():
        path = out_dir / str(name)
        if not path.is_file() or _sha256(path) != expected:
            return False
    return True


def _write_stamp(out_dir: Path, recipe: Recipe) -> None:
    files = {
        path.name: _sha256(path)
        for path in sorted(out_dir.iterdir())
        if path.is_file() and path.name != STAMP_NAME
    }
    stamp = {
        "recipe_version": RECIPE_VERSION,
        "recipe": asdict(recipe),
        "files": files,
    }
    (out_dir / STAMP_NAME).write_text(
        json.dumps(stamp, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


# --------------------------------------------------------------------------
# Build (heavy imports happen here only)
# --------------------------------------------------------------------------


def _byte_chars() -> dict[int, str]:
    """The byte-level pre-tokenizer's character for each byte (GPT-2's byte-to-unicode table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = dict(zip(printable, map(chr, printable)))
    for extra, byte in enumerate(b for b in range(256) if b not in chars):
        chars[byte] = chr(256 + extra)
    return chars


def ascii_alphabet() -> list[str]:
    """The BPE's alphabet: the byte-level characters of printable ASCII, tab and newline.

    With all 256 bytes in the vocabulary a random model emits lone bytes of
    multi-byte UTF-8 characters, which a streaming server holds back until the
    character completes: the client then sees no text for many tokens (TTFT
    recorded as 0, whole outputs in one chunk), and TPOT/ITL time chunks, not
    tokens. With ASCII only, every token decodes to text on its own; other
    characters of an input are left out by the tokenizer (no unknown token).
    """
    chars = _byte_chars()
    return [chars[b] for b in (*range(0x20, 0x7F), 0x09, 0x0A)]


def train_tokenizer(recipe: Recipe) -> Any:
    """The byte-level BPE of the recipe over an ASCII alphabet (a `tokenizers.Tokenizer`; needs only
    `tokenizers`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE(unk_token=None))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=recipe.vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=ascii_alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(synthetic_corpus(recipe), trainer=trainer)
    return backend


def _build_tokenizer(recipe: Recipe, out_dir: Path) -> dict[str, int]:
    """Train the byte-level BPE, save it, and return the special token ids."""
    from transformers import PreTrainedTokenizerFast

    backend = train_tokenizer(recipe)

    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=UNK_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=recipe.max_position_embeddings,
    )
    tokenizer.save_pretrained(str(out_dir))
    _normalise_tokenizer_config(out_dir)

    ids = {tok: backend.token_to_id(tok) for tok in SPECIAL_TOKENS}
    missing = [tok for tok, idx in ids.items() if idx is None]
    if missing:
        raise TinyModelError(f"tokenizer training lost special tokens {missing}")
    if backend.get_vocab_size() > recipe.vocab_size:
        raise TinyModelError(
            f"tokenizer vocab {backend.get_vocab_size()} exceeds {recipe.vocab_size}"
        )
    return {tok: int(idx) for tok, idx in ids.items() if idx is not None}


def _normalise_tokenizer_config(out_dir: Path) -> None:
    """Name the tokenizer class every transformers release understands.

    Newer transformers write their own backend class name, which older
    releases (the bench client's) cannot resolve; PreTrainedTokenizerFast is
    understood by both.
    """
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(
        json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def _build_model(recipe: Recipe, out_dir: Path, ids: dict[str, int]) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=recipe.vocab_size,
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.num_hidden_layers,
        num_attention_heads=recipe.num_attention_heads,
        num_key_value_heads=recipe.num_key_value_heads,
        head_dim=recipe.head_dim,
        max_position_embeddings=recipe.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": recipe.rope_theta},
        hidden_act="silu",
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        bos_token_id=ids[BOS_TOKEN],
        eos_token_id=ids[EOS_TOKEN],
        pad_token_id=ids[PAD_TOKEN],
        dtype="float32",
    )
    torch.manual_seed(recipe.seed)
    model = LlamaForCausalLM(config)  # type: ignore[no-untyped-call]
    # Redraw every matrix from N(0, 0.05) with our own generator, so the
    # weights do not depend on how transformers initialises them (norm
    # weights keep their constant init of ones).
    with torch.no_grad():
        generator = torch.Generator().manual_seed(recipe.seed)
        for param in model.parameters():
            if param.dim() >= 2:
                param.normal_(0.0, 0.05, generator=generator)
    model.save_pretrained(str(out_dir), safe_serialization=True)


def _make_readable(directory: Path) -> None:
    """Give the finished model ordinary permissions (mkdtemp makes it 0700)."""
    directory.chmod(0o755)
    for path in directory.iterdir():
        if path.is_file():
            path.chmod(0o644)


def build(out_dir: Path, recipe: Recipe) -> None:
    """Build the model into a temporary sibling, then move it to out_dir."""
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=parent))
    try:
        ids = _build_tokenizer(recipe, work)
        _build_model(recipe, work, ids)
        _write_stamp(work, recipe)
        _make_readable(work)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        work.rename(out_dir)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="make_tiny_model.py",
        description=(
            "Make (or reuse) a deterministic tiny random-weight Llama model "
            "with a byte-level BPE tokenizer, loadable offline by vLLM and "
            "transformers."
        ),
    )
    parser.add_argument(
        "out_dir",
        nargs="?",
        type=Path,
        default=DEFAULT_OUT_DIR,
        metavar="OUT_DIR",
        help=f"output directory (default: {DEFAULT_OUT_DIR})",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when OUT_DIR already holds a complete model",
    )
    return parser.parse_args(argv)


def run(out_dir: Path, force: bool, recipe: Recipe) -> Path:
    out_dir = out_dir.expanduser().resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise TinyModelError(f"{out_dir} exists and is not a directory")
    if not force and out_dir.is_dir() and is_complete(out_dir, recipe):
        return out_dir
    if out_dir.is_dir() and any(out_dir.iterdir()) and _read_stamp(out_dir) is None:
        raise TinyModelError(
            f"{out_dir} is not empty and holds no tiny model stamp "
            f"({STAMP_NAME}); remove it or choose another OUT_DIR"
        )
    build(out_dir, recipe)
    if not is_complete(out_dir, recipe):
        raise TinyModelError(f"{out_dir} failed its own completeness check after build")
    return out_dir


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        out_dir = run(args.out_dir, args.force, Recipe())
    except TinyModelError as exc:
        print(f"make_tiny_model: error: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(
            f"make_tiny_model: error: {exc.name or exc} is not importable; "
            "run this with the engine venv's python (envs/engine-cpu/bin/python)",
            file=sys.stderr,
        )
        return 1
    except OSError as exc:
        print(f"make_tiny_model: error: {exc}", file=sys.stderr)
        return 1
    print(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
