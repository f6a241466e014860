"""The bulk part of reading .dynsym: names out of a string table and the columns of a packed
Elf_Sym array, each in a few C-level passes (never one Python object per symbol)."""
from __future__ import annotations

import itertools
import struct
import sys
from array import array

# Native little-endian layouts: entry size, then each field's (memoryview format, offset in bytes).
_LAYOUT = {64: (24, {"st_name": ("I", 0), "info": ("B", 4), "other": ("B", 5), "shndx": ("H", 6),
                     "value": ("Q", 8), "size": ("Q", 16)}),
           32: (16, {"st_name": ("I", 0), "value": ("I", 4), "size": ("I", 8), "info": ("B", 12),
                     "other": ("B", 13), "shndx": ("H", 14)})}
# RawSymbols' column names -> Elf_Sym field (infos/others are bytes, the rest lists of ints)
_FIELD_OF = {"st_names": "st_name", "infos": "info", "others": "other", "shndx": "shndx", "values": "value",
             "sizes": "size"}


def names_at(strtab: str, offsets: "list[int] | memoryview") -> list[str]:
    """The NUL-terminated string at each offset of `strtab`, a string table decoded as latin-1. An offset
    past the table's last NUL raises ValueError: the caller's bounds check costs no pass of its own."""
    # latin-1 maps bytes 1:1 to characters, so byte offsets stay valid for str.index; the rare
    # non-ASCII name is re-decoded as UTF-8 afterwards. Three C-level passes (find each end, make the
    # slices, take them) beat splitting the table into a dict of names by start offset (-30%), and
    # need no second look for names that share another's tail (linkers merge suffixes).
    text = strtab if strtab.endswith("\0") else strtab + "\0"  # a terminator, so every index() succeeds
    names = list(map(text.__getitem__, map(slice, offsets, map(text.index, itertools.repeat("\0"), offsets))))
    if not text.isascii():
        names = [n if n.isascii() else n.encode("latin-1").decode("utf-8", "replace") for n in names]
    return names


def positions(sequence: "bytes | list[int]", value: int) -> list[int]:
    """The indexes at which `sequence` holds `value`, each found by one C-level scan."""
    found, i = [], -1
    try:
        while True:
            i = sequence.index(value, i + 1)
            found.append(i)
    except ValueError:
        return found


def zero_u16_positions(packed: bytes) -> list[int]:
    """The indexes of the u16 entries of `packed` that are 0, each found by one C-level search (a match
    at an odd offset straddles two entries and is passed over)."""
    found, i = [], packed.find(b"\0\0")
    while i >= 0:
        if i % 2:
            i = packed.find(b"\0\0", i + 1)
        else:
            found.append(i // 2)
            i = packed.find(b"\0\0", i + 2)
    return found


class SymbolColumns:
    """The columns of a packed Elf_Sym array (a copy of .dynsym from symbol 1 on) and of its .gnu.version
    entries (`versym`: 2 bytes per symbol, b"" without that section), each decoded when first asked for:
    `elf symbols` needs names, kinds and values, never sizes, and every column of ints is 75k objects
    (~2 ms each on libtorch_cpu.so). Files in the machine's own layout (little-endian here) are read
    field by field through strided memoryviews; any other byte order is unpacked with struct at once."""

    def __init__(self, entries: bytes, bits: int, endian: str, versym: bytes) -> None:
        self.bits = bits
        self._entry_size, self._fields = _LAYOUT[bits]
        self.count = len(entries) // self._entry_size
        self._entries, self._versym = entries, versym
        self._decoded: dict[str, object] = {}
        self._native = endian == "<" and sys.byteorder == "little"
        if not self._native:
            self._decoded = _unpacked(entries[:self.count * self._entry_size], bits, endian, versym)

    def column(self, name: str):
        """One of st_names, infos, others (bytes), shndx, values, sizes, versym (empty without .gnu.version)
        or keys: st_info | st_other << 8 | st_shndx << 16 | versym << 32 (see RawSymbols), a sequence of
        ints (a memoryview of u64 in the machine's own byte order)."""
        if name not in self._decoded:
            self._decoded[name] = self._decode(name)
        return self._decoded[name]

    def field_bytes(self, field: str) -> bytes | None:
        """One Elf_Sym field of every symbol packed in the machine's own layout ("shndx": 2 bytes each),
        or None when the file's byte order is not the machine's (the columns are decoded instead)."""
        return self._view(field).tobytes() if self._native else None

    def name_offsets(self):
        """st_name of every symbol, to read once or twice: a strided view where the layout allows (no
        list of 75k ints kept alive: ~2 ms on libtorch_cpu.so), else the decoded column."""
        return self._decoded["st_names"] if "st_names" in self._decoded else self._view("st_name")

    def value_array(self) -> array:
        """st_value of every symbol as an array of the file's word size (no int objects made)."""
        typecode = _unsigned(8 if self.bits == 64 else 4)
        values = array(typecode)
        if "values" in self._decoded:
            values.extend(self._decoded["values"])
        else:
            values.frombytes(self._view("value").tobytes())
        return values

    def _view(self, field: str) -> memoryview:
        fmt, offset = self._fields[field]
        size = struct.calcsize(fmt)
        whole = memoryview(self._entries)[:self.count * self._entry_size]
        return whole.cast(_unsigned(size) if size > 1 else "B")[offset // size::self._entry_size // size]

    def _decode(self, name: str):
        if name == "versym":
            return memoryview(self._versym).cast("H").tolist() if self._versym else []
        if name == "keys":
            # info, other and shndx are 4 adjacent bytes in both layouts: one u32 each, versym above it
            packed = bytearray(8 * self.count)
            memoryview(packed).cast("I")[0::2] = _kind_words(self._entries, self._fields["info"][1],
                                                             self._entry_size, self.count)
            if self._versym:
                memoryview(packed).cast("H")[2::4] = memoryview(self._versym).cast("H")
            # left packed: a list would be 75k two-digit ints kept alive (~4 ms to make and fault in on
            # libtorch_cpu.so), where `elf symbols` reads each key once, in a pass that makes it and drops it
            return memoryview(packed).cast("Q")
        view = self._view(_FIELD_OF[name])
        return view.tobytes() if view.format == "B" else view.tolist()


def _kind_words(entries: bytes, offset: int, entry_size: int, count: int) -> memoryview:
    """The u32 at `offset` of each entry (st_info, st_other, st_shndx), as a strided view."""
    return memoryview(entries)[:count * entry_size].cast("I")[offset // 4::entry_size // 4]


def _unsigned(size: int) -> str:
    """The array/memoryview typecode of an unsigned int of `size` bytes on this platform."""
    return next(code for code in "BHILQ" if array(code).itemsize == size)


def _unpacked(raw: bytes, bits: int, endian: str, versym: bytes) -> dict[str, object]:
    """Every column at once, with struct: the path for files in the other byte order."""
    fmt = endian + ("IBBHQQ" if bits == 64 else "IIIBBH")
    cols = [list(c) for c in zip(*struct.iter_unpack(fmt, raw))] or [[] for _ in range(6)]
    if bits == 64:
        st_names, infos, others, ndxs, values, sizes = cols
    else:
        st_names, values, sizes, infos, others, ndxs = cols
    versyms = list(struct.unpack(f"{endian}{len(versym) // 2}H", versym)) if versym else []
    keys = [i | o << 8 | x << 16 | v << 32 for i, o, x, v in zip(infos, others, ndxs, versyms or itertools.repeat(0))]
    return {"st_names": st_names, "infos": bytes(infos), "others": bytes(others), "shndx": ndxs, "values": values,
            "sizes": sizes, "versym": versyms, "keys": keys}
