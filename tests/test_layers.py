"""The package's layers (docs/ARCHITECTURE.md): imports go downward only, and no module imports itself back.

Every import counts, the lazy ones inside functions too. A new module must be
placed in a layer here (and in docs/ARCHITECTURE.md) before the suite passes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "sskj_results"

# layer -> modules (dotted names below sskj_results; a package counts for its modules)
LAYERS: dict[str, set[str]] = {
    "contract": {"__init__", "errors", "models", "comparison_models", "schema", "io", "runset", "redact", "envfile", "names",
                 "engines", "clients", "patches", "launch"},
    "analysis": {"stats", "metrics", "slo", "slo_search", "rundata", "configdiff", "compare", "validate", "runtable", "validity"},
    "ingest": {"rawio", "readers", "sidecars", "metadata", "evidence", "importer"},
    "render": {"report", "plots", "html"},
    "app": {"publish", "reparse", "newexp", "preflight", "collect", "slurm", "plan", "supervise",
            "setup_envs", "platforms", "allocation"},
    "cli": {"cli", "__main__"},
}
# what each layer may import (ingest and render are siblings: neither imports the other)
ALLOWED: dict[str, set[str]] = {
    "contract": {"contract"},
    "analysis": {"contract", "analysis"},
    "ingest": {"contract", "analysis", "ingest"},
    "render": {"contract", "analysis", "render"},
    "app": {"contract", "analysis", "ingest", "render", "app"},
    "cli": set(LAYERS),
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    for layer, members in LAYERS.items():
        if module in members or module.split(".")[0] in members and module.split(".")[0] != "__init__":
            return layer
    return None


def imports_of(path: Path) -> set[str]:
    """sskj_results modules imported anywhere in the file (relative or absolute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    if package == ["__init__"]:
        package = []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else list(package)
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "sskj_results":
                target = node.module.split(".")[1:]
            else:
                continue
            if node.module is None or not target:
                # `from . import x`: x is a module (or the package root's attribute)
                for alias in node.names:
                    name = ".".join(target + [alias.name]) if target else alias.name
                    found.add(name if (PKG / (name.replace(".", "/") + ".py")).exists()
                              or (PKG / name.replace(".", "/")).is_dir() else ".".join(target) or "__init__")
            else:
                found.add(".".join(target))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "sskj_results":
                    found.add(".".join(parts[1:]) or "__init__")
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PKG.rglob("*.py"))}


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in graph() if layer_of(m) is None)
    assert not unplaced, (f"modules with no layer: {unplaced}; add each to LAYERS in tests/test_layers.py "
                          "and to the map in docs/ARCHITECTURE.md")


def test_imports_go_downward_only():
    wrong = []
    for module, targets in graph().items():
        src = layer_of(module)
        for target in sorted(targets):
            dst = layer_of(target)
            if src is not None and dst is not None and dst not in ALLOWED[src]:
                wrong.append(f"{module} ({src}) imports {target} ({dst})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    g = {m: {t for t in ts if t != "__init__" and t != m} for m, ts in graph().items()}
    # collapse package-internal names: `cli.x` importing `cli.common` is fine; cycles are found on modules
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for v in sorted(g):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_library_does_not_read_sys_argv():
    readers = [module_name(p) for p in PKG.rglob("*.py")
               if layer_of(module_name(p)) != "cli" and "sys.argv" in p.read_text(encoding="utf-8")]
    assert not readers, f"only the CLI may read sys.argv: {readers}"


@pytest.mark.parametrize("source, expected", [
    ("from .report import x\n", {"report"}),
    ("def f():\n    from . import plots\n", {"plots"}),
    ("import sskj_results.compare\n", {"compare"}),
])
def test_the_checker_sees_eager_and_lazy_imports(source, expected):
    fake = PKG / "_layers_probe.py"
    try:
        fake.write_text(source, encoding="utf-8")
        assert imports_of(fake) == expected
    finally:
        fake.unlink()
