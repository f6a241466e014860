"""Open an ELF object safely and read its headers and dynamic tables in bulk.

Nothing here loads or executes the inspected file (unlike `ldd`): it is memory-mapped read-only and
parsed with struct/memoryview, the ELF and section headers as well as the large tables (.dynsym,
.dynstr, .gnu.version, .gnu.version_d/_r, .dynamic). pyelftools was measured on both: its per-symbol
objects take 4.6 s on libtorch_cpu.so's 75,415 dynamic symbols where `nm -D --defined-only` takes
0.08-0.12 s, and merely importing it (construct, dwarf, pdb underneath) took 40-50 ms, about half of
nm's whole run, which `rcompat elf symbols` pays on every call; the headers are two fixed structs,
and tests/elf/test_reader.py checks every section table against pyelftools'. Every offset read from
the file is checked against the file size first, so a truncated or corrupt file raises ElfError
naming the offset, never an IndexError or an endless loop (benchmarks/fuzz_elf.py: 10,000 mutated
files, 0 other exceptions).
"""
from __future__ import annotations

import itertools
import mmap
import os
import struct
import sys
from array import array
from collections import namedtuple
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

from rcompat.elf.errors import ElfError, NotElfError

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
    `keys`: st_info | st_other << 8 | st_shndx << 16 | versym << 32 per symbol, one int that keys, in a
    dict lookup, everything a symbol shows besides its name, value and size (letter, type, binding,
    visibility, section, version)."""

    __slots__ = ("names", "infos", "others", "shndx", "values", "sizes", "versym", "keys")

    def __init__(self, names: list[str] | None = None, infos: bytes = b"", others: bytes = b"",
                 shndx: list[int] | None = None, values: list[int] | None = None, sizes: list[int] | None = None,
                 versym: list[int] | None = None, keys: list[int] | None = None) -> None:
        self.names, self.infos, self.others = names or [], infos, others
        self.shndx, self.values, self.sizes, self.versym = shndx or [], values or [], sizes or [], versym or []
        self.keys = keys or []

    def __len__(self) -> int:
        return len(self.names)


class ElfImage:
    """A read-only view of one ELF file. Use as a context manager, or call close()."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.path = Path(path)
        self._check_path()
        self._fh = open(self.path, "rb")
        self.size = os.fstat(self._fh.fileno()).st_size
        if self.size < 16:
            self._fh.close()
            raise NotElfError(self.path, f"not an ELF file ({self.size} bytes, too short for an ELF header)")
        self.data = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
        if self.data[:4] != ELF_MAGIC:
            head = bytes(self.data[:4])
            self.close()
            raise NotElfError(self.path, f"not an ELF file (starts with {head!r})")
        try:
            self._parse_header()
        except BaseException:
            self.close()
            raise

    # -- opening -----------------------------------------------------------------------------
    def _check_path(self) -> None:
        check_regular_file(self.path)

    def close(self) -> None:
        for obj in (getattr(self, "data", None), getattr(self, "_fh", None)):
            try:
                if obj is not None:
                    obj.close()
            except (BufferError, ValueError):
                pass

    def __enter__(self) -> "ElfImage":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- header and sections -----------------------------------------------------------------
    def _parse_header(self) -> None:
        """The ELF header (Elf32_Ehdr/Elf64_Ehdr), with struct once its size is checked."""
        ei_class, ei_data = self.data[4], self.data[5]
        if ei_class not in (1, 2) or ei_data not in (1, 2):
            raise ElfError(self.path, f"corrupt ELF header (class {ei_class}, data encoding {ei_data})", 4)
        self.bits = 64 if ei_class == 2 else 32
        self.endian = "<" if ei_data == 1 else ">"
        self._need(0, 64 if self.bits == 64 else 52, "ELF header")
        fmt = self.endian + EHDR_FORMATS[self.bits]
        (self.e_type, self.e_machine, _version, self.entry, self.phoff, self.shoff, self.e_flags, _ehsize,
         self.phentsize, self.phnum, self.shentsize, self.shnum, self.shstrndx) = struct.unpack_from(fmt, self.data, 16)

    @property
    def machine(self) -> str:
        return MACHINES.get(self.e_machine, f"machine {self.e_machine}")

    @property
    def elf_class(self) -> str:
        return f"ELF{self.bits}"

    def _need(self, offset: int, length: int, what: str) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ElfError(self.path, f"truncated or corrupt: {what} ({length} bytes) lies beyond the "
                                      f"end of the file ({self.size} bytes)", offset)

    @cached_property
    def sections(self) -> list[Section]:
        """Section headers and their names (tens of entries), read with struct like the tables below.
        Extended numbering is honoured: e_shnum 0 and e_shstrndx SHN_XINDEX put the real values in
        section 0's sh_size and sh_link. Section types are named as pyelftools names them."""
        if self.shoff == 0:
            return []
        ent = 64 if self.bits == 64 else 40
        if self.shentsize != ent:
            raise ElfError(self.path, f"corrupt section header size {self.shentsize} (expected {ent})", self.shoff)
        self._need(self.shoff, ent, "section header table")
        fmt = self.endian + ("IIQQQQIIQQ" if self.bits == 64 else "IIIIIIIIII")
        first = struct.unpack_from(fmt, self.data, self.shoff)
        count = self.shnum or first[5]
        # Bound the count before reading: a flipped e_shnum must not mean 65,535 reads.
        self._need(self.shoff, ent * count, f"section header table of {count} entries")
        headers = [struct.unpack_from(fmt, self.data, self.shoff + i * ent) for i in range(count)]
        types = {**SECTION_TYPES, **MACHINE_SECTION_TYPES.get(self.e_machine, {})}
        for i, (_name, typ, _flags, _addr, offset, size, *_rest) in enumerate(headers):
            if typ != SHT_NOBITS and size > 0:
                self._need(offset, size, f"section {i} ({types.get(typ, f'SHT_{typ:#x}')})")
        names_index = first[6] if self.shstrndx == SHN_XINDEX else self.shstrndx
        if names_index >= count:
            raise ElfError(self.path, f"corrupt ELF header: section name table {names_index} beyond the {count} "
                                      "sections", self.shoff)
        names = b""
        if names_index:  # SHN_UNDEF: the file has no section names
            _, typ, _, _, offset, size, *_ = headers[names_index]
            names = bytes(self.data[offset:offset + size]) if typ != SHT_NOBITS else b""
        out = []
        for i, (name, typ, flags, addr, offset, size, link, info, _align, entsize) in enumerate(headers):
            if name and name >= len(names):
                raise ElfError(self.path, f"section {i} name offset {name} outside the section name table "
                                          f"({len(names)} bytes)", self.shoff + i * ent)
            out.append(Section(i, _cstr(names, name, self.path), types.get(typ, f"SHT_{typ:#x}"), addr, offset,
                               size, flags, entsize, link, info))
        return out

    def section(self, name: str) -> Section | None:
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def section_by_type(self, stype: str) -> Section | None:
        for s in self.sections:
            if s.type == stype:
                return s
        return None

    def section_bytes(self, sec: Section) -> bytes:
        if not sec.occupies_file:
            return b""
        return bytes(self.data[sec.offset:sec.offset + sec.size])

    def _latin1(self, sec: Section) -> str:
        """A section's bytes as a latin-1 str, decoded straight from the mapping (a 5 MB .dynstr is not
        copied twice first: fewer pages to fault in is measurably faster on a VM)."""
        if not sec.occupies_file:
            return ""
        with memoryview(self.data) as whole, whole[sec.offset:sec.offset + sec.size] as view:
            return str(view, "latin-1")

    def _linked(self, sec: Section) -> Section:
        """The section `sec` links to (its string table)."""
        if sec.link >= len(self.sections):
            raise ElfError(self.path, f"section {sec.name} links to missing section {sec.link}", sec.offset)
        return self.sections[sec.link]

    def _linked_strtab(self, sec: Section) -> bytes:
        return self.section_bytes(self._linked(sec))

    # -- dynamic section ---------------------------------------------------------------------
    @cached_property
    def dynamic(self) -> list[tuple[int, int]]:
        sec = self.section_by_type("SHT_DYNAMIC")
        if sec is None:
            return []
        fmt = self.endian + ("qQ" if self.bits == 64 else "iI")
        ent = struct.calcsize(fmt)
        tags = []
        for tag, val in struct.iter_unpack(fmt, self.section_bytes(sec)[: sec.size // ent * ent]):
            if tag == 0:
                break
            tags.append((tag, val))
        return tags

    @cached_property
    def _dynstr(self) -> bytes:
        sec = self.section_by_type("SHT_DYNAMIC")
        return self._linked_strtab(sec) if sec is not None else b""

    def _dyn_strings(self, tag: int) -> list[str]:
        return [_cstr(self._dynstr, v, self.path) for t, v in self.dynamic if t == tag]

    @property
    def needed(self) -> list[str]:
        return self._dyn_strings(DT_NEEDED)

    @property
    def soname(self) -> str | None:
        names = self._dyn_strings(DT_SONAME)
        return names[0] if names else None

    @property
    def rpath(self) -> list[str]:
        return [p for s in self._dyn_strings(DT_RPATH) for p in s.split(":") if p]

    @property
    def runpath(self) -> list[str]:
        return [p for s in self._dyn_strings(DT_RUNPATH) for p in s.split(":") if p]

    @property
    def symbolic(self) -> bool:
        return any(t == DT_SYMBOLIC or (t == DT_FLAGS and v & DF_SYMBOLIC) for t, v in self.dynamic)

    # -- symbol versions ---------------------------------------------------------------------
    @cached_property
    def version_definitions(self) -> dict[int, VersionDef]:
        sec = self.section_by_type("SHT_GNU_verdef")
        if sec is None:
            return {}
        data, strtab = self.section_bytes(sec), self._linked_strtab(sec)
        out: dict[int, VersionDef] = {}
        for off, (_ver, flags, ndx, cnt, _hash, aux, _next) in self._chain(data, sec, 0, max(sec.info, 1),
                                                                          "HHHHIII", 6):
            names = [_cstr(strtab, vda_name, self.path) for _, (vda_name, _vda_next) in
                     self._chain(data, sec, off + aux, cnt, "II", 1, "corrupt version definition")]
            if names:
                out[ndx] = VersionDef(ndx, names[0], flags, tuple(names[1:]))
        return out

    @cached_property
    def version_needs(self) -> dict[int, VersionNeed]:
        sec = self.section_by_type("SHT_GNU_verneed")
        if sec is None:
            return {}
        data, strtab = self.section_bytes(sec), self._linked_strtab(sec)
        out: dict[int, VersionNeed] = {}
        for off, (_ver, cnt, vn_file, aux, _next) in self._chain(data, sec, 0, max(sec.info, 1), "HHIII", 4):
            file = _cstr(strtab, vn_file, self.path)
            for _, (_h, flags, other, name, _anext) in self._chain(data, sec, off + aux, cnt, "IHHII", 4,
                                                                   "corrupt version requirement"):
                out[other] = VersionNeed(other, file, _cstr(strtab, name, self.path), flags)
        return out

    def _chain(self, data: bytes, sec: Section, off: int, count: int, fmt: str, next_field: int,
               corrupt: str = "") -> Iterator[tuple[int, tuple]]:
        """(offset, fields) of up to `count` entries of a verdef/verneed-style list, each `fields[next_field]`
        bytes after the previous one (0 ends it). An entry beyond the data ends the list quietly, or raises
        ElfError(`corrupt`) when that is given."""
        size = struct.calcsize(self.endian + fmt)
        for _ in range(count):
            if off + size > len(data):
                if corrupt:
                    raise ElfError(self.path, corrupt, sec.offset + off)
                return
            fields = struct.unpack_from(self.endian + fmt, data, off)
            yield off, fields
            if not fields[next_field]:
                return
            off += fields[next_field]

    # -- dynamic symbols ---------------------------------------------------------------------
    @cached_property
    def raw_dynamic_symbols(self) -> RawSymbols:
        """.dynsym's fields as stored (names decoded, nothing else interpreted): what `nm -D` output and
        the JSON listing are built from without the per-symbol strings of `dynamic_symbols`."""
        sec = self.section_by_type("SHT_DYNSYM")
        if sec is None:
            return RawSymbols()
        strtab = self._latin1(self._linked(sec))
        ent = 24 if self.bits == 64 else 16  # sizeof(Elf64_Sym), sizeof(Elf32_Sym)
        raw = self.section_bytes(sec)
        count = len(raw) // ent
        if count <= 1:
            return RawSymbols()
        # Column-wise decoding over strided memoryviews: every column comes out of C in one call, where
        # struct.iter_unpack + zip takes ~40 ms and a per-symbol loop ~75 ms on libtorch_cpu.so.
        versym = self._versym(count)[1:]
        with memoryview(raw) as entries:
            st_names, infos, others, ndxs, values, sizes, keys = _symbol_columns(entries[ent: count * ent],
                                                                                 self.bits, self.endian, versym)
        strlen = len(strtab)
        if max(st_names) >= max(strlen, 1):  # offset 0 (no name) is fine even in an empty table
            bad = next(i for i, o in enumerate(st_names) if o >= strlen and o)
            raise ElfError(self.path, f"symbol {bad + 1} name offset {st_names[bad]} outside the string table "
                                      f"({strlen} bytes)", sec.offset + (bad + 1) * ent)
        return RawSymbols(_names_at(strtab, st_names), infos, others, list(ndxs), list(values), list(sizes),
                          versym, keys)

    @cached_property
    def dynamic_symbols(self) -> SymbolTable:
        raw = self.raw_dynamic_symbols
        table = SymbolTable()
        if not raw.names:
            return table
        table.names, table.values, table.sizes, table.shndx = raw.names, raw.values, raw.sizes, raw.shndx
        # map() over lookup tables keeps the per-symbol work in C.
        table.types = list(map(TYPE_OF_INFO.__getitem__, raw.infos))
        table.binds = list(map(BIND_OF_INFO.__getitem__, raw.infos))
        table.visibilities = list(map(VISIBILITY_OF_OTHER.__getitem__, raw.others))
        versym = raw.versym
        if versym:
            labels = self.version_labels(versym)
            distinct = set(versym)
            table.versions = list(map({v: labels[v & 0x7FFF][0] for v in distinct}.__getitem__, versym))
            table.version_files = list(map({v: labels[v & 0x7FFF][1] for v in distinct}.__getitem__, versym))
            table.hidden = list(map({v: bool(v & VERSYM_HIDDEN) for v in distinct}.__getitem__, versym))
            table.version_indexes = list(map({v: v & 0x7FFF for v in distinct}.__getitem__, versym))
        else:
            n = len(raw.names)
            table.versions, table.version_files, table.hidden = [""] * n, [""] * n, [False] * n
            table.version_indexes = [0] * n
        return table

    def version_labels(self, versym: list[int]) -> dict[int, tuple[str, str]]:
        """Version index -> (version name, file named by verneed) for every index used."""
        vdefs, vneeds = self.version_definitions, self.version_needs
        labels: dict[int, tuple[str, str]] = {}
        for vidx in {v & 0x7FFF for v in versym}:
            if vidx >= 2 and vidx in vdefs:
                labels[vidx] = (vdefs[vidx].name, "")
            elif vidx >= 2 and vidx in vneeds:
                labels[vidx] = (vneeds[vidx].name, vneeds[vidx].file)
            else:
                labels[vidx] = ("", "")
        return labels

    def _versym(self, count: int) -> list[int]:
        sec = self.section_by_type("SHT_GNU_versym")
        if sec is None:
            return []
        raw = self.section_bytes(sec)
        n = min(count, len(raw) // 2)
        vals = list(struct.unpack_from(f"{self.endian}{n}H", raw))
        return vals + [0] * (count - n)

    # -- notes -------------------------------------------------------------------------------
    @cached_property
    def build_id(self) -> str | None:
        """The GNU build-id as hex (from .note.gnu.build-id or any SHT_NOTE section)."""
        for sec in self.sections:
            if sec.type != "SHT_NOTE":
                continue
            data, off = self.section_bytes(sec), 0
            while off + 12 <= len(data):
                namesz, descsz, ntype = struct.unpack_from(self.endian + "III", data, off)
                name_end = off + 12 + ((namesz + 3) & ~3)
                desc_end = name_end + ((descsz + 3) & ~3)
                if desc_end > len(data) or name_end > len(data):
                    break
                if ntype == 3 and data[off + 12:off + 12 + namesz].rstrip(b"\0") == b"GNU":
                    return data[name_end:name_end + descsz].hex()
                off = desc_end
        return None


def _names_at(strtab: str, offsets: list[int]) -> list[str]:
    """The NUL-terminated string at each offset of `strtab`, a string table decoded as latin-1 (offsets
    already checked to lie inside it)."""
    # latin-1 maps bytes 1:1 to characters, so byte offsets stay valid for str.find; the rare
    # non-ASCII name is re-decoded as UTF-8 afterwards. Three C-level passes (find each end, make the
    # slices, take them) beat splitting the table into a dict of names by start offset (-30%), and
    # need no second look for names that share another's tail (linkers merge suffixes).
    text = strtab if strtab.endswith("\0") else strtab + "\0"  # a terminator, so every find() succeeds
    names = list(map(text.__getitem__, map(slice, offsets, map(text.find, itertools.repeat("\0"), offsets))))
    if not text.isascii():
        names = [n if n.isascii() else n.encode("latin-1").decode("utf-8", "replace") for n in names]
    return names


def _symbol_columns(raw: bytes, bits: int, endian: str, versym: list[int]) -> tuple:
    """(st_name, st_info, st_other, st_shndx, st_value, st_size, key) columns of a packed Elf_Sym array;
    key = st_info | st_other << 8 | st_shndx << 16 | versym << 32 (see RawSymbols), assembled in the
    native layout from the bytes themselves: strided copies into one u64 array, then one read."""
    n = len(raw) // (24 if bits == 64 else 16)
    if endian == "<" and sys.byteorder == "little":  # the u64 keys are assembled little-endian
        mv = memoryview(raw).cast("B")
        step, kind_at = (24, 4) if bits == 64 else (16, 12)
        packed = bytearray(8 * n)
        for byte in range(4):
            packed[byte::8] = mv[kind_at + byte::step]
        if versym:
            entries = array("H", versym).tobytes()
            packed[4::8], packed[5::8] = entries[0::2], entries[1::2]
        keys = memoryview(packed).cast("Q").tolist()
        if bits == 64:  # name:u32 info:u8 other:u8 shndx:u16 value:u64 size:u64 (24 bytes)
            quads, words = mv.cast("Q"), mv.cast("I")
            return (words[0::6].tolist(), mv[4::24].tobytes(), mv[5::24].tobytes(), mv.cast("H")[3::12].tolist(),
                    quads[1::3].tolist(), quads[2::3].tolist(), keys)
        words = mv.cast("I")  # name:u32 value:u32 size:u32 info:u8 other:u8 shndx:u16 (16 bytes)
        return (words[0::4].tolist(), mv[12::16].tobytes(), mv[13::16].tobytes(), mv.cast("H")[7::8].tolist(),
                words[1::4].tolist(), words[2::4].tolist(), keys)
    fmt = endian + ("IBBHQQ" if bits == 64 else "IIIBBH")
    cols = list(zip(*struct.iter_unpack(fmt, raw))) or [()] * 6
    if bits == 64:
        st_names, infos, others, ndxs, values, sizes = cols
    else:
        st_names, values, sizes, infos, others, ndxs = cols
    keys = [i | o << 8 | x << 16 | v << 32 for i, o, x, v in zip(infos, others, ndxs, versym or itertools.repeat(0))]
    return st_names, infos, others, ndxs, values, sizes, keys


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


def _cstr(table: bytes, offset: int, path: object = None) -> str:
    if offset >= len(table):
        if offset == 0:
            return ""
        raise ElfError(path or "?", f"string offset {offset} outside its string table ({len(table)} bytes)")
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", "replace")


def check_regular_file(path: "str | os.PathLike[str]") -> None:
    """Raise ElfError unless `path` is an existing regular file (names dangling links, loops, directories)."""
    from rcompat.inputs import file_problem

    problem = file_problem(path, kind="an ELF file")
    if problem:
        raise ElfError(path, problem)


def open_elf(path: "str | os.PathLike[str]") -> ElfImage:
    return ElfImage(path)
