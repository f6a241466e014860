"""Per-library name → definition index, and ld.so's matching rule for one lookup.

Built once per file (a dict over the bulk-decoded .dynsym), so resolving libtorch_cpu.so's ~1,150
undefined symbols against its closure is dictionary lookups, not scans. The version rule follows
glibc's check_match (elf/dl-lookup.c): a versioned reference binds to a definition of that version,
or to an unversioned, non-hidden one; an unversioned reference takes the base/oldest definition or
any default (non-hidden) one.

Indexes are kept between runs under the cache directory (rcompat.cache, `symindex/`), one entry per
real path holding the file's identity (path, st_dev, st_ino, st_size, st_mtime_ns) and the decoded
columns (marshal). An entry of another identity (the library was replaced) or another INDEX_FORMAT,
or one that is truncated or corrupt, is rebuilt from the file and rewritten; `--no-cache` and
RCOMPAT_NO_CACHE=1 neither read nor write it.
"""
from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from rcompat import cache
from rcompat.elf.errors import ElfError
from rcompat.elf.read.format import SHN_UNDEF
from rcompat.elf.read.reader import ElfImage

# What another object can bind to (also the exported ABI of rcompat.elf.abi.diff).
EXPORTED_BINDS = frozenset({"GLOBAL", "WEAK", "GNU_UNIQUE"})
EXPORTED_VISIBILITIES = frozenset({"DEFAULT", "PROTECTED"})
LOOKUP_TYPES = {"NOTYPE", "OBJECT", "FUNC", "COMMON", "TLS", "GNU_IFUNC"}
INDEX_FORMAT = 1  # bump when the stored columns change
# Smaller tables decode faster than a cache file is read, and would only fill the cache directory.
MIN_CACHED_SYMBOLS = 2000


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


class Definitions(Mapping[str, "list[Definition]"]):
    """name -> its definitions in .dynsym order, made into Definition objects only when looked up:
    a lookup scope touches a few thousand of libtorch_cpu.so's 74,000 names, and building all of
    them was most of the cost of indexing it."""

    def __init__(self, columns: tuple[list, ...]) -> None:
        self.columns = columns  # names, versions, hidden, version indexes, sizes, types, binds, visibilities
        names = columns[0]
        self._row = dict(zip(names, range(len(names))))  # the last row of a repeated name
        self._rows: dict[str, list[int]] = {}
        if len(self._row) != len(names):
            for i, name in enumerate(names):
                self._rows.setdefault(name, []).append(i)
            self._rows = {n: rows for n, rows in self._rows.items() if len(rows) > 1}
        self._made: dict[str, list[Definition]] = {}

    def __getitem__(self, name: str) -> list[Definition]:
        made = self._made.get(name)
        if made is None:
            rows = self._rows.get(name) or [self._row[name]]
            c = self.columns
            made = self._made[name] = [Definition(name, c[1][i], c[2][i], c[3][i], c[4][i], c[5][i], c[6][i],
                                                  c[7][i]) for i in rows]
        return made

    def get(self, name: str, default=None):
        # Mapping.get goes through __getitem__'s KeyError, and most lookups miss: binding a closure
        # asks each object of the scope in turn (~65,000 misses for libtorch_python.so's, a third of
        # bind_all's time spent raising and catching).
        return self[name] if name in self._row else default

    def __contains__(self, name: object) -> bool:
        return name in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


@dataclass
class SymbolIndex:
    path: str
    definitions: Mapping[str, list[Definition]]
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
    """The index of `path`, built once per process and kept on disk between runs (see module doc)."""
    return _cached(cache.file_identity(os.fspath(path)))


def readable_index(path: "str | os.PathLike[str]") -> SymbolIndex | None:
    """symbol_index(path), or None for a file that cannot be read as ELF (left out of a scope: the
    resolver has already said why it is unusable)."""
    try:
        return symbol_index(path)
    except ElfError:
        return None


@lru_cache(maxsize=512)
def _cached(identity: tuple[str, int, int, int, int]) -> SymbolIndex:
    use_disk = identity[1:] != (0, 0, 0, 0) and cache.enabled()
    entry = _entry_path(identity[0])
    if use_disk:
        stored = _load(entry, identity)
        if stored is not None:
            return stored
    columns, refs = _decode(identity[0])
    if use_disk and len(columns[0]) + len(refs) >= MIN_CACHED_SYMBOLS:
        cache.write_entry(entry, INDEX_FORMAT, marshal.dumps((list(identity), columns, refs)))
    return _index(identity[0], columns, refs)


def build_index(path: "str | os.PathLike[str]") -> SymbolIndex:
    """symbol_index without either cache: every call decodes the file (the fuzzer's entry)."""
    path = os.fspath(path)
    return _index(path, *_decode(path))


def _entry_path(realpath: str) -> Path:
    return cache.entry_path("symindex", hashlib.sha256(realpath.encode("utf-8", "surrogateescape")).hexdigest()[:32])


def _load(entry: Path, identity: tuple) -> SymbolIndex | None:
    """The stored index, or None when absent, unreadable, of another format, or of an older file."""
    payload = cache.read_entry(entry, INDEX_FORMAT)
    if payload is None:
        return None
    try:
        stored_identity, columns, refs = marshal.loads(payload)
        if tuple(stored_identity) != identity or len(columns) != 8:
            return None
        return _index(identity[0], tuple(columns), refs)
    except (ValueError, EOFError, TypeError):
        return None


def _index(path: str, columns: tuple[list, ...], refs: list[tuple]) -> SymbolIndex:
    return SymbolIndex(path, Definitions(columns), [Reference(*r) for r in refs])


def _decode(path: str) -> tuple[tuple[list, ...], list[tuple]]:
    """The exported definitions (column-wise) and the references of `path`'s .dynsym."""
    with ElfImage(path) as img:
        t = img.dynamic_symbols
    columns: tuple[list, ...] = ([], [], [], [], [], [], [], [])
    names, versions, hidden, vidx, sizes, types, binds, vises = columns
    refs: list[tuple] = []
    for i, (name, ndx, bind, typ, vis) in enumerate(zip(t.names, t.shndx, t.binds, t.types, t.visibilities)):
        if not name or typ not in LOOKUP_TYPES:
            continue
        if ndx == SHN_UNDEF:
            refs.append((name, t.versions[i], t.version_files[i], bind == "WEAK", typ, i + 1))
        elif bind in EXPORTED_BINDS and vis in EXPORTED_VISIBILITIES:
            names.append(name)
            versions.append(t.versions[i])
            hidden.append(t.hidden[i])
            vidx.append(t.version_indexes[i])
            sizes.append(t.sizes[i])
            types.append(typ)
            binds.append(bind)
            vises.append(vis)
    return columns, refs
