"""ELF engine: symbol tables, static dependency resolution, ABI and patch diffs, co-loading prediction.

Nothing in this package loads or runs an inspected binary. Public functions import their module on
first use, so `import rcompat.elf` stays cheap.
"""
from __future__ import annotations

from rcompat.elf.errors import ElfError, NotElfError

__all__ = ["ElfError", "NotElfError", "symbols", "deps", "missing", "abi_diff", "patch_diff", "coload"]


def symbols(path, **kwargs):
    from rcompat.elf.read.symbols import symbols as _symbols

    return _symbols(path, **kwargs)


def deps(path, **kwargs):
    from rcompat.elf.link.resolve import deps as _deps

    return _deps(path, **kwargs)


def missing(path, **kwargs):
    from rcompat.elf.link.missing import missing as _missing

    return _missing(path, **kwargs)


def abi_diff(old, new, **kwargs):
    from rcompat.elf.abi.diff import abi_diff as _abi_diff

    return _abi_diff(old, new, **kwargs)


def patch_diff(original, patched, **kwargs):
    from rcompat.elf.patch.diff import patch_diff as _patch_diff

    return _patch_diff(original, patched, **kwargs)


def coload(loaded, then, **kwargs):
    from rcompat.elf.link.coload import coload as _coload

    return _coload(loaded, then, **kwargs)
