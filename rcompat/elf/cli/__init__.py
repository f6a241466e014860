"""`rcompat elf …` subcommands. Each group of commands registers itself from its own light module."""
from __future__ import annotations

# Modules that add subcommands under `rcompat elf`: each has register(elf_subparsers).
ELF_COMMAND_MODULES = (
    "rcompat.elf.cli.inspect",  # symbols, deps, missing, versions, runtimes
    "rcompat.elf.cli.coload",   # coload
    "rcompat.elf.cli.diff",     # abi-diff, patch-diff
)


def register(sub) -> None:
    from rcompat.cli.common import add_command_group, register_commands

    elf_sub = add_command_group(
        sub, "elf", metavar="ELF_COMMAND", help="inspect shared libraries statically (never loads them)",
        description="Inspect ELF shared objects statically, without loading or running them (unlike "
                    "ldd): symbols, dependencies, undefined symbols, ABI and patch diffs, co-loading prediction.")
    register_commands(elf_sub, ELF_COMMAND_MODULES)
