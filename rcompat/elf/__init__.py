"""ELF engine: symbol tables, static dependency resolution, ABI and patch diffs, co-loading prediction.

Nothing in this package loads or runs an inspected binary. The sub-packages follow the data flow:
read (one file) -> link (files put together as ld.so would) -> abi, patch (two versions compared);
checks/targets are the doctor's elf area and cli the `rcompat elf` commands. The public functions
import their module on first use, so `import rcompat.elf` stays cheap.
"""
from __future__ import annotations

from rcompat.elf.errors import ElfError, NotElfError
from rcompat.exports import lazy_exports

_EXPORTS = {
    "symbols": "rcompat.elf.read.symbols:symbols",
    "deps": "rcompat.elf.link.resolve:deps",
    "missing": "rcompat.elf.link.missing:missing",
    "coload": "rcompat.elf.link.coload:coload",
    "abi_diff": "rcompat.elf.abi.diff:abi_diff",
    "patch_diff": "rcompat.elf.patch.diff:patch_diff",
}

__all__ = ["ElfError", "NotElfError", *_EXPORTS]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rcompat.elf.abi.diff import abi_diff  # noqa: F401
    from rcompat.elf.link.coload import coload  # noqa: F401
    from rcompat.elf.link.missing import missing  # noqa: F401
    from rcompat.elf.link.resolve import deps  # noqa: F401
    from rcompat.elf.patch.diff import patch_diff  # noqa: F401
    from rcompat.elf.read.symbols import symbols  # noqa: F401
