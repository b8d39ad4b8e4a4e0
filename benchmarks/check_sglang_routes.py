#!/usr/bin/env python3
"""Check the HTTP routes and request fields the run loop uses on an SGLang server against a real SGLang release.

No SGLang server starts on this machine (docs: DESIGN, "a real SGLang server does not start"), so, as
check_engine_argv.py does for flags, the release's own source is read instead: its route table
(`sglang/srt/entrypoints/http_server.py`: every `@app.get/post/api_route`, and the `/metrics` mount of
`add_prometheus_middleware` in `sglang/srt/utils/common.py`) and request models (`GenerateReqInput` in
`sglang/srt/managers/io_struct.py`, `CompletionRequest` in `sglang/srt/entrypoints/openai/protocol.py`), parsed
with `ast`, never imported (the server's imports need CUDA packages). What the loop and its client use on SGLang:

* GET  the engine row's health path (`catalog.engines`: /health), before and around every scenario;
* POST the engine row's cache-reset path (/flush_cache) before every scenario;
* GET  /metrics (with --enable-metrics, the row's metrics flags) before and after every scenario;
* GET  /server_info (the client's accept length: `internal_states[0].avg_spec_accept_length`);
* POST /generate with `input_ids` (the client's token-ids requests, `--tokenize-prompt`) or `text` (a
  round-trip set), `sampling_params` (`max_new_tokens`, `ignore_eos`, `temperature`) and `stream`;
* GET  /v1/models and POST /v1/completions whose `prompt` takes token ids (scripts/common/warmup.py).

Usage (from the repository root)::

    python3 benchmarks/check_sglang_routes.py --download            # pip download --no-deps sglang (the newest)
    python3 benchmarks/check_sglang_routes.py --wheel sglang-0.5.23-...whl
    python3 benchmarks/check_sglang_routes.py --source DIR           # an installed or unpacked sglang/ parent
    python3 benchmarks/check_sglang_routes.py --wheel W --write-facts benchmarks/data/sglang_routes.json
    python3 benchmarks/check_sglang_routes.py --facts benchmarks/data/sglang_routes.json

One line per use, OK or what is missing; exit 1 when one is missing. `--write-facts` keeps the extracted table
(release, routes with their methods, request fields): tests/test_sglang_routes.py checks the committed one, and
the wheel itself when `SSKJ_SGLANG_WHEEL` names one.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FILES = {
    "routes": "sglang/srt/entrypoints/http_server.py",
    "mounts": "sglang/srt/utils/common.py",
    "generate": "sglang/srt/managers/io_struct.py",
    "completion": "sglang/srt/entrypoints/openai/protocol.py",
}
SAMPLING_FIELDS = ("max_new_tokens", "ignore_eos", "temperature")  # the client's sampling_params keys
SAMPLING_FILE = "sglang/srt/sampling/sampling_params.py"
Facts = dict  # {"release": str, "routes": {path: [methods]}, "fields": {model: {field: annotation}}}


def _decorated_routes(tree: ast.AST) -> dict[str, list[str]]:
    """`@app.get(path)`, `@app.post(path)`, `@app.api_route(path, methods=[...])` (paths given as literals)."""
    routes: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                    and isinstance(dec.func.value, ast.Name) and dec.func.value.id == "app"):
                continue
            kind = dec.func.attr
            path = dec.args[0].value if dec.args and isinstance(dec.args[0], ast.Constant) else None
            if not isinstance(path, str):
                continue
            if kind in ("get", "post", "put", "delete"):
                methods = {kind.upper()}
            elif kind == "api_route":
                methods = {"GET"}
                for kw in dec.keywords:
                    if kw.arg == "methods" and isinstance(kw.value, (ast.List, ast.Tuple)):
                        methods = {e.value for e in kw.value.elts if isinstance(e, ast.Constant)}
            else:
                continue
            routes.setdefault(path, set()).update(methods)
    return {path: sorted(methods) for path, methods in sorted(routes.items())}


def _mounts(tree: ast.AST) -> list[str]:
    """`Mount("/path", ...)` calls (an ASGI app answers every method there; /metrics is read with GET)."""
    return sorted({node.args[0].value for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Mount"
                   and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)})


def _class_fields(tree: ast.AST, name: str) -> dict[str, str]:
    """The annotated fields of class NAME, with their annotations as source text."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {stmt.target.id: ast.unparse(stmt.annotation) for stmt in node.body
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)}
    return {}


def _init_params(tree: ast.AST, name: str) -> dict[str, str]:
    """The fields of class NAME: annotated (a msgspec Struct, SGLang 0.5.2x) or its __init__'s parameters (a
    plain class, older releases)."""
    fields = _class_fields(tree, name)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                    fields.update({a.arg: ast.unparse(a.annotation) if a.annotation else "" for a in
                                   [*stmt.args.args, *stmt.args.kwonlyargs] if a.arg != "self"})
    return fields


def extract(read: Callable[[str], Optional[str]], release: str) -> Facts:
    """The facts of one release from its source files (read(path) -> text, None when absent)."""
    def tree(key: str) -> ast.AST:
        text = read(FILES[key] if key in FILES else key)
        if text is None:
            raise SystemExit(f"check_sglang_routes.py: {FILES.get(key, key)} is not in this SGLang release")
        return ast.parse(text)
    routes = _decorated_routes(tree("routes"))
    for path in _mounts(tree("mounts")):
        routes.setdefault(path, ["GET"])
    fields = {"GenerateReqInput": _class_fields(tree("generate"), "GenerateReqInput"),
              "CompletionRequest": _class_fields(tree("completion"), "CompletionRequest"),
              "SamplingParams": _init_params(tree(SAMPLING_FILE), "SamplingParams")}
    return {"release": release, "routes": routes, "fields": fields}


def from_wheel(wheel: Path) -> Facts:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())

        def read(path: str) -> Optional[str]:
            return zf.read(path).decode("utf-8") if path in names else None
        return extract(read, wheel.name.split("-")[1])


def from_source(root: Path) -> Facts:
    def read(path: str) -> Optional[str]:
        file = root / path
        return file.read_text(encoding="utf-8") if file.is_file() else None
    version = root / "sglang" / "_version.py"
    return extract(read, version.read_text().split("__version__ = ", 1)[-1].split("\n")[0].strip("'\" ")
                   if version.is_file() else "source")


def uses() -> list[tuple[str, str, Callable[[Facts], bool]]]:
    """What the loop and its client use on SGLang: (method, what, test on the facts); paths from the engine row."""
    from sskj_results.catalog.engines import engine

    row = engine("sglang")

    def route(path: str, method: str) -> Callable[[Facts], bool]:
        return lambda facts: method in facts["routes"].get(path, [])

    def field(model: str, name: str, needs: str = "") -> Callable[[Facts], bool]:
        return lambda facts: name in facts["fields"][model] and needs in facts["fields"][model][name]

    out = [("GET", row.health_path, route(row.health_path, "GET")),
           ("POST", row.reset_path, route(row.reset_path, "POST")),
           ("GET", "/server_info", route("/server_info", "GET")),
           ("POST", "/generate", route("/generate", "POST")),
           ("GET", "/v1/models", route("/v1/models", "GET")),
           ("POST", "/v1/completions", route("/v1/completions", "POST")),
           ("field", "GenerateReqInput.input_ids", field("GenerateReqInput", "input_ids")),
           ("field", "GenerateReqInput.text", field("GenerateReqInput", "text")),
           ("field", "GenerateReqInput.sampling_params", field("GenerateReqInput", "sampling_params")),
           ("field", "GenerateReqInput.stream", field("GenerateReqInput", "stream")),
           ("field", "CompletionRequest.prompt (token ids)", field("CompletionRequest", "prompt", "List[int]"))]
    if row.metrics:
        out.insert(2, ("GET", "/metrics", route("/metrics", "GET")))
    out += [("field", f"SamplingParams.{name}", field("SamplingParams", name)) for name in SAMPLING_FIELDS]
    return out


def check(facts: Facts) -> list[str]:
    """One line per use: `OK ...` or `MISSING ...`."""
    return [f"{'OK' if test(facts) else 'MISSING'} {method} {what} (SGLang {facts['release']})"
            for method, what, test in uses()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--wheel", type=Path)
    group.add_argument("--source", type=Path)
    group.add_argument("--facts", type=Path)
    group.add_argument("--download", action="store_true", help="pip download --no-deps sglang (the newest)")
    parser.add_argument("--write-facts", type=Path, default=None)
    args = parser.parse_args()
    if args.download:
        tmp = Path(tempfile.mkdtemp(prefix="sglang-wheel-"))
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "sglang", "-d", str(tmp)], check=True)
        args.wheel = next(tmp.glob("sglang-*.whl"))
    facts = (from_wheel(args.wheel) if args.wheel else from_source(args.source) if args.source
             else json.loads(args.facts.read_text()))
    if args.write_facts:
        args.write_facts.write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    lines = check(facts)
    print("\n".join(lines))
    return 1 if any(line.startswith("MISSING") for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
