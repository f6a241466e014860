"""Per-library name → definition index, and ld.so's matching rule for one lookup.

Built once per file (a dict over the bulk-decoded .dynsym), so resolving libtorch_cpu.so's ~1,150
undefined symbols against its closure is dictionary lookups, not scans. The version rule follows
glibc's check_match (elf/dl-lookup.c): a versioned reference binds to a definition of that version,
or to an unversioned, non-hidden one; an unversioned reference takes the base/oldest definition or
any default (non-hidden) one.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from rcompat.elf.errors import ElfError
from rcompat.elf.objinfo import file_key
from rcompat.elf.reader import SHN_UNDEF, ElfImage

# What another object can bind to (also the exported ABI of rcompat.elf.abi).
EXPORTED_BINDS = frozenset({"GLOBAL", "WEAK", "GNU_UNIQUE"})
EXPORTED_VISIBILITIES = frozenset({"DEFAULT", "PROTECTED"})
LOOKUP_TYPES = {"NOTYPE", "OBJECT", "FUNC", "COMMON", "TLS", "GNU_IFUNC"}


@dataclass(frozen=True)
class Definition:
    name: str
    version: str  # "" unversioned
    hidden: bool  # name@VER (non-default)
    version_index: int
    size: int
    type: str
    bind: str
    visibility: str


@dataclass(frozen=True)
class Reference:
    name: str
    version: str
    version_file: str
    weak: bool
    type: str
    symbol_index: int

    def loader_message(self, needed_by: str) -> str:
        """What ld.so says when no object in scope defines it (glibc elf/dl-lookup.c)."""
        version = f", version {self.version}" if self.version else ""
        return f"{needed_by}: undefined symbol: {self.name}{version}"


@dataclass
class SymbolIndex:
    path: str
    definitions: dict[str, list[Definition]]
    references: list[Reference]  # undefined symbols of this file, in .dynsym order

    def lookup(self, name: str, version: str = "") -> Definition | None:
        for d in self.definitions.get(name, ()):
            if version_matches(d, version):
                return d
        return None

    def versions_of(self, name: str) -> list[str]:
        return [d.version or "(unversioned)" for d in self.definitions.get(name, ())]


def version_matches(d: Definition, version: str) -> bool:
    if version:
        return d.version == version or (d.version_index < 2 and not d.hidden)
    return d.version_index < 3 or not d.hidden


def symbol_index(path: "str | os.PathLike[str]") -> SymbolIndex:
    return _cached(*file_key(os.fspath(path)))


def readable_index(path: "str | os.PathLike[str]") -> SymbolIndex | None:
    """symbol_index(path), or None for a file that cannot be read as ELF (left out of a scope: the
    resolver has already said why it is unusable)."""
    try:
        return symbol_index(path)
    except ElfError:
        return None


@lru_cache(maxsize=512)
def _cached(path: str, _ino: int, _mtime: int, _size: int) -> SymbolIndex:
    with ElfImage(path) as img:
        t = img.dynamic_symbols
    defs: dict[str, list[Definition]] = {}
    refs: list[Reference] = []
    for i, (name, ndx, bind, typ, vis) in enumerate(zip(t.names, t.shndx, t.binds, t.types, t.visibilities)):
        if not name or typ not in LOOKUP_TYPES:
            continue
        if ndx == SHN_UNDEF:
            refs.append(Reference(name, t.versions[i], t.version_files[i], bind == "WEAK", typ, i + 1))
        elif bind in EXPORTED_BINDS and vis in EXPORTED_VISIBILITIES:
            defs.setdefault(name, []).append(Definition(name, t.versions[i], t.hidden[i], t.version_indexes[i],
                                                        t.sizes[i], typ, bind, vis))
    return SymbolIndex(path, defs, refs)
