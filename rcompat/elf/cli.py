"""`rcompat elf …` subcommands. Each group of commands registers itself from its own light module."""
from __future__ import annotations

import importlib

# Modules that add subcommands under `rcompat elf`: each has register(elf_subparsers).
ELF_COMMAND_MODULES = (
    "rcompat.elf.inspect_cli",  # symbols, deps, missing, versions, runtimes
    "rcompat.elf.coload_cli",   # coload
    "rcompat.elf.diff_cli",     # abi-diff, patch-diff
)


def register(sub) -> None:
    p = sub.add_parser("elf", help="inspect shared libraries statically (never loads them)",
                       description="Inspect ELF shared objects with pyelftools, without loading or running "
                                   "them (unlike ldd): symbols, dependencies, undefined symbols, ABI and "
                                   "patch diffs, co-loading prediction.")
    elf_sub = p.add_subparsers(dest="elf_command", metavar="ELF_COMMAND", parser_class=type(p))
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    for name in ELF_COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(elf_sub)
