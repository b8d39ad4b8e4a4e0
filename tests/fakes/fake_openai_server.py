#!/usr/bin/env python3
"""A small fake OpenAI-compatible LLM server for the shell tests.

Endpoints: GET /health, GET /v1/models, POST /v1/completions (SSE streaming
or plain JSON), POST /reset_prefix_cache, POST /flush_cache, GET /metrics
(Prometheus text; vllm:spec_decode_* counters with --spec-decode, where
every 2 generated tokens count as one draft of 3 tokens, 2 accepted).

Failure modes (for fault tests):
  --startup-delay S        /health answers 503 for S seconds
  --hang-health            /health never answers
  --exit-at-start CODE     print a message and exit before serving
  --crash-after N          exit(1) when completion request N+1 arrives
  --crash-at-inflight K    exit(1) as soon as K completions are in flight
  --oom                    print "CUDA out of memory" before such an exit
  --error-status CODE      answer every completion with this HTTP status
  --max-model-len L        400 Bad Request for longer prompts
  --tokens-per-chunk N     stream N tokens per chunk (a buffered stream; default 1)
  --reuse-port             bind with SO_REUSEPORT, as vLLM's API server does: a second
                           engine on the same port then shares it (the kernel splits
                           the connections)

Every request is logged on stdout (one line), which the run loop keeps in
logs/<service>_<timestamp>.log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from aiohttp import web


def log(msg: str) -> None:
    print(f"[fake-server {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.started = time.monotonic()
        self.requests = 0
        self.inflight = 0
        self.completed = 0
        self.tokens = 0
        self.resets = 0

    def die(self, why: str) -> None:
        if self.args.oom:
            print(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
                "(GPU 0; 139.80 GiB total capacity)",
                file=sys.stderr,
                flush=True,
            )
        log(f"crashing: {why}")
        sys.stderr.flush()
        os._exit(1)


def prompt_len(prompt: object) -> int:
    if isinstance(prompt, list):
        if prompt and isinstance(prompt[0], list):
            return len(prompt[0])
        return len(prompt)
    if isinstance(prompt, str):
        return max(1, len(prompt.split()))
    return 1


def make_app(state: State) -> web.Application:
    args = state.args

    async def health(_request: web.Request) -> web.StreamResponse:
        if args.hang_health:
            await asyncio.sleep(3600)
        if time.monotonic() - state.started < args.startup_delay:
            return web.Response(status=503, text="starting")
        return web.Response(text="ok")

    async def models(_request: web.Request) -> web.StreamResponse:
        return web.json_response({"object": "list", "data": [{"id": args.model, "object": "model"}]})

    async def reset(request: web.Request) -> web.StreamResponse:
        state.resets += 1
        log(f"POST {request.path} (reset #{state.resets})")
        if args.refuse_reset:  # what vLLM answers when it refuses (e.g. requests still running)
            return web.json_response({"success": False})
        return web.Response(text="ok")

    async def metrics(_request: web.Request) -> web.StreamResponse:
        drafts = state.tokens // 2
        lines = [
            "# HELP vllm:num_requests_running Number of requests running.",
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{model_name="{args.model}"}} {float(state.inflight)}',
        ]
        if not args.spec_decode:
            return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")
        lines += [
            "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.",
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            f'vllm:spec_decode_num_drafts_total{{model_name="{args.model}"}} {float(drafts)}',
            "# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.",
            "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
            f'vllm:spec_decode_num_draft_tokens_total{{model_name="{args.model}"}} {float(drafts * 3)}',
            "# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.",
            "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
            f'vllm:spec_decode_num_accepted_tokens_total{{model_name="{args.model}"}} {float(drafts * 2)}',
        ]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def completions(request: web.Request) -> web.StreamResponse:
        state.requests += 1
        if args.crash_after is not None and state.requests > args.crash_after:
            state.die(f"request {state.requests} > --crash-after {args.crash_after}")
        body = await request.json()
        n_in = prompt_len(body.get("prompt"))
        max_tokens = int(body.get("max_tokens") or 16)
        stream = bool(body.get("stream"))
        log(f"POST /v1/completions prompt={n_in} max_tokens={max_tokens} stream={stream}")
        if args.error_status:
            return web.Response(status=args.error_status, text=f"fake error {args.error_status}: model overloaded")
        if args.max_model_len and n_in + max_tokens > args.max_model_len:
            return web.json_response(
                {"error": {"message": f"prompt of {n_in} tokens exceeds max_model_len {args.max_model_len}"}},
                status=400,
                reason="Bad Request",
            )
        state.inflight += 1
        try:
            if args.crash_at_inflight and state.inflight >= args.crash_at_inflight:
                state.die(f"{state.inflight} requests in flight")
            await asyncio.sleep(args.ttft_ms / 1000.0)
            created = int(time.time())
            if not stream:
                await asyncio.sleep(args.latency_ms * max_tokens / 1000.0)
                state.tokens += max_tokens
                return web.json_response(
                    {
                        "id": f"cmpl-{state.requests}",
                        "object": "text_completion",
                        "created": created,
                        "model": args.model,
                        "choices": [{"index": 0, "text": " tok" * max_tokens, "finish_reason": "length"}],
                        "usage": {"prompt_tokens": n_in, "completion_tokens": max_tokens, "total_tokens": n_in + max_tokens},
                    }
                )
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            per = max(1, args.tokens_per_chunk)
            for i in range(0, max_tokens, per):
                if i:
                    await asyncio.sleep(args.latency_ms * per / 1000.0)
                n = min(per, max_tokens - i)
                chunk = {
                    "id": f"cmpl-{state.requests}",
                    "object": "text_completion",
                    "created": created,
                    "model": args.model,
                    "choices": [{"index": 0, "text": "".join(f" t{i + j}" for j in range(n)), "logprobs": None,
                                 "finish_reason": None}],
                }
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
                state.tokens += n
            final = {
                "id": f"cmpl-{state.requests}",
                "object": "text_completion",
                "created": created,
                "model": args.model,
                "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "length"}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": max_tokens, "total_tokens": n_in + max_tokens},
            }
            await resp.write(f"data: {json.dumps(final)}\n\n".encode())
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            state.completed += 1
            return resp
        finally:
            state.inflight -= 1

    app = web.Application()
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/reset_prefix_cache", reset)
    app.router.add_post("/flush_cache", reset)
    app.router.add_get("/metrics", metrics)
    return app


def main() -> int:
    parser = argparse.ArgumentParser(description="fake OpenAI-compatible server for tests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--latency-ms", type=float, default=2.0, help="delay between streamed tokens")
    parser.add_argument("--startup-delay", type=float, default=0.0)
    parser.add_argument("--hang-health", action="store_true")
    parser.add_argument("--exit-at-start", type=int, default=None)
    parser.add_argument("--crash-after", type=int, default=None)
    parser.add_argument("--crash-at-inflight", type=int, default=None)
    parser.add_argument("--oom", action="store_true")
    parser.add_argument("--error-status", type=int, default=None)
    parser.add_argument("--max-model-len", type=int, default=None)
    parser.add_argument("--spec-decode", action="store_true", help="expose vllm:spec_decode_* counters")
    parser.add_argument("--refuse-reset", action="store_true", help='answer a cache reset 200 {"success": false}')
    parser.add_argument("--tokens-per-chunk", type=int, default=1, help="tokens per streamed chunk")
    parser.add_argument("--reuse-port", action="store_true", help="bind with SO_REUSEPORT (as vLLM's API server)")
    args, unknown = parser.parse_known_args()
    if args.host not in ("127.0.0.1", "localhost"):
        parser.error("the fake server only listens on 127.0.0.1/localhost")
    log(f"starting on {args.host}:{args.port} (ignored args: {unknown})")
    if args.exit_at_start is not None:
        if args.oom:
            print("RuntimeError: CUDA out of memory while loading weights", file=sys.stderr, flush=True)
        log(f"exiting at start with status {args.exit_at_start}")
        return args.exit_at_start
    state = State(args)
    web.run_app(make_app(state), host=args.host, port=args.port, print=None, access_log=None, handle_signals=True,
                reuse_port=args.reuse_port or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
