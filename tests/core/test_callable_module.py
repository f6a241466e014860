"""A package function named like one of its submodules (rcompat.doctor, rcompat.render, rcompat.elf.symbols,
.missing, .coload, rcompat.parity.record, .compare, rcompat.upgrade) stays callable after the submodule is
imported: Python replaces the package's attribute with the module at that import."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rcompat"


def _colliding() -> list[tuple[str, str]]:
    """(package, name) for every function of a package __init__ that has a submodule or subpackage of
    that name."""
    out = []
    for init in PACKAGE.rglob("__init__.py"):
        package = ".".join(init.parent.relative_to(PACKAGE.parent).parts)
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            submodule = init.parent / node.name if isinstance(node, ast.FunctionDef) else None
            if submodule and ((submodule.with_suffix(".py")).is_file() or (submodule / "__init__.py").is_file()):
                out.append((package, node.name))
    return sorted(out)


def test_every_package_function_named_like_its_module_stays_callable():
    pairs = _colliding()
    # rcompat.elf's symbols/missing/coload no longer collide: their modules live in rcompat.elf.read/.link
    assert {("rcompat", "doctor"), ("rcompat", "render"), ("rcompat.parity", "compare")} <= set(pairs)
    for package, name in pairs:
        module = importlib.import_module(f"{package}.{name}")  # what a first call or the CLI does
        assert getattr(importlib.import_module(package), name) is module
        assert callable(module), f"{package}.{name} is not callable once its module is imported"


def test_the_elf_functions_work_twice():
    import rcompat.elf

    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    first = rcompat.elf.symbols(libc, defined=True)
    second = rcompat.elf.symbols(libc, defined=True)  # the package attribute is the module by now
    assert len(first) == len(second) > 1000
    assert rcompat.elf.missing(libc).to_dict() == rcompat.elf.missing(libc).to_dict()


def test_rcompat_doctor_and_render_work_twice():
    import rcompat

    reports = [rcompat.doctor(["python"]) for _ in range(2)]  # the first call imports rcompat.doctor
    assert [f.id for f in reports[0].findings] == [f.id for f in reports[1].findings] != []
    assert all(rcompat.render(r, "json").startswith("{") for r in reports)


def test_rcompat_upgrade_is_the_package_and_callable():
    import rcompat
    import rcompat.upgrade

    assert rcompat.upgrade is importlib.import_module("rcompat.upgrade") and callable(rcompat.upgrade)
