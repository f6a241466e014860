"""`nm -D` text and the JSON listing of a SymbolList, assembled column by column.

Formatting one line per symbol (an f-string, or json.dumps of a dict) was most of `rcompat elf
symbols`' time on libtorch_cpu.so's 74k symbols: 4.4x `nm -D` for text and 15x for JSON, whole
process. Here every per-symbol step is one C-level pass over a column. Besides its name, value and
size, everything a row shows (letter, version suffix, type, binding, visibility, section) depends
only on its kind (st_info, st_other, st_shndx) and its .gnu.version entry, of which a file has a few
dozen combinations: each combination's text is made once and looked up by one int per row. The
addresses come from one byte-swapped array's hex() split at separators, and lines are the concatenation
of their pieces. JSON strings are escaped only when a name needs it.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import partial
from itertools import chain, compress, repeat
from operator import eq

JSON_CHUNK_ROWS = 8192  # rows per write: a few MB, so output starts early and memory stays flat
ADDRESS_BLOCK_ROWS = 4096
NM_CHUNK_LINES = 1024  # ~90 KB a piece: below malloc's mmap threshold, so each reuses the last one's pages
_JSON_PLAIN = bytes(c for c in range(0x20, 0x7F) if chr(c) not in '"\\')  # printable ASCII but " and \


def decorate(name: str, version: str, hidden: bool, defined: bool, version_file: str = "",
             raw_name: str | None = None) -> str:
    """A version required from another file (verneed) is always `@`, even on a defined (copy-relocated)
    symbol, as binutils prints it; a version node's own ABS symbol gets no suffix."""
    if not version or (defined and not version_file and version == (raw_name or name)):
        return name
    return f"{name}{'@@' if defined and not hidden and not version_file else '@'}{version}"


def nm_text(syms, shown: list[str] | None = None) -> str:
    """The `nm -D` output of `syms` (a SymbolList), sorted by raw name like nm in the C locale, ties in
    .dynsym order (sorted() is stable); `shown` replaces the printed names (demangled ones)."""
    return "".join(_sorted_lines(syms, shown))


def nm_chunks(syms, shown: list[str] | None = None) -> Iterator[str]:
    """nm_text() in pieces of NM_CHUNK_LINES lines, to write as they are joined: small buffers that reuse
    the same memory instead of one 6 MB string and its 6 MB encoding (fresh pages cost ~2 us each to fault
    in: pieces of 16k lines faulted 1,700 of them on libtorch_cpu.so, ~3 ms)."""
    lines = _sorted_lines(syms, shown)
    for start in range(0, len(lines), NM_CHUNK_LINES):
        yield "".join(lines[start:start + NM_CHUNK_LINES])


def _sorted_lines(syms, shown: list[str] | None = None) -> list[str]:
    """The lines of nm_text(), each ending in a newline, and "" in place of the rows left out."""
    raw = syms.raw if syms.defined is False else syms.table  # undefined ones: usually few, pick them first
    if not raw.names:
        return []
    keys = raw.keys
    unlisted = [] if syms.defined is False else syms.unlisted()
    if shown is not None and raw is syms.table and syms.rows is not None:  # `shown` holds the listed rows
        spread = list(raw.names)
        any(map(spread.__setitem__, syms.rows, shown))
        shown = spread
    names = raw.names if shown is None else shown
    # Lines are made in .dynsym order, where the columns lie in memory in the order they are read, and
    # sorted themselves (30% less than sorting indexes and gathering every column by them). sort()
    # computes each item's key once, in list order, so the key function hands out the names in that order.
    # A row's letter and suffix depend on its kind only (a few dozen per file): each kind's text is
    # made at its first row (_ByKind), without a pass to collect the kinds first (set(keys): ~2 ms).
    middle = _ByKind(lambda k: f" {syms.letter_of(k & 0xFF, k >> 16 & 0xFFFF)} ")
    mids = list(map(middle.__getitem__, keys))  # and with it every kind of row the file has
    suffix = _ByKind(lambda k: _suffix_text(syms, k) + "\n")
    # Most listings show no version suffix at all (a library's defined symbols are mostly unversioned):
    # then no second lookup per row (~4 ms on libtorch_cpu.so).
    versioned = any(suffix[k] != "\n" for k in middle if syms.lists_kind(k))
    suffixes = map(suffix.__getitem__, keys) if versioned else repeat("\n")
    columns = (iter(mids), iter(names), suffixes)
    lines: list[str] = []
    for addresses in _address_blocks(raw, 16 if syms.bits == 64 else 8):
        lines += map("".join, zip(addresses, *columns))  # the block's addresses first: zip stops at their end
    blank = " " * (16 if syms.bits == 64 else 8)
    if syms.defined is not True:  # --defined leaves every undefined row out anyway
        for i in raw.undefined_rows():  # nm prints no address for an undefined symbol
            lines[i] = "".join((blank, mids[i], names[i], suffix[keys[i]] if versioned else "\n"))
    for i in _own_node_rows(raw.names, keys, _own_nodes(syms, suffix) if versioned else {}):
        lines[i] = "".join((lines[i][:len(blank)], mids[i], names[i], "\n"))
    for i in unlisted:
        lines[i] = ""
    lines.sort(key=partial(next, iter(raw.names)))  # in place: no second 75k-slot list to fault in
    return lines


class _ByKind(dict):
    """{kind key: its text}, each text made by `make` when its key is first looked up."""

    def __init__(self, make) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: int) -> str:
        text = self[key] = self._make(key)
        return text


def json_chunks(syms, demangled: list[str] | None = None) -> Iterator[str]:
    """SymbolList.to_records() as a JSON array, one object per line written like
    json.dumps(record, separators=(",", ":")), in .dynsym order; yielded JSON_CHUNK_ROWS rows at a time."""
    raw = syms.raw
    n = len(raw.names)
    if not n:
        yield "[]\n"
        return
    import json

    names = json_interiors(raw.names)
    keys = raw.keys
    distinct = set(keys)
    # Each row: '{"name":"' NAME HEAD VALUE ',"size":' SIZE MIDDLE NAME TAIL [DEMANGLED '"}']
    head = {k: _json_head(syms, k, json.dumps) for k in distinct}
    middle = {k: _json_middle(syms, k, json.dumps) for k in distinct}
    tails = _suffixes(syms, keys, raw.names, '","demangled":"' if demangled is not None else '"}', json.dumps)
    shown = json_interiors(demangled) if demangled is not None else None
    for start in range(0, n, JSON_CHUNK_ROWS):
        rows = slice(start, start + JSON_CHUNK_ROWS)
        part_keys, part_names = keys[rows], names[rows]
        columns = [repeat(',\n{"name":"'), part_names, map(head.__getitem__, part_keys), map(str, raw.values[rows]),
                   repeat(',"size":'), map(str, raw.sizes[rows]), map(middle.__getitem__, part_keys), part_names,
                   tails[rows]]
        if shown is not None:
            columns += [shown[rows], repeat('"}')]
        text = "".join(chain.from_iterable(zip(*columns)))
        yield "[" + text[1:] if start == 0 else text
    yield "\n]\n"


def json_interiors(strings: list[str]) -> list[str]:
    """Each string as it appears between the quotes of json.dumps(s): the strings themselves when none
    needs escaping (printable ASCII without '"' or backslash, the common case: checked in one pass)."""
    if _plain("".join(strings)):
        return strings
    import json

    return [s if _plain(s) else json.dumps(s)[1:-1] for s in strings]


def _plain(text: str) -> bool:
    # str.isprintable() looks at one character at a time (3x slower on 5 MB of names than translate)
    return text.isascii() and not text.encode("ascii").translate(None, _JSON_PLAIN)


def _suffixes(syms, keys: list[int], names: list[str], after: str, escape=None) -> list[str]:
    """`@@VER`, `@VER` or "" of each row, then `after` (`escape`: how a suffix is quoted, e.g. json.dumps)."""
    kinds = set(keys)
    suffix = {}
    for k in kinds:
        text = _suffix_text(syms, k)
        suffix[k] = (escape(text)[1:-1] if escape else text) + after
    out = list(map(suffix.__getitem__, keys))
    for i in _own_node_rows(names, keys, _own_nodes(syms, kinds)):
        out[i] = after
    return out


def _suffix_text(syms, key: int) -> str:
    """`@@VER`, `@VER` or "" of the rows with this key."""
    ndx, vs = key >> 16 & 0xFFFF, key >> 32
    version, file = syms.version_labels.get(vs & 0x7FFF, ("", ""))
    return decorate("", version, bool(vs & 0x8000), bool(ndx), file)


def _own_nodes(syms, kinds) -> dict[int, str]:
    """{key: version} for the keys among `kinds` of defined symbols of a version this file defines: the
    row of such a key named like that version is the version node's own symbol, which gets no suffix."""
    own_node = {}
    for key in kinds:
        version, file = syms.version_labels.get(key >> 32 & 0x7FFF, ("", ""))
        if version and key >> 16 & 0xFFFF and not file:
            own_node[key] = version
    return own_node


def _own_node_rows(names: list[str], keys: list[int], own_node: dict[int, str]) -> Iterator[int]:
    """The rows that are a version node's own symbol (see _own_nodes); none without versions."""
    if not own_node:  # names never hold a NUL, so the default matches no name
        return iter(())
    return compress(range(len(keys)), map(eq, names, map(own_node.get, keys, repeat("\0"))))


def _address_blocks(raw, width: int) -> Iterator[list[str]]:
    """The values of `raw` (RawSymbols) as `width` hex digits each, ADDRESS_BLOCK_ROWS at a time: a
    block's strings are freed before the next is made, so they reuse the same memory (all 75k at once
    are 6 MB of fresh pages to fault in, ~4 ms on libtorch_cpu.so)."""
    # One array, byte-swapped to big-endian in place, one hex() with a separator every 8 (4) bytes:
    # 4 ms on libtorch_cpu.so's 75k values, where struct.pack(*values) and the same hex() took 10.
    packed = raw.value_array("Q" if width == 16 else "I")
    if sys.byteorder == "little":
        packed.byteswap()
    for start in range(0, len(packed), ADDRESS_BLOCK_ROWS):
        yield packed[start:start + ADDRESS_BLOCK_ROWS].tobytes().hex(" ", width // 2).split(" ")


def _json_head(syms, key: int, dumps) -> str:
    """'","version":…,"value":' of the rows with this key."""
    vs = key >> 32
    version, file = syms.version_labels.get(vs & 0x7FFF, ("", ""))
    letter = syms.letter_of(key & 0xFF, key >> 16 & 0xFFFF)
    return (f'","version":{dumps(version)},"version_hidden":{"true" if vs & 0x8000 else "false"},'
            f'"version_file":{dumps(file)},"letter":{dumps(letter)},"value":')


def _json_middle(syms, key: int, dumps) -> str:
    """',"type":…,"decorated":"' of the rows with this key."""
    from rcompat.elf.read.format import BIND_OF_INFO, TYPE_OF_INFO, VISIBILITY_OF_OTHER

    info, other, ndx = key & 0xFF, key >> 8 & 0xFF, key >> 16 & 0xFFFF
    return (f',"type":{dumps(TYPE_OF_INFO[info])},"bind":{dumps(BIND_OF_INFO[info])},'
            f'"visibility":{dumps(VISIBILITY_OF_OTHER[other])},"section":{dumps(syms.section_of(ndx))},'
            f'"defined":{"true" if ndx else "false"},"decorated":"')
