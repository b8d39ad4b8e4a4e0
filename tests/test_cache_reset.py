"""The prefix-cache reset's answer (server_metrics/<stem>.reset.http) judged: only a real reset counts."""

from __future__ import annotations

import pytest

from sskj_results.ingest.sidecars import cache_reset

OK_JSON = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n"


@pytest.mark.parametrize("answer, done, why", [
    ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", True, None),
    (OK_JSON + '{"success": true}', True, None),
    ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", True, None),
    (OK_JSON + '{"success": false}', False, 'HTTP 200 with {"success": false} (the server refused)'),
    ("HTTP/1.1 404 Not Found\r\n\r\n{\"detail\":\"Not Found\"}", False, 'HTTP 404: {"detail":"Not Found"}'),
    ("", False, "no answer (the server could not be reached)"),
])
def test_a_reset_counts_only_when_the_server_confirms_it(tmp_path, answer: str, done: bool, why) -> None:
    path = tmp_path / "s.reset.http"
    path.write_bytes(answer.encode())
    assert cache_reset(path) == (done, why)


def test_no_answer_file_is_unknown(tmp_path) -> None:
    assert cache_reset(tmp_path / "absent.reset.http") == (None, None)
