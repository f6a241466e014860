"""A package's public function that has the name of one of its submodules.

`rcompat.elf.symbols(path)` is a function of the package `rcompat.elf`, and `rcompat.elf.read.symbols` is
also the module that implements it. Importing that module (the function does so on first use, and so
does the CLI) makes Python set the package's attribute to the module, after which
`rcompat.elf.symbols(path)` raised "'module' object is not callable". Such a module ends with
`make_callable(__name__, "symbols")`: whichever of the two the attribute then holds, calling it runs
the function.
"""
from __future__ import annotations

import sys
import types


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return getattr(self, self.__rcompat_function__)(*args, **kwargs)


def make_callable(module_name: str, function_name: str) -> None:
    module = sys.modules[module_name]
    module.__rcompat_function__ = function_name
    module.__class__ = _CallableModule
