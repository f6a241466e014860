"""What the ELF format defines that the reader needs: constants, the records a reader hands out
(sections, version nodes, symbol tables), and the lookup tables from raw fields to their names.
"""
from __future__ import annotations

from collections import namedtuple


ELF_MAGIC = b"\x7fELF"
# Elf64_Ehdr / Elf32_Ehdr after e_ident (offset 16): e_type, e_machine, e_version, e_entry, e_phoff,
# e_shoff, e_flags, e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx.
EHDR_FORMATS = {64: "HHIQQQIHHHHHH", 32: "HHIIIIIHHHHHH"}
SHN_UNDEF, SHN_ABS, SHN_COMMON, SHN_LORESERVE, SHN_XINDEX = 0, 0xFFF1, 0xFFF2, 0xFF00, 0xFFFF
SHT_NOBITS = 8
VERSYM_HIDDEN = 0x8000
VER_FLG_BASE, VER_FLG_WEAK = 0x1, 0x2

STT = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS", 10: "GNU_IFUNC"}
STB = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
STV = {0: "DEFAULT", 1: "INTERNAL", 2: "HIDDEN", 3: "PROTECTED"}

# Dynamic tags this project reads (ELF gABI numbers).
DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_SYMBOLIC, DT_FLAGS, DT_FLAGS_1 = 1, 14, 15, 29, 16, 30, 0x6FFFFFFB
DF_SYMBOLIC = 0x2
MACHINES = {3: "x86", 62: "x86_64", 183: "aarch64", 40: "arm", 20: "ppc", 21: "ppc64", 243: "riscv", 8: "mips"}


# Plain tuples and classes rather than dataclasses: decorating them cost more at import (15-30 ms) than
# reading a small library, and every `rcompat elf` command imports this module.
class Section(namedtuple("Section", "index name type addr offset size flags entsize link info")):
    __slots__ = ()

    @property
    def occupies_file(self) -> bool:
        return self.type != "SHT_NOBITS" and self.size > 0


class VersionDef(namedtuple("VersionDef", "index name flags parents", defaults=((),))):
    """A version node this file defines (verdef); `parents` are the names after the first."""

    __slots__ = ()


class VersionNeed(namedtuple("VersionNeed", "index file name flags")):
    """A version this file needs from `file` (verneed); `index` is the vna_other value that .gnu.version
    entries refer to."""

    __slots__ = ()

    @property
    def weak(self) -> bool:
        return bool(self.flags & VER_FLG_WEAK)


class SymbolTable:
    """Column-oriented .dynsym: index i of every list is symbol i (0 is the null symbol, skipped).
    versions: "" when unversioned; hidden: the version is not the default one (name@VER, not @@VER);
    version_files: the library a verneed version is needed from; version_indexes: the .gnu.version
    entry with the hidden bit cleared (0 without one)."""

    COLUMNS = ("names", "values", "sizes", "types", "binds", "visibilities", "shndx", "versions", "hidden",
               "version_files", "version_indexes")
    __slots__ = COLUMNS

    def __init__(self) -> None:
        for column in self.COLUMNS:
            setattr(self, column, [])

    def __len__(self) -> int:
        return len(self.names)


class RawSymbols:
    """.dynsym column by column as stored, symbol 1 first: st_info and st_other as bytes (one byte per
    symbol), the .gnu.version entry of each symbol (empty without that section), the names decoded, and
    `keys`: st_info | st_other << 8 | st_shndx << 16 | versym << 32 per symbol (a list, or a memoryview
    of u64), one int that keys, in a dict lookup, everything a symbol shows besides its name, value and
    size (letter, type, binding, visibility, section, version). The other columns are given, or decoded
    from `source` (a rcompat.elf.read.symbol_columns.SymbolColumns) when first read."""

    __slots__ = ("names", "keys", "_columns", "_source")

    def __init__(self, names: list[str] | None = None, infos: bytes = b"", others: bytes = b"",
                 shndx: list[int] | None = None, values: list[int] | None = None, sizes: list[int] | None = None,
                 versym: list[int] | None = None, keys: "list[int] | memoryview | None" = None,
                 source=None) -> None:
        self.names, self.keys, self._source = names or [], keys or [], source
        self._columns = {} if source is not None else {
            "infos": infos, "others": others, "shndx": shndx or [], "values": values or [], "sizes": sizes or [],
            "versym": versym or []}

    def _column(self, name: str):
        if name not in self._columns:
            self._columns[name] = self._source.column(name)
        return self._columns[name]

    infos = property(lambda self: self._column("infos"))
    others = property(lambda self: self._column("others"))
    shndx = property(lambda self: self._column("shndx"))
    values = property(lambda self: self._column("values"))
    sizes = property(lambda self: self._column("sizes"))
    versym = property(lambda self: self._column("versym"))

    def undefined_rows(self) -> list[int]:
        """Indexes of the rows with st_shndx 0 (SHN_UNDEF), usually few: searched for in the packed column
        when there is one (no list of 75k ints made for it: ~1.5 ms on libtorch_cpu.so)."""
        from rcompat.elf.read.symbol_columns import positions, zero_u16_positions

        packed = None
        if self._source is not None and "shndx" not in self._columns:
            packed = self._source.field_bytes("shndx")
        return zero_u16_positions(packed) if packed is not None else positions(self.shndx, 0)

    def value_array(self, typecode: str):
        """`values` as an array.array of `typecode`, straight from the packed entries when they are
        still to be decoded (no int object per symbol)."""
        from array import array

        if self._source is not None and "values" not in self._columns:
            return self._source.value_array()
        return array(typecode, self.values)

    def __len__(self) -> int:
        return len(self.names)


TYPE_OF_INFO = [STT.get(i & 0xF, str(i & 0xF)) for i in range(256)]
BIND_OF_INFO = [STB.get(i >> 4, str(i >> 4)) for i in range(256)]
VISIBILITY_OF_OTHER = [STV[i & 0x3] for i in range(256)]

# Section type names as pyelftools gives them (ENUM_SH_TYPE_BASE and the per-machine tables of 0.33;
# tests/elf/test_reader.py compares whole section tables with pyelftools'); others read SHT_0x....
SECTION_TYPES = {0: "SHT_NULL", 1: "SHT_PROGBITS", 2: "SHT_SYMTAB", 3: "SHT_STRTAB", 4: "SHT_RELA", 5: "SHT_HASH",
                 6: "SHT_DYNAMIC", 7: "SHT_NOTE", 8: "SHT_NOBITS", 9: "SHT_REL", 10: "SHT_SHLIB", 11: "SHT_DYNSYM",
                 14: "SHT_INIT_ARRAY", 15: "SHT_FINI_ARRAY", 16: "SHT_PREINIT_ARRAY", 17: "SHT_GROUP",
                 18: "SHT_SYMTAB_SHNDX", 19: "SHT_RELR", 20: "SHT_NUM", 0x60000000: "SHT_LOOS",
                 0x6FFFFFF3: "SHT_SUNW_LDYNSYM", 0x6FFFFFF5: "SHT_GNU_ATTRIBUTES", 0x6FFFFFF6: "SHT_GNU_HASH",
                 0x6FFFFFF7: "SHT_GNU_LIBLIST", 0x6FFFFFFC: "SHT_SUNW_syminfo", 0x6FFFFFFD: "SHT_GNU_verdef",
                 0x6FFFFFFE: "SHT_GNU_verneed", 0x6FFFFFFF: "SHT_GNU_versym", 0x80000000: "SHT_LOUSER",
                 0xFFFFFFFF: "SHT_HIUSER"}
MACHINE_SECTION_TYPES = {
    62: {0x70000001: "SHT_AMD64_UNWIND"},
    40: {0x70000001: "SHT_ARM_EXIDX", 0x70000002: "SHT_ARM_PREEMPTMAP", 0x70000003: "SHT_ARM_ATTRIBUTES",
         0x70000004: "SHT_ARM_DEBUGOVERLAY"},
    183: {0x70000003: "SHT_AARCH64_ATTRIBUTES"},
    243: {0x70000003: "SHT_RISCV_ATTRIBUTES"},
}
