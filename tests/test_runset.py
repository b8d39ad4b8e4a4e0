"""Run sets: the index of a multi-phase run directory, and every reader of results.json meeting one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.errors import ResultsError
from sskj_results.contract.io import load_run
from sskj_results.contract.runset import RunSet, load_run_set, write_run_set
from sskj_results.contract.schema import COMMITTED_RUN_SET_SCHEMA, REGENERATE_RUN_SET_COMMAND, run_set_schema_text

RUNS = Path(__file__).parent / "data" / "compare" / "runs"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def run_set(tmp_path, monkeypatch) -> Path:
    """results/20260707-100000/ with three phases, as the orchestrator lays them out."""
    root = tmp_path / "results" / "20260707-100000"
    for i, name in enumerate(("sglang", "vllm", "vllm_ngram"), start=1):
        shutil.copytree(RUNS / name, root / f"phase{i}_{name}")
    monkeypatch.chdir(tmp_path)
    return Path("results") / "20260707-100000"


def test_committed_run_set_schema_is_fresh():
    assert COMMITTED_RUN_SET_SCHEMA.read_text(encoding="utf-8") == run_set_schema_text(), (
        f"schema/runset.schema.json is stale; regenerate it with: {REGENERATE_RUN_SET_COMMAND}")


def test_runset_command_writes_the_index_in_phase_order_and_is_idempotent(run_set):
    (run_set / "phase10_late").mkdir()  # no results.json: not a phase yet
    result = invoke("runset", str(run_set))
    assert result.exit_code == 0, result.output
    assert result.output == (f"wrote {run_set}/results.json (run set of 3 phase(s): "
                             "phase1_sglang, phase2_vllm, phase3_vllm_ngram)\n")
    file = run_set / "results.json"
    data = json.loads(file.read_text())
    jsonschema.validate(data, json.loads(COMMITTED_RUN_SET_SCHEMA.read_text()))
    assert data["kind"] == "run-set"
    assert [p["dir"] for p in data["phases"]] == ["phase1_sglang", "phase2_vllm", "phase3_vllm_ngram"]
    assert data["phases"][2]["spec_method"] == "ngram" and data["phases"][0]["engine"] == "sglang"
    assert data["experiment"] == "dsv4_h200_sglang_vs_vllm" and data["run_id"] is None  # the fixtures' ids differ
    before = file.read_bytes()
    mtime = file.stat().st_mtime_ns
    assert invoke("runset", str(run_set)).exit_code == 0
    assert file.read_bytes() == before and file.stat().st_mtime_ns == mtime  # same phases: untouched
    # a new phase appears after the next phase ran; settings given once are kept
    assert invoke("runset", str(run_set), "--baseline", "phase2_vllm", "--matrix", "chat matrix").exit_code == 0
    shutil.copytree(RUNS / "vllm", run_set / "phase10_late", dirs_exist_ok=True)
    assert invoke("runset", str(run_set)).exit_code == 0
    rs = load_run_set(run_set)
    assert rs is not None
    assert [p.dir for p in rs.phases][-1] == "phase10_late"  # by phase number, not by name
    assert rs.baseline == "phase2_vllm" and rs.matrix == "chat matrix"


def test_runset_does_nothing_before_the_first_phase_and_never_replaces_a_run(tmp_path):
    empty = tmp_path / "r"
    empty.mkdir()
    result = invoke("runset", str(empty))
    assert result.exit_code == 0
    assert result.output == f"{empty}: nothing to index: no phase directory with a results.json yet\n"
    assert not (empty / "results.json").exists()
    single = tmp_path / "single"
    shutil.copytree(RUNS / "sglang", single)
    before = (single / "results.json").read_bytes()
    result = invoke("runset", str(single))
    assert result.exit_code == 0
    assert "its results.json is a run (a single-phase run needs no index)" in result.output
    assert (single / "results.json").read_bytes() == before
    shutil.copytree(RUNS / "vllm", single / "phase2_vllm")
    result = CliRunner().invoke(main, ["runset", str(single)])
    assert result.exit_code == 1
    assert "is a run's results.json, but" in result.stderr and "move that run into its own phase directory" in result.stderr
    assert (single / "results.json").read_bytes() == before


def test_explicit_phase_order_and_errors(run_set):
    result = invoke("runset", str(run_set), str(run_set / "phase3_vllm_ngram"), "phase1_sglang", "--baseline", "sglang")
    assert result.exit_code == 0, result.output
    rs = load_run_set(run_set)
    assert rs is not None and [p.dir for p in rs.phases] == ["phase3_vllm_ngram", "phase1_sglang"]
    assert rs.baseline == "phase1_sglang"  # COMPARE_BASELINE spelling: the phase name without phase<N>_
    # a baseline phase that has not run yet is kept, said, and resolved once it exists
    result = CliRunner().invoke(main, ["runset", str(run_set), "--baseline", "late"])
    assert result.exit_code == 0
    assert result.stderr == f"warning: baseline 'late' names no phase yet; `compare {run_set}` needs it\n"
    result = CliRunner().invoke(main, ["compare", str(run_set), "--out", "o", "--no-plots"])
    assert result.exit_code == 1 and "the index's baseline 'late' names no phase" in result.stderr
    shutil.copytree(RUNS / "vllm", run_set / "phase4_late")
    assert invoke("runset", str(run_set)).exit_code == 0
    rs = load_run_set(run_set)
    assert rs is not None and rs.baseline == "phase4_late"
    assert [p.dir for p in rs.phases] == ["phase1_sglang", "phase2_vllm", "phase3_vllm_ngram", "phase4_late"]
    result = CliRunner().invoke(main, ["runset", str(run_set), str(RUNS / "vllm")])
    assert result.exit_code == 2 and "not inside" in result.stderr


def test_load_run_on_an_index_says_what_to_do(run_set):
    write_run_set(run_set)
    with pytest.raises(ResultsError) as err:
        load_run(run_set)
    assert str(err.value) == (
        f"{run_set}/results.json: is the run-set index of a multi-phase run (phase1_sglang, phase2_vllm, "
        f"phase3_vllm_ngram), not one run; give a phase directory (e.g. {run_set}/phase1_sglang), or give "
        f"{run_set} to `sskj-results compare`, `report` or `validate`, which act on every phase")
    result = CliRunner().invoke(main, ["parse", str(run_set)])
    assert result.exit_code == 1
    assert "is the run-set index of a multi-phase run" in result.stderr
    assert "Traceback" not in result.output


def test_compare_a_run_set_compares_its_phases(run_set):
    write_run_set(run_set)
    result = invoke("compare", str(run_set), "--out", str(run_set), "--no-plots")
    assert result.exit_code == 0, result.output
    doc = json.loads((run_set / "comparison.json").read_text())
    assert [r["path"] for r in doc["runs"]] == [str(run_set / d) for d in
                                                 ("phase1_sglang", "phase2_vllm", "phase3_vllm_ngram")]
    assert doc["baseline"] == "sglang"
    # the index's baseline and matrix apply; the command line wins over them
    write_run_set(run_set, baseline="phase2_vllm", matrix="chat matrix")
    assert invoke("compare", str(run_set), "--out", "o", "--no-plots").exit_code == 0
    doc = json.loads(Path("o/comparison.json").read_text())
    assert doc["baseline"] == "vllm (phase1_vllm)"
    assert doc["title"] == "vLLM vs SGLang vs vLLM + ngram chat matrix (8x NVIDIA H200 143GB)"
    assert invoke("compare", str(run_set), "--out", "o", "--no-plots", "--title", "T",
                  "--baseline", str(run_set / "phase1_sglang")).exit_code == 0
    doc = json.loads(Path("o/comparison.json").read_text())
    assert doc["baseline"] == "sglang" and doc["title"] == "T"
    result = CliRunner().invoke(main, ["compare", str(RUNS / "sglang"), "--baseline", str(run_set), "--out", "o"])
    assert result.exit_code == 2 and "is a run set; give one of its phase directories" in result.stderr


def test_compare_a_single_phase_run_set_needs_another_run(run_set):
    shutil.rmtree(run_set / "phase2_vllm")
    shutil.rmtree(run_set / "phase3_vllm_ngram")
    write_run_set(run_set)
    result = CliRunner().invoke(main, ["compare", str(run_set), "--out", "o"])
    assert result.exit_code == 2
    assert "at least two runs" in result.stderr


def test_report_a_run_set_reports_every_phase(run_set):
    write_run_set(run_set)
    result = invoke("report", str(run_set), "--no-plots")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"wrote {run_set}/{d}/report.md" for d in
                                          ("phase1_sglang", "phase2_vllm", "phase3_vllm_ngram")]
    assert not (run_set / "report.md").exists()


def test_validate_a_run_set(run_set):
    write_run_set(run_set)
    invoke("report", str(run_set), "--no-plots")
    result = CliRunner().invoke(main, ["validate", str(run_set)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"{run_set}/results.json: warning: no comparison.md; write it with " \
           f"`sskj-results compare {run_set} --out {run_set}`" in lines
    assert f"{run_set}/results.json: valid (0 errors, 1 warning)" in lines
    assert sum(line.endswith("/results.json: valid (0 errors, 0 warnings)") for line in lines) == 3
    # a phase that disappeared, and one that is not listed
    shutil.move(str(run_set / "phase2_vllm"), str(run_set / "phase9_moved"))
    result = CliRunner().invoke(main, ["validate", str(run_set / "results.json")])
    assert result.exit_code == 1
    assert (f"{run_set}/results.json: phases[1].dir: phase2_vllm: no results.json there; "
            f"rebuild the index with `sskj-results runset {run_set}`") in result.output
    assert "phase9_moved/ holds a run that the index does not list" in result.output
    # a broken index is one line per problem, never a traceback
    (run_set / "results.json").write_text(json.dumps({"kind": "run-set", "phases": [{"dir": "../x"}]}))
    result = CliRunner().invoke(main, ["validate", str(run_set / "results.json")])
    assert result.exit_code == 1
    assert "phases[0].dir: Value error, must be a subdirectory of the run-set directory" in result.output
    assert "phases[0].scenarios: missing required key" in result.output


def test_a_glob_over_results_finds_runs_and_indexes(run_set, tmp_path):
    write_run_set(run_set)
    shutil.copytree(RUNS / "sglang", Path("results") / "20260708-000000")
    found = {}
    for file in sorted(Path("results").glob("*/results.json")):
        data = json.loads(file.read_text())
        if data.get("kind") == "run-set":
            found[file.parent.name] = [p.dir for p in RunSet.model_validate(data).phases]
        else:
            found[file.parent.name] = data["metadata"]["engine"]
    assert found == {"20260707-100000": ["phase1_sglang", "phase2_vllm", "phase3_vllm_ngram"],
                     "20260708-000000": "sglang"}


def test_the_runs_table_reads_the_phases_of_a_run_set_not_its_index(run_set):
    from sskj_results.analysis.runtable import find_results_files, load_runs

    write_run_set(run_set)
    phases = [run_set / d / "results.json" for d in ("phase1_sglang", "phase2_vllm", "phase3_vllm_ngram")]
    assert find_results_files([Path("results")]) == phases
    assert find_results_files([run_set / "results.json"]) == phases  # the index stands for its phases
    df = load_runs(run_set)  # no index row, no skipped "invalid run"
    assert len(df) == sum(len(load_run(p).scenarios) for p in phases)
