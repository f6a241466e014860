"""The few facts the resolver needs from each file, read once and cached by its identity
(rcompat.cache.file_identity: real path, device, inode, size, mtime).

Keeping these small records instead of open ElfImages lets a resolution walk hundreds of libraries
without holding their mappings open; symbol tables are read separately and only when asked.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache

from rcompat.cache import file_identity
from rcompat.elf.read.format import DT_FLAGS_1
from rcompat.elf.read.reader import ElfImage

DF_1_NODEFLIB = 0x800


@dataclass(frozen=True)
class ObjectInfo:
    path: str  # as found (symlinks kept: $ORIGIN is the directory of this path, as in ld.so)
    realpath: str
    file_id: tuple[int, int]  # (st_dev, st_ino): ld.so reuses an object opened again under another name
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    bits: int
    e_machine: int
    machine: str
    e_type: int
    build_id: str | None
    nodeflib: bool
    symbolic: bool
    version_needs: tuple[tuple[str, str, bool], ...] = field(default=())  # (file, version, weak)
    version_defs: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.soname or os.path.basename(self.path)

    @property
    def elf_class(self) -> str:
        return f"ELF{self.bits}"

    def same_kind(self, other: "ObjectInfo") -> bool:
        return self.bits == other.bits and self.e_machine == other.e_machine


def read_object(path: "str | os.PathLike[str]") -> ObjectInfo:
    """Facts of one file (raises ElfError for anything that is not a readable ELF object)."""
    path = os.fspath(path)
    info = _read_cached(file_identity(path))
    if info.path != path:  # same file reached under another name: keep the name it was found under
        info = ObjectInfo(path, *[getattr(info, f) for f in _FIELDS[1:]])
    return info


_FIELDS = [f for f in ObjectInfo.__dataclass_fields__]


@lru_cache(maxsize=2048)
def _read_cached(key: tuple) -> ObjectInfo:
    return load_object(key[0])


def load_object(real: str) -> ObjectInfo:
    """read_object without the per-process cache: every call reads the file (the fuzzer's entry)."""
    with ElfImage(real) as img:
        st = os.stat(real)
        flags_1 = next((v for t, v in img.dynamic if t == DT_FLAGS_1), 0)
        return ObjectInfo(
            path=real, realpath=real, file_id=(st.st_dev, st.st_ino), soname=img.soname,
            needed=tuple(img.needed), rpath=tuple(img.rpath), runpath=tuple(img.runpath), bits=img.bits,
            e_machine=img.e_machine, machine=img.machine, e_type=img.e_type, build_id=img.build_id,
            nodeflib=bool(flags_1 & DF_1_NODEFLIB), symbolic=img.symbolic,
            version_needs=tuple((n.file, n.name, n.weak) for n in img.version_needs.values()),
            version_defs=tuple(d.name for d in img.version_definitions.values()))
