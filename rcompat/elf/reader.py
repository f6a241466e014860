"""Open an ELF object safely and read its dynamic tables in bulk.

Nothing here loads or executes the inspected file (unlike `ldd`): it is memory-mapped read-only and
parsed. pyelftools' ELFFile reads the ELF header and the section headers and names (its exceptions
become ElfError with path and offset). The large tables (.dynsym, .dynstr, .gnu.version,
.gnu.version_d/_r, .dynamic) are decoded here with struct/memoryview over the mapped bytes, because
pyelftools' per-symbol objects take 4.6 s on libtorch_cpu.so's 75,415 dynamic symbols where
`nm -D --defined-only` takes 0.08-0.09 s; the bulk decode takes ~50 ms, and the whole table read
(`rcompat.elf.symbols`, imports included) 0.15 s = 1.7x nm (benchmarks/bench_elf_symbols.py,
measured on this 2-core machine). Every offset read from the file is checked against the file size
first, so a truncated or corrupt file raises ElfError naming the offset, never an IndexError or an
endless loop (benchmarks/fuzz_elf.py: 10,000 mutated files, 0 other exceptions).
"""
from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import struct
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator

from rcompat.elf.errors import ElfError, NotElfError

ELF_MAGIC = b"\x7fELF"
SHN_UNDEF, SHN_ABS, SHN_COMMON, SHN_LORESERVE = 0, 0xFFF1, 0xFFF2, 0xFF00
VERSYM_HIDDEN = 0x8000
VER_FLG_BASE, VER_FLG_WEAK = 0x1, 0x2

STT = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS", 10: "GNU_IFUNC"}
STB = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
STV = {0: "DEFAULT", 1: "INTERNAL", 2: "HIDDEN", 3: "PROTECTED"}

# Dynamic tags this project reads (ELF gABI numbers).
DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_SYMBOLIC, DT_FLAGS, DT_FLAGS_1 = 1, 14, 15, 29, 16, 30, 0x6FFFFFFB
DF_SYMBOLIC = 0x2
MACHINES = {3: "x86", 62: "x86_64", 183: "aarch64", 40: "arm", 20: "ppc", 21: "ppc64", 243: "riscv", 8: "mips"}


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: str
    addr: int
    offset: int
    size: int
    flags: int
    entsize: int
    link: int
    info: int

    @property
    def occupies_file(self) -> bool:
        return self.type != "SHT_NOBITS" and self.size > 0


@dataclass(frozen=True)
class VersionDef:
    index: int
    name: str
    flags: int
    parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class VersionNeed:
    index: int  # the vna_other value that .gnu.version entries refer to
    file: str
    name: str
    flags: int

    @property
    def weak(self) -> bool:
        return bool(self.flags & VER_FLG_WEAK)


@dataclass
class SymbolTable:
    """Column-oriented .dynsym: index i of every list is symbol i (0 is the null symbol, skipped)."""

    names: list[str] = field(default_factory=list)
    values: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    binds: list[str] = field(default_factory=list)
    visibilities: list[str] = field(default_factory=list)
    shndx: list[int] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # "" when unversioned
    hidden: list[bool] = field(default_factory=list)  # version is not the default one (name@VER vs @@VER)
    version_files: list[str] = field(default_factory=list)  # for undefined: the library verneed names
    version_indexes: list[int] = field(default_factory=list)  # .gnu.version entry, hidden bit cleared; 0 without one

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
        """pyelftools reads the ELF header; its exceptions become ElfError with the offset."""
        ei_class, ei_data = self.data[4], self.data[5]
        if ei_class not in (1, 2) or ei_data not in (1, 2):
            raise ElfError(self.path, f"corrupt ELF header (class {ei_class}, data encoding {ei_data})", 4)
        self.bits = 64 if ei_class == 2 else 32
        self.endian = "<" if ei_data == 1 else ">"
        self._need(0, 64 if self.bits == 64 else 52, "ELF header")
        from elftools.elf.elffile import ELFFile

        with _pyelftools_errors(self.path, 0, "ELF header"):
            self._elffile = ELFFile(self._fh)
            h = self._elffile.header
            self.e_type = _enum_int(h["e_type"], "ENUM_E_TYPE")
            self.e_machine = _enum_int(h["e_machine"], "ENUM_E_MACHINE")
            (self.entry, self.phoff, self.shoff, self.e_flags, self.phentsize, self.phnum, self.shentsize,
             self.shnum, self.shstrndx) = (h["e_entry"], h["e_phoff"], h["e_shoff"], h["e_flags"],
                                           h["e_phentsize"], h["e_phnum"], h["e_shentsize"], h["e_shnum"],
                                           h["e_shstrndx"])

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
        """Section headers, located and named by pyelftools (tens of entries: ~2 ms on libtorch_cpu.so);
        only the big tables are decoded by hand below."""
        if self.shoff == 0:
            return []
        ent = 64 if self.bits == 64 else 40
        if self.shentsize != ent:
            raise ElfError(self.path, f"corrupt section header size {self.shentsize} (expected {ent})", self.shoff)
        elf = self._elffile
        # Bound the count before pyelftools iterates: a flipped e_shnum must not mean 65,535 reads.
        self._need(self.shoff, ent, "section header table")
        with _pyelftools_errors(self.path, self.shoff, "section header table"):
            count = elf.num_sections()
        self._need(self.shoff, ent * count, f"section header table of {count} entries")
        out = []
        for i in range(count):
            with _pyelftools_errors(self.path, self.shoff + i * ent, f"section header {i}"):
                # Header + name only: get_section() would build pyelftools' section objects, and its
                # GNUHashSection parses the whole hash chain on creation (84 ms on libtorch_cpu.so).
                h = elf._get_section_header(i)
                typ = h["sh_type"]
                stype = typ if isinstance(typ, str) else _SHT.get(typ, f"SHT_{typ:#x}")
                section = Section(i, elf._get_section_name(h), stype, h["sh_addr"], h["sh_offset"], h["sh_size"],
                                  h["sh_flags"], h["sh_entsize"], h["sh_link"], h["sh_info"])
            if section.occupies_file:
                self._need(section.offset, section.size, f"section {i} ({section.name or section.type})")
            out.append(section)
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

    def _linked_strtab(self, sec: Section) -> bytes:
        if sec.link >= len(self.sections):
            raise ElfError(self.path, f"section {sec.name} links to missing section {sec.link}", sec.offset)
        return self.section_bytes(self.sections[sec.link])

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
    def dynamic_symbols(self) -> SymbolTable:
        sec = self.section_by_type("SHT_DYNSYM")
        table = SymbolTable()
        if sec is None:
            return table
        strtab = self._linked_strtab(sec)
        ent = 24 if self.bits == 64 else 16  # sizeof(Elf64_Sym), sizeof(Elf32_Sym)
        raw = self.section_bytes(sec)
        count = len(raw) // ent
        if count <= 1:
            return table
        # Column-wise decoding over strided memoryviews: every column comes out of C in one call, where
        # struct.iter_unpack + zip takes ~40 ms and a per-symbol loop ~75 ms on libtorch_cpu.so.
        st_names, infos, others, ndxs, values, sizes = _symbol_columns(raw[ent: count * ent], self.bits,
                                                                       self.endian)
        strlen = len(strtab)
        bad = next((i for i, o in enumerate(st_names) if o >= strlen and o), None)
        if bad is not None:
            raise ElfError(self.path, f"symbol {bad + 1} name offset {st_names[bad]} outside the string table "
                                      f"({strlen} bytes)", sec.offset + (bad + 1) * ent)
        # latin-1 maps bytes 1:1 to characters, so byte offsets stay valid for str.find; the rare
        # non-ASCII name is re-decoded as UTF-8 afterwards.
        text = strtab.decode("latin-1") + "\0"  # a terminator, so every find() succeeds
        # Most names start right after a NUL: map those through a dict built in C (split +
        # accumulate); only names sharing another's tail (linkers merge suffixes) need find().
        parts = text.split("\0")
        starts = dict(zip(itertools.accumulate(map(len, parts), lambda acc, n: acc + n + 1, initial=0), parts))
        names = list(map(starts.get, st_names))
        if None in names:
            find = text.find
            names = [n if n is not None else text[o:find("\0", o)] for n, o in zip(names, st_names)]
        if not text.isascii():
            names = [n if n.isascii() else n.encode("latin-1").decode("utf-8", "replace") for n in names]
        table.names = names
        table.values, table.sizes, table.shndx = list(values), list(sizes), list(ndxs)
        # map() over lookup tables keeps the per-symbol work in C.
        table.types = list(map(_TYPE_OF_INFO.__getitem__, infos))
        table.binds = list(map(_BIND_OF_INFO.__getitem__, infos))
        table.visibilities = list(map(_VIS_OF_OTHER.__getitem__, others))
        versym = self._versym(count)[1:]
        if versym:
            labels = self._version_labels(versym)
            distinct = set(versym)
            table.versions = list(map({v: labels[v & 0x7FFF][0] for v in distinct}.__getitem__, versym))
            table.version_files = list(map({v: labels[v & 0x7FFF][1] for v in distinct}.__getitem__, versym))
            table.hidden = list(map({v: bool(v & VERSYM_HIDDEN) for v in distinct}.__getitem__, versym))
            table.version_indexes = list(map({v: v & 0x7FFF for v in distinct}.__getitem__, versym))
        else:
            n = count - 1
            table.versions, table.version_files, table.hidden = [""] * n, [""] * n, [False] * n
            table.version_indexes = [0] * n
        return table

    def _version_labels(self, versym: list[int]) -> dict[int, tuple[str, str]]:
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


def _symbol_columns(raw: bytes, bits: int, endian: str) -> tuple:
    """(st_name, st_info, st_other, st_shndx, st_value, st_size) columns of a packed Elf_Sym array."""
    if (endian == "<") == (sys.byteorder == "little"):
        mv = memoryview(raw)
        if bits == 64:  # name:u32 info:u8 other:u8 shndx:u16 value:u64 size:u64 (24 bytes)
            quads = mv.cast("Q")
            return (mv.cast("I")[0::6].tolist(), raw[4::24], raw[5::24], mv.cast("H")[3::12].tolist(),
                    quads[1::3].tolist(), quads[2::3].tolist())
        words = mv.cast("I")  # name:u32 value:u32 size:u32 info:u8 other:u8 shndx:u16 (16 bytes)
        return (words[0::4].tolist(), raw[12::16], raw[13::16], mv.cast("H")[7::8].tolist(),
                words[1::4].tolist(), words[2::4].tolist())
    fmt = endian + ("IBBHQQ" if bits == 64 else "IIIBBH")
    cols = list(zip(*struct.iter_unpack(fmt, raw))) or [()] * 6
    if bits == 64:
        return tuple(cols)
    st_names, values, sizes, infos, others, ndxs = cols
    return st_names, infos, others, ndxs, values, sizes


_TYPE_OF_INFO = [STT.get(i & 0xF, str(i & 0xF)) for i in range(256)]
_BIND_OF_INFO = [STB.get(i >> 4, str(i >> 4)) for i in range(256)]
_VIS_OF_OTHER = [STV[i & 0x3] for i in range(256)]

_SHT = {0: "SHT_NULL", 1: "SHT_PROGBITS", 2: "SHT_SYMTAB", 3: "SHT_STRTAB", 4: "SHT_RELA", 5: "SHT_HASH",
        6: "SHT_DYNAMIC", 7: "SHT_NOTE", 8: "SHT_NOBITS", 9: "SHT_REL", 11: "SHT_DYNSYM",
        14: "SHT_INIT_ARRAY", 15: "SHT_FINI_ARRAY", 16: "SHT_PREINIT_ARRAY", 17: "SHT_GROUP",
        18: "SHT_SYMTAB_SHNDX", 0x6FFFFFF5: "SHT_GNU_ATTRIBUTES", 0x6FFFFFF6: "SHT_GNU_HASH",
        0x6FFFFFFD: "SHT_GNU_verdef", 0x6FFFFFFE: "SHT_GNU_verneed", 0x6FFFFFFF: "SHT_GNU_versym",
        0x70000001: "SHT_X86_64_UNWIND"}


# What pyelftools (and construct/struct under it) raise on a malformed file. Each becomes an ElfError
# naming the path and the offset of the structure being read, so callers handle one exception type.
def _parse_error_types() -> tuple[type[BaseException], ...]:
    from elftools.common.exceptions import ELFError as PyElfToolsError
    from elftools.construct.core import ConstructError

    return (PyElfToolsError, ConstructError, struct.error, ValueError, IndexError, KeyError, OverflowError,
            UnicodeDecodeError, EOFError, AssertionError, TypeError, OSError, MemoryError)


@contextlib.contextmanager
def _pyelftools_errors(path: object, offset: int, what: str) -> Iterator[None]:
    try:
        yield
    except ElfError:
        raise
    except _parse_error_types() as exc:
        raise ElfError(path, f"corrupt {what}: {type(exc).__name__}: {exc}", offset) from None


def _enum_int(value: object, enum_name: str) -> int:
    """pyelftools names known enum values ('EM_X86_64'); the rest of this module keeps the numbers."""
    if isinstance(value, int):
        return value
    from elftools.elf import enums

    return int(getattr(enums, enum_name).get(value, -1))


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
