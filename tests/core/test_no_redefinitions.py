"""No module defines a function or class twice in one scope: the later one silently replaces the first,
and every caller of the first then gets the second (benchmarks/bench_image_read.py had two `_load`s: the
image builder's module loader and the load average; the bench failed only on a machine without its
image cache, so the suite never saw it). A property's setter or deleter, and typing.overload, reuse
the name on purpose."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TREES = ("rcompat", "benchmarks", "scripts", "tests", "fixtures")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _on_purpose(node: ast.AST) -> bool:
    for decorator in getattr(node, "decorator_list", []):
        name = ast.unparse(decorator)
        if name.endswith((".setter", ".deleter", ".getter")) or name in ("overload", "typing.overload"):
            return True
    return False


def _redefined(tree: ast.AST) -> list[tuple[str, int, int]]:
    found = []
    scopes = [tree] + [n for n in ast.walk(tree) if isinstance(n, _DEFS)]
    for scope in scopes:
        seen: dict[str, int] = {}
        for node in getattr(scope, "body", []):
            if isinstance(node, _DEFS) and not _on_purpose(node):
                if node.name in seen:
                    found.append((node.name, seen[node.name], node.lineno))
                seen[node.name] = node.lineno
    return found


def test_no_function_or_class_is_defined_twice_in_one_scope():
    found = {}
    files = [p for tree in TREES for p in sorted((REPO / tree).rglob("*.py")) if "__pycache__" not in p.parts]
    assert len(files) > 100
    for path in files:
        redefined = _redefined(ast.parse(path.read_text(), str(path)))
        if redefined:
            found[str(path.relative_to(REPO))] = redefined
    assert not found, f"defined twice (name, first line, second line): {found}"


def test_the_check_sees_a_redefinition():
    code = "def a():\n    pass\n\n\ndef a():\n    pass\n\n\nclass C:\n    def m(self): ...\n    def m(self): ...\n"
    assert _redefined(ast.parse(code)) == [("a", 1, 5), ("m", 10, 11)]
