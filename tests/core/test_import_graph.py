"""The package's import graph has no circles, and no module imports another's private names.

Every import counts, also those inside functions and under TYPE_CHECKING: a module split out of another
that imports back from it (patch_align from patch, trace from result, render from model) is a circle
even when Python tolerates it at run time. Shared types belong in a module both import.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rcompat"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(modules: dict[str, Path]) -> dict[str, set[tuple[str, str]]]:
    """module -> {(imported module, imported name or "")}; `from rcompat import __version__` is the
    package's metadata, not an engine, and is left out."""
    graph: dict[str, set[tuple[str, str]]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        graph[module].add((f"{base}.{alias.name}", ""))
                    elif base in modules and base != "rcompat":
                        graph[module].add((base, alias.name))
            elif isinstance(node, ast.Import):
                graph[module].update((a.name, "") for a in node.names if a.name in modules and a.name != "rcompat")
        graph[module] = {(m, n) for m, n in graph[module] if m != module}
    return graph


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_the_detector_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_back_from_a_module_that_imports_it():
    graph = _imports(_modules())
    assert graph["rcompat.elf.patch_align"], "the import reader found nothing: it is broken"
    assert _cycles({m: {t for t, _ in targets} for m, targets in graph.items()}) == []


def test_no_module_imports_private_names_of_another():
    graph = _imports(_modules())
    private = sorted(f"{m} imports {name} from {target}" for m, targets in graph.items()
                     for target, name in targets if name.startswith("_") and not name.startswith("__"))
    assert private == []
