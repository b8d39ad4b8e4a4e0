"""One fact, one place: no package module outside catalog/ names an engine or spells one of its flags.

Every string constant of sskj_results/ outside catalog/ (docstrings left out: prose) is read with `ast`.
None may equal an engine row's name, alias or label, hold one of its /metrics counter names (`<name>:...`),
or equal a flag spelling of a row (its settings' flags, host, port, model and served-name flags, head words,
metrics flags, JSON options, config-file options, data-parallel flags). What such a constant names that is
not an engine fact is listed in ALLOWED with why; an entry that no longer matches anything fails too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from sskj_results.catalog.engines import ENGINES, Engine

PACKAGE = Path(__file__).resolve().parents[1] / "sskj_results"

_CLIENT = "the client of that name (catalog/clients.py: CLIENT=sglang|vllm), not the engine"
# (module path under sskj_results/, the constant) -> why it is no engine fact
ALLOWED: dict[tuple[str, str], str] = {
    ("run/launch.py", "sglang"): _CLIENT,
    ("run/launch.py", "vllm"): _CLIENT,
    ("run/phase.py", "sglang"): _CLIENT,
    ("run/prompts.py", "sglang"): _CLIENT,
    ("run/prompts.py", "vllm"): _CLIENT,
    ("ingest/streaming.py", "vllm"): _CLIENT,
    ("cli/loop_cmd.py", "sglang"): _CLIENT,
    ("cli/next_cmd.py", "sglang"): _CLIENT,
    ("cli/next_cmd.py", "vllm"): _CLIENT,
    ("cli/client_cmd.py", "sglang"): _CLIENT,
    ("cli/client_cmd.py", "vllm"): _CLIENT,
    ("cli/preflight_cmd.py", "sglang"): _CLIENT,
    ("cli/preflight_cmd.py", "vllm"): _CLIENT,
    ("cli/config_cmd.py", "sglang"): _CLIENT + " (a row's client_backends key)",
    ("run/loopstart.py", "sglang"): _CLIENT,
    ("run/loopstart.py", "--host"): "the package's own options (`sskj-results preflight`, planned by config --start)",
    ("run/loopstart.py", "--port"): "the package's own options (`sskj-results preflight`)",
    ("run/dryplan.py", "--config"): "`sskj-results metadata --config KEY=VALUE`, the package's own option",
    ("run/allocation.py", "--config"): "`sskj-results metadata --config KEY=VALUE`, the package's own option",
    ("run/drafter.py", "dspark"): "the speculative method whose drafter has a block size, not the engine",
    ("cli/loop_cmd.py", "--host"): "the client command's flags (sglang.bench_serving / vllm bench serve)",
    ("cli/loop_cmd.py", "--port"): "the client command's flags",
    ("cli/loop_cmd.py", "--model"): "the client command's flags",
    ("cli/loop_cmd.py", "--backend"): "the client command's flags",
    ("cli/loop_cmd.py", "--config"): "`sskj-results metadata --config KEY=VALUE`, the package's own option",
    ("run/records.py", "--config"): "`sskj-results metadata --config KEY=VALUE`, the package's own option",
    ("cli/metadata_cmd.py", "--config"): "the package's own option",
    ("run/scenario_cmds.py", "--model"): "scripts/common/warmup.py's option",
    ("cli/client_cmd.py", "--host"): "the package's own options (`sskj-results client`)",
    ("cli/client_cmd.py", "--port"): "the package's own options",
    ("cli/client_cmd.py", "--model"): "the package's own options",
    ("cli/client_cmd.py", "--backend"): "the package's own options",
    ("cli/preflight_cmd.py", "--host"): "the package's own options (`sskj-results preflight`)",
    ("cli/preflight_cmd.py", "--port"): "the package's own options",
    ("cli/preflight_cmd.py", "--model"): "the package's own options",
    ("cli/run_client_cmd.py", "--port"): "the package's own options (`sskj-results run-client`)",
    ("cli/import_cmd.py", "--model"): "the package's own options (`sskj-results import-legacy`)",
    ("contract/clientinfo.py", "`client_counters`: the vLLM client's own"): "results.json's description of "
    "Acceptance.source: the contract sits below the catalog and documents where a value comes from",
}
# ALLOWED keys are a constant's whole text, or its start for a long prose constant (a description)


def _words(rows: tuple[Engine, ...]) -> tuple[set[str], set[str], re.Pattern[str]]:
    names = {w.lower() for row in rows for w in (row.name, *row.aliases, row.label)}
    # a one-letter option is everybody's (python -c, sh -c): only longer spellings name an engine's flag
    flags = {f for row in rows for f in row.spellings if not re.fullmatch(r"-[A-Za-z]", f)}
    counters = {c for row in rows for c in vars(row.counters).values() if ":" in c}
    return names, flags, re.compile("|".join(re.escape(c) for c in sorted(counters)) or "(?!)")


def constants(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the module's string constants that are not docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]


def engine_facts_outside_catalog(package: Path = PACKAGE) -> tuple[list[str], set[tuple[str, str]]]:
    """(findings not allowed, allow-list entries used)."""
    names, flags, counter = _words(ENGINES)
    found, used = [], set()
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("catalog/"):
            continue
        for line, text in constants(path):
            if text.lower() in names or text in flags or counter.search(text):
                key = next(((r, t) for r, t in ALLOWED if r == rel and (t == text or len(t) > 30
                                                                          and text.startswith(t))), (rel, text))
                if key in ALLOWED:
                    used.add(key)
                else:
                    found.append(f"sskj_results/{rel}:{line}: {text[:80]!r}")
    return found, used


def test_no_module_outside_the_catalog_names_an_engine_or_spells_its_flags() -> None:
    found, used = engine_facts_outside_catalog()
    assert not found, "engine facts outside catalog/ (read them from the rows):\n" + "\n".join(found)
    assert not set(ALLOWED) - used, f"allow-list entries that match nothing any more: {sorted(set(ALLOWED) - used)}"


def test_the_scan_finds_a_planted_copy(tmp_path: Path) -> None:
    """The scan is not blind: a copied flag, engine name or counter in a module is found."""
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "planted.py").write_text(
        '"""Docstrings may say --tp-size and sglang."""\n'
        'TP = ("--tp-size", "--tp_size")\nNAME = "TensorRT-LLM"\nCOUNTER = "vllm:generation_tokens_total"\n'
        'CLIENT = "sglang"\n')
    found, _ = engine_facts_outside_catalog(tmp_path)
    texts = {f.rsplit(": ", 1)[1] for f in found}
    assert texts == {"'--tp-size'", "'--tp_size'", "'TensorRT-LLM'", "'vllm:generation_tokens_total'", "'sglang'"}, found
    assert not any("Docstrings" in f for f in found)
