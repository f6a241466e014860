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
from operator import eq, not_

JSON_CHUNK_ROWS = 8192  # rows per write: a few MB, so output starts early and memory stays flat
NM_CHUNK_LINES = 16384
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
    """nm_text() in pieces of NM_CHUNK_LINES lines, to write as they are joined: a few small buffers
    instead of one 6 MB string and its 6 MB encoding (pages a VM makes expensive to fault in)."""
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
    blank_undefined = syms.defined is not True  # --defined leaves every undefined row out anyway
    # Lines are made in .dynsym order, where the columns lie in memory in the order they are read, and
    # sorted themselves (30% less than sorting indexes and gathering every column by them). sorted()
    # computes each item's key once, in list order, so the key function hands out the names in that order.
    # A row's letter and suffix depend on its kind only (a few dozen per file): each kind's text is
    # made at its first row (_ByKind), without a pass to collect the kinds first (set(keys): ~1.5 ms).
    middle = _ByKind(lambda k: f" {syms.letter_of(k & 0xFF, k >> 16 & 0xFFFF)} ")
    if any(version for version, _file in syms.version_labels.values()):
        suffix, own_node = _suffix_table(syms, set(keys), "\n")
        suffixes = map(suffix.__getitem__, keys)
    else:  # no versions: every row's suffix is the newline
        suffixes, own_node = repeat("\n"), {}
    addresses = _addresses(raw, 16 if syms.bits == 64 else 8, blank_undefined)
    lines = list(map("".join, zip(addresses, map(middle.__getitem__, keys), names, suffixes)))
    for i in _own_node_rows(raw.names, keys, own_node):
        lines[i] = "".join((addresses[i], middle[keys[i]], names[i], "\n"))
    for i in unlisted:
        lines[i] = ""
    return sorted(lines, key=partial(next, iter(raw.names)))


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
    suffix, own_node = _suffix_table(syms, set(keys), after, escape)
    out = list(map(suffix.__getitem__, keys))
    for i in _own_node_rows(names, keys, own_node):
        out[i] = after
    return out


def _suffix_table(syms, kinds: set[int], after: str, escape=None) -> tuple[dict[int, str], dict[int, str]]:
    """({key: its suffix, then `after`}, {key: version} for the keys of defined symbols of a version this
    file defines: the row of such a key named like that version is the version node's own symbol, which
    gets no suffix)."""
    suffix, own_node = {}, {}
    for key in kinds:
        ndx, vs = key >> 16 & 0xFFFF, key >> 32
        version, file = syms.version_labels.get(vs & 0x7FFF, ("", ""))
        text = decorate("", version, bool(vs & 0x8000), bool(ndx), file)
        suffix[key] = (escape(text)[1:-1] if escape else text) + after
        if version and ndx and not file:
            own_node[key] = version
    return suffix, own_node


def _own_node_rows(names: list[str], keys: list[int], own_node: dict[int, str]) -> Iterator[int]:
    """The rows that are a version node's own symbol (see _suffix_table); none without versions."""
    if not own_node:  # names never hold a NUL, so the default matches no name
        return iter(())
    return compress(range(len(keys)), map(eq, names, map(own_node.get, keys, repeat("\0"))))


def _addresses(raw, width: int, blank_undefined: bool = True) -> list[str]:
    """Each value of `raw` (RawSymbols) as `width` hex digits (blank for undefined symbols, as nm prints
    them, unless the caller leaves those rows out anyway)."""
    shndx = raw.shndx
    n = len(shndx)
    blank = " " * width
    if not any(shndx):
        return [blank] * n
    # One array, byte-swapped to big-endian in place, one hex() with a separator every 8 (4) bytes:
    # 4 ms on libtorch_cpu.so's 75k values, where struct.pack(*values) and the same hex() took 10.
    packed = raw.value_array("Q" if width == 16 else "I")
    if sys.byteorder == "little":
        packed.byteswap()
    hexes = packed.tobytes().hex(" ", width // 2).split(" ")
    if blank_undefined:
        for i in compress(range(n), map(not_, shndx)):  # the few undefined ones
            hexes[i] = blank
    return hexes


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
