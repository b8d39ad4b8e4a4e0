"""The seed-002 DSpark row as the team has it: summaries only, files named after `dspark`, the seed's server
commands given with `metadata --config`, then `compare`. The draft bound must flag c2_i131072_o256 (vLLM TPOT mean
7.08 ms vs DSpark 1.00 ms with 5 draft tokens: 7.08x > 1 + 5) and no other row, in comparison.json, on its row of
comparison.md's side-by-side table and in its Speculative decoding section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.catalog.engines import engine, recorded_engine
from sskj_results.cli import main
from sskj_results.contract.errors import ConfigError

SEED_TABLE = Path(__file__).parent / "data" / "compare" / "seed002_table.md"
MODEL = "/data/models/DeepSeek-V4-Flash"
# the seed's server commands (DSpark flags: `--spec-method dspark --spec-model <model> --spec-tokens 5`)
COMMANDS = {
    "sglang": f"python -m sglang.launch_server --model-path {MODEL} --tp-size 8",
    "vllm": f"vllm serve {MODEL} --tensor-parallel-size 8",
    "dspark": f"vllm serve {MODEL} --tensor-parallel-size 8 --spec-method dspark --spec-model {MODEL}-DSpark "
              "--spec-tokens 5",
}


def write_seed_summaries(raw: Path) -> int:
    """One sglang.bench_serving summary line per row of the seed table (no per-request data), in files named as the
    team names them: `{backend}_0707_{concurrency}_{input}_{output}.jsonl` (backend sglang, vllm or dspark)."""
    raw.mkdir(parents=True)
    count = 0
    for line in SEED_TABLE.read_text(encoding="utf-8").splitlines()[2:]:
        name, backend, conc, inp, out, rps, otps, t95, t99, tmean, tp95, tp99, e99, _ = \
            [c.strip() for c in line.strip("|").split("|")]
        done = 4 * int(conc)
        run = {"backend": "sglang" if backend == "sglang" else "vllm", "dataset_name": "random",
               "max_concurrency": int(conc), "random_input_len": int(inp), "random_output_len": int(out),
               "completed": done, "duration": done / float(rps), "request_throughput": float(rps),
               "output_throughput": float(otps), "p95_ttft_ms": float(t95), "p99_ttft_ms": float(t99),
               "mean_tpot_ms": float(tmean), "p95_tpot_ms": float(tp95), "p99_tpot_ms": float(tp99),
               "p99_e2e_latency_ms": float(e99)}
        (raw / f"{backend}_0707_{conc}_{inp}_{out}.jsonl").write_text(json.dumps(run) + "\n")
        count += 1
    return count


def invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def imported_seed(tmp_path: Path, *extra: str) -> dict[str, Path]:
    assert write_seed_summaries(tmp_path / "raw") == 63
    invoke("import-legacy", str(tmp_path / "raw"), "--out", str(tmp_path / "out"), "--chip", "h200",
           "--model", MODEL, *extra)
    runs = {}
    for run in sorted((tmp_path / "out").iterdir()):
        backend = "dspark" if "dspark" in run.name else "sglang" if "sglang" in run.name else "vllm"
        invoke("metadata", str(run), "--config", f"server_args={COMMANDS[backend]}")
        runs[backend] = run
    return runs


def compared(tmp_path: Path, runs: dict[str, Path], *extra: str) -> tuple[dict, str]:
    out = tmp_path / "cmp"
    invoke("compare", str(runs["vllm"]), str(runs["sglang"]), str(runs["dspark"]), "--out", str(out), "--no-plots",
           *extra)
    return (json.loads((out / "comparison.json").read_text(encoding="utf-8")),
            (out / "comparison.md").read_text(encoding="utf-8"))


def test_the_teams_names_of_dspark_resolve_to_its_row_and_family() -> None:
    for name in ("dspark", "DSpark", "vllm-dspark", "vllm_dspark", "dspark-vllm", "vllm-dspark-0.3", "dspark-0.3",
                 "vllm_dspark2"):
        row = recorded_engine(name)
        assert (row.name, row.lineage) == ("vllm-dspark", "vllm"), name
    assert recorded_engine("vllm-0.11").name == "vllm" and recorded_engine("sglang-x").name == "sglang"
    # launching keeps its own names: an alias is a recorded name, not an ENGINE to start
    with pytest.raises(ConfigError, match="unknown engine 'dspark'"):
        engine("dspark")
    with pytest.raises(ConfigError, match="unknown engine 'tgi'"):
        recorded_engine("tgi")


def test_seed_002_summaries_flag_c2_i131072_o256_and_no_other_row(tmp_path: Path) -> None:
    runs = imported_seed(tmp_path)
    assert runs["dspark"].name.startswith("nvidia_h200_vllm-dspark")  # the file names' `dspark`, as its row
    doc, md = compared(tmp_path, runs, "--html")
    bounds = [(s["name"], b) for s in doc["scenarios"] for b in s["draft_bounds"]]
    assert len(bounds) == 21 and all(b["run"] == "vllm-dspark" and b["plain"] == "vllm" for _, b in bounds)
    beyond = [(name, b) for name, b in bounds if not b["ok"]]
    assert [name for name, _ in beyond] == ["c2_i131072_o256"]
    (_, b), = beyond
    assert b["speedup"] == pytest.approx(7.08) and b["bound"] == 6 and b["draft_tokens"] == 5
    assert "7.08x faster than vllm" in b["message"] and "1 + 5 = 6x" in b["message"]
    assert doc["draft_bound_unpaired"] == []
    # its row of the side-by-side table (the Draft bound column), and no other
    table = md.split("## Side-by-side results", 1)[1].split("\n## ", 1)[0]
    assert "| SLO | Accept len | Valid | Draft bound |" in table
    marked = [line for line in table.splitlines() if line.startswith("| c") and not line.endswith(" | - |")]
    assert len(marked) == 1 and marked[0].startswith("| c2_i131072_o256 | vllm-dspark | 2 | 131072 | 256 |")
    assert marked[0].endswith(" | 1.00 | 1.41 | 1.42 | 780.85 | ✅ | unknown ✖ |  | ⚠ TPOT 7.08x vllm > 1 + 5 |")  # Valid: none recorded
    assert "- Draft bound: `⚠ TPOT Sx PLAIN > 1 + k`" in md
    page = (tmp_path / "cmp" / "comparison.html").read_text(encoding="utf-8")
    assert page.count('<th class="left">Draft bound</th>') == 1  # the interactive table's column, one row marked
    assert page.count('<td class="left">⚠ TPOT 7.08x vllm &gt; 1 + 5</td>') == 1
    section = md.split("## Speculative decoding", 1)[1].split("\n## ", 1)[0]
    assert "1 of 21 beyond it" in section
    assert "- c2_i131072_o256, vllm-dspark: TPOT 7.08x faster than vllm (plain decoding), beyond the draft bound " \
           "1 + 5 = 6x" in section


def test_a_speculative_run_of_an_unknown_engine_is_said_to_be_unpaired(tmp_path: Path) -> None:
    runs = imported_seed(tmp_path)
    # the DSpark run under a name no engine row knows: no family, no pair, said so
    results = json.loads((runs["dspark"] / "results.json").read_text(encoding="utf-8"))
    results["metadata"].update({key: "myspec" for key in ("engine", "backend") if results["metadata"].get(key)})
    (runs["dspark"] / "results.json").write_text(json.dumps(results), encoding="utf-8")
    doc, md = compared(tmp_path, runs)
    assert all(not s["draft_bounds"] for s in doc["scenarios"])
    (line,) = doc["draft_bound_unpaired"]
    assert "'myspec' is no engine row's name or alias" in line and "held to no draft bound" in line
    assert f"- Unpaired: {line.split(':', 1)[0]}" in md


def test_a_run_recorded_as_dspark_by_metadata_is_paired_as_vllm_dspark(tmp_path: Path) -> None:
    runs = imported_seed(tmp_path)
    invoke("metadata", str(runs["dspark"]), "--meta", "engine=dspark")  # the seed's own name, as a user records it
    doc, _ = compared(tmp_path, runs)
    assert {r["label"]: r["engine"] for r in doc["runs"]}["dspark"] == "dspark"
    beyond = [(s["name"], b["run"]) for s in doc["scenarios"] for b in s["draft_bounds"] if not b["ok"]]
    assert beyond == [("c2_i131072_o256", "dspark")] and doc["draft_bound_unpaired"] == []
