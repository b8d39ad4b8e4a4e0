"""A dry run's plan of one phase, as paste-ready lines, and the commands the shell runs around the engine.

`phase-begin` hands the shell two plans (arrays of records.plan_words): BENCH_PLAN_BEFORE, printed
before the platform's patches are applied (the phase's heading, its directories, metadata, prompt sets,
the container step of a Docker platform), and BENCH_PLAN, printed after them (the engine's start and
health wait, every scenario's commands, the engine's stop, the phase's end). Lines that mix shell text
with words are `%` items: literal text and words to quote in turn, quoted by the shell's own printf %q
(scripts/common/lib.sh: lib::print_plan), so a pasted line reads exactly as bash would have written it.

It also plans, for a real run as for a dry one, the phase's config as its metadata records it, the command
that creates the platform's container (BENCH_CONTAINER_CREATE) and the phase's end (BENCH_END_ARGS).
Pure: no I/O.
"""

from __future__ import annotations

from typing import Mapping, Sequence, Union

from ..contract.redact import redact_argv

Item = tuple[str, list[str]]
Segment = Union[str, Sequence[str]]  # literal text, or words to quote (separated by one blank)
RUN_SUBDIRS = ("raw_outputs", "logs", "gpu_logs", "server_metrics")


def parts_line(*segments: Segment) -> Item:
    """A `%` item: literal text and words to quote, in turn (it starts and ends with literal text; words of one
    segment are separated by a blank)."""
    parts = [""]
    for segment in segments:
        if isinstance(segment, str):
            parts[-1] += segment
            continue
        for i, word in enumerate(segment):
            if i:
                parts[-1] += " "
            parts += [word, ""]
    return "%", parts


def multinode(env: Mapping[str, str]) -> bool:
    """NNODES > 1: the engine spans nodes (scripts/common/multinode.sh)."""
    nodes = env.get("NNODES") or "1"
    return nodes.isdigit() and int(nodes) > 1


def container_create(env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The command that creates the platform's container (`docker run -d ... sleep infinity`) and the
    warnings of what it leaves out of DOCKER_RUN_ARGS: --shm-size beside --ipc=host (which shares the host's
    /dev/shm: --shm-size is then void, and Podman refuses the pair). --entrypoint: an image's own
    ENTRYPOINT would take `sleep infinity` as its arguments."""
    given = (env.get("DOCKER_RUN_ARGS") or "").split()
    args, warnings = [], []
    for word in given:
        if word.startswith("--shm-size=") and "--ipc=host" in given:
            warnings.append(f"DOCKER_RUN_ARGS: {word} dropped (--ipc=host shares the host's /dev/shm)")
            continue
        args.append(word)
    name = env.get("CONTAINER_NAME", "")
    return ["docker", "run", "-d", "--name", name, *args, "--entrypoint", "sleep", env.get("DOCKER_IMAGE", ""),
            "infinity"], warnings


def end_args(env: Mapping[str, str], run_dir: str, phases: int) -> list[str]:
    """`sskj-results phase-end` of a phase: with several phases also the run set's index and its comparison's
    baseline, title and matrix."""
    args = ["phase-end", run_dir]
    if phases > 1:
        args += ["--runset", env.get("RESULT_ROOT", "")]
        for option, key in (("--baseline", "COMPARE_BASELINE"), ("--title", "COMPARE_TITLE"),
                            ("--matrix", "COMPARE_MATRIX")):
            if env.get(key):
                args += [option, env[key]]
    return args


def config_args(env: Mapping[str, str], server_line: str, phases: int, more: Sequence[str]) -> list[str]:
    """The `metadata` options of a phase's config besides the client's: port, warmup requests, the variables
    RECORD_CONFIG names (read from the environment by `metadata --record-env`: lower-cased keys, a secret's
    value recorded as <redacted>), the startup variables a platform's allow-list let through (SSKJ_STARTUP_VARS), the
    server command as the shell quoted it (SERVER_LINE; with several phases also as phase<N>_server_args),
    MORE (a multi-node engine's: every rank's command, the nodes), and dry_run=true for a dry run."""
    args = ["--config", f"port={env.get('PORT', '')}", "--config", f"warmup_requests={env.get('WARMUP_REQUESTS', '')}",
            "--record-env", env.get("RECORD_CONFIG", "")]
    if env.get("SSKJ_STARTUP_VARS"):
        args += ["--config", f"startup_vars={env['SSKJ_STARTUP_VARS']}"]
    args += ["--config", f"server_args={server_line}", *more]
    if phases > 1:
        args += ["--config", f"phase{env.get('PHASE_INDEX', '')}_server_args={server_line}"]
    if env.get("DRY_RUN", "0") == "1":
        args += ["--config", "dry_run=true"]
    return args


def heading(env: Mapping[str, str], run_dir: str) -> list[Item]:
    """The phase's first lines: which phase, its run directory, the directories the run makes."""
    return [("#", [f"# phase {env.get('PHASE_INDEX', '')}: {env.get('PHASE_NAME', '')} "
                   f"(engine {env.get('PHASE_ENGINE', '')}) -> {run_dir}"]),
            ("$", ["mkdir", "-p", *(f"{run_dir}/{sub}" for sub in RUN_SUBDIRS)])]


def container_step(env: Mapping[str, str], create: Sequence[str]) -> list[Item]:
    """What the run does with a Docker platform's container (bench::ensure_container)."""
    name = env.get("CONTAINER_NAME", "")
    if env.get("AUTO_START_CONTAINER", "0") == "1":
        text = f"# the container {name}: started when stopped, created when missing (AUTO_START_CONTAINER=1)"
    else:
        text = (f"# the container {name}: started when stopped; when missing the run refuses "
                "(AUTO_START_CONTAINER=1 creates it, as this line does)")
    return [("#", [text]), parts_line(["docker", "start", name], " || ", redact_argv(list(create)))]


def server_start(env: Mapping[str, str], run_dir: str, server_line: str, results_cmd: str) -> list[Item]:
    """How the run starts the engine (lib::start_server, lib::wait_for_health): in the background in its own
    process group, its output in a log under logs/, then the health wait; SERVER_LOG and SERVER_PID carry
    over to the stop's line."""
    timeout = env.get("HEALTH_TIMEOUT_S", "")
    url = f"http://{env.get('SERVER_HOST', '')}:{env.get('PORT', '')}/health"
    return [
        ("#", [f"# the engine, in the background in its own process group (its log in logs/), then its health "
               f"(at most {timeout}s)"]),
        parts_line("SERVER_LOG=", [f"{run_dir}/logs/{env.get('PHASE_NAME', '')}"], "_$(date +%Y%m%d_%H%M%S).log"),
        ("#", [f'setsid {server_line} >>"$SERVER_LOG" 2>&1 </dev/null & SERVER_PID=$!']),
        parts_line([results_cmd, "wait-health", url], ' --pid "$SERVER_PID" --timeout ', [timeout],
                   ' --log "$SERVER_LOG"'),
    ]


def server_stop(env: Mapping[str, str], lib_dir: str) -> list[Item]:
    """How the run stops the engine (lib::stop_server: TERM to its process group and, on Docker, to the
    processes tagged with the port in the container; KILL after STOP_GRACE_S), as one line that runs
    lib::stop_server itself."""
    grace = env.get("STOP_GRACE_S") or "30"
    assignments = [f"STOP_GRACE_S={grace}"]
    if (env.get("RUNTIME") or "native") == "docker":
        assignments += [f"LIB_SERVER_CONTAINER={env.get('CONTAINER_NAME', '')}", f"LIB_SERVER_TAG=sskj-{env.get('PORT', '')}"]
        if multinode(env):
            assignments.append(f"LIB_SERVER_NODES={env['NNODES']}")
    return [("#", [f"# stop the engine as the run does (TERM, then KILL after {grace}s)"]),
            parts_line('LIB_SERVER_PID="$SERVER_PID" ', assignments,
                       " bash -c 'source \"$1\" && lib::stop_server' stop ", [f"{lib_dir}/lib.sh"])]


def phase_end(end: Sequence[str], results_cmd: str) -> list[Item]:
    return [("#", ["# parse, report, validate (and the run set's index)"]), ("$", redact_argv([results_cmd, *end]))]
