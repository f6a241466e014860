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
    assert graph["rcompat.elf.patch.align"], "the import reader found nothing: it is broken"
    assert _cycles({m: {t for t, _ in targets} for m, targets in graph.items()}) == []


def test_no_module_imports_private_names_of_another():
    graph = _imports(_modules())
    private = sorted(f"{m} imports {name} from {target}" for m, targets in graph.items()
                     for target, name in targets if name.startswith("_") and not name.startswith("__"))
    assert private == []


# The ELF engine and the upgrade scan, bottom to top. A level holds groups of units (a sub-package or a
# top-level module of the engine); a module may import its own group and the levels below it, never a
# group beside it or above it (abi and patch answer two questions at one level, and neither asks the
# other). A new unit must be ranked here before anything imports it.
LAYERS = {
    "rcompat.elf": [[("rcompat.elf.errors",)], [("rcompat.elf.read",)], [("rcompat.elf.link",)],
                    [("rcompat.elf.abi",), ("rcompat.elf.patch",)],
                    [("rcompat.elf.checks", "rcompat.elf.targets")],  # the doctor's elf area
                    [("rcompat.elf.cli",)]],
    "rcompat.upgrade_scan": [[("rcompat.upgrade_scan.image",)],
                        [("rcompat.upgrade_scan.inventory", "rcompat.upgrade_scan.stack", "rcompat.upgrade_scan.stack_checks",
                          "rcompat.upgrade_scan.side", "rcompat.upgrade_scan.carried", "rcompat.upgrade_scan.rebind",
                          "rcompat.upgrade_scan.frameworks", "rcompat.upgrade_scan.findings",
                          "rcompat.upgrade_scan.interp")],  # the checks of the scan
                        [("rcompat.upgrade_scan.scan",)], [("rcompat.upgrade_scan.cli",)]],
}


def _unit(module: str, engine: str) -> str | None:
    """The ranked unit MODULE belongs to; None for the engine package itself (its __init__ is the
    public surface, above every unit)."""
    if module == engine:
        return None
    return ".".join(module.split(".")[:3])


def _rank(engine: str) -> dict[str, tuple[int, int]]:
    """unit -> (level, group)"""
    return {unit: (level, group) for level, groups in enumerate(LAYERS[engine])
            for group, units in enumerate(groups) for unit in units}


def _upward_imports(graph: dict[str, set[tuple[str, str]]], engine: str) -> list[str]:
    rank = _rank(engine)
    found = []
    for module, targets in graph.items():
        if not (module == engine or module.startswith(engine + ".")):
            continue
        for target, _ in targets:
            if not target.startswith(engine + ".") and target != engine:
                continue
            source_unit, target_unit = _unit(module, engine), _unit(target, engine)
            if source_unit is None or rank.get(source_unit) == rank.get(target_unit):
                continue
            if target_unit is None:
                found.append(f"{module} imports the package {engine} (its public surface, above every part)")
            elif rank[source_unit][0] <= rank[target_unit][0]:
                found.append(f"{module} imports {target} ({source_unit} is not above {target_unit})")
    return sorted(found)


def test_every_part_of_the_layered_engines_is_ranked():
    modules = _modules()
    for engine in LAYERS:
        units = {_unit(m, engine) for m in modules if m.startswith(engine + ".")}
        assert units - set(_rank(engine)) == set(), f"rank these in LAYERS[{engine!r}]"


def test_the_layered_engines_import_only_downward():
    graph = _imports(_modules())
    assert ("rcompat.elf.read.reader", "ElfImage") in graph["rcompat.elf.link.ldconf"] or \
        any(t.startswith("rcompat.elf.read") for t, _ in graph["rcompat.elf.link.ldconf"]), "reader broken"
    assert [p for engine in LAYERS for p in _upward_imports(graph, engine)] == []


def test_the_downward_rule_sees_an_upward_import():
    graph = {"rcompat.elf.read.reader": {("rcompat.elf.link.root", "Root")},
             "rcompat.elf.abi.diff": {("rcompat.elf.patch.diff", "patch_diff"), ("rcompat.elf.read.reader", "")},
             "rcompat.elf.link.root": {("rcompat.elf", "ElfError")}}
    assert _upward_imports(graph, "rcompat.elf") == [
        "rcompat.elf.abi.diff imports rcompat.elf.patch.diff (rcompat.elf.abi is not above rcompat.elf.patch)",
        "rcompat.elf.link.root imports the package rcompat.elf (its public surface, above every part)",
        "rcompat.elf.read.reader imports rcompat.elf.link.root (rcompat.elf.read is not above rcompat.elf.link)"]


def test_the_image_reader_imports_nothing_else_of_upgrade():
    graph = _imports(_modules())
    outside = sorted(f"{m} imports {t}" for m, targets in graph.items() if m.startswith("rcompat.upgrade_scan.image")
                     for t, _ in targets if t.startswith("rcompat.upgrade_scan") and not t.startswith("rcompat.upgrade_scan.image"))
    assert outside == []


def test_pyelftools_is_imported_only_by_the_build_reader_and_only_when_used():
    """The bulk path (`elf symbols`, the resolver) must not pay pyelftools' import: one module reads
    with it, inside its functions."""
    found = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = set(map(id, tree.body))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "elftools" or n.startswith("elftools.") for n in names):
                found.append((module, "top level" if id(node) in top_level else "in a function"))
    assert found and set(found) == {("rcompat.elf.read.build", "in a function")}
