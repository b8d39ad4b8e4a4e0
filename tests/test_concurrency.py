"""Two writers at once, writers killed half-way, and re-imports beside a user's own files (issue 27)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract import io as sio
from sskj_results.contract import locking
from sskj_results.contract.io import load_run
from sskj_results.ingest.metadata import write_metadata

from .conftest import RAW

GOOD = "vllm_0705_4_64_16.jsonl"
OTHER = "vllm_0705_2_128_32.jsonl"
CHIP = ["--chip", "cpu", "--accelerator", "CPU", "--hardware", "2x CPU core"]
FORK = multiprocessing.get_context("fork")


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=True)


def import_args(raw: Path, out: Path) -> list[str]:
    return ["import-legacy", str(raw), "--out", str(out), *CHIP, "--engine", "vllm", "--model", "m"]


def _child(start: Any, func: Callable[[], Any]) -> None:
    start.wait()
    result = func()
    if result.exit_code != 0:
        print(result.output)
    os._exit(result.exit_code)


def run_together(*funcs: Callable[[], Any]) -> None:
    """Run each command in its own forked process, released at the same instant; each must exit 0."""
    start = FORK.Event()
    procs = [FORK.Process(target=_child, args=(start, f)) for f in funcs]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0


def run_dirs(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if not p.name.startswith("."))


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def raw_dir(tmp_path: Path, *names: str) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(RAW / name, raw / name)
    return raw


# ---------------------------------------------------------------- 1. concurrent writers


def test_two_imports_on_the_same_out_never_lose_results(tmp_path: Path) -> None:
    raw = raw_dir(tmp_path, GOOD)
    out = tmp_path / "imported"
    args = import_args(raw, out)
    assert invoke(*args).exit_code == 0  # the modules an import needs are loaded once, before the forks
    for i in range(10):
        if i % 2:
            shutil.rmtree(out)  # both imports the first into an empty --out; else both replace the earlier one
        run_together(lambda: invoke(*args), lambda: invoke(*args))
        dirs = run_dirs(out)
        assert [d.name for d in dirs] == ["cpu_vllm_0705"]  # no `-2` sibling
        results = load_run(dirs[0])  # present and valid
        assert [s.source.file.rsplit("/", 1)[-1] for s in results.scenarios if s.source] == [GOOD]
        assert sorted(p.name for p in dirs[0].iterdir()) == [".sskj-import.json", "README.md", "report.md",
                                                              "results.json"]
        assert hidden(out) == []  # no temporary or backup left


def parse_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    write_metadata(run, {"experiment": "e", "model": "m", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve m"}, detect=False)
    (run / "raw_outputs").mkdir()
    return run


def test_metadata_during_parse_is_never_lost(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    raw = run / "raw_outputs"
    assert invoke("parse", str(run)).exit_code == 0  # modules loaded once, before the forks
    for i in range(10):
        # a new raw file (another measurement: a copy would be the same run, counted once) each round,
        # so that parse really reads and writes
        source = GOOD if i % 2 == 0 else OTHER
        data = json.loads((RAW / source).read_text())
        data["duration"] += i * 1e-3
        (raw / f"r{i}_{source}").write_text(json.dumps(data) + "\n")
        run_together(lambda: invoke("parse", str(run)),
                     lambda: invoke("metadata", str(run), "--meta", f"description=round {i}", "--no-detect"))
        results = load_run(run)
        assert results.metadata.description == f"round {i}"
        assert len({s.source.file for s in results.scenarios if s.source}) == i + 1
        assert hidden(run) == []


def test_the_lock_is_reentrant_and_leaves_no_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with locking.locked(run):
        with locking.locked(run / "."):  # the same directory: no deadlock
            sio.atomic_write_text(run / "x.txt", "x")
    assert sorted(p.name for p in run.iterdir()) == ["x.txt"]


# ---------------------------------------------------------------- 2. re-import keeps a user's files


def test_reimport_keeps_a_users_copy_and_notes(tmp_path: Path) -> None:
    raw = raw_dir(tmp_path, GOOD)
    out = tmp_path / "imported"
    assert invoke(*import_args(raw, out)).exit_code == 0
    target = out / "cpu_vllm_0705"
    shutil.copytree(target, out / f"{target.name}_before_driver_update")
    (target / "NOTES.md").write_text("driver 550 was flaky\n", encoding="utf-8")
    (target / "plots").mkdir()
    (target / "plots" / "mine.png").write_bytes(b"png")
    # a file added to the raw directory moves the run's start: the import gets another name
    shutil.copy(RAW / OTHER, raw / "vllm_0704_2_128_32.jsonl")
    os.utime(raw / "vllm_0704_2_128_32.jsonl", (0, 0))
    result = invoke(*import_args(raw, out))
    assert result.exit_code == 0, result.output
    names = [d.name for d in run_dirs(out)]
    assert f"{target.name}_before_driver_update" in names  # never swept: the user's copy
    copy = load_run(out / f"{target.name}_before_driver_update")
    assert [s.source.file.rsplit("/", 1)[-1] for s in copy.scenarios if s.source] == [GOOD]
    # the earlier import itself is gone but the user's files in it are kept and named
    assert sorted(p.name for p in target.rglob("*")) == ["NOTES.md", "mine.png", "plots"]
    assert (f"{target}: an earlier import of these raw files, replaced by cpu_vllm_19700101-000000" in result.stderr
            or "replaced by" in result.stderr), result.stderr
    assert "kept NOTES.md, plots (not written by import-legacy) there, removed the rest" in result.stderr


def test_replacing_a_run_directory_keeps_files_the_import_did_not_write(tmp_path: Path) -> None:
    raw = raw_dir(tmp_path, GOOD)
    out = tmp_path / "imported"
    assert invoke(*import_args(raw, out)).exit_code == 0
    target = out / "cpu_vllm_0705"
    (target / "NOTES.md").write_text("keep me\n", encoding="utf-8")
    result = invoke(*import_args(raw, out))
    assert result.exit_code == 0, result.output
    assert (target / "NOTES.md").read_text(encoding="utf-8") == "keep me\n"
    assert f"{target}: kept NOTES.md (not written by import-legacy) in the re-imported run directory" in result.stderr
    assert load_run(target).scenarios
    assert json.loads((target / ".sskj-import.json").read_text())["run_dir"] == target.name


def test_a_latest_link_beside_a_run_is_left_alone(tmp_path: Path) -> None:
    raw = raw_dir(tmp_path, GOOD)
    out = tmp_path / "imported"
    assert invoke(*import_args(raw, out)).exit_code == 0
    (out / "cpu_vllm_latest").symlink_to("cpu_vllm_0705")
    result = invoke(*import_args(raw, out))
    assert result.exit_code == 0, result.output
    assert (out / "cpu_vllm_latest").is_symlink() and load_run(out / "cpu_vllm_latest").scenarios


# ---------------------------------------------------------------- 5. killed writers


def _kill_between_moves(raw: Path, out: Path) -> None:
    locking._exchange = lambda a, b: False  # type: ignore[assignment]  # the fallback: two renames
    real = os.rename

    def rename(src: Any, dst: Any) -> None:
        real(src, dst)
        if str(dst).endswith(".old"):
            os.kill(os.getpid(), signal.SIGKILL)  # the old directory moved away, the new one not yet in

    os.rename = rename  # type: ignore[assignment]
    invoke(*import_args(raw, out))


def test_sigkill_between_the_two_moves_is_repaired_by_the_next_command(tmp_path: Path) -> None:
    raw = raw_dir(tmp_path, GOOD)
    out = tmp_path / "imported"
    assert invoke(*import_args(raw, out)).exit_code == 0
    target = out / "cpu_vllm_0705"
    (target / "NOTES.md").write_text("mine\n", encoding="utf-8")
    before = (target / "results.json").read_bytes()
    proc = FORK.Process(target=_kill_between_moves, args=(raw, out))
    proc.start()
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    assert not target.exists() and any(n.endswith(".old") for n in hidden(out))  # the crash window, reproduced
    # the next writer of the run directory (here `metadata`) puts it back, then does its job
    result = invoke("metadata", str(target), "--meta", "description=after the crash", "--no-detect")
    assert result.exit_code == 0, result.output
    assert (target / "NOTES.md").read_text(encoding="utf-8") == "mine\n"
    assert load_run(target).metadata.description == "after the crash"
    assert json.loads(before)["scenarios"] == json.loads((target / "results.json").read_bytes())["scenarios"]
    # the next import removes the dead writer's temporary directory
    assert invoke(*import_args(raw, out)).exit_code == 0
    assert hidden(out) == []


def test_sigkill_between_the_moves_then_import_again(tmp_path: Path) -> None:
    raw = raw_dir(tmp_path, GOOD)
    out = tmp_path / "imported"
    assert invoke(*import_args(raw, out)).exit_code == 0
    proc = FORK.Process(target=_kill_between_moves, args=(raw, out))
    proc.start()
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    result = invoke(*import_args(raw, out))
    assert result.exit_code == 0, result.output
    assert [d.name for d in run_dirs(out)] == ["cpu_vllm_0705"]
    assert load_run(out / "cpu_vllm_0705").scenarios
    assert hidden(out) == []


def _kill_before_rename(run: Path) -> None:
    def replace(src: Any, dst: Any) -> None:
        os.kill(os.getpid(), signal.SIGKILL)  # the temporary is written, the rename never happens

    os.replace = replace  # type: ignore[assignment]
    invoke("parse", str(run))


def test_a_killed_parse_leaves_a_temporary_the_next_writer_removes(tmp_path: Path) -> None:
    run = parse_run(tmp_path)
    shutil.copy(RAW / GOOD, run / "raw_outputs" / GOOD)
    proc = FORK.Process(target=_kill_before_rename, args=(run,))
    proc.start()
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL
    assert [n.split("@")[0] for n in hidden(run)] == [f".results.json.{proc.pid}"]
    (run / ".results.json.k2j4x9a1.tmp").write_text("{", encoding="utf-8")  # an older version's leftover
    assert invoke("parse", str(run)).exit_code == 0
    assert hidden(run) == []
    assert load_run(run).scenarios


def test_a_live_writers_temporary_is_kept(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    mine = run / f".results.json.{os.getppid()}@{locking._host()}.abcdefgh.tmp"  # the parent process: alive
    mine.write_text("x", encoding="utf-8")
    assert locking.clean_stale(run, "results.json") == []
    dead = run / f".results.json.{2**22 + 12345}@{locking._host()}.abcdefgh.tmp"
    dead.write_text("x", encoding="utf-8")
    assert locking.clean_stale(run, "results.json") == [dead.name]
    assert mine.exists()


@pytest.mark.parametrize("exchange", [True, False])
def test_swap_dirs_replaces_the_target(tmp_path: Path, exchange: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not exchange:
        monkeypatch.setattr(locking, "_exchange", lambda a, b: False)
    target, new = tmp_path / "t", tmp_path / ".t.new"
    target.mkdir()
    (target / "old").write_text("o")
    new.mkdir()
    (new / "new").write_text("n")
    locking.swap_dirs(new, target)
    assert [p.name for p in target.iterdir()] == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]
