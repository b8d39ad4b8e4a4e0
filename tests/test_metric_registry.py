"""The metric registry (contract/metrics.py) is the one list of metrics: every consumer follows its rows."""

from __future__ import annotations

import typing

import pytest

from sskj_results.analysis import validate
from sskj_results.analysis.metrics import derivations
from sskj_results.analysis.runtable import COLUMNS
from sskj_results.contract.comparison_models import MetricName, Row, StatTest
from sskj_results.contract.metrics import (
    COMPARED, LATENCY_NAMES, METRICS, PER_REPEAT_COMPARED, PER_REQUEST_COMPARED, READ_INPUTS, REQUEST_COLUMNS,
    REQUEST_INPUTS, SECTION_METRICS, WINDOW_METRICS, metric,
)
from sskj_results.contract.models import Distribution, Latencies, Percentiles, Scenario, Window
from sskj_results.render.mdparts import METRIC_LABELS, METRIC_SHORT
from sskj_results.render.report import SECTIONS, sections


def test_names_are_unique_and_rows_complete():
    assert len({m.name for m in METRICS}) == len(METRICS)
    for m in METRICS:
        assert m.unit and m.label and m.short and m.description and m.docs.startswith("docs/METRICS.md#"), m.name
        assert m.direction in ("lower", "higher")
        if m.summary == "scalar":
            assert m.request_field is None and m.derive is None and m.compared != "per-request", m.name
        if m.summary == "window":  # computed by sskj from the requests' columns, one value per scenario
            assert m.derive and m.inputs and m.section and m.origin == "sskj", m.name
            assert m.request_field is None and m.compared != "per-request", m.name
        if m.compared == "per-request":
            assert (m.request_field is None) != (m.derive is None), f"{m.name}: one per-request source"
        if m.origin == "client":
            assert m.derive is None, f"{m.name}: a client's metric is read, not derived"


def test_models_follow_the_rows():
    assert tuple(Latencies.model_fields) == LATENCY_NAMES
    for name in LATENCY_NAMES:
        field = Latencies.model_fields[name]
        assert field.annotation is Percentiles and field.description == metric(name).description
    for m in SECTION_METRICS:
        for model in (Scenario, Row):
            field = model.model_fields[m.name]
            assert field.description == m.description and field.default is None
            assert Distribution in typing.get_args(field.annotation)
        assert m.section, f"{m.name}: a scenario distribution needs its section title"
    for m in METRICS:
        if m.place == "scenario" and m.summary == "scalar":
            assert Scenario.model_fields[m.name].description == m.description
    for m in WINDOW_METRICS:  # its value and its window, on the scenario and on comparison.json's rows
        for model in (Scenario, Row):
            assert model.model_fields[m.name].description == m.description
            assert Window in typing.get_args(model.model_fields[f"{m.name}_window"].annotation)


def test_compare_and_labels_follow_the_rows():
    assert set(typing.get_args(MetricName)) == set(COMPARED)
    assert typing.get_args(StatTest.model_fields["metric"].annotation) == COMPARED
    assert set(PER_REQUEST_COMPARED) | set(PER_REPEAT_COMPARED) == set(COMPARED)
    assert PER_REQUEST_COMPARED[:3] == ("ttft_ms", "tpot_ms", "e2e_ms")  # the seed table's reading order
    assert set(METRIC_LABELS) == set(METRIC_SHORT) == {m.name for m in METRICS}


def test_every_derived_metric_has_its_computation():
    assert {m.derive for m in METRICS if m.derive} <= derivations()


def test_sections_follow_the_rows():
    ids = [s.id for s in SECTIONS]
    assert len(ids) == len(set(ids))
    for m in SECTION_METRICS + WINDOW_METRICS:
        assert f"metric:{m.name}" in [s.id for s in sections("report")]
        assert f"metric:{m.name}" in [s.id for s in sections("comparison")]


@pytest.mark.parametrize("m", SECTION_METRICS, ids=lambda m: m.name)
def test_runs_table_and_validate_cover_each_section_metric(m):
    names = {c.name for c in COLUMNS}
    assert {f"{m.name}_{stat}" for stat in ("mean", "p50", "p90", "p95", "p99", "std", "count")} <= names
    assert m.name in validate.SECTION_NAMES


def test_every_whole_server_rate_scales_with_the_devices_and_per_accelerator_rows_name_their_row():
    # a rate of the whole server (tokens or requests per second, not per accelerator or per user) grows with the
    # devices serving: its row says so, and compare judges it per accelerator across accelerator counts
    for m in METRICS:
        assert m.scales_with_devices == (m.unit in ("tok/s", "req/s")), m.name
        if m.per_accel_of:
            assert metric(m.per_accel_of).scales_with_devices and not m.scales_with_devices, m.name
            assert m.unit == metric(m.per_accel_of).unit + "/accel", m.name


def test_per_request_inputs_are_declared_once_and_read_from_the_declaration():
    # a computed metric names what it reads; the loaded run's columns and the scenario builder's follow REQUEST_INPUTS
    from sskj_results.analysis.rundata import request_samples
    from sskj_results.contract.models import RawRequest
    from sskj_results.ingest import scenario as builder

    for m in METRICS:
        assert bool(m.derive) == bool(m.inputs), f"{m.name}: a computed metric declares the inputs it reads"
        assert set(m.inputs) <= {r.name for r in REQUEST_INPUTS}, m.name
    for r in REQUEST_INPUTS:
        # read from a raw list by the reader, or one of the builder's own arrays; raw_requests[] records it either way
        assert bool(r.raw) != (r.name in builder._OWN), r.name
        assert RawRequest.model_fields[r.name].description == r.description, r.name
    assert {r.name for r in READ_INPUTS} == {r.name for r in REQUEST_INPUTS if r.raw}
    scenario = Scenario.model_validate({
        "name": "c1_i1_o1", "concurrency": 1, "input_len": 1, "output_len": 1, "duration_s": 1.0, "success": 1,
        "failed": 0, "request_throughput": 1.0, "input_token_throughput": 1.0, "output_token_throughput": 1.0,
        "total_token_throughput": 2.0, "accept_length": None,
        "latencies": {n: {s: None for s in ("mean", "p50", "p90", "p95", "p99", "std")} for n in LATENCY_NAMES},
        "slo_status": {"ttft_p95_ok": None, "tpot_mean_ok": None, "overall": "❔"},
        "raw_requests": [{"request_id": "0", "input_tokens": 4, "output_tokens": 2, "ttft_ms": 8.0, "success": True}],
    })
    assert tuple(request_samples(scenario).columns) == REQUEST_COLUMNS


def test_a_metric_whose_input_the_run_never_recorded_is_unknown(tmp_path):
    # a run parsed before a metric existed: computed from its raw_requests only when they hold every input it
    # reads; without one (here no TTFT at all), unknown and no section, never a section of "0 requests"
    import json
    from click.testing import CliRunner
    from sskj_results.analysis.rundata import load_run_data
    from sskj_results.cli import main
    from sskj_results.render.report import render_report
    from sskj_results.analysis.slo import resolve_slo
    from .conftest import RAW

    import shutil
    raw, out = tmp_path / "raw", tmp_path / "out"
    raw.mkdir()
    shutil.copy(RAW / "vllmbench_c8_128_32.json", raw)
    result = CliRunner().invoke(main, ["import-legacy", str(raw), "--out", str(out),
                                       "--chip", "cpu", "--engine", "vllm", "--model", "m"])
    assert result.exit_code == 0, result.output
    (run,) = sorted(out.iterdir())
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    for s in data["scenarios"]:
        for m in SECTION_METRICS:
            s.pop(m.name)
    (run / "results.json").write_text(json.dumps(data), encoding="utf-8")
    text = render_report(load_run_data(run), resolve_slo("S2"), False)
    assert all(f"## {m.section}\n" in text for m in SECTION_METRICS)  # computed from the raw_requests
    for s in data["scenarios"]:
        for r in s["raw_requests"]:
            r["ttft_ms"] = None
    (run / "results.json").write_text(json.dumps(data), encoding="utf-8")
    loaded = load_run_data(run)
    text = render_report(loaded, resolve_slo("S2"), False)
    for m in SECTION_METRICS:
        if "ttft_ms" in m.inputs:
            assert f"## {m.section}\n" not in text, m.name
