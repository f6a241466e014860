"""A package's public names, imported on first use (PEP 562 module __getattr__).

A package lists each name with where it lives ("module:attribute", or "module" for a sub-package);
nothing is imported until the name is read, so `import rcompat` and `import rcompat.elf` stay as cheap
as an empty package. The first read stores the value on the package, so later reads are plain
attribute look-ups. A public name must never equal a submodule's name: importing that submodule would
replace the function on the package (tests/core/test_public_api.py holds it).
"""
from __future__ import annotations

import importlib
import sys


def lazy_exports(package: str, names: dict[str, str]):
    """(__getattr__, __dir__) for the package named `package`, serving `names`."""

    def __getattr__(name: str):
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attribute = target.partition(":")
        value = importlib.import_module(module_name)
        if attribute:
            value = getattr(value, attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
