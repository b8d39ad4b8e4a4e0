"""Test double of `python -m sglang.launch_server`, single- or multi-node.

Accepts SGLang's flags (--model-path, --tp, --host, --port, --nnodes,
--node-rank, --dist-init-addr; others ignored). One node: serves
tests/fakes/fake_openai_server.py at once (with $FAKE_SERVER_ARGS, split
on blanks, added to its command line). Several nodes, like the real
engine's rendezvous:

* rank 0 listens on the --dist-init-addr port and serves the OpenAI API
  only after every other rank has connected there and said its rank;
  when a rank leaves, rank 0 exits (the engine is broken);
* rank r > 0 connects to --dist-init-addr (retrying for 120 s), says
  `rank r`, serves nothing, and exits when rank 0 goes away.

Every step is printed (`[fake-sglang rank R] ...`) so that tests can read
the wiring from the server log.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Optional

FAKES = Path(__file__).resolve().parents[2]


def say(rank: int, message: str) -> None:
    node = os.environ.get("SLURMD_NODENAME", socket.gethostname())
    print(f"[fake-sglang rank {rank} on {node}] {message}", flush=True)


def parse() -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", default="fake-model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--nnodes", type=int, default=1)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--dist-init-addr", default=None)
    parser.add_argument("--tp", default=None)
    parser.add_argument("--trust-remote-code", action="store_true")
    return parser.parse_known_args()


def serve(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(FAKES))
    import fake_openai_server

    extra = os.environ.get("FAKE_SERVER_ARGS", "").split()
    sys.argv = ["fake_openai_server", "--host", args.host, "--port", str(args.port), "--model", args.model_path, *extra]
    fake_openai_server.main()


def head(args: argparse.Namespace, host: str, port: int) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen()
    say(0, f"waiting at {host}:{port} for {args.nnodes - 1} rank(s)")
    joined: dict[int, socket.socket] = {}
    while len(joined) < args.nnodes - 1:
        conn, peer = listener.accept()
        line = conn.makefile().readline().strip()
        if not line.startswith("rank "):
            conn.close()
            continue
        rank = int(line.split()[1])
        joined[rank] = conn
        say(0, f"rank {rank} joined from {peer[0]}")
    listener.close()
    if sorted(joined) != list(range(1, args.nnodes)):
        say(0, f"wrong ranks joined: {sorted(joined)}")
        sys.exit(1)

    def watch(rank: int, conn: socket.socket) -> None:
        conn.recv(1)  # returns when the rank goes away
        say(0, f"rank {rank} left; stopping")
        os._exit(1)

    for rank, conn in joined.items():
        threading.Thread(target=watch, args=(rank, conn), daemon=True).start()
    say(0, "all ranks joined; serving the API")
    serve(args)


def worker(args: argparse.Namespace, host: str, port: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            conn = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                say(args.node_rank, f"no rank 0 at {host}:{port}")
                sys.exit(1)
            time.sleep(0.2)
    conn.settimeout(None)
    conn.sendall(f"rank {args.node_rank}\n".encode())
    say(args.node_rank, f"joined rank 0 at {host}:{port}")

    def stop(signum: int, frame: Optional[FrameType]) -> None:
        say(args.node_rank, f"signal {signum}; leaving")
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    conn.recv(1)
    say(args.node_rank, "rank 0 went away; leaving")


def main() -> None:
    args, _ = parse()
    if args.nnodes <= 1:
        serve(args)
        return
    if not args.dist_init_addr or ":" not in args.dist_init_addr:
        say(args.node_rank, "--nnodes > 1 needs --dist-init-addr HOST:PORT")
        sys.exit(2)
    host, port = args.dist_init_addr.rsplit(":", 1)
    if args.node_rank == 0:
        head(args, host, int(port))
    else:
        worker(args, host, int(port))


if __name__ == "__main__":
    main()
