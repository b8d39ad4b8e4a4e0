"""Energy per token and the per-accelerator figures (docs/METRICS.md#per-accelerator, #energy).

Power traces are written in the samplers' own formats: the header of the fake nvidia-smi run with the run loop's
query (scripts/common/lib.sh: lib::start_accel_sampler), the rows of the fake xpu-smi, with known times and
powers; the energy is then computed by hand.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pytest

from sskj_results.analysis.energy import MAX_GAP_S, PowerSamples, interactivity, per_output_token, window_energy
from sskj_results.analysis.rundata import load_run_data
from sskj_results.analysis.slo import resolve_slo
from sskj_results.catalog.engines import data_parallel
from sskj_results.contract.io import load_run
from sskj_results.contract.models import Config, Metadata
from sskj_results.ingest.metadata import write_metadata
from sskj_results.ingest.parse_run import parse_run_dir
from sskj_results.contract.errors import RawFormatError
from sskj_results.render.report import render_report, section_text
from sskj_results.ingest.power import accelerators_of, nvidia_power_samples, xpu_power_samples

from .conftest import RAW

FAKES = Path(__file__).parent / "fakes" / "bin"
QUERY = "--query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,power.draw"
END = datetime(2026, 7, 8, 12, 0, 30).astimezone().timestamp()  # when the client ended (client_stats ended_at)
DURATION = 2.987082495000095  # the raw file's `duration`
OUTPUT_TOKENS = 640  # the raw file's 20 successful requests x 32 output tokens


def _samples(trace: dict[int, Sequence[tuple[float, float]]]) -> PowerSamples:
    rows = [(t, d, p) for d, points in trace.items() for t, p in points]
    return PowerSamples("nvidia-smi", np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
                        np.array([r[2] for r in rows]))


def test_energy_of_a_ramp_and_a_constant_device_is_the_hand_computed_integral() -> None:
    # device 0: 100 + 10 t W, device 1: 200 W, sampled every second from t = 0 to 10; window [2.5, 7.5]
    trace = {0: [(t, 100.0 + 10 * t) for t in range(11)], 1: [(t, 200.0) for t in range(11)]}
    energy = window_energy(_samples(trace), 2.5, 7.5, served=[0, 1])
    # by hand: device 0 100 * 5 + 5 * (7.5^2 - 2.5^2) = 750 J (trapezoids are exact on a line), device 1 1000 J
    assert energy.energy_j == pytest.approx(1750.0)
    assert (energy.reason, energy.devices, energy.max_gap_s, energy.samples) == (None, (0, 1), 1.0, 14)
    assert window_energy(_samples(trace), 2.5, 7.5, served=[1]).energy_j == pytest.approx(1000.0)
    j_per_token, per_kwh = per_output_token(1750.0, 700)
    assert (j_per_token, per_kwh) == (2.5, pytest.approx(700 * 3.6e6 / 1750.0))
    assert interactivity(8.0) == 125.0 and interactivity(None) is None and interactivity(0.0) is None


@pytest.mark.parametrize(("trace", "served", "reason"), [
    ({0: [(t, 100.0) for t in (0, 1, 2, 8, 9, 10)]}, [0], "device 0: a gap of 6.0 s between power samples (limit 5 s)"),
    ({0: [(t, 100.0) for t in range(11)]}, [0, 1], "device(s) 1 served the phase but were not sampled (nvidia-smi)"),
    ({0: [(t, 100.0) for t in range(4, 11)]}, [0], "device 0: samples start 1.5 s after the benchmark window"),
    ({0: [(t, 100.0) for t in range(0, 6)]}, [0], "device 0: samples end 2.5 s before the benchmark window ends"),
    ({0: [(t, 100.0 if t != 5 else float("nan")) for t in range(11)]}, [0], "nvidia-smi reported no power for device 0"),
    ({0: [(t, 100.0) for t in range(11)]}, [], "which devices served the phase is unknown"),
])
def test_samples_unfit_for_energy_give_none_with_the_reason(trace: dict[int, Sequence[tuple[float, float]]],
                                                             served: list[int], reason: str) -> None:
    energy = window_energy(_samples(trace), 2.5, 7.5, served=served)
    assert (energy.energy_j, energy.reason) == (None, reason)
    assert MAX_GAP_S == 5.0  # docs/METRICS.md#energy states this limit


def test_a_gap_of_exactly_the_limit_is_valid_and_one_just_beyond_it_is_not() -> None:
    # samples at 0, 1, 2, 7, 8, 9, 10 s: the gap 2 -> 7 is exactly MAX_GAP_S (5 s), allowed (gaps <= 5 s are valid)
    exact = {0: [(t, 100.0) for t in (0, 1, 2, 7, 8, 9, 10)]}
    energy = window_energy(_samples(exact), 2.5, 7.5, served=[0])
    assert (energy.energy_j, energy.reason, energy.max_gap_s) == (pytest.approx(500.0), None, MAX_GAP_S)
    beyond = {0: [(t, 100.0) for t in (0, 1, 2, 7.001, 8, 9, 10)]}
    energy = window_energy(_samples(beyond), 2.5, 7.5, served=[0])
    assert (energy.energy_j, energy.reason) == (None, "device 0: a gap of 5.0 s between power samples (limit 5 s)")


def test_accelerators_come_from_the_phase_command() -> None:
    meta = Metadata(experiment="e", run_id="r", model="m", timestamp=None)
    sglang = "python -m sglang.launch_server --model-path m --tp 4 --dp-size 2"
    assert accelerators_of(meta, Config(tp=4, server_args=sglang)) == (8, "tp x dp", tuple(range(8)))
    vllm = "vllm serve m --tensor-parallel-size 2"
    assert accelerators_of(meta, Config(tp=2, server_args=vllm)) == (2, "tp x dp", (0, 1))
    assert data_parallel("vllm serve m -tp 2 --data-parallel-size 4") == 4
    assert data_parallel("bash run.sh") is None
    assert accelerators_of(meta, Config(tp=2, server_args="srun bash node.sh")) == (2, "tp", (0, 1))
    given = meta.model_copy(update={"devices": "CUDA_VISIBLE_DEVICES=4,5,6,7"})
    assert accelerators_of(given, Config(tp=4)) == (4, "devices", (4, 5, 6, 7))
    nodes = meta.model_copy(update={"nodes": 2, "gpus_per_node": 8})
    assert accelerators_of(nodes, Config(tp=16)) == (16, "nodes x gpus_per_node", ())
    assert accelerators_of(meta, Config()) == (None, None, ())


# ---------------------------------------------------------------- through parse, with the samplers' formats


def _nvidia_header() -> str:
    out = subprocess.run([str(FAKES / "nvidia-smi"), QUERY, "--format=csv,nounits"], capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()[0]


def _nvidia_csv(power: dict[int, float], times: Sequence[float]) -> str:
    lines = [_nvidia_header()]
    for t in times:
        stamp = datetime.fromtimestamp(t).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        lines += [f"{stamp}, {d}, 50, 1024, 143771, {w:.2f}" for d, w in power.items()]
    return "\n".join(lines) + "\n"


def _run(tmp_path: Path, server_args: str, devices: Optional[str] = None, price: Optional[float] = None) -> Path:
    run = tmp_path / "run"
    meta: dict[str, object] = {"experiment": "e", "model": "m", "engine": "vllm", "chip": "nvidia_h200", "run_id": "r1"}
    if devices:
        meta["devices"] = devices
    if price is not None:
        meta["price_per_accel_hour"] = price
    write_metadata(run, meta, {"server_args": server_args}, detect=False)
    (run / "raw_outputs").mkdir()
    shutil.copy(RAW / "vllm_0705_2_128_32.jsonl", run / "raw_outputs" / "h200_vllm_0705_2_128_32.jsonl")
    (run / "client_stats").mkdir()
    (run / "client_stats" / "h200_vllm_0705_2_128_32.json").write_text(json.dumps(
        {"stem": "h200_vllm_0705_2_128_32", "wall_s": 9.0, "user_cpu_s": 1.0, "system_cpu_s": 0.1,
         "started_at": datetime.fromtimestamp(END - 9).astimezone().isoformat(timespec="seconds"),
         "ended_at": datetime.fromtimestamp(END).astimezone().isoformat(timespec="seconds")}))
    (run / "gpu_logs").mkdir()
    return run


def _log(run: Path, text: str, suffix: str = ".csv") -> None:
    (run / "gpu_logs" / f"h200_vllm_0705_2_128_32{suffix}").write_text(text)


TIMES = [END - 6 + 0.5 * i for i in range(15)]  # every 0.5 s from 6 s before the end to 1 s after it


def test_parse_energy_per_token_equals_the_hand_computed_value(tmp_path: Path) -> None:
    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2", devices="CUDA_VISIBLE_DEVICES=2,3", price=2.0)
    # eight devices sampled (the sampler queries every device); only 2 and 3 served the phase
    _log(run, _nvidia_csv({d: (100.0 if d == 2 else 300.0) if d in (2, 3) else 700.0 for d in range(8)}, TIMES))
    scenario = parse_run_dir(run).results.scenarios[0]
    energy = 400.0 * DURATION  # by hand: (100 + 300) W over the client's duration
    assert (scenario.accelerators, scenario.accelerators_source) == (2, "devices")
    assert scenario.energy_j == pytest.approx(energy)
    assert scenario.joules_per_output_token == pytest.approx(energy / OUTPUT_TOKENS)
    assert scenario.output_tokens_per_kwh == pytest.approx(OUTPUT_TOKENS * 3.6e6 / energy)
    assert scenario.output_throughput_per_accel == pytest.approx(scenario.output_token_throughput / 2)
    assert scenario.total_throughput_per_accel == pytest.approx(scenario.total_token_throughput / 2)
    assert scenario.interactivity == pytest.approx(1000 / scenario.latencies.tpot_ms.mean)
    assert scenario.cost_per_million_output_tokens == pytest.approx(2.0 * 2 / (scenario.output_token_throughput * 3600) * 1e6)
    power = scenario.power
    assert power is not None and power.valid and power.reason is None
    assert (power.sampler, power.window_source, power.devices, power.max_gap_s) == ("nvidia-smi", "client_stats", [2, 3], 0.5)
    assert power.window_s == pytest.approx(DURATION)
    assert load_run(run).scenarios[0].energy_j == pytest.approx(energy)  # what was written


@pytest.mark.parametrize(("times", "devices", "reason"), [
    ([t for t in TIMES if not END - 5.5 < t < END + 0.5], "CUDA_VISIBLE_DEVICES=0,1",
     "device 0: a gap of 6.0 s between power samples (limit 5 s)"),
    (TIMES, "CUDA_VISIBLE_DEVICES=0,1,9", "device(s) 9 served the phase but were not sampled (nvidia-smi)"),
    ([t for t in TIMES if t >= END - 2], "CUDA_VISIBLE_DEVICES=0,1",
     "device 0: samples start 1.0 s after the benchmark window"),
])
def test_parse_with_an_unfit_trace_leaves_energy_null_with_the_reason(tmp_path: Path, times: list[float],
                                                                       devices: str, reason: str) -> None:
    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2", devices=devices)
    _log(run, _nvidia_csv({d: 200.0 for d in range(8)}, times))
    scenario = parse_run_dir(run).results.scenarios[0]
    assert scenario.power is not None
    assert (scenario.energy_j, scenario.joules_per_output_token, scenario.output_tokens_per_kwh) == (None, None, None)
    assert (scenario.power.valid, scenario.power.reason) == (False, reason)
    assert scenario.output_throughput_per_accel is not None  # per-accelerator throughput needs no power
    data = load_run_data(run)
    section = section_text(render_report(data, data.results.slo or resolve_slo("S2"), False), "per-accelerator")
    assert f"Energy unknown:\n\n- {scenario.name}: {reason}" in section
    row = next(line for line in section.splitlines() if line.startswith(f"| {scenario.name} "))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[1] == str(devices.count(",") + 1)
    # J/OutTok, OutTok/kWh: unknown, never 0; said once, as no scenario has them, instead of columns of `unknown`
    assert "Unknown for every scenario: J/OutTok, OutTok/kWh (not 0)." in section
    assert "J/OutTok" not in row and "unknown" not in cells


def test_a_gap_within_the_limit_keeps_the_energy(tmp_path: Path) -> None:
    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2")
    _log(run, _nvidia_csv({d: 200.0 for d in range(8)}, [t for t in TIMES if not END - 4.5 < t < END - 0.5]))
    scenario = parse_run_dir(run).results.scenarios[0]
    assert scenario.power is not None and scenario.power.valid and scenario.power.max_gap_s == 4.0
    assert scenario.energy_j == pytest.approx(2 * 200.0 * DURATION)


def _xpu_log(times: Sequence[float], with_power: bool = True) -> str:
    table = subprocess.run([str(FAKES / "xpu-smi")], capture_output=True, text=True, check=True,
                           env={"PATH": "/usr/bin:/bin", "FAKE_XPU_COUNT": "8"}).stdout
    if not with_power:
        table = table.replace("120W / 400W", "N/A")
    return "".join(f"### {datetime.fromtimestamp(t).astimezone().isoformat(timespec='seconds')}\n{table}" for t in times)


def test_xpu_smi_samples_read_like_nvidia_smi_and_a_sampler_without_power_says_so(tmp_path: Path) -> None:
    run = _run(tmp_path, "python -m sglang.launch_server --model-path m --tp 4")
    _log(run, _xpu_log([END - 5 + i for i in range(7)]), ".xpu-smi.log")  # every second, 120 W per device
    scenario = parse_run_dir(run).results.scenarios[0]
    assert scenario.power is not None and scenario.power.sampler == "xpu-smi"
    assert scenario.power.devices == [0, 1, 2, 3]
    assert scenario.energy_j == pytest.approx(4 * 120.0 * DURATION)
    _log(run, _xpu_log([END - 5 + i for i in range(7)], with_power=False), ".xpu-smi.log")
    scenario = parse_run_dir(run).results.scenarios[0]
    assert scenario.power is not None and scenario.power.reason == "xpu-smi reported no power for device 0"
    assert scenario.energy_j is None
    samples = xpu_power_samples(_xpu_log([END]), "x.log")
    assert samples.devices.tolist() == list(range(8)) and samples.power_w.tolist() == [120.0] * 8
    # the sampler's own `date "+%Y-%m-%dT%H:%M:%S%z"` form (scripts/common/lib.sh)
    stamp = subprocess.run(["date", "-d", f"@{int(END)}", "+%Y-%m-%dT%H:%M:%S%z"], capture_output=True, text=True,
                           check=True).stdout.strip()
    table = _xpu_log([END]).split("\n", 1)[1]
    assert xpu_power_samples(f"### {stamp}\n{table}", "x.log").times.tolist() == [END] * 8
    with pytest.raises(RawFormatError, match=r"x.log:1: 'yesterday' is not an ISO-8601 time"):
        xpu_power_samples(f"### yesterday\n{table}", "x.log")


def test_a_run_without_a_window_record_says_why(tmp_path: Path) -> None:
    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2")
    (run / "client_stats" / "h200_vllm_0705_2_128_32.json").unlink()
    _log(run, _nvidia_csv({0: 100.0, 1: 100.0}, TIMES))
    scenario = parse_run_dir(run).results.scenarios[0]
    assert scenario.power is not None and scenario.energy_j is None
    assert scenario.power.reason is not None and "no record of when the benchmark ran" in scenario.power.reason


def test_a_log_cut_off_mid_line_reads_like_a_whole_one() -> None:
    whole = _nvidia_csv({0: 100.0, 1: 200.0}, TIMES)
    cut = whole + "2026/07/08 12:00:31.000, 0, 5"  # the sampler stopped while writing
    a, b = nvidia_power_samples(whole, "a.csv"), nvidia_power_samples(cut, "b.csv")
    assert a.times.tolist() == b.times.tolist() and a.power_w.tolist() == b.power_w.tolist()
    assert a.power_w.tolist()[:2] == [100.0, 200.0] and a.times[0] == pytest.approx(TIMES[0])
    with pytest.raises(RawFormatError, match=r"b.csv:1: no power.draw column"):
        nvidia_power_samples("timestamp, index\n2026/07/08 12:00:31.000, 0\n", "b.csv")
    with pytest.raises(RawFormatError, match=r"c.csv: a timestamp is not"):
        nvidia_power_samples(whole.replace("2026/", "2026-"), "c.csv")


def test_a_run_parsed_before_power_records_is_read_again(tmp_path: Path) -> None:
    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2")
    _log(run, _nvidia_csv({0: 100.0, 1: 100.0}, TIMES))
    first = parse_run_dir(run)
    assert first.files_read == 1 and first.results.scenarios[0].power is not None
    data = json.loads((run / "results.json").read_text())
    data["scenarios"][0]["power"] = None  # as an older sskj-results wrote it
    (run / "results.json").write_text(json.dumps(data))
    again = parse_run_dir(run)
    assert again.files_read == 1 and again.results.scenarios[0].energy_j == pytest.approx(200.0 * DURATION)
    assert parse_run_dir(run).files_reused == 1  # then reused as before


def test_the_platform_price_reaches_the_metadata() -> None:
    from sskj_results.run.phase import metadata_meta

    args = metadata_meta({"PRICE_PER_ACCEL_HOUR": "2.5", "EXPERIMENT": "e"}, {})
    assert args[args.index("price_per_accel_hour=2.5") - 1] == "--meta"


@pytest.mark.parametrize("text", [
    "timestamp, index, power.draw [W]\n9999/12/31 23:59:59.999, 0, 100\n",
    "timestamp, index, power.draw [W]\n2026/13/45 12:00:00.000, 0, 100\n",
    "timestamp, index\n2026/07/08 12:00:00.000, 0\n",
    "\x00\x01garbage",
])
def test_a_bad_power_log_costs_the_energy_not_the_scenario(tmp_path: Path, text: str) -> None:
    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2")
    _log(run, text)
    outcome = parse_run_dir(run)
    assert not outcome.problems and len(outcome.results.scenarios) == 1
    scenario = outcome.results.scenarios[0]
    assert scenario.energy_j is None and scenario.power is not None and scenario.power.reason
    assert scenario.output_throughput_per_accel is not None


def test_the_users_price_is_shown_only_when_given(tmp_path: Path) -> None:
    for price in (None, 2.0):
        run = _run(tmp_path / str(price), "vllm serve m --tensor-parallel-size 2", price=price)
        parse_run_dir(run)
        data = load_run_data(run)
        section = section_text(render_report(data, data.results.slo or resolve_slo("S2"), False), "per-accelerator")
        assert ("Price/MOutTok" in section) is (price is not None)
        assert ("a price the user gave, not a measurement" in section) is (price is not None)


def test_validate_holds_the_figures_to_what_they_are_computed_from(tmp_path: Path) -> None:
    from sskj_results.analysis.validate import validate_data

    run = _run(tmp_path, "vllm serve m --tensor-parallel-size 2")
    _log(run, _nvidia_csv({0: 100.0, 1: 100.0}, TIMES))
    parse_run_dir(run)
    data = json.loads((run / "results.json").read_text())
    assert [p for p in validate_data(data, "results.json") if "accel" in p.path or "energy" in p.path
            or "kwh" in p.path] == []
    sc = data["scenarios"][0]
    sc["output_throughput_per_accel"] *= 2  # as if the whole server's throughput were one device's
    sc["power"]["valid"] = False
    sc["output_tokens_per_kwh"] *= 1.01
    found = {p.path: p.message for p in validate_data(data, "results.json")}
    assert found["scenarios[0].output_throughput_per_accel"].startswith("is not output_token_throughput / accelerators")
    assert found["scenarios[0].energy_j"].startswith("set without a valid power record")
    assert found["scenarios[0].output_tokens_per_kwh"] == "is not 3.6e6 / joules_per_output_token"
