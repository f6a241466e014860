"""Dynamic symbol tables as `nm -D` shows them, without running nm.

The letters follow binutils' bfd_decode_symclass (2.40): U/w/v undefined (weak object = v), i
ifunc, W/V weak, u GNU unique, A absolute, then by the ELF section's flags: T/t code, R/r read-only
data, D/d writable data, B/b no file contents (.bss, .tbss); lower case when local. Names carry
`@@VER` (the default version) or `@VER` (hidden, or any version of an undefined reference) exactly
as `nm -D` prints them. Section and file symbols are left out, as nm does without `-a`.

A listing is kept as the selected rows of .dynsym's raw columns; the per-symbol columns (type, bind,
section, ...) are derived only when asked for. `nm -D` text and the JSON listing are assembled from
those columns in C-level passes (rcompat.elf.read.symbol_text), never one object per symbol: that is what
keeps `rcompat elf symbols` near nm's own time (benchmarks/bench_elf_symbols.py).
"""
from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Iterator, Sequence
from operator import itemgetter

from rcompat.elf.read.format import (BIND_OF_INFO, SHN_ABS, SHN_COMMON, SHN_LORESERVE, SHN_UNDEF, TYPE_OF_INFO,
                                     VERSYM_HIDDEN, VISIBILITY_OF_OTHER, RawSymbols)
from rcompat.elf.read.reader import ElfImage
from rcompat.elf.read.symbol_columns import positions
from rcompat.elf.read.symbol_text import decorate

SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
STT_SECTION, STT_FILE = 3, 4
_HIDDEN_KIND = bytes(int(i & 0xF in (STT_SECTION, STT_FILE)) for i in range(256))  # st_info -> 1 if nm hides it
COLUMNS = ("name", "version", "version_hidden", "version_file", "letter", "value", "size", "type", "bind",
           "visibility", "section", "defined")


class Symbol(namedtuple("Symbol", COLUMNS)):
    """One dynamic symbol (a row of a SymbolList; the list itself keeps columns, not these)."""

    __slots__ = ()

    @property
    def decorated(self) -> str:
        """`name@@VER` / `name@VER` / `name` as nm -D prints it."""
        return decorate(self.name, self.version, self.version_hidden, self.defined, self.version_file)

    @property
    def weak(self) -> bool:
        return self.bind == "WEAK"


class SymbolList(Sequence):
    """The selected dynamic symbols of one file, column-oriented (75k Symbol objects are not free).

    `table` is the file's whole .dynsym, of which the list holds the defined symbols (defined=True), the
    undefined ones (False) or all (None), section and file symbols left out; `section_names`/
    `section_letters` describe the file's sections and `version_labels` maps a version index to
    (version name, file needing it)."""

    def __init__(self, path: str, bits: int, table: RawSymbols, defined: bool | None, section_names: list[str],
                 section_letters: list[str], version_labels: dict[int, tuple[str, str]]) -> None:
        self.path = path
        self.bits = bits
        self.table = table
        self.defined = defined
        self.section_names = section_names
        self.section_letters = section_letters
        self.version_labels = version_labels
        self.demangled: list[str] | None = None
        self._cols: dict[str, list] = {}
        self._raw: RawSymbols | None = None
        self._rows: list[int] | None | bool = False  # False: not worked out yet

    @property
    def rows(self) -> list[int] | None:
        """Indexes of the listed rows in `table` (None: every row)."""
        if self._rows is False:
            self._rows = _selected_rows(self.table, self.defined)
        return self._rows

    def unlisted(self) -> list[int]:
        """Indexes of the rows of `table` left out (few when defined is True or None), in C-level passes:
        the section and file symbols by their st_info byte, the undefined ones by their st_shndx
        (RawSymbols.undefined_rows), ~3 ms less than a test of every row on libtorch_cpu.so."""
        table = self.table
        if self.defined is False:
            from itertools import compress

            left_out = _row_mask(table, self.defined, listed=False)
            return [] if left_out is None else list(compress(range(len(table.names)), left_out))
        rows = positions(table.infos.translate(_HIDDEN_KIND), 1)
        return rows + table.undefined_rows() if self.defined else rows

    @property
    def raw(self) -> RawSymbols:
        """The selected rows of .dynsym's fields."""
        if self._raw is None:
            self._raw = self.table if self.rows is None else _pick_rows(self.table, self.rows)
        return self._raw

    def __len__(self) -> int:
        return len(self.table.names if self.rows is None else self.rows)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return Symbol(*(self.column(c)[i] for c in COLUMNS))

    def __iter__(self) -> Iterator[Symbol]:
        return map(Symbol, *(self.column(c) for c in COLUMNS))

    def column(self, name: str) -> list:
        """One column of COLUMNS, derived from the raw fields on first use."""
        if name not in self._cols:
            self._cols[name] = self._derive(name)
        return self._cols[name]

    def _derive(self, name: str) -> list:
        raw = self.raw
        if name in ("name", "value", "size"):
            return {"name": raw.names, "value": raw.values, "size": raw.sizes}[name]
        if name in ("version", "version_file", "version_hidden"):
            if not raw.versym:
                return [False if name == "version_hidden" else ""] * len(raw.names)
            return _lookup(raw.versym, {v: self.version_field(v, name) for v in set(raw.versym)})
        if name == "type":
            return list(map(TYPE_OF_INFO.__getitem__, raw.infos))
        if name == "bind":
            return list(map(BIND_OF_INFO.__getitem__, raw.infos))
        if name == "visibility":
            return list(map(VISIBILITY_OF_OTHER.__getitem__, raw.others))
        if name == "section":
            return _lookup(raw.shndx, {n: self.section_of(n) for n in set(raw.shndx)})
        if name == "defined":
            return list(map(bool, raw.shndx))  # SHN_UNDEF is 0
        if name == "letter":
            keys = list(zip(raw.infos, raw.shndx))
            return _lookup(keys, {key: self.letter_of(*key) for key in set(keys)})
        raise KeyError(name)

    def version_field(self, versym: int, name: str) -> object:
        """`version`, `version_file` or `version_hidden` of a .gnu.version entry."""
        if name == "version_hidden":
            return bool(versym & VERSYM_HIDDEN)
        return self.version_labels.get(versym & 0x7FFF, ("", ""))[0 if name == "version" else 1]

    def letter_of(self, info: int, ndx: int) -> str:
        """nm's letter for a symbol with this st_info in section `ndx`."""
        return _letter(TYPE_OF_INFO[info], BIND_OF_INFO[info], ndx, self.section_letters)

    def lists_kind(self, key: int) -> bool:
        """Whether this list shows the rows of this kind (a RawSymbols key): section and file symbols
        never, and only defined or undefined ones when the list holds only those (st_shndx 0: SHN_UNDEF)."""
        return _lists_kind(key, self.defined)

    def section_of(self, ndx: int) -> str:
        """The `section` column: the section's name, or UND/ABS/COM."""
        return _section_label(ndx, self.section_names)

    def decorated_names(self) -> list[str]:
        c = [self.column(n) for n in ("name", "version", "version_hidden", "defined", "version_file")]
        return list(map(decorate, *c))

    def names(self) -> set[str]:
        return set(self.raw.names)

    def nm_text(self, demangle: bool = False) -> str:
        """The whole `nm -D` output: lines sorted by name like nm in the C locale (ties keep .dynsym
        order), each ending in a newline."""
        from rcompat.elf.read.symbol_text import nm_text

        return nm_text(self, self.demangle() if demangle else None)

    def nm_chunks(self, demangle: bool = False) -> Iterator[str]:
        """nm_text() in pieces, to write one after another."""
        from rcompat.elf.read.symbol_text import nm_chunks

        return nm_chunks(self, self.demangle() if demangle else None)

    def nm_lines(self, demangle: bool = False) -> list[str]:
        """`nm -D` lines (without newlines), in nm's order."""
        return self.nm_text(demangle).split("\n")[:-1]

    def json_chunks(self, demangle: bool = False) -> Iterator[str]:
        """A JSON array of the to_records() rows, one compact object per line, in pieces to write as
        they come (see rcompat.elf.read.symbol_text)."""
        from rcompat.elf.read.symbol_text import json_chunks

        return json_chunks(self, self.demangle() if demangle else None)

    def demangle(self) -> list[str]:
        if self.demangled is None:
            from rcompat.elf.read.demangle import demangle_all

            self.demangled = demangle_all(self.raw.names)
        return self.demangled

    def to_records(self, demangle: bool = False) -> list[dict]:
        """One dict per symbol: COLUMNS, then `decorated` (and `demangled` when asked)."""
        keys = (*COLUMNS, "decorated") + (("demangled",) if demangle else ())
        cols = [self.column(c) for c in COLUMNS] + [self.decorated_names()]
        if demangle:
            cols.append(self.demangle())
        return [dict(zip(keys, row)) for row in zip(*cols)]

    def to_frame(self, demangle: bool = False):
        """A pandas DataFrame, one row per symbol (pandas imported only here)."""
        import pandas as pd

        frame = pd.DataFrame({c: self.column(c) for c in COLUMNS})
        if demangle:
            frame["demangled"] = self.demangle()
        return frame


def symbols(path: "str | os.PathLike[str]", defined: bool | None = None, demangle: bool = False) -> SymbolList:
    """Dynamic symbols of `path` (defined=True: only defined, False: only undefined, None: all)."""
    with ElfImage(path) as image:
        result = symbol_list(image, defined)
    if demangle:
        result.demangle()
    return result


def symbol_list(image: ElfImage, defined: bool | None = None) -> SymbolList:
    table = image.raw_dynamic_symbols
    # Every version index the file defines or needs, not those its rows use: no pass over 75k rows
    # (set(table.versym), ~2 ms on libtorch_cpu.so); an index no row uses is never looked up.
    versioned = table.names and image.section_by_type("SHT_GNU_versym") is not None
    labels = image.version_labels({*image.version_definitions, *image.version_needs}) if versioned else {}
    return SymbolList(str(image.path), image.bits, table, defined,
                      [s.name for s in image.sections], section_letters(image), labels)


def _selected_rows(raw: RawSymbols, defined: bool | None) -> list[int] | None:
    """Indexes of the rows to list, or None for all of them."""
    from itertools import compress

    kept = _row_mask(raw, defined, listed=True)
    if kept is None:
        return None
    n = len(raw.names)
    keep = list(compress(range(n), kept))
    return None if len(keep) == n else keep


def _row_mask(raw: RawSymbols, defined: bool | None, listed: bool):
    """Per row of `raw`, whether the listing keeps it (listed=True) or leaves it out (listed=False), as
    an iterator of truth values; None when it keeps every row. Section and file symbols are left out,
    as nm does without -a. Whether a row is listed depends only on its key (st_info, st_shndx), so the
    question is asked once per distinct key and the rows are one lookup."""
    kinds = set(raw.keys)
    kept = {k for k in kinds if _lists_kind(k, defined)}
    if len(kept) == len(kinds):
        return None
    return map((kept if listed else kinds - kept).__contains__, raw.keys)


def _lists_kind(key: int, defined: bool | None) -> bool:
    """Whether a listing of `defined` symbols shows the rows of this kind (a RawSymbols key)."""
    return (key & 0xF) not in (STT_SECTION, STT_FILE) and (defined is None or bool(key >> 16 & 0xFFFF) == defined)


def _pick_rows(raw: RawSymbols, keep: list[int]) -> RawSymbols:
    if len(keep) > 1:
        pick = itemgetter(*keep)  # every kept row of a column in one C call
        take = (lambda col: list(pick(col)) if col else [])
    else:
        take = (lambda col: [col[i] for i in keep] if col else [])
    return RawSymbols(take(raw.names), bytes(take(raw.infos)), bytes(take(raw.others)), take(raw.shndx),
                      take(raw.values), take(raw.sizes), take(raw.versym), take(raw.keys))


def _lookup(keys: list, table: dict) -> list:
    return list(map(table.__getitem__, keys))


def _section_label(ndx: int, names: list[str]) -> str:
    if ndx == SHN_UNDEF:
        return "UND"
    if ndx == SHN_ABS:
        return "ABS"
    if ndx == SHN_COMMON:
        return "COM"
    return names[ndx] if ndx < len(names) else f"[{ndx}]"


def section_letters(image: ElfImage) -> list[str]:
    """The lower-case nm letter of each section, from its flags (bfd's decode_section_type)."""
    out = []
    for s in image.sections:
        has_contents = s.type != "SHT_NOBITS"
        if s.flags & SHF_EXECINSTR:
            out.append("t")
        elif s.flags & SHF_ALLOC and has_contents:
            out.append("d" if s.flags & SHF_WRITE else "r")
        elif not has_contents:
            out.append("b")
        elif s.name.startswith(".debug"):
            out.append("N")
        elif not s.flags & SHF_WRITE:
            out.append("n")
        else:
            out.append("?")
    return out


def _letter(typ: str, bind: str, ndx: int, by_section: list[str]) -> str:
    if ndx == SHN_COMMON:
        return "C"
    if ndx == SHN_UNDEF:
        return ("v" if typ == "OBJECT" else "w") if bind == "WEAK" else "U"
    if typ == "GNU_IFUNC":
        return "i"
    if bind == "WEAK":
        return "V" if typ == "OBJECT" else "W"
    if bind == "GNU_UNIQUE":
        return "u"
    if bind not in ("GLOBAL", "LOCAL"):
        return "?"
    if ndx == SHN_ABS:
        c = "a"
    elif ndx < len(by_section) and ndx < SHN_LORESERVE:
        c = by_section[ndx]
    else:
        c = "?"
    return c.upper() if bind == "GLOBAL" else c
