"""The package's layers (docs/ARCHITECTURE.md): imports go downward only, and no module imports itself back.

Every import counts, the lazy ones inside functions too. A new module must be
placed in a layer here (and in docs/ARCHITECTURE.md) before the suite passes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "sskj_results"

# the layers are the package's folders, lowest first (docs/ARCHITECTURE.md)
LAYERS = ("contract", "catalog", "analysis", "ingest", "render", "run", "cli")
# what each layer may import (ingest and render are siblings: neither imports the other)
ALLOWED: dict[str, set[str]] = {
    "contract": {"contract"},
    "catalog": {"contract", "catalog"},
    "analysis": {"contract", "catalog", "analysis"},
    "ingest": {"contract", "catalog", "analysis", "ingest"},
    "render": {"contract", "catalog", "analysis", "render"},
    "run": {"contract", "catalog", "analysis", "ingest", "render", "run"},
    "cli": set(LAYERS),
}
# the package root: the version and the lazy public API (`sskj_results.load_run`), `python -m sskj_results`
ROOT_MODULES = {"__init__", "__main__"}
MAX_LINES = 600


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    """The layer of a module: its top folder below sskj_results; "root" for the package's own two files."""
    top = module.split(".")[0]
    if module in ROOT_MODULES:
        return "root"
    return top if top in LAYERS else None


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
            # `from .pkg import x`: x may be a module of pkg (or an attribute of pkg or of the root)
            for alias in node.names:
                name = ".".join(target + [alias.name])
                found.add(name if (PKG / (name.replace(".", "/") + ".py")).exists()
                          or (PKG / name.replace(".", "/")).is_dir() else ".".join(target) or "__init__")
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
    assert not unplaced, (f"modules outside the layer folders: {unplaced}; put each in one of {', '.join(LAYERS)} "
                          "(docs/ARCHITECTURE.md says which)")


def test_the_package_root_holds_only_the_layer_folders():
    entries = {p.name for p in PKG.iterdir() if p.name != "__pycache__"}
    expected = {f"{m}.py" for m in ROOT_MODULES} | {"py.typed"} | set(LAYERS)
    assert entries == expected, f"unexpected in sskj_results/: {sorted(entries - expected)}; missing: {sorted(expected - entries)}"
    for layer in LAYERS:
        assert (PKG / layer / "__init__.py").is_file(), f"sskj_results/{layer}/ is not a package"


def test_no_module_is_over_the_size_limit():
    big = sorted(f"{p.relative_to(PKG)} ({n} lines)" for p in PKG.rglob("*.py")
                 if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES)
    assert not big, f"modules over {MAX_LINES} lines: {big}; split them by job"


def test_imports_go_downward_only():
    wrong = []
    for module, targets in graph().items():
        src = layer_of(module)
        for target in sorted(targets):
            dst = layer_of(target)
            if src is None or dst is None or src == "root" or dst == "root":
                continue  # the root's lazy API reaches every layer; every layer may read the version
            if dst not in ALLOWED[src]:
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
    ("from .report import x\n", {"render.report"}),
    ("def f():\n    from . import plots\n", {"render.plots"}),
    ("def f():\n    from ..ingest import legacy\n", {"ingest.legacy"}),
    ("import sskj_results.analysis.compare\n", {"analysis.compare"}),
])
def test_the_checker_sees_eager_and_lazy_imports(source, expected):
    fake = PKG / "render" / "_layers_probe.py"
    try:
        fake.write_text(source, encoding="utf-8")
        assert imports_of(fake) == expected
    finally:
        fake.unlink()
