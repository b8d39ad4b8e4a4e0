"""A new user's import: platform names where paths are, chips in the catalog's names, re-import with
--platform replacing the earlier import of the same files, collect counting a raw run once, --dry-run
naming the run folders (cli/common.PlatformFile, catalog/chips.catalog_chip, ingest/run_dir._own_previous,
analysis/runtable.drop_doubles)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.catalog.chips import catalog_chip
from sskj_results.cli import main

RAW = Path(__file__).parent / "data" / "raw"
REPO = Path(__file__).resolve().parents[1]


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def raw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "raw_outputs").mkdir()
    for f in sorted(RAW.glob("vllm_0705_*.jsonl")):
        shutil.copyfile(f, tmp_path / "raw_outputs" / f.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_platform_name_is_taken_where_a_platform_file_is(raw: Path) -> None:
    by_name = cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200", "--out", "a")
    by_path = cli("import-legacy", "raw_outputs", "--platform", str(REPO / "platforms" / "nvidia_h200.env"), "--out", "b")
    assert by_name.exit_code == by_path.exit_code == 0, by_name.output
    meta = [json.loads(next(Path(d).glob("*/results.json")).read_text(encoding="utf-8"))["metadata"] for d in "ab"]
    assert meta[0]["chip"] == meta[1]["chip"] == "nvidia_h200"
    assert meta[0]["platform"] == meta[1]["platform"] == "nvidia_h200"
    bad = cli("import-legacy", "raw_outputs", "--platform", "nvidia_h2000")
    assert bad.exit_code == 2
    assert bad.output.splitlines()[-1] == (
        "Error: Invalid value for '--platform': nvidia_h2000: no such file, and not a platform name (known: cpu "
        "kunlun_p800 nvidia_h20 nvidia_h200 nvidia_rtx6000d)")


def test_chips_are_normalised_to_the_catalogs_names() -> None:
    assert catalog_chip("H200") == ("nvidia_h200", True)
    assert catalog_chip("8x NVIDIA H20") == ("nvidia_h20", True)
    assert catalog_chip("P800") == ("kunlun_p800", True)
    assert catalog_chip("nvidia_rtx6000d") == ("nvidia_rtx6000d", True)
    assert catalog_chip("TPU v9") == ("TPU v9", False)


def test_import_with_chip_h200_records_nvidia_h200_and_warns_for_an_unknown_chip(raw: Path) -> None:
    result = cli("import-legacy", "raw_outputs", "--chip", "H200", "--out", "a")
    assert result.exit_code == 0, result.output
    assert [p.name for p in Path("a").iterdir()] == ["nvidia_h200_vllm_0705"]
    result = cli("import-legacy", "raw_outputs", "--chip", "TPU v9", "--out", "b", "--dry-run")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == (
        "warning: --chip TPU v9: not a chip sskj knows; recorded as given (known: amd_mi300x amd_mi325x ascend_910b "
        "cpu gaudi2 gaudi3 gb200 kunlun_p800 mi355x nvidia_a100 nvidia_a800 nvidia_b200 nvidia_h100 nvidia_h20 "
        "nvidia_h200 nvidia_h800 nvidia_l20 nvidia_l40s nvidia_rtx6000d tpu_v5e tpu_v6e; a new chip is added in "
        "sskj_results/catalog/chips.py)")


def test_metadata_chip_shows_in_the_report(raw: Path) -> None:
    assert cli("import-legacy", "raw_outputs").exit_code == 0
    run = Path("imported/unknown_vllm_0705")
    assert "- Chip: unknown" in (run / "report.md").read_text(encoding="utf-8")
    result = cli("metadata", str(run), "--chip", "H200", "--no-detect")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"wrote {run / 'report.md'}"
    assert "- Chip: nvidia_h200" in (run / "report.md").read_text(encoding="utf-8")


def test_reimport_with_platform_replaces_the_unknown_import_of_the_same_files(raw: Path) -> None:
    assert cli("import-legacy", "raw_outputs").exit_code == 0
    assert [p.name for p in Path("imported").iterdir()] == ["unknown_vllm_0705"]
    result = cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"replaced {Path('imported/nvidia_h200_vllm_0705').resolve()}"
    assert [p.name for p in Path("imported").iterdir()] == ["nvidia_h200_vllm_0705"]


def test_reimport_keeps_an_import_of_other_files(raw: Path) -> None:
    other = raw / "other"
    other.mkdir()
    shutil.copyfile(RAW / "vllm_0705_2_128_32.jsonl", other / "vllm_0705_2_128_32.jsonl")
    assert cli("import-legacy", "other", "--out", "imported").exit_code == 0
    assert cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200").exit_code == 0
    assert sorted(p.name for p in Path("imported").iterdir()) == ["nvidia_h200_vllm_0705",
                                                                  "unknown_vllm_0705"]


def test_collect_counts_a_raw_run_once_and_says_what_it_dropped(raw: Path) -> None:
    assert cli("import-legacy", "raw_outputs", "--out", "old").exit_code == 0
    assert cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200", "--out", "new").exit_code == 0
    result = cli("collect", "old", "new", "--out", "runs.csv")
    assert result.exit_code == 0, result.output
    assert result.stdout == ("wrote runs.csv: 4 row(s) from 1 run(s); 2 run(s) read, 1 with no row of their own "
                             "(doubles dropped, or no scenario)\n")
    assert result.stderr == ("dropped: old/unknown_vllm_0705: 4 scenario(s) left out, the same raw runs "
                             "(raw file sha256 and line) as in new/nvidia_h200_vllm_0705\n")
    import pandas as pd

    frame = pd.read_csv("runs.csv")
    assert sorted(frame["chip"]) == ["nvidia_h200"] * 4
    from sskj_results import load_runs

    assert len(load_runs(["old", "new"])) == 4


def test_dry_run_names_the_run_folders(raw: Path) -> None:
    result = cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-2:] == [
        f"would write run folder {raw / 'imported' / 'nvidia_h200_vllm_0705'}: engine vllm, model unknown, "
        "chip nvidia_h200, 4 scenario(s) from 4 file(s)",
        f"dry run: nothing written (would write under {raw / 'imported'})",
    ]
    assert not Path("imported").exists()


def test_a_line_too_long_for_orjson_is_read_by_the_standard_library(raw: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson refuses documents of about 2 GB ("Not enough memory to allocate buffer for parsing"); the
    documented limit is 4 GiB: past ORJSON_MAX_BYTES the standard library reads the line, to the same values."""
    from sskj_results.ingest import rawio

    assert cli("import-legacy", "raw_outputs", "--chip", "cpu", "--out", "fast").exit_code == 0
    monkeypatch.setattr(rawio, "ORJSON_MAX_BYTES", 64)  # every line of these files is longer
    (raw / "raw_outputs" / "vllm_0705_9_1_1.jsonl").write_text('{"backend": "vllm", "completed": 1, "pad": "' + "x" * 40 + '", "x": [1, 2,]}\n')
    result = cli("import-legacy", "raw_outputs", "--chip", "cpu", "--out", "slow")
    assert result.exit_code == 1
    assert "skipped: raw_outputs/vllm_0705_9_1_1.jsonl:1:99: not valid JSON (Expecting value)\n" in result.stderr
    fast, slow = (json.loads(next(Path(d).glob("*/results.json")).read_text(encoding="utf-8")) for d in ("fast", "slow"))
    assert fast["scenarios"] == slow["scenarios"] and len(fast["scenarios"]) == 4
    assert fast["scenarios"][0]["request_rate"] is None  # the file's bare Infinity, as orjson's path reads it


def _vllm_bench_file(where: Path, date: str) -> None:
    """A `vllm bench serve` result (it names its model: model_id "tiny") dated `date`."""
    data = json.loads((RAW / "vllmbench_c8_128_32.json").read_text(encoding="utf-8"))
    data["date"] = date
    (where / "vllmbench_c8_128_32.json").write_text(json.dumps(data), encoding="utf-8")


def test_files_that_name_no_model_join_the_one_model_of_their_engine_chip_and_day(raw: Path) -> None:
    # sglang.bench_serving files (no model key) beside a vllm bench serve file of the same day naming its model
    _vllm_bench_file(raw / "raw_outputs", "20260705-101500")
    result = cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200")
    assert result.exit_code == 0, result.output
    assert [p.name for p in Path("imported").iterdir()] == ["nvidia_h200_vllm_20260705-101500"]
    assert ("warning: vllm_0705_2_128_32.jsonl and 3 more file(s): the runs name no model; imported under model "
            "tiny, the only model the other runs of engine vllm, chip nvidia_h200 on 07-05 name (give --model to "
            "choose)\n") in result.stderr
    assert "not attributed to a model" not in result.stderr
    data = json.loads(Path("imported/nvidia_h200_vllm_20260705-101500/results.json").read_text(encoding="utf-8"))
    assert data["metadata"]["model"] == "tiny" and len(data["scenarios"]) == 5
    joined = [s for s in data["scenarios"] if s["source"]["file"].endswith(".jsonl")]
    assert len(joined) == 4 and all(
        "model tiny from the other runs of engine vllm, chip nvidia_h200 on 07-05: this run and its file name do not "
        "name one" in s["notes"] for s in joined)


def test_files_that_name_no_model_stay_unknown_on_another_day(raw: Path) -> None:
    _vllm_bench_file(raw / "raw_outputs", "20260706-101500")  # another day: which model ran on 07-05 is unknown
    result = cli("import-legacy", "raw_outputs", "--platform", "nvidia_h200")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in Path("imported").iterdir()) == ["nvidia_h200_vllm_tiny_20260706-101500",
                                                                  "nvidia_h200_vllm_unknown_0705"]
    assert ("warning: vllm_0705_2_128_32.jsonl: not attributed to a model (the runs do not name it); recorded as "
            "'unknown' under engine vllm: give --model\n") in result.stderr
