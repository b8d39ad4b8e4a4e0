"""Preflight: everything a run needs, checked in a few seconds before any model is loaded.

``sskj-results preflight`` (called by the shell once per phase before the
first engine starts, and by DRY_RUN, where problems are warnings) checks

* the engine's interpreter and module (``python -m MODULE`` or a script) —
  on the host, or inside the container for Docker platforms when it runs;
* the bench client's interpreter and module;
* the model path exists and holds a ``config.json`` (HF) or is a ``.gguf`` file;
* the port is free on the server host; a stale engine of a dead
  orchestrator on this port or of this experiment is found (and stopped);
* the accelerators the platform expects are visible (count, nvidia-smi /
  xpu-smi); ``HARDWARE=auto`` whose accelerators cannot be queried, and an
  auto-detected platform other than the experiment directory's, are errors
  unless PLATFORM was given;
* the Docker image is present (Docker platforms);
* disk space for results.

Each problem is one line saying what is wrong and what to do. Modules are
located (``importlib.util.find_spec`` of the top package plus a look for the
submodule's file), never imported, so a check costs milliseconds.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Tuple

TIMEOUT_S = 10.0
# Locate MODULE without importing it (importing vllm or sglang takes many seconds).
_FIND_MODULE = r"""
import importlib.util, os, sys as s
name = s.argv[1]
top, _, rest = name.partition(".")
spec = importlib.util.find_spec(top)
if spec is None:
    s.exit(3)
if rest:
    places = list(spec.submodule_search_locations or [])
    parts = rest.split(".")
    for place in places:
        base = os.path.join(place, *parts)
        if os.path.isfile(base + ".py") or os.path.isdir(base) or any(
                f.startswith(parts[-1] + ".") and f.endswith((".so", ".pyc")) for f in os.listdir(os.path.dirname(base))
                if os.path.isdir(os.path.dirname(base))):
            s.exit(0)
    s.exit(4)
s.exit(0)
"""


@dataclass
class Problem:
    what: str
    fix: str
    fatal: bool = False  # an error even for DRY_RUN (the platform choice)

    def line(self) -> str:
        return f"{self.what}: {self.fix}"


@dataclass
class Interpreter:
    """Where an engine or client command runs its Python: host or container, module or script."""

    python: str
    module: Optional[str] = None
    script: Optional[str] = None
    container: Optional[str] = None
    program: bool = False  # the engine's own program (an engine row's `program`): it only has to exist


def _program_row(words: Sequence[str]) -> bool:
    """Whether a command starts with an engine row's own program (catalog/engines.py `program`)."""
    from ..catalog.engines import engine_argv

    found = engine_argv(list(words[:1]))
    return found is not None and bool(found[0].program)


def interpreter_of(argv: Sequence[str]) -> Optional[Interpreter]:
    """The Python of a launch command: `[env K=V...] PY [-X...] (-m MOD | SCRIPT)`, or
    `docker exec [OPTIONS] CONTAINER PY ...`. None when no Python is recognisable."""
    words = list(argv)
    container = None
    if words[:2] == ["docker", "exec"]:
        i = 2
        takes_value = {"-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys"}
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in takes_value else 1
        if i >= len(words):
            return None
        container, words = words[i], words[i + 1:]
    elif words[:1] == ["env"]:
        i = 1
        while i < len(words) and (words[i].startswith("-") or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[i])):
            i += 1
        words = words[i:]
    if not words:
        return None
    python, rest = words[0], words[1:]
    if _program_row(words):  # the engine's own program (llama-server): no Python, module or script to look for
        return Interpreter(python, container=container, program=True)
    j = 0
    while j < len(rest):
        if rest[j] == "-m" and j + 1 < len(rest):
            return Interpreter(python, module=rest[j + 1], container=container)
        if rest[j].startswith("-"):
            j += 1
            continue
        return Interpreter(python, script=rest[j], container=container)
    return Interpreter(python, container=container)


def _run(cmd: Sequence[str], timeout: float = TIMEOUT_S) -> Tuple[Optional[int], str]:
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return None, ""
    except (OSError, subprocess.SubprocessError) as exc:
        return -1, str(exc)
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def container_running(container: str) -> Optional[bool]:
    """True/False, or None when docker itself cannot be asked."""
    rc, out = _run(["docker", "inspect", "-f", "{{.State.Running}}", container])
    if rc is None:
        return None
    return rc == 0 and out.strip().startswith("true")


def check_interpreter(role: str, interp: Interpreter, env_var: str) -> List[Problem]:
    """The interpreter runs and its module (or script) is there."""
    prefix: List[str] = []
    where = ""
    if interp.container:
        running = container_running(interp.container)
        if not running:
            return []  # checked by the container/image checks; the run starts the container first
        prefix = ["docker", "exec", interp.container]
        where = f" in container {interp.container}"
    else:
        found = shutil.which(interp.python) if os.sep not in interp.python else interp.python
        if not found or not os.access(found, os.X_OK) or os.path.isdir(found):
            return [Problem(f"{role} interpreter {interp.python} does not exist",
                            f"install the {role} environment there or set {env_var}"
                            + (" (scripts/common/setup_envs.sh cpu installs under ${SSKJ_ENVS_DIR})"
                               if "/envs/" in interp.python or "SSKJ" in env_var else ""))]
    if interp.program:
        return []
    if interp.module:
        rc, out = _run([*prefix, interp.python, "-c", _FIND_MODULE, interp.module])
        if rc == 0:
            return []
        if rc in (3, 4):
            return [Problem(f"{role} module {interp.module} is not installed for {interp.python}{where}",
                            f"install it into that environment or point {env_var} at one that has it")]
        return [Problem(f"{role} interpreter {interp.python}{where} does not run (exit {rc}): "
                        f"{out.strip().splitlines()[-1] if out.strip() else 'no output'}",
                        f"repair the environment or set {env_var}")]
    if interp.script and not interp.container and not os.path.isfile(interp.script):
        return [Problem(f"{role} script {interp.script} does not exist", "check the server command in start_server.sh")]
    rc, out = _run([*prefix, interp.python, "-c", "pass"])
    if rc != 0:
        return [Problem(f"{role} interpreter {interp.python}{where} does not run (exit {rc})",
                        f"repair the environment or set {env_var}")]
    return []


def check_model(path: str, container: Optional[str]) -> List[Problem]:
    """MODEL_PATH exists and holds config.json (or is a .gguf file); a relative name that is not a
    local path (a hub id such as org/model) is left to the engine."""
    if not path.startswith(("/", ".")) and not Path(path).exists():
        return []
    if container and container_running(container):
        rc, _ = _run(["docker", "exec", container, "sh", "-c",
                      'test -f "$1/config.json" || { test -f "$1" && case "$1" in *.gguf) true ;; *) false ;; esac; }',
                      "sh", path])
        if rc == 0:
            return []
        return [Problem(f"model {path} has no config.json inside container {container}",
                        "bind-mount the model at that path or set MODEL_PATH / MODEL_ROOT")]
    p = Path(path)
    if p.is_dir() and (p / "config.json").is_file():
        return []
    if p.is_file() and p.suffix == ".gguf":
        return []
    if p.is_dir():
        return [Problem(f"model directory {path} has no config.json",
                        "point MODEL_PATH at the model's directory (the one with config.json)")]
    return [Problem(f"model path {path} does not exist", "set MODEL_PATH or MODEL_ROOT (config.env, platform file or "
                    "environment), or create the model (scripts/common/setup_envs.sh cpu for the tiny model)")]


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            return s.connect_ex((host, port)) == 0
        except OSError:
            return False


def count_accelerators(kind: str) -> Tuple[Optional[int], str]:
    """(count, tool) or (None, why) when the tool cannot be asked."""
    if kind == "nvidia":
        rc, out = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
        if rc is None:
            return None, "nvidia-smi is not installed"
        if rc != 0:
            return None, f"nvidia-smi failed (exit {rc})"
        return len([line for line in out.splitlines() if line.strip()]), "nvidia-smi"
    if kind == "xpu":
        for tool in ("xpu-smi", "xpu_smi"):
            rc, out = _run([tool])
            if rc is None:
                continue
            if rc != 0:
                return None, f"{tool} failed (exit {rc})"
            return len(re.findall(r"^\|\s*\d+\s+\S", out, re.M)), tool
        return None, "xpu-smi is not installed"
    return 0, "none"


def check_accelerators(kind: str, expected: int, hardware_auto: bool, platform_given: bool) -> List[Problem]:
    if kind == "none" or expected <= 0 and not hardware_auto:
        return []
    count, tool = count_accelerators(kind)
    if count is None:
        if hardware_auto and not platform_given:
            return [Problem(f"HARDWARE=auto but the platform's accelerators cannot be queried ({tool})",
                            "fix the driver, or give PLATFORM=<chip> explicitly to run anyway", fatal=True)]
        return [Problem(f"cannot count the accelerators ({tool})", "check the driver (the platform expects "
                        f"{expected} {kind} devices)")]
    if count < expected:
        return [Problem(f"{count} {kind} device(s) visible ({tool}), the platform expects {expected}",
                        "check CUDA_VISIBLE_DEVICES / the driver, or set ACCEL_COUNT / TP to what this machine has")]
    return []


def check_docker_image(image: str) -> List[Problem]:
    rc, _ = _run(["docker", "image", "inspect", image])
    if rc is None:
        return [Problem("docker is not installed", "install Docker, or use a host-native platform")]
    if rc != 0:
        return [Problem(f"Docker image {image} is not present", f"docker pull {image} (or load it), or set DOCKER_IMAGE")]
    return []


def check_disk(directory: str, min_gb: float) -> List[Problem]:
    d = Path(directory)
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        free = shutil.disk_usage(d).free / 1e9
    except OSError as exc:
        return [Problem(f"cannot read free space of {directory}", str(exc))]
    if free < min_gb:
        return [Problem(f"only {free:.1f} GB free under {d}", f"free at least {min_gb:g} GB or set RESULT_ROOT elsewhere")]
    return []


# --- stale engines -----------------------------------------------------------------------

ENGINE_MARK = "SSKJ_ENGINE_MARK"


@dataclass
class Engine:
    """A process started by an orchestrator as an engine (it carries SSKJ_ENGINE_MARK)."""

    pid: int
    pgid: int
    port: str
    orchestrator: int
    orchestrator_start: str
    experiment: str
    run_dir: str
    container: str = ""
    tag: str = ""

    @property
    def orphan(self) -> bool:
        return process_start(self.orchestrator) != self.orchestrator_start


def parse_mark(text: str) -> dict[str, str]:
    """`port=30000;orch=123;orch_start=456;exp=/x;run=/y;container=c;tag=t` -> dict."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = value
    return out


def process_start(pid: int) -> Optional[str]:
    """Start time of a live (non-zombie) process (field 22 of /proc/PID/stat), None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return fields[19]


def marked_engines() -> List[Engine]:
    found: List[Engine] = []
    needle = (ENGINE_MARK + "=").encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle not in environ:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(needle):
                mark = parse_mark(item[len(needle):].decode("utf-8", "replace"))
                pid = int(entry.name)
                try:
                    pgid = os.getpgid(pid)
                    orch = int(mark.get("orch", "0"))
                except (OSError, ValueError):
                    continue
                if process_start(pid) is None:
                    continue
                found.append(Engine(pid, pgid, mark.get("port", ""), orch, mark.get("orch_start", ""),
                                    mark.get("exp", ""), mark.get("run", ""), mark.get("container", ""),
                                    mark.get("tag", "")))
    return found


_CONTAINER_KILL = (
    'tag="$1"; sig="$2"; for d in /proc/[0-9]*; do pid="${d#/proc/}"; [ "$pid" = "$$" ] && continue; '
    'if tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -qx "SSKJ_SERVER_TAG=$tag"; then kill "-$sig" "$pid" '
    "2>/dev/null; fi; done; exit 0"
)


def stop_command(engine: Engine) -> str:
    cmd = f"kill -TERM -- -{engine.pgid}"
    if engine.container and engine.tag:
        cmd += f"; docker exec {engine.container} sh -c '{_CONTAINER_KILL}' sskj-stop {engine.tag} TERM"
    return cmd


def stop_engine(engine: Engine, grace_s: float) -> None:
    """TERM the engine's process group (and its tagged processes in the container), KILL after grace_s."""
    def signal_all(sig: int) -> None:
        try:
            os.killpg(engine.pgid, sig)
        except OSError:
            pass
        if engine.container and engine.tag:
            name = "TERM" if sig == signal.SIGTERM else "KILL"
            _run(["docker", "exec", engine.container, "sh", "-c", _CONTAINER_KILL, "sskj-stop", engine.tag, name])

    signal_all(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not any(e.pgid == engine.pgid for e in marked_engines()):
            return
        time.sleep(0.2)
    signal_all(signal.SIGKILL)


def stale_engines(port: Optional[int], experiment_dir: Optional[str],
                  orchestrator: int = 0) -> Tuple[List[Engine], List[Engine]]:
    """(orphans of dead orchestrators on this port or of this experiment, engines of live runs on this port)."""
    orphans: List[Engine] = []
    live: List[Engine] = []
    seen: set[int] = set()
    for engine in marked_engines():
        same_port = port is not None and engine.port == str(port)
        same_exp = bool(experiment_dir) and engine.experiment == experiment_dir
        if not (same_port or same_exp) or engine.pgid in seen:
            continue
        seen.add(engine.pgid)
        if engine.orphan:
            orphans.append(engine)
        elif same_port and engine.orchestrator != orchestrator:
            live.append(engine)
    return orphans, live


# --- the whole preflight --------------------------------------------------------------------


@dataclass
class Spec:
    engine_argv: List[str] = field(default_factory=list)
    engine_env_var: str = "ENGINE_PYTHON"
    client_python: Optional[str] = None
    client_module: Optional[str] = None
    model: Optional[str] = None
    host: str = "127.0.0.1"
    port: Optional[int] = None
    accelerator_kind: str = "none"
    accelerator_count: int = 0
    hardware_auto: bool = False
    platform_given: bool = True
    detected_platform: Optional[str] = None
    expected_platform: Optional[str] = None
    docker_image: Optional[str] = None
    disk_dir: Optional[str] = None
    disk_gb: float = 1.0
    experiment_dir: Optional[str] = None
    stop_stale: bool = True
    grace_s: float = 30.0
    orchestrator: int = 0


@dataclass
class Outcome:
    problems: List[Problem] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


def run_preflight(spec: Spec) -> Outcome:
    out = Outcome()
    if not spec.platform_given and spec.detected_platform and spec.expected_platform \
            and spec.detected_platform != spec.expected_platform:
        out.problems.append(Problem(
            f"platform detected as {spec.detected_platform}, but this experiment's directory is for "
            f"{spec.expected_platform}",
            f"run it on a {spec.expected_platform} machine, or give PLATFORM={spec.detected_platform} "
            "OTHER_PLATFORM=1 to run it here anyway", fatal=True))
    checks: List[Callable[[], List[Problem]]] = []
    engine = interpreter_of(spec.engine_argv) if spec.engine_argv else None
    if engine is not None:
        checks.append(lambda: check_interpreter("engine", engine, spec.engine_env_var))
    if spec.client_python:
        client = Interpreter(spec.client_python, module=spec.client_module)
        checks.append(lambda: check_interpreter("client", client, "CLIENT_PYTHON"))
    if spec.model:
        model = spec.model
        checks.append(lambda: check_model(model, engine.container if engine else None))
    if spec.accelerator_kind != "none":
        checks.append(lambda: check_accelerators(spec.accelerator_kind, spec.accelerator_count, spec.hardware_auto,
                                                 spec.platform_given))
    if spec.docker_image:
        image = spec.docker_image
        checks.append(lambda: check_docker_image(image))
    if spec.disk_dir:
        disk_dir = spec.disk_dir
        checks.append(lambda: check_disk(disk_dir, spec.disk_gb))
    with ThreadPoolExecutor(max_workers=max(1, len(checks))) as pool:
        for problems in pool.map(lambda check: check(), checks):
            out.problems.extend(problems)
    if spec.port is not None or spec.experiment_dir:
        orphans, live = stale_engines(spec.port, spec.experiment_dir, spec.orchestrator)
        for eng in orphans:
            what = (f"stale engine pid {eng.pid} (process group {eng.pgid}, port {eng.port}, run {eng.run_dir}) "
                    f"left by orchestrator {eng.orchestrator}, which is gone")
            if spec.stop_stale:
                stop_engine(eng, spec.grace_s)
                out.notes.append(f"stopped {what}")
            else:
                out.problems.append(Problem(what, f"stop it with: {stop_command(eng)}"))
        for eng in live:
            out.problems.append(Problem(
                f"port {eng.port} is used by the engine of a running experiment (run {eng.run_dir}, "
                f"orchestrator pid {eng.orchestrator})", "wait for it, stop it, or set PORT"))
        if spec.port is not None and not live and port_in_use(spec.host, spec.port):
            if not (orphans and spec.stop_stale and _wait_port_free(spec.host, spec.port, 10.0)):
                from .ownership import check

                held = check(spec.port, None)
                out.problems.append(Problem(
                    f"port {spec.port} on {spec.host} is in use" + (f" ({held.message})" if held.ok is False else ""),
                    f"stop what listens there (ss -ltnp 'sport = :{spec.port}'), or set PORT (PORT=auto: a free one)"))
    return out


def prompt_problem(phase: str, argv: Sequence[str], env: Mapping[str, str]) -> Optional[Problem]:
    """A speculative phase (its server command's speculative method) that would run on random prompts (the run's
    RUN_PROMPT_METHOD and RUN_PROMPT_TEXT, run.prompts.run_prompts): acceptance depends on the prompts, and random
    ones distort it (docs/METRICS.md, prompt tokens). A warning, never fatal."""
    import shlex

    from ..catalog.engines import config_from_server_args
    from .prompts import prompt_source

    method = env.get("RUN_PROMPT_METHOD")
    spec = config_from_server_args(shlex.join(argv)).get("spec_method") if argv else None
    if not spec or not method or method == "client-dataset" or env.get("RUN_PROMPT_TEXT"):
        return None
    source = prompt_source(method, None)
    return Problem(f"the speculative phase of engine {phase or '?'} ({spec}) would run on random prompts ({source}): acceptance "
                   "depends on the prompts and random ones distort it",
                   "set PROMPT_TEXT=shakespeare or PROMPT_TEXT=<a text or ShareGPT file> (PROMPT_TEXT=auto does for "
                   "a speculative phase unless PROMPT_METHOD or DATASET_* say otherwise)")


def _wait_port_free(host: str, port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while port_in_use(host, port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def engine_python_var(engine: str) -> str:
    """The platform key that names the Python of ENGINE: its row's python_var in the engine table (as
    lib::engine_launcher chooses it), ENGINE_PYTHON for an engine the table does not know."""
    from ..catalog.engines import engine as engine_row
    from ..contract.errors import ConfigError

    try:
        return f"{engine_row(engine).python_var} (or ENGINE_PYTHON)"
    except ConfigError:
        return "ENGINE_PYTHON"


def expected_platform(experiment_dir: str) -> Optional[str]:
    """The platform an experiment's directory suggests: experiments/<dir>/... -> platforms/*.env (None: no opinion)."""
    from .newexp import platform_for_dir

    path = Path(experiment_dir).resolve()
    parts = path.parts
    if "experiments" not in parts:
        return None
    i = len(parts) - 1 - parts[::-1].index("experiments")
    if i + 1 >= len(parts) - 0 or i + 2 > len(parts) - 1:
        return None
    repo = Path(*parts[:i])
    return platform_for_dir(repo, parts[i + 1])


def expected_count(hardware: str, accel_count: Optional[str], tp: Optional[str]) -> int:
    """ACCEL_COUNT, else N of HARDWARE `Nx ...`, else TP, else 1."""
    for text in (accel_count,):
        if text and text.isdigit():
            return int(text)
    m = re.match(r"\s*(\d+)\s*x", hardware or "")
    if m:
        return int(m.group(1))
    if tp and tp.isdigit():
        return int(tp)
    return 1


def lines(items: Iterable[Problem]) -> List[str]:
    return [p.line() for p in items]
