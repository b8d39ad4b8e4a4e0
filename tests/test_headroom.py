"""Context headroom: preflight refuses a grid that the context of a phase cannot hold, before any engine starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sskj_results.catalog.engines import ENGINES, Engine
from sskj_results.cli import main
from sskj_results.run.headroom import context_problem, need

REPO = Path(__file__).resolve().parents[1]
LONG = REPO / "experiments" / "h200" / "dsv4_h200_long_context" / "scenarios.tsv"
VLLM = ["env", "VLLM_SERVER_DEV_MODE=1", "/e/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m",
        "--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8", "--max-num-seqs", "64"]
SHORT = [f"c{c}_i262144_o4096" for c in (2, 5, 10)]  # 262144 + 1024 + margin still fits


def _phase_file(tmp_path: Path, name: str, engine: str, argv: list[str]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(w.encode() + b"\0" for w in (engine, str(tmp_path / "no-model"), "", *argv)))
    return path


def _errors(output: str) -> list[str]:
    return [line.split("] preflight: ", 1)[1] for line in output.splitlines() if "[ERROR] preflight: " in line]


def test_need_is_input_output_speculative_and_margin() -> None:
    n = need("c2_i262144_o4096", 262144, 4096, 5, 1.0)
    assert (n.margin, n.total) == (2663, 262144 + 4096 + 5 + 2663)
    assert need("x", 128, 64, None, 0).total == 192


def test_preflight_refuses_the_long_context_grid_on_the_old_context(tmp_path: Path) -> None:
    """266240 = 262144 + 4096 exactly: no room for the speculative tokens or a margin (issue 23)."""
    vllm = _phase_file(tmp_path, "p2", "vllm", [*VLLM, "--max-model-len", "266240"])
    dspark = _phase_file(tmp_path, "p3", "vllm-dspark", [*VLLM, "--max-model-len", "266240", "--spec-method", "dspark",
                                                          "--spec-tokens", "5"])
    result = CliRunner().invoke(main, ["preflight", "--scenarios", str(LONG), "--phase-file", str(vllm),
                                       "--phase-file", str(dspark)])
    assert result.exit_code == 1
    context = [line for line in _errors(result.output) if "context 266240" in line]
    assert context == [
        "engine vllm: context 266240 (--max-model-len 266240) is too small for 3 of 21 scenarios (" + ", ".join(SHORT)
        + "); the largest, c2_i262144_o4096, needs 268903 = 262144 input + 4096 output + 2663 margin (1 %): give "
        "the phase a context of at least 268903 (the experiment's context setting, e.g. CONTEXT_LEN or MAX_MODEL_LEN "
        "in config.env), `auto` where the engine takes it, or leave these scenarios out of the grid",
        "engine vllm-dspark: context 266240 (--max-model-len 266240) is too small for 3 of 21 scenarios ("
        + ", ".join(SHORT) + "); the largest, c2_i262144_o4096, needs 268908 = 262144 input + 4096 output + 5 "
        "speculative + 2663 margin (1 %): give the phase a context of at least 268908 (the experiment's context "
        "setting, e.g. CONTEXT_LEN or MAX_MODEL_LEN in config.env), `auto` where the engine takes it, or leave "
        "these scenarios out of the grid",
    ]
    # the shipped context fits; a dry run only warns
    fits = _phase_file(tmp_path, "ok", "vllm-dspark", [*VLLM, "--max-model-len", "270336", "--spec-tokens", "5"])
    ok = CliRunner().invoke(main, ["preflight", "--scenarios", str(LONG), "--phase-file", str(fits)])
    assert not any("context" in line for line in _errors(ok.output)), ok.output
    dry = CliRunner().invoke(main, ["preflight", "--warn-only", "--scenarios", str(LONG), "--phase-file", str(vllm)])
    assert dry.exit_code == 0 and "[WARN] preflight: engine vllm: context 266240" in dry.output


def test_sglang_context_and_the_margin_setting(tmp_path: Path) -> None:
    argv = ["/e/python", "-m", "sglang.launch_server", "--model-path", "/m", "--context-length", "266240"]
    rows = [("c2_i131072_o4096", 131072, 4096), ("c2_i262144_o256", 262144, 256)]
    assert context_problem("sglang", argv, "/m", rows, 0.0) is None  # 262400 fits without a margin
    what, fix = context_problem("sglang", argv, "/m", rows, 2.0) or ("", "")
    assert what.startswith("engine sglang: context 266240 (--context-length 266240) is too small for 1 of 2 "
                           "scenarios (c2_i262144_o256); the largest, c2_i262144_o256, needs 267648")
    assert "at least 267648" in fix


def test_auto_is_checked_against_the_models_own_maximum(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    rows = [("c1_i8192_o128", 8192, 128)]
    auto = ["vllm", "serve", str(model), "--max-model-len", "auto"]
    assert context_problem("vllm", auto, str(model), rows, 1.0) is None  # no config.json: not known here, not checked
    (model / "config.json").write_text(json.dumps({"text_config": {"max_position_embeddings": 4096}}))
    what, _ = context_problem("vllm", auto, str(model), rows, 1.0) or ("", "")
    assert what.startswith("engine vllm: context 4096 (--max-model-len auto: the model's max_position_embeddings 4096)")
    unset = ["vllm", "serve", str(model)]
    assert "--max-model-len not given: the model's max_position_embeddings 4096" in \
        (context_problem("vllm", unset, str(model), rows, 1.0) or ("", ""))[0]
    (model / "config.json").write_text(json.dumps({"max_position_embeddings": 1048576}))
    assert context_problem("vllm", auto, str(model), rows, 1.0) is None
    assert context_problem("vllm", ["some-server", "--port", "1"], str(model), rows, 1.0) is None  # not understood


def test_the_shipped_long_context_experiment_holds_its_full_matrix(tmp_path: Path) -> None:
    from sskj_results.contract.envfile import parse_env_file

    exp = LONG.parent
    config = dict(parse_env_file(exp / "config.env", environ={"MODEL_ROOT": "/m"}, preset=frozenset(), protect=frozenset()).assignments)
    context, spec = config["CONTEXT_LEN"], config["SPEC_TOKENS"]
    dspark = _phase_file(tmp_path, "p3", "vllm-dspark", [*VLLM, "--max-model-len", context, "--spec-tokens", spec])
    for grid in ("scenarios.tsv", "scenarios_full.tsv"):
        result = CliRunner().invoke(main, ["preflight", "--scenarios", str(exp / grid), "--phase-file", str(dspark)])
        assert not any("is too small" in line for line in _errors(result.output)), result.output
    assert int(context) >= 262144 + 4096 + int(spec) + 2663


GPU_EXPERIMENTS = sorted(p.parent for p in (REPO / "experiments").glob("*/*/config.env")
                         if p.parent.parent.name in ("h20", "h200", "p800", "pro6000"))


def _shipped(exp: Path) -> dict[str, str]:
    from sskj_results.contract.envfile import parse_env_file

    return dict(parse_env_file(exp / "config.env", environ={"MODEL_ROOT": "/m"}, preset=frozenset(),
                               protect=frozenset()).assignments)


def _grid(exp: Path, config: dict[str, str]) -> list[str]:
    """The experiment's own grid as the planner reads it: its scenarios.tsv, else CONCURRENCIES x SHAPES."""
    return ["--scenarios", str(exp / "scenarios.tsv"), "--concurrencies", config.get("CONCURRENCIES", ""),
            "--shapes", config.get("SHAPES", "")]


def test_every_shipped_gpu_experiment_gives_a_context_its_own_grid_fits_and_says_how(tmp_path: Path) -> None:
    """The context of config.env holds every scenario of the experiment's grid (+ speculative tokens) with
    the 1 % margin, the comment there states the need it was sized from, and one token less is refused."""
    from sskj_results.run.plan import load_grid

    assert {p.name for p in GPU_EXPERIMENTS} >= {"dsv4_h200_sglang_vs_vllm", "dsv4_p800_sglang", "dsv4_h200_dspark"}
    for exp in GPU_EXPERIMENTS:
        config = _shipped(exp)
        if exp.name == "dsv4_h200_dspark":  # seed 001's command: the model's own maximum
            assert config["MAX_MODEL_LEN"] == "auto"
            continue
        context = int(config["CONTEXT_LEN"])
        spec = config.get("SPEC_TOKENS")
        grid = _grid(exp, config)
        tsv = exp / "scenarios.tsv"
        rows = load_grid(tsv if tsv.exists() else None, config.get("CONCURRENCIES"), config.get("SHAPES"))
        largest = max(need(r.name, r.input_len, r.output_len, int(spec) if spec else None, 1.0).total for r in rows)
        assert context >= largest, exp.name
        assert f"needs {largest};" in (exp / "config.env").read_text(), f"{exp.name}: config.env states no need {largest}"
        for size, fits in ((context, True), (largest, True), (largest - 1, False)):
            sglang = _phase_file(tmp_path, "p1", "sglang", ["/e/python", "-m", "sglang.launch_server", "--model-path",
                                                             "/m", "--context-length", str(size)])
            vllm = _phase_file(tmp_path, "p2", "vllm-dspark" if spec else "vllm",
                               [*VLLM, "--max-model-len", str(size), *(["--spec-tokens", spec] if spec else [])])
            result = CliRunner().invoke(main, ["preflight", *grid, "--phase-file", str(sglang), "--phase-file", str(vllm)])
            short = [line for line in _errors(result.output) if "is too small" in line]
            assert (short == []) == fits, (exp.name, size, short)
            if not fits:
                assert result.exit_code == 1 and len(short) == (1 if spec else 2), (exp.name, short)


@pytest.mark.parametrize("row", ENGINES, ids=lambda r: r.name)
def test_every_engines_context_is_checked_in_its_own_spelling(row: Engine) -> None:
    flag = row.flags["max_model_len"][0]
    launch = ["/e/python", "-m", row.launch_module] if row.launch_module else [f"/e/bin/{row.program}"]
    argv = [*launch, *row.launch_args, "/m", flag, "4096"]
    rows = [("c1_i4000_o256", 4000, 256)]
    what, fix = context_problem(row.name, argv, "/m", rows, 0.0) or ("", "")
    assert what.startswith(f"engine {row.name}: context 4096 ({flag} 4096) is too small for 1 of 1 scenarios")
    assert "at least 4256" in fix
    assert context_problem(row.name, [*argv[:-1], "8192"], "/m", rows, 0.0) is None
