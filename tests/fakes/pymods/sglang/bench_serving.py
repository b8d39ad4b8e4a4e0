"""Test double of `python -m sglang.bench_serving` (0.5.4 command line).

Accepts the flags the run loop passes, streams /v1/completions from the
(fake) server with aiohttp for every backend, measures TTFT and ITL, and
appends ONE JSON line to --output-file in the `--output-details` format of
sglang.bench_serving 0.5.4 (bare Infinity for request_rate, like the real
client). When FAKE_CLIENT_LOG is set, one line per invocation is appended to
it ("c in out prompts dataset_name dataset_path tokenize_prompt") so tests can count runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
import time

import aiohttp


def percentile(values: list[float], q: float) -> float:
    """numpy.percentile with the default linear method."""
    if not values:
        return 0.0
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def std(values: list[float]) -> float:
    if not values:
        return 0.0
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="sglang.bench_serving (test double)")
    p.add_argument("--backend", default="sglang")
    p.add_argument("--base-url", default=None)
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--dataset-name", default="sharegpt")
    p.add_argument("--dataset-path", default="")
    p.add_argument("--tokenize-prompt", action="store_true")
    p.add_argument("--sharegpt-output-len", type=int, default=None)
    p.add_argument("--model", default=None)
    p.add_argument("--tokenizer", default=None)
    p.add_argument("--num-prompts", type=int, default=1000)
    p.add_argument("--random-input-len", type=int, default=1024)
    p.add_argument("--random-output-len", type=int, default=1024)
    p.add_argument("--random-range-ratio", type=float, default=0.0)
    p.add_argument("--request-rate", type=float, default=float("inf"))
    p.add_argument("--max-concurrency", type=int, default=None)
    p.add_argument("--output-file", default=None)
    p.add_argument("--output-details", action="store_true")
    p.add_argument("--disable-tqdm", action="store_true")
    p.add_argument("--disable-stream", action="store_true")
    p.add_argument("--disable-ignore-eos", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup-requests", type=int, default=1)
    p.add_argument("--flush-cache", action="store_true")
    p.add_argument("--extra-request-body", default=None)
    return p.parse_args(argv)


async def one_request(session: aiohttp.ClientSession, url: str, model: str, prompt: list[int], out_len: int) -> dict:
    payload = {
        "model": model,
        "prompt": prompt,
        "temperature": 0.0,
        "best_of": 1,
        "max_tokens": out_len,
        "stream": True,
        "ignore_eos": True,
    }
    result = {"ttft": 0.0, "itl": [], "text": "", "output_len": out_len, "error": "", "success": False}
    st = time.perf_counter()
    last = st
    try:
        async with session.post(url, json=payload) as resp:
            if resp.status != 200:
                result["error"] = resp.reason or f"HTTP {resp.status}"
                return result
            async for raw in resp.content:
                line = raw.strip()
                if not line:
                    continue
                chunk = line.decode().removeprefix("data: ")
                if chunk == "[DONE]":
                    continue
                data = json.loads(chunk)
                text = data["choices"][0]["text"]
                if text:
                    now = time.perf_counter()
                    if result["ttft"] == 0.0:
                        result["ttft"] = now - st
                    else:
                        result["itl"].append(now - last)
                    last = now
                    result["text"] += text
                usage = data.get("usage") or {}
                result["output_len"] = usage.get("completion_tokens", result["output_len"])
        result["success"] = True
    except Exception as exc:  # the real client records the traceback text
        result["error"] = f"{type(exc).__name__}: {exc}"
    return result


async def run(args: argparse.Namespace) -> int:
    base = args.base_url or f"http://{args.host}:{args.port}"
    timeout = aiohttp.ClientTimeout(total=6 * 3600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        model = args.model
        if model is None:
            async with session.get(f"{base}/v1/models") as resp:
                model = (await resp.json())["data"][0]["id"]
        url = f"{base}/v1/completions"
        rng = random.Random(args.seed)
        in_len, out_len = args.random_input_len, args.random_output_len
        prompts = [[rng.randrange(100, 1000) for _ in range(in_len)] for _ in range(args.num_prompts)]

        for _ in range(args.warmup_requests):
            warm = await one_request(session, url, model, prompts[0], min(out_len, 16))
            if not warm["success"]:
                print(f"Warmup failed: {warm['error']}", file=sys.stderr)
                return 1
        if args.flush_cache:
            await session.post(f"{base}/flush_cache")

        limit = asyncio.Semaphore(args.max_concurrency or args.num_prompts)

        async def limited(prompt: list[int]) -> dict:
            async with limit:
                return await one_request(session, url, model, prompt, out_len)

        start = time.perf_counter()
        outputs = await asyncio.gather(*(limited(p) for p in prompts))
        duration = time.perf_counter() - start

    ok = [o for o in outputs if o["success"]]
    ttfts = [o["ttft"] for o in ok]
    e2e = [o["ttft"] + sum(o["itl"]) for o in ok]
    tpots = [(o["ttft"] + sum(o["itl"]) - o["ttft"]) / (o["output_len"] - 1) for o in ok if o["output_len"] > 1]
    itls = [x for o in ok for x in o["itl"]]
    total_in = in_len * len(ok)
    total_out = sum(o["output_len"] for o in ok)
    ms = 1000.0
    result = {
        "backend": args.backend,
        "dataset_name": args.dataset_name,
        "request_rate": args.request_rate,
        "max_concurrency": args.max_concurrency,
        "sharegpt_output_len": None,
        "random_input_len": in_len,
        "random_output_len": out_len,
        "random_range_ratio": args.random_range_ratio,
        "duration": duration,
        "completed": len(ok),
        "total_input_tokens": total_in,
        "total_input_text_tokens": total_in,
        "total_input_vision_tokens": 0,
        "total_output_tokens": total_out,
        "total_output_tokens_retokenized": total_out,
        "request_throughput": len(ok) / duration,
        "input_throughput": total_in / duration,
        "output_throughput": total_out / duration,
        "mean_e2e_latency_ms": mean(e2e) * ms,
        "median_e2e_latency_ms": percentile(e2e, 50) * ms,
        "std_e2e_latency_ms": std(e2e) * ms,
        "p99_e2e_latency_ms": percentile(e2e, 99) * ms,
        "mean_ttft_ms": mean(ttfts) * ms,
        "median_ttft_ms": percentile(ttfts, 50) * ms,
        "std_ttft_ms": std(ttfts) * ms,
        "p99_ttft_ms": percentile(ttfts, 99) * ms,
        "mean_tpot_ms": mean(tpots) * ms,
        "median_tpot_ms": percentile(tpots, 50) * ms,
        "std_tpot_ms": std(tpots) * ms,
        "p99_tpot_ms": percentile(tpots, 99) * ms,
        "mean_itl_ms": mean(itls) * ms,
        "median_itl_ms": percentile(itls, 50) * ms,
        "std_itl_ms": std(itls) * ms,
        "p95_itl_ms": percentile(itls, 95) * ms,
        "p99_itl_ms": percentile(itls, 99) * ms,
        "concurrency": sum(e2e) / duration,
        "accept_length": None,
    }
    details = {
        "input_lens": [in_len for _ in outputs],
        "output_lens": [o["output_len"] if o["success"] else 0 for o in outputs],
        "ttfts": [o["ttft"] for o in outputs],
        "itls": [o["itl"] for o in outputs],
        "generated_texts": [o["text"] for o in outputs],
        "errors": [o["error"] for o in outputs],
    }
    print(f"Successful requests: {len(ok)} / {len(outputs)}; duration {duration:.3f}s")
    if args.output_file:
        with open(args.output_file, "a") as fh:
            fh.write(json.dumps(result | details if args.output_details else result) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    count_log = os.environ.get("FAKE_CLIENT_LOG")
    if count_log:
        with open(count_log, "a") as fh:
            fh.write(f"{args.max_concurrency} {args.random_input_len} {args.random_output_len} {args.num_prompts} "
                     f"{args.dataset_name} {args.dataset_path or '-'} {int(args.tokenize_prompt)}\n")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
