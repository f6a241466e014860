"""The bulk part of reading .dynsym: names out of a string table and the columns of a packed
Elf_Sym array, each in a few C-level passes (never one Python object per symbol)."""
from __future__ import annotations

import itertools
import struct
import sys
from array import array


def names_at(strtab: str, offsets: list[int]) -> list[str]:
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


def symbol_columns(raw: bytes, bits: int, endian: str, versym: list[int]) -> tuple:
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
