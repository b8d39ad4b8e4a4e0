"""`sskj-results run-client`: the client is stopped when the server dies; its CPU use is recorded."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from sskj_results.run.plan import GridRow
from sskj_results.run.supervise import EXIT_CLIENT_FAILED, EXIT_OK, EXIT_SERVER_FAILED, run_client


def _client(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "client.py"
    script.write_text(body)
    return [sys.executable, str(script)]


def test_server_death_stops_the_client_within_seconds_and_records_the_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old line before the scenario\n")
    offset = log.stat().st_size
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    client = _client(tmp_path, "import time\nprint('client started', flush=True)\ntime.sleep(120)\n")

    def crash() -> None:
        time.sleep(1.0)
        with log.open("a") as fh:
            fh.write("engine core died: Segmentation fault\n")
        server.kill()
        server.wait()

    threading.Thread(target=crash).start()
    start = time.monotonic()
    status, stats = run_client(client, run_dir=tmp_path, stem="cpu_vllm_0102_4_16_8", row=GridRow(4, 16, 8),
                               server_pid=server.pid, server_log=log, log_offset=offset,
                               client_log=tmp_path / "client.log", raw=tmp_path / "raw.jsonl", poll_s=0.2)
    assert time.monotonic() - start < 10
    assert status == EXIT_SERVER_FAILED
    assert stats.stopped_because_server_died and stats.server_failure == "server_died"
    with open(tmp_path / "skipped_after_oom.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[1][:5] == ["c4_i16_o8", "4", "16", "8", "server_died"]
    assert "Segmentation fault" in rows[1][5] and "old line" not in rows[1][5]
    saved = json.loads((tmp_path / "client_stats" / "cpu_vllm_0102_4_16_8.json").read_text())
    assert saved["stopped_because_server_died"] is True and saved["exit_code"] != 0
    assert "client started" in (tmp_path / "client.log").read_text()


def test_oom_in_the_log_is_a_server_failure_even_when_the_server_lives(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("")
    client = _client(tmp_path, f"open({str(log)!r}, 'a').write('torch.OutOfMemoryError: CUDA out of memory\\n')\n")
    status, stats = run_client(client, run_dir=tmp_path, stem="s", row=GridRow(8, 16, 8), server_pid=None,
                               server_log=log, log_offset=0, client_log=None, raw=None)
    assert status == EXIT_SERVER_FAILED and stats.server_failure == "oom" and not stats.stopped_because_server_died


def test_success_records_cpu_and_wall_time(tmp_path: Path) -> None:
    raw = tmp_path / "raw.jsonl"
    client = _client(tmp_path, f"x = sum(i * i for i in range(3_000_000))\nopen({str(raw)!r}, 'w').write('{{}}\\n')\n")
    status, stats = run_client(client, run_dir=tmp_path, stem="s", row=GridRow(1, 16, 8), server_pid=None,
                               server_log=None, log_offset=0, client_log=None, raw=raw)
    assert status == EXIT_OK and stats.exit_code == 0 and stats.server_failure is None
    assert stats.user_cpu_s is not None and stats.user_cpu_s > 0 and stats.wall_s > 0
    assert set(json.loads((tmp_path / "client_stats" / "s.json").read_text())) == {
        "stem", "exit_code", "wall_s", "user_cpu_s", "system_cpu_s", "max_rss_kib", "stopped_because_server_died",
        "server_failure", "started_at", "ended_at"}


def test_client_failure_without_server_failure_removes_the_partial_raw_file(tmp_path: Path) -> None:
    raw = tmp_path / "raw.jsonl"
    raw.write_text("partial")
    client = _client(tmp_path, "raise SystemExit(7)\n")
    status, stats = run_client(client, run_dir=tmp_path, stem="s", row=GridRow(1, 16, 8), server_pid=None,
                               server_log=None, log_offset=0, client_log=None, raw=raw)
    assert status == EXIT_CLIENT_FAILED and stats.exit_code == 7 and not raw.exists()
    assert not (tmp_path / "skipped_after_oom.csv").exists()


def test_a_failed_metrics_after_leaves_no_file_and_says_which_url(tmp_path: Path) -> None:
    """run-client --session: the GET /metrics after the client fails (nothing listens): no partial
    .after.prom is left, and the message names the URL and the file it did not write."""
    import os
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = tmp_path / "run"
    (run / "server_metrics").mkdir(parents=True)
    stale = run / "server_metrics" / "s.after.prom"
    stale.write_text("# an earlier try's answer\n")
    client = _client(tmp_path, "pass\n")
    env = dict(os.environ, PHASE_ENGINE="vllm-cpu", PORT=str(port), SERVER_HOST="127.0.0.1")
    done = subprocess.run(
        [sys.executable, "-m", "sskj_results", "run-client", str(run), "--stem", "s", "--concurrency", "1",
         "--input-len", "16", "--output-len", "8", "--session", str(tmp_path / "session.txt"),
         "--records-out", str(tmp_path / "next.records"), "--", *client],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not stale.exists()
    said = done.stderr + ((tmp_path / "next.records").read_bytes().decode() if (tmp_path / "next.records").exists() else "")
    assert f"GET http://127.0.0.1:{port}/metrics failed; no s.after.prom" in said
