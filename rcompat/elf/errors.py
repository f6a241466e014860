"""Errors about inspected files: always name the path, and the offset where one is known."""
from __future__ import annotations

from rcompat.errors import RcompatError


class ElfError(RcompatError):
    def __init__(self, path: object, message: str, offset: int | None = None) -> None:
        self.path = str(path)
        self.offset = offset
        where = f" at offset {offset:#x}" if offset is not None else ""
        super().__init__(f"{self.path}: {message}{where}")
        self.reason = message


class NotElfError(ElfError):
    """The file exists but is not an ELF object (a script, a text file, a truncated download)."""
