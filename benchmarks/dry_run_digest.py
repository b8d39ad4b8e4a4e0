#!/usr/bin/env python3
"""A digest of every shipped experiment's dry run: what the shell half prints and writes, to show that a
change of scripts/common/ (or of the run loop's Python side) leaves it byte for byte as it was.

    .venv/bin/python benchmarks/dry_run_digest.py [--save FILE] [--compare FILE] [--only NAME] [--keep DIR]

Each experiment under experiments/<platform dir>/ runs `DRY_RUN=1 bash run_bench.sh` with the platform of
its folder, a fixed RUN_ID and RESULT_ROOT in a temporary directory, and the environment of the shell
tests (tests/fakes/bin first on PATH: the fake nvidia-smi, xpu-smi and docker; this Python as the engine's
and client's interpreter). The GPU experiments run once more with NNODES=2 (every rank's command,
MULTINODE_HEAD_ADDR given), and `scripts/common/submit.sh --dry-run` runs once over every experiment.

Printed: one SHA-256 per file the dry run wrote (its path under RESULT_ROOT), one for its stdout, one for
its stderr and its exit status, each after normalisation: the repository's path, the temporary
directory's and the random names of `mktemp` are replaced by fixed words, the only timing a dry run
writes, ISO times (the log lines' stamps, results.json's metadata.timestamp) and the orchestrator log's
name stamp (`_YYYYmmdd_HHMMSS.log`), by `<time>`, and the repository's commit results.json records
(metadata.git_commit) by `<commit>`. --compare FILE exits 1 and names every line that
differs from a saved digest.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAKES = REPO / "tests" / "fakes"
PLATFORM_OF = {"cpu": "cpu", "h20": "nvidia_h20", "h200": "nvidia_h200", "p800": "kunlun_p800",
               "pro6000": "nvidia_rtx6000d"}
RUN_ID = "20261201-120000"
MKTEMP = re.compile(rb"/tmp\.[A-Za-z0-9]{10}|/sskj-records\.[A-Za-z0-9]{6}")
# the timing a dry run writes: the log's lines and name, results.json's metadata.timestamp
TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?")
NAME_TIME = re.compile(r"_\d{8}_\d{6}(?=\.log$)")
# the repository's commit that results.json records (metadata.git_commit): it changes with every commit
COMMIT = re.compile(rb'"git_commit": "[0-9a-f]{40}(?:-dirty)?"')
WORK = re.compile(re.escape(tempfile.gettempdir().encode()) + rb"/sskj-digest-[A-Za-z0-9_]{8}")


def experiments() -> list[Path]:
    return sorted(p.parent for p in (REPO / "experiments").glob("*/*/run_bench.sh")
                  if p.parent.parent.name in PLATFORM_OF)


def base_env(work: Path) -> dict[str, str]:
    """The shell tests' environment (tests/shell/conftest.py: base_env), without the call recorder."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SSKJ_", "SLURM_", "SBATCH_", "PLATFORM", "RESUME", "DRY_RUN", "FAKE_"))
           and k not in ("PORT", "RUN_ID", "RESULT_ROOT", "SLO_SEARCH", "MODEL_PATH", "PATCH_ROOT", "NNODES",
                         "GPUS_PER_NODE", "DIST_INIT_PORT", "MULTINODE_HEAD_ADDR", "TP", "DEVICES", "TMPDIR")}
    env.update(PATH=f"{FAKES / 'bin'}:{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}",
               PYTHONPATH=str(FAKES / "pymods"), CLIENT_PYTHON=sys.executable, ENGINE_PYTHON=sys.executable,
               FAKE_DOCKER_LOG=str(work / "docker_calls.log"), FAKE_CLIENT_LOG=str(work / "client_calls.log"),
               TMPDIR=str(work / "tmp"))
    (work / "tmp").mkdir(parents=True, exist_ok=True)
    return env


def normalised(data: bytes) -> bytes:
    data = WORK.sub(b"<work>", data).replace(str(REPO).encode(), b"<repo>")
    return COMMIT.sub(b'"git_commit": "<commit>"', TIME.sub(b"<time>", MKTEMP.sub(b"/<mktemp>", data)))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_of(name: str, proc: subprocess.CompletedProcess, root: Path | None) -> list[str]:
    lines = [f"{name} exit {proc.returncode}", f"{name} stdout {sha(normalised(proc.stdout))}",
             f"{name} stderr {sha(normalised(proc.stderr))}"]
    return lines + file_lines(name, root)


def file_lines(name: str, root: Path | None) -> list[str]:
    """One line per file under ROOT: its path (the log name's time stamp normalised) and the SHA-256."""
    lines = []
    if root is not None and root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            shown = NAME_TIME.sub("_<time>", str(path.relative_to(root)))
            lines.append(f"{name} file {shown} {sha(normalised(path.read_bytes()))}")
    return lines


def run_one(name: str, argv: list[str], env: dict[str, str], root: Path | None,
            keep: Path | None) -> list[str]:
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=900, cwd=REPO)
    if keep is not None:
        out = keep / name.replace("/", "__")
        out.mkdir(parents=True, exist_ok=True)
        (out / "stdout").write_bytes(normalised(proc.stdout))
        (out / "stderr").write_bytes(normalised(proc.stderr))
        (out / "exit").write_text(f"{proc.returncode}\n")
        if root is not None and root.is_dir():
            shutil.copytree(root, out / "files", dirs_exist_ok=True)
    return digest_of(name, proc, root)


def digest(only: str | None, keep: Path | None) -> list[str]:
    lines: list[str] = []
    for exp in experiments():
        short = f"{exp.parent.name}/{exp.name}"
        if only and only not in short:
            continue
        runs = [("", {})]
        if exp.parent.name != "cpu":
            runs.append(("@2nodes", {"NNODES": "2", "MULTINODE_HEAD_ADDR": "10.0.0.1", "DIST_INIT_PORT": "29777"}))
        for suffix, extra in runs:
            with tempfile.TemporaryDirectory(prefix="sskj-digest-") as tmp:
                work = Path(tmp)
                root = work / "r"
                env = dict(base_env(work), DRY_RUN="1", PLATFORM=PLATFORM_OF[exp.parent.name], RUN_ID=RUN_ID,
                           RESULT_ROOT=str(root), **extra)
                lines += run_one(short + suffix, ["bash", str(exp / "run_bench.sh")], env, root, keep)
            print(lines[-1].split(" ", 1)[0], file=sys.stderr)
    if not only or only in "submit":
        cluster = [e for e in experiments() if e.parent.name in ("h200", "p800")]
        with tempfile.TemporaryDirectory(prefix="sskj-digest-") as tmp:
            work = Path(tmp)
            argv = ["bash", str(REPO / "scripts" / "common" / "submit.sh"), *map(str, cluster), "--dry-run",
                    "--run-id", RUN_ID]
            lines += run_one("submit", argv, base_env(work), None, keep)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write the digest to FILE")
    parser.add_argument("--compare", type=Path, help="compare with the digest saved in FILE (exit 1 on a difference)")
    parser.add_argument("--only", help="only the experiments whose folder/name contains this text")
    parser.add_argument("--keep", type=Path, help="keep each dry run's normalised stdout, stderr and files in DIR")
    args = parser.parse_args()
    lines = digest(args.only, args.keep)
    text = "\n".join(lines) + "\n"
    if args.save:
        args.save.write_text(text)
    else:
        sys.stdout.write(text)
    if args.compare:
        saved = args.compare.read_text().splitlines()
        if args.only:
            names = {line.split(" ", 1)[0] for line in lines}
            saved = [line for line in saved if line.split(" ", 1)[0] in names]
        gone = [line for line in saved if line not in lines]
        new = [line for line in lines if line not in saved]
        for line in gone:
            print(f"- {line}", file=sys.stderr)
        for line in new:
            print(f"+ {line}", file=sys.stderr)
        print(f"{len(lines)} lines; {'identical' if not gone and not new else f'{len(gone) + len(new)} differ'}",
              file=sys.stderr)
        return 1 if gone or new else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
