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

The format's constants and record types are rcompat.elf.read.format's; the bulk column passes over
.dynsym and its string table are rcompat.elf.read.symbol_columns'; opening a path that may not be a
regular file is rcompat.elf.read.files'.
"""
from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property, partial

from rcompat.elf.errors import ElfError, NotElfError
from rcompat.elf.read.files import check_regular_file, open_elf_file
from rcompat.elf.read.format import (BIND_OF_INFO, DF_SYMBOLIC, DT_FLAGS, DT_NEEDED, DT_RPATH, DT_RUNPATH,
                                     DT_SONAME, DT_SYMBOLIC, EHDR_FORMATS, ELF_MAGIC, MACHINES,
                                     MACHINE_SECTION_TYPES, RawSymbols, SECTION_TYPES, SHN_UNDEF, SHN_XINDEX,
                                     SHT_NOBITS, Section, SymbolTable, TYPE_OF_INFO, VERSYM_HIDDEN,
                                     VISIBILITY_OF_OTHER, VersionDef, VersionNeed)
from rcompat.elf.read.symbol_columns import SymbolColumns, names_at
from rcompat.standins import map_extent


class ElfImage:
    """A read-only view of one ELF file. Use as a context manager, or call close()."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.path = os.fspath(path)  # a str: pathlib is not imported on `elf symbols`' way
        self._check_path()
        self._fh = open_elf_file(self.path)
        extent = getattr(self._fh, "extent", None)  # a member read in place from its image (rcompat/standins.py)
        self.size = extent.size if extent is not None else os.fstat(self._fh.fileno()).st_size
        if self.size < 16:
            self._fh.close()
            raise NotElfError(self.path, f"not an ELF file ({self.size} bytes, too short for an ELF header)")
        if extent is not None:
            self._mapping, start = map_extent(extent)
            with memoryview(self._mapping) as whole:
                self.data = whole[start:start + self.size]
            self._searchable = (self._mapping, start)  # string tables are searched there: a view has no find()
        else:
            self.data = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
            self._searchable = (self.data, 0)
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
        for obj in (getattr(self, "data", None), getattr(self, "_mapping", None), getattr(self, "_fh", None)):
            try:
                if isinstance(obj, memoryview):
                    obj.release()
                elif obj is not None:
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

    def _linked_strings(self, sec: Section) -> "Callable[[int], str]":
        """The string at an offset of the string table `sec` links to, read in place: a 5 MB .dynstr is not
        copied for a few version names (~5 ms of `elf symbols`' CPU, its pages faulted in)."""
        table = self._linked(sec)
        size = table.size if table.occupies_file else 0
        searchable, start = self._searchable
        return partial(_cstr, searchable, path=self.path, base=start + table.offset, size=size)

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

    def _dyn_strings(self, tag: int) -> list[str]:
        values = [v for t, v in self.dynamic if t == tag]
        return list(map(self._linked_strings(self.section_by_type("SHT_DYNAMIC")), values)) if values else []

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
        data, string = self.section_bytes(sec), self._linked_strings(sec)
        out: dict[int, VersionDef] = {}
        for off, (_ver, flags, ndx, cnt, _hash, aux, _next) in self._chain(data, sec, 0, max(sec.info, 1),
                                                                          "HHHHIII", 6):
            names = [string(vda_name) for _, (vda_name, _vda_next) in
                     self._chain(data, sec, off + aux, cnt, "II", 1, "corrupt version definition")]
            if names:
                out[ndx] = VersionDef(ndx, names[0], flags, tuple(names[1:]))
        return out

    @cached_property
    def version_needs(self) -> dict[int, VersionNeed]:
        sec = self.section_by_type("SHT_GNU_verneed")
        if sec is None:
            return {}
        data, string = self.section_bytes(sec), self._linked_strings(sec)
        out: dict[int, VersionNeed] = {}
        for off, (_ver, cnt, vn_file, aux, _next) in self._chain(data, sec, 0, max(sec.info, 1), "HHIII", 4):
            file = string(vn_file)
            for _, (_h, flags, other, name, _anext) in self._chain(data, sec, off + aux, cnt, "IHHII", 4,
                                                                   "corrupt version requirement"):
                out[other] = VersionNeed(other, file, string(name), flags)
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
        count = sec.size // ent if sec.occupies_file else 0
        if count <= 1:
            return RawSymbols()
        # Column-wise decoding over strided memoryviews (symbol_columns): every column comes out of C in
        # one call, where struct.iter_unpack + zip takes ~40 ms and a per-symbol loop ~75 ms on
        # libtorch_cpu.so; the columns `elf symbols` does not show (sizes) are never decoded.
        with memoryview(self.data) as whole:
            entries = whole[sec.offset + ent:sec.offset + count * ent].tobytes()
        columns = SymbolColumns(entries, self.bits, self.endian, self._versym(count))
        st_names = columns.name_offsets()
        strlen = len(strtab)
        try:  # an offset past the table's end raises there (max(st_names) first: one pass more, ~2 ms)
            names = names_at(strtab, st_names)
        except ValueError:
            names = None
        # names_at appends a NUL to a table without one at its end: the offset of that NUL is outside
        if names is None or (strlen and not strtab.endswith("\0") and strlen in st_names):
            bad = next(i for i, o in enumerate(st_names) if o >= strlen and o)  # offset 0: no name, fine
            raise ElfError(self.path, f"symbol {bad + 1} name offset {st_names[bad]} outside the string table "
                                      f"({strlen} bytes)", sec.offset + (bad + 1) * ent)
        return RawSymbols(names, keys=columns.column("keys"), source=columns)

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

    def version_labels(self, versym: "Iterable[int]") -> dict[int, tuple[str, str]]:
        """Version index -> (version name, file named by verneed) for every index given (.gnu.version
        entries: the hidden bit is ignored)."""
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

    def _versym(self, count: int) -> bytes:
        """The .gnu.version entries of symbols 1 to count - 1 (2 bytes each, zeros past a short section),
        or b"" without that section."""
        sec = self.section_by_type("SHT_GNU_versym")
        if sec is None:
            return b""
        raw = self.section_bytes(sec)[2:2 * count]
        return raw[:len(raw) // 2 * 2] + bytes(2 * (count - 1) - len(raw) // 2 * 2)

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


def _cstr(table: "bytes | mmap.mmap", offset: int, path: object = None, base: int = 0, size: int | None = None) -> str:
    """The NUL-terminated string at `offset` of the string table of `size` bytes at `base` of `table`."""
    size = len(table) - base if size is None else size
    if offset >= size:
        if offset == 0:
            return ""
        raise ElfError(path or "?", f"string offset {offset} outside its string table ({size} bytes)")
    end = table.find(b"\0", base + offset, base + size)
    return table[base + offset:end if end >= 0 else base + size].decode("utf-8", "replace")


def open_elf(path: "str | os.PathLike[str]") -> ElfImage:
    return ElfImage(path)
