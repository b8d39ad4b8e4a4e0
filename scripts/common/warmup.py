#!/usr/bin/env python3
"""Warm a server up before a measured scenario.

Sends N completions (POST /v1/completions, not streamed) whose prompt is a
list of random token ids of the scenario's input length, one after another.
Uses only the standard library so any Python can run it (the client's, the
engine's, the system's).

Exit status: 0 when every request succeeded, 1 when one failed (the server's
error text is printed to stderr), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import urllib.error
import urllib.request


def _request(url: str, payload: dict | None, timeout: float, api_key: str | None) -> dict:
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, method="GET" if payload is None else "POST")
    req.add_header("Content-Type", "application/json")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode() or "{}")


def _served_model(base_url: str, timeout: float, api_key: str | None) -> str:
    models = _request(f"{base_url}/v1/models", None, timeout, api_key)
    data = models.get("data") or []
    if not data:
        raise RuntimeError(f"{base_url}/v1/models lists no model")
    return data[0]["id"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:30000")
    parser.add_argument("--model", help="served model name (default: first of /v1/models)")
    parser.add_argument("--input-len", type=int, required=True, help="prompt length in tokens")
    parser.add_argument("--num-requests", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument(
        "--token-range",
        default="100:1000",
        help="LOW:HIGH range of random prompt token ids (default 100:1000)",
    )
    parser.add_argument("--text", action="store_true", help="send a text prompt instead of token ids")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    if args.input_len < 1 or args.num_requests < 0 or args.max_tokens < 1:
        parser.error("--input-len and --max-tokens must be >= 1, --num-requests >= 0")
    try:
        low, high = (int(x) for x in args.token_range.split(":"))
    except ValueError:
        parser.error("--token-range must be LOW:HIGH")
    if not 0 <= low < high:
        parser.error("--token-range must satisfy 0 <= LOW < HIGH")

    base_url = args.base_url.rstrip("/")
    rng = random.Random(args.seed)
    try:
        model = args.model or _served_model(base_url, args.timeout, args.api_key)
    except (urllib.error.URLError, OSError, RuntimeError, ValueError) as exc:
        print(f"warmup: cannot list models at {base_url}: {exc}", file=sys.stderr)
        return 1

    for i in range(args.num_requests):
        if args.text:
            prompt: object = " ".join("hello" for _ in range(args.input_len))
        else:
            prompt = [rng.randrange(low, high) for _ in range(args.input_len)]
        payload = {
            "model": model,
            "prompt": prompt,
            "max_tokens": args.max_tokens,
            "temperature": 0.0,
            "stream": False,
            "ignore_eos": True,
        }
        start = time.perf_counter()
        try:
            _request(f"{base_url}/v1/completions", payload, args.timeout, args.api_key)
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace").strip()
            print(f"warmup: request {i + 1}/{args.num_requests} failed: HTTP {exc.code}: {body}", file=sys.stderr)
            return 1
        except (urllib.error.URLError, OSError, ValueError) as exc:
            print(f"warmup: request {i + 1}/{args.num_requests} failed: {exc}", file=sys.stderr)
            return 1
        elapsed = time.perf_counter() - start
        print(f"warmup: request {i + 1}/{args.num_requests} ok in {elapsed:.2f}s (input {args.input_len} tokens)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
