"""Test double of `python -m vllm.entrypoints.cli.main serve MODEL` (what `vllm serve` runs; one node).

Accepts `serve`, the model as its positional argument and vLLM's serve flags
(--host, --port, --spec-method; others ignored) and serves tests/fakes/fake_openai_server.py; a speculative
method (--spec-method, or --speculative-config) exposes the
vllm:spec_decode_* counters. $FAKE_SERVER_ARGS, split on blanks, is added
to the fake server's command line. Kept out of tests/fakes/pymods so that
only the tests that put this directory on PYTHONPATH see a `vllm` module.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

FAKES = Path(__file__).resolve().parents[4]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--spec-method", default=None)
    parser.add_argument("--speculative-config", default=None)
    args, _ = parser.parse_known_args()
    sys.path.insert(0, str(FAKES))
    import fake_openai_server

    spec = ["--spec-decode"] if args.spec_method or args.speculative_config else []
    extra = os.environ.get("FAKE_SERVER_ARGS", "").split()
    print(f"[fake-vllm] serving {args.model} on {args.host}:{args.port}", flush=True)
    sys.argv = ["fake_openai_server", "--host", args.host, "--port", str(args.port), "--model", args.model,
                *spec, *extra]
    fake_openai_server.main()


if __name__ == "__main__":
    main()
