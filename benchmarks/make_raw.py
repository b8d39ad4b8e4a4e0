"""Deterministic synthetic raw outputs of ``sglang.bench_serving --output-file F --output-details``.

The grid is the team's legacy sweep of 2026-07-07 (seed 000): 15 SGLang and
30 vLLM files named ``{backend}_0707_{c}_{in}_{out}.jsonl``, concurrency
32-1024, input 512-32000, output 256-2000. One JSON object per file, with the
same keys, key order and separators as the real client (``json.dumps``:
``", "`` and ``": "``, bare ``Infinity`` as ``request_rate``), per-request
``input_lens, output_lens, ttfts, itls, generated_texts, errors``:

* ITL gaps are lognormal around a TPOT that grows with concurrency and input
  length, with occasional long stalls (prefill of other requests);
* streamed chunks sometimes carry several tokens, so a request can have fewer
  gaps than ``output_len - 1``;
* a few requests fail (error text, ``output_lens`` 0, sometimes a partial stream);
* the summary statistics are the client's own definitions over the arrays.

``num_prompts`` is one wave of ``concurrency`` requests, at least 64 (two
waves at concurrency 32): about 230 MB at ``--scale 1``. ``--scale``
multiplies the request counts (at least one request per file).

    python benchmarks/make_raw.py OUT_DIR [--scale 1.0] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

DATE = "0707"

# (concurrency, input_len, output_len) of every file of the seed-000 inventory.
SGLANG = [
    (32, 512, 256), (128, 512, 256), (256, 512, 256), (512, 512, 256), (512, 512, 2000), (32, 512, 2000),
    (32, 4000, 512), (128, 4000, 512), (512, 4000, 512), (32, 16000, 512), (128, 16000, 512),
    (512, 1000, 256), (768, 1000, 256), (1024, 1000, 256), (512, 1000, 1000),
]
VLLM = [
    (32, 512, 256), (128, 512, 256), (256, 512, 256), (128, 512, 2000), (256, 512, 2000), (512, 512, 2000),
    (32, 1000, 256), (128, 1000, 256), (256, 1000, 256), (512, 1000, 256), (768, 1000, 256), (1024, 1000, 256),
    (32, 1000, 1000), (128, 1000, 1000), (256, 1000, 1000), (512, 1000, 1000), (1024, 1000, 1000),
    (32, 4000, 512), (128, 4000, 512), (256, 4000, 512), (512, 4000, 512),
    (32, 8000, 1000), (128, 8000, 1000), (256, 8000, 1000), (512, 8000, 1000),
    (32, 16000, 512), (128, 16000, 512), (256, 16000, 512),
    (32, 32000, 512), (128, 32000, 512),
]
GRID: list[tuple[str, int, int, int]] = [("sglang", *s) for s in SGLANG] + [("vllm", *s) for s in VLLM]

# Per engine: base TPOT (s), prefill tokens/s, chance that a token arrives in the previous chunk.
ENGINE = {
    "sglang": {"tpot": 0.0105, "prefill": 42000.0, "merge": 0.04, "retok": 1.012},
    "vllm": {"tpot": 0.0118, "prefill": 36000.0, "merge": 0.12, "retok": 1.018},
}

ERRORS = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/bench_serving.py", line 232, in async_request_openai_completions\n'
    "    async for chunk_bytes in response.content:\n"
    "aiohttp.client_exceptions.ClientPayloadError: Response payload is not completed: "
    "<TransferEncodingError: 400, message='Not enough data for satisfy transfer length header.'>\n",
    "Internal Server Error",
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/aiohttp/client_reqrep.py", line 1059, in start\n'
    "    message, payload = await protocol.read()  # type: ignore[union-attr]\n"
    "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected\n",
)

_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will what up out more can said about "
    "model token cache batch kernel decode prefill expert layer tensor attention 模型 推理 并发 吞吐 延迟"
).split()


def file_name(backend: str, c: int, i: int, o: int) -> str:
    return f"{backend}_{DATE}_{c}_{i}_{o}.jsonl"


def num_prompts(c: int, o: int, scale: float) -> int:
    base = max(64, c)
    return max(1, int(round(base * scale)))


def _text_pool(rng: np.random.Generator, chars: int) -> str:
    words = rng.choice(np.array(_WORDS, dtype=object), size=chars // 4 + 16)
    return (" " + " ".join(words.tolist()))[:chars]


def _stats(prefix: str, values: np.ndarray, keys: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    ms = values * 1000 if values.size else np.zeros(1)
    for key in keys:
        if key == "mean":
            out[f"mean_{prefix}_ms"] = float(np.mean(ms))
        elif key == "median":
            out[f"median_{prefix}_ms"] = float(np.median(ms))
        elif key == "std":
            out[f"std_{prefix}_ms"] = float(np.std(ms))
        else:
            out[f"{key}_{prefix}_ms"] = float(np.percentile(ms, float(key[1:])))
    return out


def make_run(backend: str, c: int, input_len: int, output_len: int, scale: float, seed: int) -> dict[str, Any]:
    """One run object, deterministic in (name, scale, seed)."""
    name = file_name(backend, c, input_len, output_len)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    eng = ENGINE[backend]
    n = num_prompts(c, output_len, scale)

    # decode speed falls with batch size and context length
    tpot = eng["tpot"] * (1.0 + c / 384.0) ** 0.75 * (1.0 + (input_len + output_len) / 40000.0)
    prefill_s = input_len / eng["prefill"]
    slot = np.arange(n) % c  # position in the wave of up to c requests arriving at once
    ttft = prefill_s * (1.0 + slot * min(1.0, 2048.0 / input_len) / 8.0) * rng.lognormal(0.0, 0.18, n) + 0.012

    # failures: a few per file, more at high concurrency; some after a partial stream
    n_fail = min(n - 1, int(rng.poisson(0.6 + c / 400.0))) if n > 1 else 0
    failed = np.zeros(n, dtype=bool)
    if n_fail:
        failed[rng.choice(n, size=n_fail, replace=False)] = True
    partial = failed & (rng.random(n) < 0.5)

    # tokens streamed per request (failed ones stop early or never start)
    tokens = np.full(n, output_len, dtype=np.int64)
    tokens[failed] = 0
    tokens[partial] = rng.integers(2, max(3, output_len // 3), size=int(partial.sum()))
    gaps_per = np.maximum(tokens - 1, 0)
    total = int(gaps_per.sum())
    token_gaps = rng.lognormal(np.log(tpot), 0.22, total)
    stall = rng.random(total) < 0.015 * min(1.0, c / 64.0)
    token_gaps[stall] += rng.gamma(2.0, prefill_s * 0.6 + 0.02, int(stall.sum()))
    # chunking: a token that arrives with the previous one adds its time to that chunk
    chunky = rng.random(n) < 0.7  # ~30% of requests get exactly one chunk per token
    merge = rng.random(total) < eng["merge"]
    merge &= np.repeat(chunky, gaps_per)
    starts = np.concatenate(([0], np.cumsum(gaps_per)[:-1]))
    first = np.zeros(total, dtype=bool)
    first[starts[gaps_per > 0]] = True
    boundary = ~merge | first  # a chunk starts at each non-merged gap and at each request's first gap
    chunk_start = np.flatnonzero(boundary)
    chunks = np.add.reduceat(token_gaps, chunk_start) if total else np.zeros(0)
    owner = np.repeat(np.arange(n), gaps_per)[chunk_start] if total else np.zeros(0, dtype=np.int64)
    counts = np.bincount(owner, minlength=n) if total else np.zeros(n, dtype=np.int64)

    flat = chunks.tolist()
    itls: list[list[float]] = []
    pos = 0
    for k in counts.tolist():
        itls.append(flat[pos:pos + k])
        pos += k
    sums = np.zeros(n)
    nz = counts > 0
    if total:
        sums[nz] = np.add.reduceat(chunks, np.concatenate(([0], np.cumsum(counts)[:-1]))[nz])
    ttft = np.where(failed & ~partial, 0.0, ttft)
    latency = ttft + sums + rng.uniform(0.0005, 0.004, n)  # the client's E2E ends after the last chunk

    pool = _text_pool(rng, max(4096, output_len * 4 * 4))
    offsets = rng.integers(0, max(1, len(pool) - output_len * 4), size=n)
    texts = ["" if failed[i] and not partial[i] else pool[offsets[i]:offsets[i] + int(tokens[i]) * 4] for i in range(n)]
    if c >= 768:
        texts[0] = texts[0][:40] + ' "quoted" \\ \t 🚀 ' + texts[0][40:]  # escapes and non-BMP text occur
    errors = ["" if not failed[i] else ERRORS[int(rng.integers(len(ERRORS)))] for i in range(n)]
    input_lens = np.full(n, input_len, dtype=np.int64)
    output_lens = np.where(failed, 0, tokens)

    ok = ~failed
    pooled = chunks[np.repeat(ok, counts)] if total else np.zeros(0)
    ok_multi = ok & (output_lens > 1)
    tpots = (latency[ok_multi] - ttft[ok_multi]) / (output_lens[ok_multi] - 1)
    waves = int(np.ceil(n / c))
    duration = float(np.max(latency) * waves * 0.97 + 0.05)
    completed = int(ok.sum())
    total_in = int(input_lens[ok].sum())
    total_out = int(output_lens[ok].sum())
    run: dict[str, Any] = {
        "backend": backend, "dataset_name": "random", "request_rate": float("inf"), "max_concurrency": c,
        "sharegpt_output_len": None, "random_input_len": input_len, "random_output_len": output_len,
        "random_range_ratio": 1.0, "duration": duration, "completed": completed,
        "total_input_tokens": total_in, "total_input_text_tokens": total_in, "total_input_vision_tokens": 0,
        "total_output_tokens": total_out,
        "total_output_tokens_retokenized": int(round(total_out * eng["retok"])),
        "request_throughput": completed / duration, "input_throughput": total_in / duration,
        "output_throughput": total_out / duration,
    }
    run.update(_stats("e2e_latency", latency[ok], ("mean", "median", "std", "p99")))
    run.update(_stats("ttft", ttft[ok], ("mean", "median", "std", "p99")))
    run.update(_stats("tpot", tpots, ("mean", "median", "std", "p99")))
    run.update(_stats("itl", pooled, ("mean", "median", "std", "p95", "p99")))
    run["concurrency"] = float(np.sum(latency[ok]) / duration)
    run["accept_length"] = None
    run["input_lens"] = input_lens.tolist()
    run["output_lens"] = output_lens.tolist()
    run["ttfts"] = ttft.tolist()
    run["itls"] = itls
    run["generated_texts"] = texts
    run["errors"] = errors
    return run


def write_all(out: Path, scale: float = 1.0, seed: int = 0) -> list[Path]:
    """Write the 45 files under out; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for backend, c, i, o in GRID:
        path = out / file_name(backend, c, i, o)
        run = make_run(backend, c, i, o, scale, seed)
        # the client appends json.dumps(result) + "\n" (allow_nan: bare Infinity)
        text = json.dumps(run)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text + "\n", encoding="utf-8")
        tmp.replace(path)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="directory to write the 45 raw files into")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies request counts (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be positive")
    paths = write_all(args.out, args.scale, args.seed)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} files, {size / 1e6:.1f} MB, to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
