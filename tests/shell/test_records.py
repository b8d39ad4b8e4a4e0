"""The records the run loop's commands hand to the shell (sskj_results/run/records.py, lib::read_records):
every value arrives as it was, nothing is evaluated, a bad name is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from shellkit import bash_lib

from sskj_results.run.records import Records, plan_words

pytestmark = pytest.mark.shell

TRICKY = ["plain", "two words", "", "quote ' and \"", "$(touch /tmp/sskj-never)", "`id`", "a\nnew line", "tab\there",
          "glob * ? [x]", "日本語", "trailing\\", "--flag=value", "-e", "a;b|c&d"]


def emit(records: Records, tmp_path: Path) -> str:
    """A command that prints the records (what a loop command does)."""
    blob = tmp_path / "records.bin"
    blob.write_bytes(bytes(records))
    return f"cat {blob}"


def test_values_and_arrays_arrive_as_written(tmp_path: Path) -> None:
    rec = Records()
    for i, value in enumerate(TRICKY):
        rec.var(f"V{i}", value)
    rec.var("LOCAL_ONLY", "x y", export=False)
    rec.array("ARR", TRICKY)
    rec.array("EMPTY", [])
    show = "; ".join(f'printf "%s\\0" "$V{i}"' for i in range(len(TRICKY)))
    snippet = (f"lib::read_records {emit(rec, tmp_path)}\n{show}\nprintf '%s\\0' \"${{#ARR[@]}}\" \"${{ARR[@]}}\" "
               "\"${#EMPTY[@]}\"\nbash -c 'printf \"%s\\0\" \"${V1:-unset}\" \"${LOCAL_ONLY:-unset}\"'")
    proc = bash_lib(snippet)
    assert proc.returncode == 0, proc.stderr
    words = proc.stdout.split("\0")[:-1]
    n = len(TRICKY)
    assert words[:n] == TRICKY
    assert words[n] == str(n) and words[n + 1:2 * n + 1] == TRICKY
    assert words[2 * n + 1] == "0"
    assert words[2 * n + 2:] == ["two words", "unset"], "v records are exported, l records are not"
    assert not Path("/tmp/sskj-never").exists()


def test_comments_and_commands_print_as_bash_would_quote_them(tmp_path: Path) -> None:
    rec = Records()
    rec.comment("# scenario c1_i16_o8 (4 prompts)")
    rec.command(["echo", *TRICKY[:6]])
    proc = bash_lib(f"lib::read_records {emit(rec, tmp_path)}")
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.split("\n", 1)
    assert first == "# scenario c1_i16_o8 (4 prompts)"
    quoted = subprocess.run(["bash", "-c", 'printf "%q " "$@"', "x", "echo", *TRICKY[:6]],
                            capture_output=True, text=True).stdout.rstrip(" ")
    assert second == quoted + "\n"
    rerun = subprocess.run(["bash", "-c", f"printf '%s\\0' {second.strip()}"], capture_output=True, text=True)
    assert rerun.stdout.split("\0")[:-1] == ["echo", *TRICKY[:6]], "the printed line pastes back to the same words"


def test_a_plan_prints_its_lines_in_order(tmp_path: Path) -> None:
    words = plan_words([("#", ["# phase plan"]), ("$", ["curl", "-X", "POST", "http://h:1/x y"]), ("#", ["# end"])])
    rec = Records()
    rec.array("PLAN", words)
    proc = bash_lib(f'lib::read_records {emit(rec, tmp_path)}\nlib::print_plan "${{PLAN[@]}}"')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "# phase plan\ncurl -X POST http://h:1/x\\ y\n# end\n"


def test_a_plan_line_of_parts_quotes_every_other_part_as_printf_q(tmp_path: Path) -> None:
    """`%` COUNT PART...: literal text and words in turn (run/dryplan.py), each word as printf %q quotes it."""
    parts = ['A="$X" ', *[w for word in TRICKY for w in (word, " | ")]]
    rec = Records()
    rec.array("PLAN", plan_words([("%", parts), ("#", ["# end"])]))
    proc = bash_lib(f'lib::read_records {emit(rec, tmp_path)}\nlib::print_plan "${{PLAN[@]}}"')
    assert proc.returncode == 0, proc.stderr
    fmt = 'A="$X" ' + "%q | " * len(TRICKY) + "\\n# end\\n"
    expected = subprocess.run(["bash", "-c", 'printf "$@"', "x", fmt, *TRICKY], capture_output=True, text=True).stdout
    assert proc.stdout == expected


@pytest.mark.parametrize("blob, message", [
    (b"v\0BAD-NAME\0x\0", "unexpected record name 'BAD-NAME'"),
    (b"z\0X\0", "unexpected record 'z'"),
    (b"a\0X\0three\0", "malformed record count"),
    (b"v\0X\0", "truncated record"),
    (b"a\0X\x003\0one\0two\0", "truncated record"),  # an array with fewer words than its count
])
def test_a_malformed_record_is_refused_with_one_line(tmp_path: Path, blob: bytes, message: str) -> None:
    (tmp_path / "bad.bin").write_bytes(blob)
    proc = bash_lib(f"lib::read_records cat {tmp_path / 'bad.bin'}")
    assert proc.returncode == 1
    assert message in proc.stderr and proc.stderr.count("\n") == 1


def test_the_python_side_refuses_what_the_shell_could_not_take() -> None:
    rec = Records()
    with pytest.raises(ValueError):
        rec.var("1X", "a")
    with pytest.raises(ValueError):
        rec.var("X", "nul\0inside")


def test_the_exit_status_of_the_command_is_returned(tmp_path: Path) -> None:
    proc = bash_lib(f"rc=0; lib::read_records {sys.executable} -c 'import sys; sys.exit(3)' || rc=$?; echo $rc")
    assert proc.stdout.strip() == "3"


def test_a_count_is_decimal_and_a_records_file_is_read_as_a_command_s_output(tmp_path: Path) -> None:
    """`010` words are ten (not octal eight); lib::read_records_file reads what run-client left, and a
    missing file is one line."""
    blob = b"\0".join([b"a", b"ARR", b"010", b""]) + b"".join(f"w{i}".encode() + b"\0" for i in range(10)) + b"v\0AFTER\0yes\0"
    (tmp_path / "next.records").write_bytes(blob)
    proc = bash_lib(f"lib::read_records_file {tmp_path / 'next.records'}; echo \"${{#ARR[@]}} ${{ARR[9]}} $AFTER\"")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "10 w9 yes\n"
    missing = bash_lib(f"lib::read_records_file {tmp_path / 'gone.records'}")
    assert missing.returncode == 1
    assert f"records file {tmp_path / 'gone.records'} is missing" in missing.stderr
    assert missing.stderr.count("\n") == 1
