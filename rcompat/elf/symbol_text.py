"""`nm -D` text and the JSON listing of a SymbolList, assembled column by column.

Formatting one line per symbol (an f-string, or json.dumps of a dict) was most of `rcompat elf
symbols`' time on libtorch_cpu.so's 74k symbols: 4.4x `nm -D` for text and 15x for JSON, whole
process. Here every per-symbol step is one C-level pass over a column: the addresses come from one
struct.pack(...).hex() split at separators, the letter, version suffix and the JSON fields that depend
only on (st_info, st_other, st_shndx, .gnu.version) are decided once per distinct combination (a few
dozen per file) and looked up, and each line is the concatenation of its pieces through one
"".join(chain(zip(...))). JSON strings are escaped only when a name needs it.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from itertools import chain, compress, repeat
from operator import itemgetter

JSON_CHUNK_ROWS = 8192  # rows per write: a few MB, so output starts early and memory stays flat


def nm_text(syms, shown: list[str] | None = None) -> str:
    """The `nm -D` output of `syms` (a SymbolList), sorted by raw name like nm in the C locale, ties in
    .dynsym order (sorted() is stable); `shown` replaces the printed names (demangled ones)."""
    raw = syms.table  # the whole table: sorting the selected indexes picks and orders rows in one step
    order = sorted(range(len(raw.names)) if syms.rows is None else syms.rows, key=raw.names.__getitem__)
    n = len(order)
    if not n:
        return ""
    in_order = itemgetter(*order) if n > 1 else (lambda column: (column[0],))
    names = in_order(raw.names)
    shndx = in_order(raw.shndx)
    versym = in_order(raw.versym) if raw.versym else [0] * n
    letters = list(zip(in_order(raw.infos), shndx))
    middle = {key: f" {syms.letter_of(*key)} " for key in set(letters)}
    ends = _suffixes(syms, shndx, versym, names, "\n")
    width = 16 if syms.bits == 64 else 8
    addresses = _addresses(in_order(raw.values), shndx, width)
    if shown is None:
        printed = names
    else:
        if syms.rows is not None:  # `shown` holds the selected rows: spread them over the whole table
            spread = list(raw.names)
            any(map(spread.__setitem__, syms.rows, shown))
            shown = spread
        printed = in_order(shown)
    return "".join(chain.from_iterable(zip(addresses, map(middle.__getitem__, letters), printed, ends)))


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
    versym = raw.versym or [0] * n
    keys = list(zip(raw.infos, raw.others, raw.shndx, versym))
    distinct = set(keys)
    # '{"name":"' NAME HEAD VALUE ',"size":' SIZE MIDDLE NAME TAIL [DEMANGLED '"}']
    head = {k: _json_head(syms, k, json.dumps) for k in distinct}
    middle = {k: _json_middle(syms, k, json.dumps) for k in distinct}
    tails = _suffixes(syms, raw.shndx, versym, raw.names, '","demangled":"' if demangled is not None else '"}',
                      escape=json.dumps)
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
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _suffixes(syms, shndx, versym, names, after: str, escape=None) -> list[str]:
    """`@@VER`, `@VER` or "" of each row, then `after` (`escape`: how a suffix is quoted, e.g. json.dumps).
    A version node's own symbol (a defined symbol named like its own version) gets no suffix."""
    rows = list(zip(shndx, versym))
    suffix = {}
    for ndx, vs in set(rows):
        version, file = syms.version_labels.get(vs & 0x7FFF, ("", ""))
        text = "" if not version else ("@@" if ndx and not vs & 0x8000 and not file else "@") + version
        suffix[ndx, vs] = (escape(text)[1:-1] if escape else text) + after
    out = list(map(suffix.__getitem__, rows))
    node_names = {v for v, file in syms.version_labels.values() if v and not file}
    if node_names and not node_names.isdisjoint(names):
        for i in compress(range(len(out)), map(node_names.__contains__, names)):
            ndx, vs = rows[i]
            if ndx and syms.version_labels.get(vs & 0x7FFF) == (names[i], ""):
                out[i] = after
    return out


def _addresses(values, shndx, width: int) -> list[str]:
    """Each value as `width` hex digits (blank for undefined symbols, as nm prints them)."""
    n = len(values)
    blank = " " * width
    if not any(shndx):
        return [blank] * n
    packed = struct.pack(f">{n}{'Q' if width == 16 else 'I'}", *values)
    hexes = packed.hex(" ", width // 2).split(" ")  # one separator every 8 (4) bytes: one value each
    if not all(shndx):
        hexes = [h if ndx else blank for h, ndx in zip(hexes, shndx)]
    return hexes


def _json_head(syms, key: tuple, dumps) -> str:
    """'","version":…,"value":' of the rows with this (st_info, st_other, st_shndx, versym)."""
    info, _, ndx, vs = key
    version, file = syms.version_labels.get(vs & 0x7FFF, ("", ""))
    return (f'","version":{dumps(version)},"version_hidden":{"true" if vs & 0x8000 else "false"},'
            f'"version_file":{dumps(file)},"letter":{dumps(syms.letter_of(info, ndx))},"value":')


def _json_middle(syms, key: tuple, dumps) -> str:
    """',"type":…,"decorated":"' of the rows with this (st_info, st_other, st_shndx, versym)."""
    from rcompat.elf.reader import BIND_OF_INFO, TYPE_OF_INFO, VISIBILITY_OF_OTHER

    info, other, ndx, _ = key
    return (f',"type":{dumps(TYPE_OF_INFO[info])},"bind":{dumps(BIND_OF_INFO[info])},'
            f'"visibility":{dumps(VISIBILITY_OF_OTHER[other])},"section":{dumps(syms.section_of(ndx))},'
            f'"defined":{"true" if ndx else "false"},"decorated":"')
