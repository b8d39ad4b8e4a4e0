"""results.json contract: models, schema snapshot, load/save, validate rules and CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pytest
from click.testing import CliRunner

from sskj_results.cli import main
from sskj_results.contract.errors import ResultsError
from sskj_results.contract.io import load_run, save_run, to_json_bytes
from sskj_results.contract.models import Results
from sskj_results.contract.schema import COMMITTED_SCHEMA, REGENERATE_COMMAND, schema_text
from sskj_results.analysis.validate import validate_data

from .conftest import SEED


def test_committed_schema_is_fresh() -> None:
    committed = COMMITTED_SCHEMA.read_text(encoding="utf-8")
    assert committed == schema_text(), f"schema/results.schema.json is stale; regenerate it with: {REGENERATE_COMMAND}"


def test_schema_is_deterministic() -> None:
    assert schema_text() == schema_text()
    assert json.loads(schema_text())["$id"].endswith("results.schema.json")


def test_plain_jsonschema_accepts_seed_example_as_written(seed_dict: dict[str, Any]) -> None:
    schema = json.loads(COMMITTED_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(seed_dict, schema)


def test_seed_example_loads_with_schema_version_defaulting_to_1() -> None:
    run = load_run(SEED)
    assert "schema_version" not in json.loads(SEED.read_text())
    assert run.schema_version == 1
    assert run.scenarios[0].latencies.ttft_ms.p95 == 543.21
    assert run.scenarios[0].slo_status.overall == "✅"


def test_round_trip_is_stable(tmp_path: Path) -> None:
    run = load_run(SEED)
    first = save_run(run, tmp_path / "a")
    again = load_run(first)
    assert again == run
    second = save_run(again, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    assert first.name == "results.json"


def test_save_is_atomic_when_serialization_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = load_run(SEED)
    target = save_run(run, tmp_path)
    before = target.read_bytes()

    def boom(*_a: Any, **_k: Any) -> None:
        raise OSError("disk full")

    import sskj_results.contract.io as io_mod

    monkeypatch.setattr(io_mod.os, "replace", boom)
    with pytest.raises(OSError):
        save_run(run, tmp_path)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_load_run_names_file_and_path(tmp_path: Path, seed_dict: dict[str, Any]) -> None:
    seed_dict["scenarios"][0]["latencies"]["ttft_ms"]["p95"] = "slow"
    f = tmp_path / "results.json"
    f.write_text(json.dumps(seed_dict))
    with pytest.raises(ResultsError) as info:
        load_run(tmp_path)
    assert str(info.value).startswith(f"{f}: scenarios.0.latencies.ttft_ms.p95".replace(".0.", "[0]."))


def test_nan_is_never_written(tmp_path: Path) -> None:
    run = load_run(SEED)
    data = to_json_bytes(run)
    assert b"NaN" not in data and b"Infinity" not in data
    with pytest.raises(Exception):
        Results.model_validate({**json.loads(data), "scenarios": [{**json.loads(data)["scenarios"][0], "duration_s": float("nan")}]})


def test_requests_checked_per_scenario_are_not_checked_again_unless_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_writable checks each imported scenario; the write of the run checks its per-request lists (most of its
    bytes) again only where they changed since: a request made invalid afterwards is still never written."""
    from sskj_results.contract import models
    from sskj_results.contract.io import check_writable

    run = load_run(SEED)
    scenario = run.scenarios[0]
    assert scenario.raw_requests
    check_writable(scenario)
    checked: list[Any] = []
    real = models._redact_attrs
    monkeypatch.setattr(models, "_redact_attrs", lambda obj, names: checked.append(obj) or real(obj, names))
    to_json_bytes(run)
    assert checked and not any(isinstance(obj, models.RawRequest) for obj in checked)  # checked once, before
    scenario.name = "renamed"  # the scenario changed, its requests did not: they are not checked again
    checked.clear()
    assert b'"name": "renamed"' in to_json_bytes(run)
    assert checked and not any(isinstance(obj, models.RawRequest) for obj in checked)
    scenario.raw_requests[0].input_tokens = -1  # not validated on assignment
    with pytest.raises(ResultsError, match=r"scenarios\[0\]\.raw_requests\[0\]\.input_tokens"):
        to_json_bytes(run)
    scenario.raw_requests[0].input_tokens = 1 << 64
    with pytest.raises(ResultsError, match=r"scenarios\[0\]\.raw_requests\[0\]\.input_tokens: integer of 65 bits"):
        to_json_bytes(run)
    scenario.raw_requests[0].input_tokens = 1000
    checked.clear()
    to_json_bytes(run)  # equal again to what was checked
    assert not any(isinstance(obj, models.RawRequest) for obj in checked)
    other = load_run(SEED)  # never checked by check_writable: its requests are checked at the write
    checked.clear()
    to_json_bytes(other)
    assert any(isinstance(obj, models.RawRequest) for obj in checked)


def test_requests_the_import_built_validated_are_not_validated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import validates a scenario's per-request records as it builds them (one call); check_writable and the
    write do not validate them again while they are unchanged. Records results.json cannot hold are built as they
    are, for check_writable to name."""
    from sskj_results.contract import models
    from sskj_results.contract.io import check_writable, validated_requests

    from sskj_results.contract.metrics import READ_INPUTS

    # every field results.json holds for a request, the per-request inputs read from raw lists included (as the
    # import builds them)
    record = {"request_id": "0", "input_tokens": 10, "output_tokens": 4, "e2e_ms": 50.0, "ttft_ms": 20.0,
              "tpot_ms": 10.0, "itl_ms": 10.0, "accept_length": None, "success": True, "error": None,
              **{r.name: None for r in READ_INPUTS}}
    assert validated_requests([record, {**record, "input_tokens": -1}]) is None
    assert validated_requests([{**record, "output_tokens": 1 << 64}]) is None
    requests = validated_requests([record, {**record, "request_id": "1", "success": False, "error": "timeout"}])
    assert requests is not None and [r.request_id for r in requests] == ["0", "1"]
    run = load_run(SEED)
    scenario = run.scenarios[0].model_copy(update={"raw_requests": requests})
    run = run.model_copy(update={"scenarios": [scenario]})
    checked: list[Any] = []
    real = models._redact_attrs
    monkeypatch.setattr(models, "_redact_attrs", lambda obj, names: checked.append(obj) or real(obj, names))
    check_writable(scenario)
    to_json_bytes(run)
    assert checked and not any(isinstance(obj, models.RawRequest) for obj in checked)
    scenario.raw_requests[1].error = None  # changed since: checked again (and valid)
    check_writable(scenario)
    assert any(isinstance(obj, models.RawRequest) for obj in checked)


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def apply(d: dict[str, Any]) -> None:
        parts = path.replace("]", "").replace("[", ".").split(".")
        node: Any = d
        for p in parts[:-1]:
            node = node[int(p)] if p.isdigit() else node[p]
        last = parts[-1]
        if value is _DELETE:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return apply


_DELETE = object()
S0 = "scenarios[0]"

BROKEN: list[tuple[str, Mutation, str, str]] = [
    ("ttft p95 string", _set(f"{S0}.latencies.ttft_ms.p95", "fast"), f"{S0}.latencies.ttft_ms.p95", "expected number or null"),
    ("missing p99", _set(f"{S0}.latencies.e2e_ms.p99", _DELETE), f"{S0}.latencies.e2e_ms.p99", "missing required key"),
    ("missing itl_ms", _set(f"{S0}.latencies.itl_ms", _DELETE), f"{S0}.latencies.itl_ms", "missing required key"),
    ("negative failed", _set(f"{S0}.failed", -1), f"{S0}.failed", "out of range"),
    ("success float", _set(f"{S0}.success", 1.5), f"{S0}.success", "expected integer"),
    ("missing accept_length", _set(f"{S0}.accept_length", _DELETE), f"{S0}.accept_length", "missing required key"),
    ("missing slo_status", _set(f"{S0}.slo_status", _DELETE), f"{S0}.slo_status", "missing required key"),
    ("overall disagrees", _set(f"{S0}.slo_status.overall", "❌"), f"{S0}.slo_status.overall", "disagrees with ttft_p95_ok=true, tpot_mean_ok=true"),
    ("overall not a mark", _set(f"{S0}.slo_status.overall", "ok"), f"{S0}.slo_status.overall", 'expected one of "✅", "⚠️", "❌", "❔", got \'ok\''),
    ("percentiles decrease", _set(f"{S0}.latencies.tpot_ms.p95", 10.0), f"{S0}.latencies.tpot_ms.p95", "is below p90 28"),
    ("timestamp without offset", _set("metadata.timestamp", "2026-07-07T13:26:41"), "metadata.timestamp", "ISO-8601 with a UTC offset"),
    ("no chip nor accelerator", lambda d: (d["metadata"].pop("chip"), d["metadata"].pop("accelerator")), "metadata", "neither accelerator nor chip"),
    ("no engine nor backend", lambda d: (d["metadata"].pop("engine"), d["metadata"].pop("backend")), "metadata", "neither engine nor backend"),
    ("no server args", _set("config.server_args", _DELETE), "config.server_args", "exact server launch command"),
    ("unknown scenario key", _set(f"{S0}.ttft", 1), S0, "unknown key(s) ttft"),
    ("metadata missing model", _set("metadata.model", _DELETE), "metadata.model", "missing required key"),
    ("scenarios not a list", _set("scenarios", {}), "scenarios", "expected array"),
    ("schema_version 3", _set("schema_version", 3), "schema_version", "expected one of 1, 2"),
    ("concurrency zero", _set(f"{S0}.concurrency", 0), f"{S0}.concurrency", "out of range"),
]


@pytest.mark.parametrize("label,mutate,path,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_validate_rejects_broken_variant(seed_dict: dict[str, Any], label: str, mutate: Mutation, path: str, message: str) -> None:
    data = copy.deepcopy(seed_dict)
    mutate(data)
    problems = [p for p in validate_data(data, "results.json") if p.severity == "error"]
    lines = [p.line() for p in problems]
    assert any(line.startswith(f"results.json: {path}: ") and message in line for line in lines), lines


def test_validate_reports_every_problem_not_just_the_first(seed_dict: dict[str, Any]) -> None:
    for _, mutate, _, _ in BROKEN[:6]:
        mutate(seed_dict)
    errors = [p for p in validate_data(seed_dict, "results.json") if p.severity == "error"]
    assert len(errors) == 6


def test_slo_flags_checked_against_recorded_thresholds(seed_dict: dict[str, Any]) -> None:
    seed_dict["slo"] = {"tier": "S1", "ttft_p95_ms": 500.0, "tpot_mean_ms": 25.0}
    lines = [p.line() for p in validate_data(seed_dict, "r.json")]
    assert "r.json: scenarios[0].slo_status.ttft_p95_ok: is true but ttft_ms.p95 = 543.21 against slo.ttft_p95_ms = 500" in lines


def test_null_percentile_is_a_warning(seed_dict: dict[str, Any]) -> None:
    seed_dict["scenarios"][0]["latencies"]["itl_ms"]["p90"] = None
    problems = validate_data(seed_dict, "r.json")
    assert [p.severity for p in problems if "itl_ms.p90" in p.path] == ["warning"]


def test_accept_length_without_spec_method_warns(seed_dict: dict[str, Any]) -> None:
    seed_dict["config"]["spec_method"] = None
    problems = validate_data(seed_dict, "r.json")
    assert any(p.severity == "warning" and p.path == "scenarios[0].accept_length" for p in problems)


# ---------------------------------------------------------------- CLI


def test_cli_help_lists_commands() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in ("validate", "import-legacy", "compare", "schema", "parse", "report", "metadata"):
        assert f"  {name} " in result.output


def test_cli_validate_seed_ok() -> None:
    result = CliRunner().invoke(main, ["validate", str(SEED)])
    assert result.exit_code == 0
    assert result.output.splitlines()[-1] == f"{SEED}: valid (0 errors, 1 warning)"


def test_cli_validate_exact_lines_and_exit_1(tmp_path: Path, seed_dict: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    seed_dict["scenarios"][0]["latencies"]["ttft_ms"]["p95"] = "x"
    seed_dict["scenarios"][0]["failed"] = -2
    (tmp_path / "results.json").write_text(json.dumps(seed_dict))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["validate", "--quiet", "results.json"])
    assert result.exit_code == 1
    assert result.output == (
        "results.json: scenarios[0].failed: -2 is out of range (minimum 0)\n"
        "results.json: scenarios[0].latencies.ttft_ms.p95: expected number or null, got 'x'\n"
    )


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"", "results.json: empty file; expected a results.json object"),
        (b'{"metadata": {', "results.json:1:15: invalid JSON: Expecting property name enclosed in double quotes"),
        (b"\xff\xfe\x00garbage", "results.json: not UTF-8 text (byte 0); is this a results.json?"),
        (b"[1, 2]", "results.json: $: expected a JSON object at the top level, got list"),
        (b'{"scenarios": NaN}', "results.json: invalid JSON: NaN is not valid JSON; write null for a missing value"),
    ],
)
def test_cli_validate_never_tracebacks(tmp_path: Path, content: bytes, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("results.json").write_bytes(content)
    result = CliRunner().invoke(main, ["validate", "results.json"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.splitlines()[0] == expected


@pytest.mark.parametrize(
    "content,expected",
    [
        (b'{"a": [1, 18446744073709551616]}', ": a[1]: integer of 65 bits is outside the 64-bit range; not a measured value"),
        (b'{"a": -9223372036854775809}', ": a: integer of 64 bits is outside the 64-bit range; not a measured value"),
        (b'{"a": 9223372036854775808}', ": a: integer of 64 bits is outside the 64-bit range; not a measured value"),
        (b'{"a": 1e400}', ": a: number out of range (inf); write null for a missing value"),
        (b'\xef\xbb\xbf{}', ":1:1: invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)"),
        (b"[" * 2000 + b"]" * 2000, ": invalid JSON: nested too deeply (a results.json is at most 64 levels deep)"),
        (b'{"a":\n  [1,\n x]}', ":3:2: invalid JSON: Expecting value"),
    ],
)
def test_read_json_text_refuses_what_no_reader_takes(tmp_path: Path, content: bytes, expected: str) -> None:
    """Whichever parser reads the file first, the refusals and their messages are json's and check_json_tree's:
    an integer beyond 2**64 is refused, never read as a float."""
    from sskj_results.contract.io import read_json_text
    from sskj_results.contract.errors import ResultsError

    file = tmp_path / "results.json"
    file.write_bytes(content)
    with pytest.raises(ResultsError) as err:
        read_json_text(file)
    assert str(err.value) == f"{file}{expected}"


def test_read_json_text_keeps_every_value_as_written(tmp_path: Path) -> None:
    from sskj_results.contract.io import read_json_text

    file = tmp_path / "results.json"
    file.write_bytes(b'{"f": 1e19, "g": -9.3e18, "lo": -9223372036854775808, "hi": 9223372036854775807, '
                     b'"s": "\\ud800", "x": [1, 2.0, 5e-324, null, true], "a": 1, "a": 2}')
    data = read_json_text(file)
    assert data == {"f": 1e19, "g": -9.3e18, "lo": -2**63, "hi": 2**63 - 1, "s": "\ud800",
                    "x": [1, 2.0, 5e-324, None, True], "a": 2}
    assert [type(v) for v in data["x"]] == [int, float, float, type(None), bool]
    assert type(data["f"]) is float and type(data["lo"]) is int


def test_cli_validate_directory_of_junk(tmp_path: Path) -> None:
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == f"{tmp_path}: no results.json here or below; is this a run directory?"


def test_cli_validate_usage_error_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "missing")])
    assert result.exit_code == 2
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 2


def test_cli_validate_json_format(tmp_path: Path, seed_dict: dict[str, Any]) -> None:
    seed_dict["scenarios"][0]["failed"] = -1
    f = tmp_path / "r.json"
    f.write_text(json.dumps(seed_dict))
    result = CliRunner().invoke(main, ["validate", "--format", "json", str(f)])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["valid"] is False
    assert report["files"][0]["errors"][0]["path"] == "scenarios[0].failed"


def test_run_directory_checklist(tmp_path: Path) -> None:
    run = tmp_path / "run"
    save_run(load_run(SEED), run)
    result = CliRunner().invoke(main, ["validate", str(run)])
    assert result.exit_code == 1
    assert f"{run}: no human-readable report (report.md); run `sskj-results report {run}`" in result.output
    assert "no provenance" in result.output
    (run / "report.md").write_text("# report\n\n## Provenance\n\nmade by hand\n")
    result = CliRunner().invoke(main, ["validate", str(run)])
    assert result.exit_code == 0, result.output


def test_directory_of_runs_validates_each(tmp_path: Path) -> None:
    for name in ("phase1", "phase2"):
        save_run(load_run(SEED), tmp_path / name)
        (tmp_path / name / "report.md").write_text("# r\n")
        (tmp_path / name / "README.md").write_text("provenance\n")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 0
    assert sum(line.endswith("valid (0 errors, 1 warning)") for line in result.output.splitlines()) == 2


def test_schema_command_prints_committed_schema(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    assert result.output == COMMITTED_SCHEMA.read_text(encoding="utf-8")
    out = tmp_path / "s.json"
    result = CliRunner().invoke(main, ["schema", "--write", str(out)])
    assert result.exit_code == 0 and out.read_text() == schema_text()


def test_every_field_is_described() -> None:
    schema = json.loads(schema_text())

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, prop in node.get("properties", {}).items():
                assert prop.get("description"), f"{where}.{key} has no description"
            for key, value in node.items():
                walk(value, f"{where}.{key}")

    walk(schema, "$")


def test_package_level_api(tmp_path: Path) -> None:
    import sskj_results

    run = sskj_results.load_run(SEED)
    assert isinstance(run, sskj_results.Results)
    written = sskj_results.save_run(run, tmp_path)
    assert written == tmp_path / "results.json" and sskj_results.load_run(tmp_path) == run
    with pytest.raises(sskj_results.ResultsError):
        sskj_results.load_run(tmp_path / "missing.json")


def test_the_tree_check_of_records_a_column_at_a_time_finds_what_the_walk_finds() -> None:
    """Lists of flat records (per-request records: most of a run) are checked a column at a time; anything the walk
    refuses is still refused, with the walk's path and words."""
    from sskj_results.contract.jsontree import check_json_tree

    good = {"request_id": "0", "input_tokens": 12, "e2e_ms": 1.5, "ttft_ms": None, "success": True, "error": None}
    records = [dict(good, request_id=str(i)) for i in range(20)]
    assert check_json_tree({"raw_requests": records}) is None
    bad_values = {"input_tokens": 1 << 64, "e2e_ms": float("nan"), "ttft_ms": float("inf"), "error": {"deep": [1]},
                  "success": -(1 << 70)}
    for key, value in bad_values.items():
        bad = [dict(r) for r in records]
        bad[13][key] = value
        found = check_json_tree({"raw_requests": bad})
        if key == "error":
            assert found is None  # a nested value within limits: walked, and fine
            continue
        assert found is not None and found.startswith(f"raw_requests[13].{key}: "), found
    assert check_json_tree({"raw_requests": records}, max_depth=2) == "raw_requests[19]: nested deeper than 2 levels; not a results.json"
    ragged = [dict(r) for r in records] + [{"input_tokens": 1 << 64}]
    assert check_json_tree({"raw_requests": ragged}) == "raw_requests[20].input_tokens: integer of 65 bits is outside the 64-bit range; not a measured value"
