"""Runs of a state dict's steady tensor records read at once: one regex split, then columns, no Python per record.

torch.save memoizes each global and string of a tensor record the first time (torchrecords.py reads
such a record alone) and fetches it from the memo (BINGET) ever after, so from the second tensor on
every record of a state dict is the same opcodes: the name, the rebuild function, 'storage', the
storage type, the key, the location, the sizes, OrderedDict, and a PUT after each of eight of them
(pickletools.dis of a torch 2.13 file). `run` splits a window of the pickle with one pattern
(`STEADY`: a record past its name, and the next record's BINUNICODE length), so each name is what lies
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
from itertools import repeat
from typing import Any

from rcompat.models.facts import TensorInfo
from rcompat.models.pickles import Global

INT = rb"(?:K.|M..|J....|\x8a(?:\x05.{5}|\x06.{6}|\x07.{7}|\x08.{8}))"  # LONG1 as pickle writes it: 5..8 bytes
PUT = rb"(q.|r....)"
GET = rb"(h.|j....)"
_INT4 = rb"(?:K.|M..|J....)"   # BININT1/2/BININT: every int a run reads but those past 32 bits (LONG1:
                               # its record ends the run and is read alone, by torchrecords' full INT)


def tuple_body(integer: bytes) -> bytes:
    """TUPLE1/2/3 after their one, two, three ints, else MARK ints TUPLE (a group: the tuple's bytes).
    Nested, not integer{1,3}: a counted repeat of a group is sre's slowest construct (a context pushed
    per turn, ~20% of a split), and each int written once keeps the pattern's compile short (~0.5 ms
    a pattern, paid by every `model inspect`)."""
    return (rb"(" + integer + rb"(?:\x85|" + integer + rb"(?:\x86|" + integer + rb"\x87))|\(" + integer
            + rb"{4,64}t)")


TUPLE_BODY = tuple_body(INT)
_TUPLE4 = tuple_body(_INT4)


def _steady(put: bytes, get: bytes) -> re.Pattern:
    """A record after its name, every constant fetched, its PUTs and GETs the forms given: split's items
    per record are what lies before it (its name) and these groups, so an item's index is its group's
    number."""
    return re.compile(
        b"(" + put + b")"                                                # 1 the name's PUT
        + rb"((?:" + get + rb")\(\((?:" + get + rb"))"                    # 2 rebuild, MARK MARK, 'storage'
        + b"(" + get + b")"                                              # 3 storage type
        + rb"X([\x01-\x09])\0\0\0(\d{1,9})(" + put + b")"                 # 4 5 6 key (str(int): length checked)
        + b"(" + get + b")"                                              # 7 location
        + rb"(" + _INT4 + rb")t(" + put + rb")Q" + _INT4                  # 8 numel, 9; the storage offset
        + rb"(?:\)|" + _TUPLE4 + b"(" + put + b"))"                         # 10 shape, 11
        + rb"(?:\)|" + _TUPLE4 + b"(" + put + b"))"                         # 12 stride, 13
        + rb"[\x88\x89](" + get + rb")\)R(" + put + rb")t(" + put + rb")R(" + put + b")"   # 14 OrderedDict, 15 16 17
        + rb"(?:X(....))?",                                               # 18 the next record's name length
        re.DOTALL)


STEADY = _steady(rb"q.|r....", rb"h.|j....")
# Past pickle's first 256 memo indices every PUT is a LONG_BINPUT, and where every constant the records
# memoized sits below them every fetch of one is a BINGET: the same pattern without those alternatives
# matches exactly the same records there, ~20% faster (no branch to try and undo at each of the 14).
_STEADY_LONG: list[re.Pattern] = []   # compiled at its first use (a file of more than ~30 tensors)


def _pattern(st: "State") -> re.Pattern:
    """STEADY, or its long form where the records so far allow it (see above): nothing else differs, so a
    record that breaks the form (out of sequence, a fetch of an unknown index) ends the run as before."""
    if st.put_bytes < 512 or max(map(len, st.fetch)) != 2 or (st.kinds and max(map(len, st.kinds)) != 2):
        return STEADY
    if not _STEADY_LONG:
        _STEADY_LONG.append(_steady(rb"r....", rb"h."))
    return _STEADY_LONG[0]
_WIDTH = 19
_INT_ONE = re.compile(INT, re.DOTALL)
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
        self.keys: dict[bytes, str] = {}       # storage keys by the PUT that memoized them (see key())
        self.pending_keys: list[tuple] = []    # runs' (PUT column, key column), not yet in `keys`
        self.seen: dict[tuple, tuple] = {}     # (type fetch, size, shape, stride bytes) -> facts (see facts())
        self.puts, self.count = puts, count   # PUT bytes in order; opcodes read
        self.put_bytes = sum(map(len, puts))  # their length: at most twice the memo entries they make
        self.tensors: list[TensorInfo] = []
        self.storages: dict[str, tuple[str, int, str]] = {}       # key -> (dtype, numel, location)
        self.storage_dtype = storage_dtype
        self.names: dict[str, None] = {g.dotted: None for g in fetch.values()}   # globals, in order

    def key(self, put: bytes) -> "str | None":
        """The storage key memoized by `put`; the runs' keys joined to `keys` first, in the order read."""
        self.flush_keys()
        return self.keys.get(put)

    def flush_keys(self) -> None:
        for puts, keys in self.pending_keys:
            self.keys.update(zip(puts, keys))
        self.pending_keys.clear()


def same(fetched: Any, value: Any) -> bool:
    return fetched is value if isinstance(value, Global) else type(fetched) is str and fetched == value


def run(data, pos: int, room: int, window: int, st: State) -> tuple[int, bool]:
    """The steady records from `pos` (a name's BINUNICODE) on, at most `room` of them, looked for in the
    next `window` bytes, added to `st`: (where they end, whether they reached the window's end)."""
    start = pos + 5
    stop = min(start + window, len(data))
    pattern = _pattern(st)
    parts = pattern.split(data[start:stop])
    n = len(parts) // _WIDTH
    cols = [parts[i:n * _WIDTH:_WIDTH] for i in range(_WIDTH)]
    heads = cols[18]
    k = min(n, room)
    try:  # a record not followed by a name ends the run (only the last one is, where the run is whole)
        lengths = struct.unpack(f"<{k}I", data[pos + 1:start] + b"".join(heads[:k - 1])) if k else ()
    except TypeError:
        k = heads.index(None) + 1
        lengths = struct.unpack(f"<{k}I", data[pos + 1:start] + b"".join(heads[:k - 1]))
    got = tuple(map(len, cols[0][:k]))
    if lengths != got:  # a name its length field does not describe: the records before it
        k = next(i for i in range(k) if lengths[i] != got[i])
    if not k:
        return pos, False
    if k < n:
        cols = [c[:k] for c in cols]
    _check_constants(cols, st)
    devices = _devices(cols[7], st)
    if bytes(map(len, cols[5])) != b"".join(cols[4]):
        raise Fallback   # a key its length field does not describe
    names = _texts(cols[0], "utf-8", "surrogatepass")
    keys = _texts(cols[5], "ascii", "strict")
    st.pending_keys.append((cols[6], keys))   # the dict by PUT is made only when a record alone fetches a key
    sizes = (cols[3], cols[8], cols[10], cols[12])
    first = (cols[3][0], cols[8][0], cols[10][0], cols[12][0])
    if all(map(_uniform, sizes, first)):   # every record the same type and sizes (a stack of equal layers):
        fact = st.seen.get(first) or st.seen.setdefault(first, facts(_kind(first[0], st), *first[1:]))
        dtype, shape, size, numel, ops = fact   # one lookup; equality, not hashing, tells them the same
        if type(devices) is str:
            st.storages.update(zip(keys, repeat((dtype, numel, devices))))
        else:
            st.storages.update(zip(keys, zip(repeat(dtype), repeat(numel), devices)))
        st.tensors.extend(map(_new, repeat(TensorInfo), zip(names, repeat(dtype), repeat(shape), repeat(size),
                                                             _column(devices, k), repeat(False))))
        st.count += ops * k
    else:
        sizes = list(zip(*sizes))
        found = list(map(st.seen.get, sizes))
        for i in [i for i, f in enumerate(found) if f is None]:   # sizes not seen before: decoded once each
            found[i] = st.seen.get(sizes[i]) or st.seen.setdefault(sizes[i], facts(_kind(sizes[i][0], st), *sizes[i][1:]))
        dtypes, shapes, nbytes, numels, ops = zip(*found)
        if type(devices) is str:
            devices = [devices] * k
        st.storages.update(zip(keys, zip(dtypes, numels, devices)))
        st.tensors.extend(map(_new, repeat(TensorInfo), zip(names, dtypes, shapes, nbytes, devices, repeat(False))))
        st.count += sum(ops)
    st.put_bytes += _join_puts(cols, k, st.puts)
    if k == n:  # the window's end, less what follows the last record (less the next name's length, if read)
        return stop - len(parts[-1]) - (5 if heads[-1] is not None else 0), stop < len(data) and k < room
    at = start + len(cols[0][0])  # the records before a name that is not one: found again, one by one
    for name in cols[0][1:]:
        at = pattern.match(data, at).end() + len(name)
    return pattern.match(data, at).end() - (5 if heads[k - 1] is not None else 0), False


def _kind(get: bytes, st: State) -> tuple:
    kind = st.kinds.get(get)
    if kind is None:
        raise Fallback   # a fetch of anything but a storage type the records memoized
    return kind


def _devices(gets: list[bytes], st: State) -> "str | list[str]":
    """Each record's location, from its fetch: one lookup, and the location itself, when they are all one
    (the usual checkpoint); else the list."""
    if _uniform(gets, gets[0]):
        device = st.locations.get(gets[0])
        if device is not None:
            return device
    devices = list(map(st.locations.get, gets))
    if None in devices:
        raise Fallback   # a fetch of anything but a location the records memoized
    return devices


def _column(devices: "str | list[str]", k: int):
    return repeat(devices, k) if type(devices) is str else devices


def _uniform(column: list, first) -> bool:
    """Whether every item of `column` equals `first` (compared, not hashed: C-speed, no set built)."""
    return column.count(first) == len(column)


def _distinct(column: list):
    return (column[0],) if _uniform(column, column[0]) else set(column)


def _join_puts(cols: list, k: int, puts: list[bytes]) -> int:
    """The run's memo indices, in pickle's order (eight PUTs a record, fewer where a tuple is empty),
    appended to `puts` as one bytes; how many bytes."""
    order = [None] * (8 * k)
    for at, col in enumerate((1, 6, 9, 11, 13, 15, 16, 17)):
        order[at::8] = cols[col]
    try:
        packed = b"".join(order)
    except TypeError:    # an empty shape or stride: no PUT there
        packed = b"".join(filter(None, order))
    puts.append(packed)
    return len(packed)


def _texts(raw: list[bytes], encoding: str, errors: str) -> list[str]:
    """The strings of BINUNICODE arguments: one decode of them all joined where none holds a NUL."""
    joined = b"\0".join(raw)
    if joined.count(0) == len(raw) - 1:
        return str(joined, encoding, errors).split("\0")
    return list(map(str, raw, repeat(encoding), repeat(errors)))


def _check_constants(cols: list, st: State) -> None:
    """Each distinct fetch of the rebuild function and 'storage' (one item: GET MARK MARK GET), and of
    OrderedDict, is of what the records memoized as those."""
    for both in _distinct(cols[2]):
        cut = 2 if both[0] == 0x68 else 5
        if not (same(st.fetch.get(both[:cut]), REBUILD) and same(st.fetch.get(both[cut + 2:]), "storage")):
            raise Fallback
    for get in _distinct(cols[14]):
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
