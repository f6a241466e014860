"""Where a file offset lies in an ELF image: its section, virtual address and containing symbol.

Symbols come from .symtab (when not stripped) and .dynsym, decoded as numpy structured arrays over the
mapped section bytes: 75,415 entries of libtorch_cpu.so in a few milliseconds, and names are only
looked up for the symbols a changed run actually hits. Containing symbol = the one whose
[st_value, st_value + st_size) holds the address, found by binary search over values sorted once.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rcompat.elf.read.format import SHN_LORESERVE, Section
from rcompat.elf.read.reader import ElfImage

SHF_ALLOC = 0x2
_SYMBOL_TYPES = (1, 2, 6, 10)  # OBJECT, FUNC, TLS, GNU_IFUNC: things with bytes of their own
_STT_TLS = 6


def _symbol_dtype(bits: int, endian: str) -> np.dtype:
    e = endian
    if bits == 64:
        return np.dtype([("name", e + "u4"), ("info", "u1"), ("other", "u1"), ("shndx", e + "u2"),
                         ("value", e + "u8"), ("size", e + "u8")])
    return np.dtype([("name", e + "u4"), ("value", e + "u4"), ("size", e + "u4"), ("info", "u1"),
                     ("other", "u1"), ("shndx", e + "u2")])


@dataclass(frozen=True)
class Hit:
    name: str
    start: int  # st_value
    size: int

    def describe(self, addr: int) -> str:
        return f"{self.name}+{addr - self.start:#x}"


class Layout:
    """Section and symbol lookups for one image. Only reads; the image stays open while in use."""

    def __init__(self, image: ElfImage, sections: "list[Section] | None" = None) -> None:
        self.image = image
        # A patched copy whose header and section header table are byte-identical to the original's
        # reuses the original's parsed sections: same bytes, same table, one parse instead of two.
        self.all_sections = list(image.sections if sections is None else sections)
        self.sections = [s for s in self.all_sections if s.index != 0]
        occupied = sorted((s for s in self.sections if s.occupies_file), key=lambda s: (s.offset, -s.size))
        self._by_offset = occupied
        self._offsets = [s.offset for s in occupied]

    # -- sections ----------------------------------------------------------------------------
    def section_at(self, offset: int) -> Section | None:
        i = bisect.bisect_right(self._offsets, offset) - 1
        while i >= 0:
            sec = self._by_offset[i]
            if sec.offset <= offset < sec.offset + sec.size:
                return sec
            if sec.offset + sec.size <= offset and i < len(self._by_offset) - 1:
                break
            i -= 1
        return None

    @staticmethod
    def vaddr(sec: Section | None, offset: int) -> int | None:
        if sec is None or not sec.flags & SHF_ALLOC:
            return None
        return sec.addr + (offset - sec.offset)

    # -- symbols -----------------------------------------------------------------------------
    def _section_of_type(self, stype: str) -> Section | None:
        return next((s for s in self.sections if s.type == stype), None)

    @cached_property
    def symbol_tables(self) -> list[tuple[np.ndarray, tuple[int, int]]]:
        """(entries, (string table offset, size)) for .symtab and .dynsym, as zero-copy views of the
        mapping: libtorch_cpu.so's .symtab and .strtab are 13 MB and 76 MB."""
        out = []
        dtype = _symbol_dtype(self.image.bits, self.image.endian)
        for stype in ("SHT_SYMTAB", "SHT_DYNSYM"):
            sec = self._section_of_type(stype)
            if sec is None or not sec.occupies_file or sec.link >= len(self.all_sections):
                continue
            strtab = self.all_sections[sec.link]
            syms = np.frombuffer(self.image.data, dtype=dtype, count=sec.size // dtype.itemsize, offset=sec.offset)
            out.append((syms, (strtab.offset, strtab.size if strtab.occupies_file else 0)))
        return out

    @cached_property
    def _sized(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per table: (starts, ends, entry index) of sized, defined symbols that own bytes."""
        out = []
        for syms, _ in self.symbol_tables:
            kind = syms["info"] & 0xF
            keep = (np.isin(kind, _SYMBOL_TYPES) & (syms["size"] > 0) & (syms["shndx"] != 0)
                    & (syms["shndx"] < SHN_LORESERVE) & (kind != _STT_TLS))
            idx = np.flatnonzero(keep)
            starts = syms["value"][idx].astype(np.uint64)
            out.append((starts, starts + syms["size"][idx].astype(np.uint64), idx))
        return out

    def symbol_name(self, table: int, entry: int) -> str:
        syms, (str_off, str_size) = self.symbol_tables[table]
        off = int(syms["name"][entry])
        if off >= str_size:
            return ""
        data = self.image.data
        end = data.find(b"\0", str_off + off, str_off + str_size)
        return bytes(data[str_off + off:end if end >= 0 else str_off + str_size]).decode("utf-8", "replace")

    def symbol_at(self, addr: int | None) -> Hit | None:
        """The innermost sized symbol covering addr (one vectorised pass per table: a patch has few
        runs, and sorting 600,000 symbols would cost more than scanning them a few times)."""
        if addr is None:
            return None
        best = None
        a = np.uint64(addr)
        for t, (starts, ends, idx) in enumerate(self._sized):
            hits = np.flatnonzero((starts <= a) & (ends > a))
            for h in hits.tolist():
                start, size = int(starts[h]), int(ends[h] - starts[h])
                if best is None or start > best[1] or (start == best[1] and size < best[2]):
                    best = (t, start, size, int(idx[h]))
        if best is None:
            return None
        return Hit(self.symbol_name(best[0], best[3]), best[1], best[2])

    @cached_property
    def named_symbols(self) -> dict[str, tuple[int, int, int]]:
        """name -> (st_value, st_size, st_shndx) for defined symbols whose name is unique in the file
        (local statics that repeat across translation units cannot be matched between files)."""
        seen: dict[str, tuple[int, int, int]] = {}
        dupes: set[str] = set()
        for t, (syms, _) in enumerate(self.symbol_tables):
            kind = syms["info"] & 0xF
            keep = np.flatnonzero(np.isin(kind, (0, 1, 2, 6, 10)) & (syms["shndx"] != 0) & (syms["name"] != 0))
            values, sizes, shndx = syms["value"][keep].tolist(), syms["size"][keep].tolist(), syms["shndx"][keep].tolist()
            for k, entry in enumerate(keep.tolist()):
                name = self.symbol_name(t, entry)
                item = (values[k], sizes[k], shndx[k])
                old = seen.get(name)
                if old is None:
                    seen[name] = item
                elif old[:2] != item[:2] and t == 0:
                    dupes.add(name)  # two different definitions in .symtab
        for name in dupes:
            seen.pop(name, None)
        return seen

    def file_offset(self, value: int, shndx: int) -> int | None:
        if not 0 < shndx < len(self.all_sections):
            return None
        sec = self.all_sections[shndx]
        if not sec.occupies_file or not sec.addr <= value < sec.addr + sec.size:
            return None
        return sec.offset + (value - sec.addr)
