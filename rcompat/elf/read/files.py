"""Opening a path that should be an ELF object: regular files only, never blocking on a FIFO or a device.

Shared by the reader (rcompat.elf.read.reader), the byte-level patch diff, and the searches that ask of
many files whether they are ELF at all (the upgrade inventory, the host-process search).
"""
from __future__ import annotations

import os

from rcompat.elf.errors import ElfError
from rcompat.elf.read.format import ELF_MAGIC

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up of `elf symbols`)
if TYPE_CHECKING:
    from typing import BinaryIO


def check_regular_file(path: "str | os.PathLike[str]") -> None:
    """Raise ElfError unless `path` is an existing regular file (names dangling links, loops, directories)."""
    from rcompat.inputs import file_problem

    problem = file_problem(path, kind="an ELF file")
    if problem:
        raise ElfError(path, problem)


def open_elf_file(path: "str | os.PathLike[str]") -> BinaryIO:
    """The file opened without blocking and checked again on its descriptor (a FIFO swapped in after
    check_regular_file would block the mapping forever); ElfError naming the problem otherwise."""
    from rcompat.inputs import InputRefused, open_mapped

    try:
        return open_mapped(path, kind="an ELF file")
    except InputRefused as refused:
        raise ElfError(path, str(refused)) from None


def is_elf_file(path: "str | os.PathLike[str]") -> bool:
    """Does `path` start with the ELF magic? False for anything unreadable; a FIFO or a device is never
    waited on (opened as open_elf_file opens)."""
    from rcompat.inputs import InputRefused, open_mapped

    try:
        with open_mapped(path) as fh:
            return fh.read(4) == ELF_MAGIC
    except (OSError, InputRefused):
        return False
