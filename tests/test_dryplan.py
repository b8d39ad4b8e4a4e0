"""A dry run's plan of a phase and the commands around its engine (sskj_results/run/dryplan.py): the lines the
shell printed itself before (bench::print_server_start, print_server_stop, print_container_step), the container
command and the phase's end, now planned by `phase-begin`. Each `%` line is checked against bash's own printf."""

from __future__ import annotations

import subprocess

import pytest

from sskj_results.run import dryplan
from sskj_results.run.records import plan_words

TRICKY = "/runs/two words/it's $HOME"


def printed(item: tuple[str, list[str]]) -> str:
    """A `%` item as lib::print_plan prints it: literal text as it is, the words between quoted by printf %q."""
    kind, parts = item
    assert kind == "%" and len(parts) % 2 == 1, "literal text first and last, a quoted word between two"
    script = 'for ((j = 1; j <= $#; j++)); do if ((j % 2)); then printf "%s" "${!j}"; else printf "%q" "${!j}"; fi; done'
    return subprocess.run(["bash", "-c", script, "x", *parts], capture_output=True, text=True, check=True).stdout


def bash_printf(fmt: str, *args: str) -> str:
    return subprocess.run(["bash", "-c", 'printf "$@"', "x", fmt, *args], capture_output=True, text=True,
                          check=True).stdout


def test_a_parts_line_alternates_literal_text_and_words() -> None:
    kind, parts = dryplan.parts_line("A=", ["w 1"], "_tail ", ["x", "y z"], "")
    assert (kind, parts) == ("%", ["A=", "w 1", "_tail ", "x", " ", "y z", ""])
    assert dryplan.parts_line(["only"]) == ("%", ["", "only", ""])
    assert dryplan.parts_line("text") == ("%", ["text"])
    with pytest.raises(ValueError):
        plan_words([("?", ["x"])])
    assert plan_words([dryplan.parts_line("a", ["b"])]) == ["%", "3", "a", "b", ""]


def test_the_engine_start_reads_as_the_shell_wrote_it() -> None:
    env = {"HEALTH_TIMEOUT_S": "600", "SERVER_HOST": "127.0.0.1", "PORT": "30000", "PHASE_NAME": "sglang"}
    comment, log, start, health = dryplan.server_start(env, TRICKY, "python -m x --a 'b c'", "/v/bin/sskj-results")
    assert comment == ("#", ["# the engine, in the background in its own process group (its log in logs/), then "
                             "its health (at most 600s)"])
    assert printed(log) == bash_printf("SERVER_LOG=%q_$(date +%%Y%%m%%d_%%H%%M%%S).log", f"{TRICKY}/logs/sglang")
    assert start == ("#", ["setsid python -m x --a 'b c' >>\"$SERVER_LOG\" 2>&1 </dev/null & SERVER_PID=$!"])
    assert printed(health) == bash_printf('%q %q %q --pid "$SERVER_PID" --timeout %q --log "$SERVER_LOG"',
                                          "/v/bin/sskj-results", "wait-health", "http://127.0.0.1:30000/health", "600")


@pytest.mark.parametrize("runtime, nodes, assignments", [
    ("native", "1", ["STOP_GRACE_S=30"]),
    ("docker", "1", ["STOP_GRACE_S=30", "LIB_SERVER_CONTAINER=my box", "LIB_SERVER_TAG=sskj-30000"]),
    ("docker", "2", ["STOP_GRACE_S=30", "LIB_SERVER_CONTAINER=my box", "LIB_SERVER_TAG=sskj-30000",
                     "LIB_SERVER_NODES=2"]),
    ("native", "2", ["STOP_GRACE_S=30"]),  # a native engine has no container to stop on the other nodes
])
def test_the_engine_stop_names_what_lib_stop_server_reads(runtime: str, nodes: str, assignments: list[str]) -> None:
    env = {"RUNTIME": runtime, "NNODES": nodes, "CONTAINER_NAME": "my box", "PORT": "30000"}
    comment, line = dryplan.server_stop(env, "/repo/scripts/common")
    assert comment == ("#", ["# stop the engine as the run does (TERM, then KILL after 30s)"])
    fmt = "LIB_SERVER_PID=\"$SERVER_PID\" " + " ".join(["%q"] * len(assignments)) + \
        " bash -c 'source \"$1\" && lib::stop_server' stop %q"
    assert printed(line) == bash_printf(fmt, *assignments, "/repo/scripts/common/lib.sh")
    grace = dryplan.server_stop(dict(env, STOP_GRACE_S="5"), "/l")[0]
    assert grace == ("#", ["# stop the engine as the run does (TERM, then KILL after 5s)"])


def test_the_container_command_drops_shm_size_only_beside_ipc_host() -> None:
    env = {"CONTAINER_NAME": "c", "DOCKER_IMAGE": "img:1", "DOCKER_RUN_ARGS": "--ipc=host  --shm-size=64g\t-v /d:/d"}
    create, warnings = dryplan.container_create(env)
    assert create == ["docker", "run", "-d", "--name", "c", "--ipc=host", "-v", "/d:/d", "--entrypoint", "sleep",
                      "img:1", "infinity"]
    assert warnings == ["DOCKER_RUN_ARGS: --shm-size=64g dropped (--ipc=host shares the host's /dev/shm)"]
    kept, none = dryplan.container_create(dict(env, DOCKER_RUN_ARGS="--shm-size=64g"))
    assert "--shm-size=64g" in kept and none == []
    bare, _ = dryplan.container_create({"CONTAINER_NAME": "c", "DOCKER_IMAGE": "i"})
    assert bare == ["docker", "run", "-d", "--name", "c", "--entrypoint", "sleep", "i", "infinity"]


@pytest.mark.parametrize("auto, says", [("1", "created when missing (AUTO_START_CONTAINER=1)"),
                                        ("0", "when missing the run refuses (AUTO_START_CONTAINER=1 creates it")])
def test_the_container_step_starts_or_creates_with_secrets_redacted(auto: str, says: str) -> None:
    env = {"CONTAINER_NAME": "box", "DOCKER_IMAGE": "i", "AUTO_START_CONTAINER": auto,
           "DOCKER_RUN_ARGS": "-e HF_TOKEN=hf_secretvalue123"}
    create, _ = dryplan.container_create(env)
    comment, line = dryplan.container_step(env, create)
    assert comment[0] == "#" and says in comment[1][0] and comment[1][0].startswith("# the container box: ")
    text = printed(line)
    assert text.startswith("docker start box || docker run -d --name box -e ") and "hf_secretvalue123" not in text
    assert text.endswith(" --entrypoint sleep i infinity")


def test_the_phase_end_has_the_run_set_only_with_several_phases() -> None:
    env = {"RESULT_ROOT": "/r", "COMPARE_BASELINE": "sglang", "COMPARE_TITLE": "", "COMPARE_MATRIX": "a b"}
    assert dryplan.end_args(env, "/r", 1) == ["phase-end", "/r"]
    assert dryplan.end_args(env, "/r/phase1_sglang", 2) == ["phase-end", "/r/phase1_sglang", "--runset", "/r",
                                                           "--baseline", "sglang", "--matrix", "a b"]
    comment, command = dryplan.phase_end(["phase-end", "/r"], "/bin/sskj-results")
    assert comment == ("#", ["# parse, report, validate (and the run set's index)"])
    assert command == ("$", ["/bin/sskj-results", "phase-end", "/r"])


def test_the_heading_names_the_phase_and_its_directories() -> None:
    env = {"PHASE_INDEX": "2", "PHASE_NAME": "vllm", "PHASE_ENGINE": "vllm"}
    assert dryplan.heading(env, "/r/p") == [
        ("#", ["# phase 2: vllm (engine vllm) -> /r/p"]),
        ("$", ["mkdir", "-p", "/r/p/raw_outputs", "/r/p/logs", "/r/p/gpu_logs", "/r/p/server_metrics"])]
    assert dryplan.multinode({"NNODES": "2"}) and not dryplan.multinode({"NNODES": "1"})
    assert not dryplan.multinode({}) and not dryplan.multinode({"NNODES": "x"})


def test_the_phase_config_records_the_server_command_and_the_run_settings() -> None:
    env = {"PORT": "30000", "WARMUP_REQUESTS": "2", "RECORD_CONFIG": "A B", "PHASE_INDEX": "2"}
    assert dryplan.config_args(env, "python -m x", 1, []) == [
        "--config", "port=30000", "--config", "warmup_requests=2", "--record-env", "A B",
        "--config", "server_args=python -m x"]
    ranks = ["--config", "rank0_server_args=r0", "--meta", "nodes=2"]
    full = dryplan.config_args(dict(env, SSKJ_STARTUP_VARS="X=1", DRY_RUN="1"), "srun x", 3, ranks)
    assert full == ["--config", "port=30000", "--config", "warmup_requests=2", "--record-env", "A B",
                    "--config", "startup_vars=X=1", "--config", "server_args=srun x", *ranks,
                    "--config", "phase2_server_args=srun x", "--config", "dry_run=true"]
