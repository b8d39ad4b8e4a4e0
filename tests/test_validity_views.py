"""Where validity shows: compare verdicts, comparison.md, report.md, validate --strict."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any, Optional

import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.analysis.rundata import natural_key
from sskj_results.contract.comparison_models import ComparisonDoc

DATA = Path(__file__).parent / "data" / "compare"
RUNS = DATA / "runs"
GOLDEN = DATA / "expected_comparison.md"


def check(name: str, ok: Optional[bool], message: str = "measured") -> dict[str, Any]:
    return {"name": name, "ok": ok, "value": 1.0 if ok is not None else None, "threshold": 4.0, "message": message}


ALL = ("prompts_per_slot", "achieved_concurrency", "output_length", "zero_token_successes",
       "output_token_parity", "prompt_token_parity", "client_cpu", "completeness")


def block(failing: tuple[str, ...] = (), unknown: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> dict[str, Any]:
    checks = [check(n, False if n in failing else None if n in unknown else True,
                    f"{n} broke" if n in failing else "fine") for n in (*ALL, *extra)]
    ok = False if failing else None if unknown else True
    return {"ok": ok, "checks": checks}


def set_validity(run: Path, blocks: dict[str, dict[str, Any]], default: Optional[dict[str, Any]] = None) -> None:
    """Give scenarios of run/results.json a validity block: by name, else default."""
    file = run / "results.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        chosen = blocks.get(s["name"], default)
        if chosen is not None:
            s["validity"] = chosen
    file.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(RUNS, tmp_path / "runs")
    monkeypatch.chdir(tmp_path / "runs")
    return tmp_path / "runs"


def compare(*args: str) -> tuple[str, ComparisonDoc]:
    result = CliRunner().invoke(main, ["compare", "sglang", "vllm", "vllm_ngram", "--out", "out", "--no-plots", *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    text = Path("out/comparison.md").read_text(encoding="utf-8")
    doc = ComparisonDoc.model_validate_json(Path("out/comparison.json").read_text(encoding="utf-8"))
    return text, doc


def section(text: str, heading: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def test_all_valid_points_keep_the_seed_002_table_byte_identical(runs: Path) -> None:
    for run in ("sglang", "vllm", "vllm_ngram"):
        set_validity(runs / run, {}, default=block())
    text, doc = compare()
    golden = GOLDEN.read_text(encoding="utf-8")
    # the seed-002 table's cells unchanged; its Valid column now says ✔ where the golden run was never judged
    assert section(text, "## Side-by-side results") == [
        line.replace(" |  |", " | ✔ |") for line in section(golden, "## Side-by-side results")]
    # the other additions: the Validity section and the Valid column of the Prefill table; every verdict is the one
    # without validity blocks
    lines = text.splitlines()
    start = lines.index("## Validity")
    without = lines[:start] + lines[start + len(section(text, "## Validity")):]
    def blank_valid(text: str) -> str:  # a Valid cell ✔ as the golden's blank one (tabulate pads the column)
        return re.sub(r" +", " ", text.replace("| ✔", "| "))

    assert blank_valid("\n".join(without) + "\n") == blank_valid(golden)
    assert "Valid" in "\n".join(section(text, "## Prefill rate"))
    assert "✔" in "\n".join(section(text, "## Validity")) and "No invalid point." in text
    assert all(not t.verdict.startswith("not comparable (invalid") for s in doc.scenarios for t in s.tests)


def test_compare_refuses_a_scenario_with_an_invalid_point(runs: Path) -> None:
    data = json.loads((runs / "vllm" / "results.json").read_text(encoding="utf-8"))
    name = data["scenarios"][0]["name"]
    set_validity(runs / "vllm", {name: block(failing=("prompts_per_slot", "client_cpu"))})
    text, doc = compare()
    shape = (data["scenarios"][0]["concurrency"], data["scenarios"][0]["input_len"], data["scenarios"][0]["output_len"])
    refused = [s for s in doc.scenarios if (s.concurrency, s.input_len, s.output_len) == shape]
    assert refused
    vllm_label = doc.runs[1].label
    for sc in refused:
        mine = [t for t in sc.tests if t.run == vllm_label]
        assert mine and all(t.verdict == "not comparable (invalid: prompts_per_slot, client_cpu)" for t in mine)
        assert all(t.p_value is None and "this run " + name + " failed prompts_per_slot, client_cpu" in (t.reason or "")
                   for t in mine)
        # the other candidate's points are valid (or never judged): still tested
        assert all(not t.verdict.startswith("not comparable (invalid") for t in sc.tests if t.run != vllm_label)
    others = [t for s in doc.scenarios if s not in refused for t in s.tests]
    assert others and all(not t.verdict.startswith("not comparable (invalid") for t in others)
    assert "not comparable (invalid: prompts_per_slot, client_cpu)" in text
    lines = section(text, "## Validity")
    assert f"- {name} ({vllm_label}), prompts_per_slot: ⚠ prompts_per_slot broke" in lines
    assert f"- {name} ({vllm_label}), client_cpu: ✖ client_cpu broke" in lines
    assert f"| {name} " in "\n".join(lines) and "✖ client_cpu (⚠ prompts_per_slot)" in "\n".join(lines)
    # the seed-002 table's cells stay, but a disqualified point's SLO mark is ⊘ (never ✅) and its Valid cell says why
    table = section(text, "## Side-by-side results")
    golden = section(GOLDEN.read_text(encoding="utf-8"), "## Side-by-side results")
    changed = [(a, b) for a, b in zip(table, golden) if a != b]
    assert changed and all(a.startswith(f"| {name} | {vllm_label} |") for a, _ in changed)
    assert all(a.endswith("| ⊘ | - | ✖ client_cpu (⚠ prompts_per_slot) |") and b.endswith("| ✅ | - |  |")
               and a.rsplit(" | ", 3)[0] == b.rsplit(" | ", 3)[0] for a, b in changed)


def test_a_baseline_invalid_point_refuses_every_candidate(runs: Path) -> None:
    data = json.loads((runs / "sglang" / "results.json").read_text(encoding="utf-8"))
    name = data["scenarios"][0]["name"]
    set_validity(runs / "sglang", {name: block(failing=("completeness",))})
    _, doc = compare()
    sc = next(s for s in doc.scenarios if any(r.scenario == name and r.run == doc.baseline for r in s.rows))
    assert sc.tests and all(t.verdict == "not comparable (invalid: completeness)" for t in sc.tests)
    assert all("baseline " + name + " failed completeness" in (t.reason or "") for t in sc.tests)


def test_unknown_validity_does_not_refuse(runs: Path) -> None:
    for run in ("sglang", "vllm", "vllm_ngram"):
        set_validity(runs / run, {}, default=block(unknown=("client_cpu",)))
    text, doc = compare()
    assert all(not t.verdict.startswith("not comparable (invalid") for s in doc.scenarios for t in s.tests)
    # nothing can be judged: said once, with the reason, instead of a table of blank marks
    validity = section(text, "## Validity")
    assert "| ✔" not in text and not any(line.startswith("| Scenario") for line in validity)
    rows = sum(len(s.rows) for s in doc.scenarios)
    assert f"Validity is unknown for every point ({rows} judged)" in validity[2]
    assert validity.count(f"- client_cpu: fine ({rows} point(s))") == 1


def report_lines(run: Path) -> list[str]:
    result = CliRunner().invoke(main, ["report", str(run), "--no-plots"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return (run / "report.md").read_text(encoding="utf-8").splitlines()


def test_report_has_a_valid_column_and_lists_invalid_points(runs: Path) -> None:
    data = json.loads((runs / "vllm" / "results.json").read_text(encoding="utf-8"))
    names = sorted((s["name"] for s in data["scenarios"]), key=natural_key)  # the report's order
    set_validity(runs / "vllm", {names[0]: block(failing=("output_length",)), names[1]: block(unknown=("client_cpu",))},
                 default=block())
    lines = report_lines(runs / "vllm")
    start = next(i for i, line in enumerate(lines) if line.startswith("| Scenario |"))
    assert lines[start].endswith("| SLO | Valid |")
    cells = {line.split(" | ")[0][2:]: line.rstrip(" |").rsplit(" | ", 1)[-1] for line in lines[start + 2:start + 2 + len(names)]}
    assert cells[names[0]] == "✖ output_length"
    assert lines[start + 3].endswith(" |  |")  # unknown: blank
    assert cells[names[2]] == "✔"
    validity = section("\n".join(lines), "## Validity")
    assert f"- {names[0]}, output_length: ✖ output_length broke" in validity


def test_report_of_a_never_judged_run_has_a_blank_column_and_no_section(runs: Path) -> None:
    lines = report_lines(runs / "sglang")
    start = next(i for i, line in enumerate(lines) if line.startswith("| Scenario |"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    assert end > start + 2 and all(line.endswith("|  |") for line in lines[start + 2:end])
    assert "## Validity" not in lines


def test_validate_warns_by_default_and_fails_with_strict(runs: Path) -> None:
    data = json.loads((runs / "vllm" / "results.json").read_text(encoding="utf-8"))
    names = [s["name"] for s in data["scenarios"]]
    assert len(names) >= 3
    # one point of each grade: disqualified (client_cpu), partly unreliable (streaming_granularity: TPOT, ITL and
    # what follows them), qualified (prompts_per_slot): each line says which, the summary counts each
    set_validity(runs / "vllm", {names[0]: block(failing=("prompts_per_slot",)),
                                 names[1]: block(failing=("client_cpu",)),
                                 names[2]: block(failing=("streaming_granularity",), extra=("streaming_granularity",))},
                  default=block())
    CliRunner().invoke(main, ["report", "vllm", "--no-plots"], catch_exceptions=False)
    result = CliRunner().invoke(main, ["validate", "vllm"])
    assert result.exit_code == 0, result.output
    assert (f"scenarios[0].validity.checks[0]: warning: qualified point {names[0]}: prompts_per_slot: "
            "prompts_per_slot broke") in result.output
    assert f"warning: invalid point {names[1]}: client_cpu: client_cpu broke" in result.output
    assert (f"warning: partly unreliable point {names[2]}: streaming_granularity: streaming_granularity broke "
            "(TPOT, ITL") in result.output and "unreliable, the other metrics stand)" in result.output
    # the summary counts the points of each grade beside "valid" (the file's verdict)
    assert result.output.splitlines()[-1].endswith(
        "/results.json: valid (0 errors, 3 warnings); 1 invalid point: not a measurement of the engine; "
        "1 partly unreliable point: the metrics named are not believed, the others stand; "
        "1 qualified point: measured, with a caveat (docs/VALIDITY.md; --strict makes them errors)")
    strict = CliRunner().invoke(main, ["validate", "--strict", "vllm"])
    assert strict.exit_code == 1
    assert f"scenarios[0].validity.checks[0]: qualified point {names[0]}: prompts_per_slot" in strict.output
    assert "vllm/results.json: invalid (3 errors" in strict.output
    set_validity(runs / "vllm", {}, default=block(unknown=("client_cpu",)))
    assert CliRunner().invoke(main, ["validate", "--strict", "vllm"]).exit_code == 0
