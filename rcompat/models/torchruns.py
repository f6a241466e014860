"""Runs of a state dict's steady tensor records read at once: one regex split, then columns, no Python per record.

torch.save memoizes each global and string of a tensor record the first time (torchrecords.py reads
such a record alone) and fetches it from the memo (BINGET) ever after, so from the second tensor on
every record of a state dict is the same opcodes: the name, the rebuild function, 'storage', the
storage type, the key, the location, the sizes, OrderedDict, and a PUT after each of eight of them
(pickletools.dis of a torch 2.13 file). `run` splits a window of the pickle with one pattern
(`_STEADY`: a record past its name, and the next record's BINUNICODE length), so each name is what lies
between two matches, and reads the groups as columns with C-speed calls (map, zip, join, struct over
all of them): the names' lengths checked against their length fields in one compare; the memo indices
joined for torchrecords' sequence check; the fetches checked once per distinct value (a fetch of
anything but the matching global, string or known storage type or location hands the whole pickle to
the walk, as the record-at-a-time read does); the sizes decoded once per distinct (type, size, shape,
stride) bytes, through a cache shared with torchrecords; the TensorInfos made by tuple.__new__ over
the zipped columns. A run ends at the first record it does not match (a new storage type or
location, a key fetched again, a batch's end): torchrecords reads that one and calls `run` again.
"""
from __future__ import annotations

import re
import struct
from itertools import chain, repeat
from typing import Any

from rcompat.models.facts import TensorInfo
from rcompat.models.pickles import Global

_INT = rb"(?:K.|M..|J....|\x8a(?:\x05.{5}|\x06.{6}|\x07.{7}|\x08.{8}))"  # LONG1 as pickle writes it: 5..8 bytes
_PUT = rb"(q.|r....)"
_GET = rb"(h.|j....)"
_TUPLE_BODY = rb"(" + _INT + rb"{1,3}[\x85-\x87]|\(" + _INT + rb"{4,64}t)"   # TUPLE1/2/3: _shape checks the count
# A record after its name, every constant fetched: split's items per record are what lies before it (its
# name) and these groups, so an item's index is its group's number.
_STEADY = re.compile(
    rb"(" + _PUT                                                  # 1 the record; 2 the name's PUT
    + rb"((?:h.|j....)\(\((?:h.|j....))"                          # 3 rebuild, MARK MARK, 'storage'
    + _GET                                                        # 4 storage type
    + rb"X([\x01-\x09])\0\0\0(\d{1,9})" + _PUT                    # 5 6 7 key (str(int): length checked)
    + _GET                                                        # 8 location
    + rb"(" + _INT + rb")t" + _PUT + rb"Q" + _INT                  # 9 numel, 10; the storage offset
    + rb"(?:\)|" + _TUPLE_BODY + _PUT + rb")"                      # 11 shape, 12
    + rb"(?:\)|" + _TUPLE_BODY + _PUT + rb")"                      # 13 stride, 14
    + rb"[\x88\x89]" + _GET + rb"\)R" + _PUT + rb"t" + _PUT + rb"R" + _PUT   # 15 OrderedDict, 16 17 18
    + rb")(?:X(....))?",                                          # 19 the next record's name length
    re.DOTALL)
_WIDTH = 20
_INT_ONE = re.compile(_INT, re.DOTALL)
_U2 = struct.Struct("<H").unpack_from
_I4 = struct.Struct("<i").unpack_from
REBUILD = Global("torch._utils", "_rebuild_tensor_v2")
ORDERED = Global("collections", "OrderedDict")
_new = tuple.__new__


class Fallback(Exception):
    """Something the bulk read does not vouch for: walk the whole pickle instead."""


class State:
    """What the records read so far leave: the memo's constants by their fetch, and the results."""

    def __init__(self, fetch: dict, puts: list[bytes], count: int, storage_dtype) -> None:
        self.fetch: dict[bytes, Any] = fetch   # BINGET/LONG_BINGET bytes -> a Global, 'storage', ('location', …)
        self.kinds: dict[bytes, tuple] = {}    # storage types by their fetch: (dtype, itemsize)
        self.locations: dict[bytes, str] = {}  # locations by their fetch
        self.keys: dict[bytes, str] = {}       # storage keys by the PUT that memoized them
        self.seen: dict[tuple, tuple] = {}     # (type fetch, size, shape, stride bytes) -> facts (see facts())
        self.puts, self.memo, self.count = puts, len(puts), count   # PUT bytes in order; their number; opcodes
        self.tensors: list[TensorInfo] = []
        self.storages: dict[str, tuple[str, int, str]] = {}       # key -> (dtype, numel, location)
        self.storage_dtype = storage_dtype
        self.names: dict[str, None] = {g.dotted: None for g in fetch.values()}   # globals, in order


def same(fetched: Any, value: Any) -> bool:
    return fetched is value if isinstance(value, Global) else type(fetched) is str and fetched == value


def run(data, pos: int, room: int, window: int, st: State) -> tuple[int, bool]:
    """The steady records from `pos` (a name's BINUNICODE) on, at most `room` of them, looked for in the
    next `window` bytes, added to `st`: (where they end, whether they reached the window's end)."""
    start = pos + 5
    stop = min(start + window, len(data))
    parts = _STEADY.split(data[start:stop])
    n = len(parts) // _WIDTH
    cols = [parts[i:n * _WIDTH:_WIDTH] for i in range(_WIDTH)]
    heads = cols[19]
    k = min(heads.index(None) + 1 if None in heads else n, room)   # a record not followed by a name ends it
    lengths = struct.unpack(f"<{k}I", data[pos + 1:start] + b"".join(heads[:k - 1])) if k else ()
    got = tuple(map(len, cols[0][:k]))
    if lengths != got:  # a name its length field does not describe: the records before it
        k = next(i for i in range(k) if lengths[i] != got[i])
    if not k:
        return pos, False
    if k < n:
        cols = [c[:k] for c in cols]
    _check_constants(cols, st)
    kinds, devices = list(map(st.kinds.get, cols[4])), list(map(st.locations.get, cols[8]))
    if None in kinds or None in devices or bytes(map(len, cols[6])) != b"".join(cols[5]):
        raise Fallback   # a fetch of anything but a known storage type or location; a key's length wrong
    sizes = list(zip(cols[4], cols[9], cols[11], cols[13]))
    found = list(map(st.seen.get, sizes))
    if None in found:
        for i in [i for i, f in enumerate(found) if f is None]:
            found[i] = st.seen.get(sizes[i]) or st.seen.setdefault(sizes[i], facts(kinds[i], *sizes[i][1:]))
    dtypes, shapes, nbytes, numels, ops = zip(*found)
    names = map(str, cols[0], repeat("utf-8"), repeat("surrogatepass"))
    keys = list(map(str, cols[6], repeat("ascii")))
    st.keys.update(zip(cols[7], keys))
    st.storages.update(zip(keys, zip(dtypes, numels, devices)))
    st.tensors.extend(map(_new, repeat(TensorInfo), zip(names, dtypes, shapes, nbytes, devices, repeat(False))))
    st.puts.append(b"".join(filter(None, chain.from_iterable(zip(*(cols[i] for i in (2, 7, 10, 12, 14, 16, 17, 18)))))))
    st.memo += 8 * k - cols[12].count(None) - cols[14].count(None)
    st.count += sum(ops)
    end = start + sum(map(len, cols[0])) + sum(map(len, cols[1])) + 5 * (k - 1)
    return end, k == n and stop < len(data) and k < room


def _check_constants(cols: list, st: State) -> None:
    """Each distinct fetch of the rebuild function and 'storage' (one item: GET MARK MARK GET), and of
    OrderedDict, is of what the records memoized as those."""
    for both in set(cols[3]):
        cut = 2 if both[0] == 0x68 else 5
        if not (same(st.fetch.get(both[:cut]), REBUILD) and same(st.fetch.get(both[cut + 2:]), "storage")):
            raise Fallback
    for get in set(cols[15]):
        if not same(st.fetch.get(get), ORDERED):
            raise Fallback


def facts(kind: tuple, numel_raw: bytes, shape_raw: bytes | None, stride_raw: bytes | None) -> tuple:
    """(dtype, shape, nbytes, numel, opcodes of both tuples but their PUTs) of a record, from its bytes."""
    numel = _int(numel_raw)
    if numel < 0:
        raise Fallback   # torchfiles._storages refuses it: the walk says so
    shape, product, ops = _shape(shape_raw, stride_raw)
    return kind[0], shape, None if kind[1] is None else product * kind[1], numel, ops


def _int(raw: bytes) -> int:
    op = raw[0]
    if op == 0x4B:
        return raw[1]
    if op == 0x4D:
        return _U2(raw, 1)[0]
    if op == 0x4A:
        return _I4(raw, 1)[0]
    return int.from_bytes(raw[2:], "little", signed=True)


def _shape(shape_raw: bytes | None, stride_raw: bytes | None) -> tuple[tuple[int, ...], int, int]:
    """(shape, its product, the opcodes of both tuples but their PUTs) from the tuples' bytes (None: `()`)."""
    shape = tuple(_int(x) for x in _INT_ONE.findall(shape_raw)) if shape_raw else ()
    if shape_raw and shape_raw[0] != 0x28 and len(shape) != shape_raw[-1] - 0x84:  # TUPLE1/2/3 of 1/2/3 ints
        raise Fallback
    if stride_raw and stride_raw[0] != 0x28 and len(_INT_ONE.findall(stride_raw)) != stride_raw[-1] - 0x84:
        raise Fallback
    numel = 1
    for n in shape:
        numel *= n
    return shape, numel, _tuple_ops(shape_raw) + _tuple_ops(stride_raw)


def _tuple_ops(raw: bytes | None) -> int:
    if not raw:
        return 1                                         # EMPTY_TUPLE
    ints = len(_INT_ONE.findall(raw[1:] if raw[0] == 0x28 else raw))
    return ints + (2 if raw[0] == 0x28 else 1)           # MARK … TUPLE, or TUPLE1/2/3
