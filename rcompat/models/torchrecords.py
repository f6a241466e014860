"""The data.pkl of a torch.save state dict read in bulk: whole tensor records matched in C, one pattern each.

torch.save of `{name: tensor}` (a dict, or the OrderedDict of `module.state_dict()`) writes, with
protocol 2 and pickle's sequential memo, the same record for every tensor (pickletools.dis of a torch
2.13 file): the name (BINUNICODE), then `_rebuild_tensor_v2((('storage', torch.XStorage, key, device,
numel) as a persistent id, offset, shape, stride, False, OrderedDict()))`, each global, string and tuple
memoized (BINPUT/LONG_BINPUT) or fetched again (BINGET/LONG_BINGET). `read` reads each name's length in
Python and the rest of its record with one compiled pattern, in batches of at most 1,000 (pickle's own
batch: MARK, records, SETITEMS; a lone record: SETITEM), then hands the rest of the pickle (STOP, or the
`_metadata` that state_dict() adds and BUILD) to the symbolic machine (pickles.walk) resumed in the state
the records leave: the root, the memo of the globals, the opcode count.

It returns exactly what the walk from the start gives (tests/models/test_torchrecords.py holds every real
file and synthesized variants to it, field by field) or None, and then read_zip walks the whole pickle
as before: any byte the pattern does not expect; a memo index that is not the next one (every PUT is
checked against pickle's sequence, so nothing is overwritten and a fetch means what it meant when put); a
fetch of anything but a global or string the records put; a negative size; opcode or memo counts near the
machine's limits; anything the rest of the pickle does with the records' memo entries or the root's
items. Measured on the benchmark's data.pkl (256 tensors, 7,691 opcodes): see docs/models.md, Speed.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Callable

from rcompat.models.errors import ModelFileError
from rcompat.models.facts import ITEMSIZE, TensorInfo
from rcompat.models.pickles import MAX_MEMO, MAX_OPCODES, Call, Dict, Global, PickleFacts, Resume, Window, walk

BATCH = 1000                  # pickle's _BATCHSIZE: items per MARK … SETITEMS
_MAX_RECORDS = MAX_OPCODES // 25  # a record is 25 opcodes or more (18, two empty tuples, 5 PUTs at least)
_INT = rb"(?:K.|M..|J....|\x8a(?:\x05.{5}|\x06.{6}|\x07.{7}|\x08.{8}))"  # LONG1 as pickle writes it: 5..8 bytes
_PUT = rb"(q.|r....)"
_GET = rb"(h.|j....)"
_TUPLE_BODY = rb"(" + _INT + rb"{1,3}[\x85-\x87]|\(" + _INT + rb"{4,64}t)"   # TUPLE1/2/3: _shape checks the count
_KEY = b"|".join(bytes([n]) + b"\0\0\0" + rb"\d{%d}[qr]" % n for n in range(1, 10))   # str(int): torch's keys
_RECORD = re.compile(
    _PUT                                                                      # 1  the name, memoized
    + rb"(?:ctorch\._utils\n_rebuild_tensor_v2\n" + _PUT + rb"|" + _GET + rb")"    # 2 3
    + rb"\(\("
    + rb"(?:X\x07\0\0\0storage" + _PUT + rb"|" + _GET + rb")"                     # 4 5
    + rb"(?:ctorch\n(\w{1,40}Storage)\n" + _PUT + rb"|" + _GET + rb")"            # 6 7 8
    + rb"(?:X(?=" + _KEY + rb")....(\d+)" + _PUT + rb"|" + _GET + rb")"          # 9 10 11
    + rb"(?:X([\x01-\x20]\0\0\0[\w:.\-]{1,32}?)" + _PUT + rb"|" + _GET + rb")"     # 12 13 14 (length: _constants)
    + rb"(" + _INT + rb")t" + _PUT + rb"Q"                                       # 15 numel, 16
    + _INT
    + rb"(?:\)|" + _TUPLE_BODY + _PUT + rb")"                                     # 17 shape, 18
    + rb"(?:\)|" + _TUPLE_BODY + _PUT + rb")"                                     # 19 stride, 20
    + rb"[\x88\x89]"
    + rb"(?:ccollections\nOrderedDict\n" + _PUT + rb"|" + _GET + rb")"            # 21 22
    + rb"\)R" + _PUT + rb"t" + _PUT + rb"R" + _PUT,                               # 23 24 25
    re.DOTALL)
_PUTS = itemgetter(0, 1, 3, 6, 9, 12, 15, 17, 19, 20, 22, 23, 24)       # the groups above, from 0
_CONSTANTS = itemgetter(1, 2, 3, 4, 20, 21, 11, 12, 13)                  # rebuild, 'storage', device, OrderedDict
_TENSOR = itemgetter(7, 14, 16, 18)                                      # storage type fetch, size, shape, stride
_INT_ONE = re.compile(_INT, re.DOTALL)
_U2 = struct.Struct("<H").unpack_from
_U4 = struct.Struct("<I").unpack_from
_I4 = struct.Struct("<i").unpack_from
_PLAIN_TOP = b"\x80\x02}q\x00"
_ORDERED_TOP = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01"
_REBUILD = Global("torch._utils", "_rebuild_tensor_v2")
_ORDERED = Global("collections", "OrderedDict")
_Q_PUTS = b"".join(b"q" + bytes([i]) for i in range(256))  # pickle's BINPUT 0..255, as it writes them
_BYTES = bytes(range(256))


class _Fallback(Exception):
    """The rest of the pickle used what the records hold back: walk the whole pickle instead."""


@dataclass
class TorchRecords:
    facts: PickleFacts             # root: the dict or OrderedDict call without the records' items
    tensors: list[TensorInfo]      # the records' tensors, in order (they follow any the rest of the pickle adds)
    storages: dict[str, tuple[str, int, str]]  # key -> (dtype, numel, location), as torchfiles._storages


def read(data, what: str, storage_dtype: Callable[[Any], str]) -> TorchRecords | None:
    """The state dict in `data` (a whole data.pkl) read in bulk, or None where it is not one."""
    if data[:5] == _PLAIN_TOP:
        root, pos, count, puts, fetch = Dict(), 5, 2, [b"q\x00"], {}        # PROTO EMPTY_DICT, and a PUT
    elif data[:len(_ORDERED_TOP)] == _ORDERED_TOP:                          # PROTO GLOBAL EMPTY_TUPLE REDUCE
        root, pos, count = Call(_ORDERED, ()), len(_ORDERED_TOP), 4
        puts, fetch = [b"q\x00", b"q\x01"], {b"h\x00": _ORDERED}
    else:
        return None
    try:
        return _read(data, what, storage_dtype, root, pos, count, puts, fetch)
    except (_Fallback, struct.error, UnicodeDecodeError, ValueError):
        return None


def _read(data, what, storage_dtype, root, pos, count, puts, fetch) -> TorchRecords | None:  # noqa: C901
    """The records' loop: per tensor, the name's length, one match, a tuple of groups, a few lookups."""
    end = len(data)
    names: dict[str, None] = {g.dotted: None for g in fetch.values()}
    keys: dict[bytes, str] = {}       # storage keys by the PUT that memoized them
    kinds: dict[bytes | None, tuple] = {}  # storage types by the fetch that reads them: (dtype, itemsize)
    tensors: list[TensorInfo] = []
    storages: dict[str, tuple[str, int, str]] = {}
    # (storage type fetch, size, shape and stride bytes) -> (dtype, shape, nbytes, storage, opcodes): most
    # records repeat one of a few, so one lookup stands for decoding them (cleared when the location changes)
    seen: dict[tuple, tuple] = {}
    steady = None                     # the constants' fetches once checked: most records repeat them
    device = ""
    match, extend, add = _RECORD.match, puts.extend, tensors.append
    while pos < end:
        op = data[pos]
        if op == 0x28:        # MARK: a batch of records up to SETITEMS
            pos, closer, limit = pos + 1, 0x75, BATCH
            count += 2        # MARK, SETITEMS
        elif op == 0x58:      # a lone record, then SETITEM
            closer, limit = 0x73, 1
            count += 1
        else:
            break
        if len(tensors) > _MAX_RECORDS or len(puts) > MAX_MEMO:
            raise _Fallback   # near the walk's opcode or memo limit: it decides, before the records cost more
        n = 0
        while pos < end and data[pos] == 0x58 and n < limit:
            start = pos + 5 + _U4(data, pos + 1)[0]
            name = str(data[pos + 5:start], "utf-8", "surrogatepass")
            m = match(data, start)
            if m is None:
                raise _Fallback
            g = m.groups()
            extend(_PUTS(g))
            constants = _CONSTANTS(g)
            if constants != steady:  # in the order the pickle names them: rebuild, storage type, OrderedDict
                was, device = device, _constants(constants, fetch, device)
                if device != was:
                    seen.clear()
                if constants[0] is not None:
                    names.setdefault(_REBUILD.dotted, None)
                if g[7] not in kinds:
                    _kind(g, kinds, names, storage_dtype)
                if constants[4] is not None:
                    names.setdefault(_ORDERED.dotted, None)
                if None not in (constants[1], constants[3], constants[5], constants[8]):
                    steady = constants   # all fetched, and checked: a record repeating them needs no look
            tensor = seen.get(_TENSOR(g))
            if tensor is None:
                tensor = _tensor(g, kinds, names, storage_dtype, device)
                if g[7] is not None:     # a fetched storage type: the same bytes mean the same tensor facts
                    seen[_TENSOR(g)] = tensor
            key = g[8]
            if key is not None:
                key = keys[g[9]] = key.decode("ascii")
            else:
                key = keys.get(_put_of(g[10]))
                if key is None:
                    raise _Fallback
            storages[key] = tensor[3]
            add(TensorInfo(name, tensor[0], tensor[1], tensor[2], device, False))
            count += tensor[4]
            pos = m.end()
            n += 1
        if pos >= end or data[pos] != closer:
            raise _Fallback
        pos += 1
    if not tensors:
        return None
    packed = b"".join(filter(None, puts))
    if packed != _sequential_puts(len(packed)):
        raise _Fallback   # a memo index out of pickle's sequence: a fetch might not mean what the records say
    memo_size = len(packed) // 2 if len(packed) <= len(_Q_PUTS) else 256 + (len(packed) - len(_Q_PUTS)) // 5
    count += memo_size + 18 * len(tensors)   # every PUT, and the 18 other opcodes of a record but its tuples'
    if count > MAX_OPCODES - 1 or memo_size > MAX_MEMO:
        raise _Fallback   # the walk's limits decide
    memo = _Withheld((int.from_bytes(get[1:], "little"), value) for get, value in fetch.items()
                     if isinstance(value, Global))
    memo.update({1: root} if isinstance(root, Call) else {0: root})
    memo.size = memo_size
    try:
        facts = walk(Window(data, pos), what, Resume([root], memo, names, count))
    except ModelFileError:
        raise _Fallback from None
    if facts.root is not root or (root.items if isinstance(root, Call) else root) or facts.persistent_ids:
        raise _Fallback
    return TorchRecords(facts, tensors, storages)


class _Withheld(dict):
    """The memo handed to the rest of the walk: the globals and the root, by index; every other index
    the records used is withheld, so a fetch of it, or a PUT over it, hands the whole pickle to the walk.
    len() is the whole memo's, as the machine's limit and MEMOIZE count it."""
    size = 0      # indices 0 .. size-1: the records' (pickle's sequence, checked)
    added = 0     # indices the rest of the walk put beyond them

    def __missing__(self, index):
        if isinstance(index, int) and 0 <= index < self.size:
            raise _Fallback
        raise KeyError(index)

    def __setitem__(self, index, value):
        inside = isinstance(index, int) and 0 <= index < self.size
        if inside and not dict.__contains__(self, index):
            raise _Fallback
        if not inside and not dict.__contains__(self, index):
            self.added += 1
        dict.__setitem__(self, index, value)

    def __len__(self) -> int:
        return self.size + self.added


def _constants(constants: tuple, fetch: dict, device: str) -> str:
    """Check (or memoize) a record's rebuild function, 'storage', location and OrderedDict; the location."""
    rb_put, rb_get, st_put, st_get, od_put, od_get, dev, dev_put, dev_get = constants
    for put, get, value in ((rb_put, rb_get, _REBUILD), (st_put, st_get, "storage"), (od_put, od_get, _ORDERED)):
        if get is None:
            fetch[_get_of(put)] = value
        elif not _same(fetch.get(get), value):
            raise _Fallback
    if dev_get is None:
        if dev[0] != len(dev) - 4:
            raise _Fallback
        device = dev[4:].decode("ascii")
        fetch[_get_of(dev_put)] = ("location", device)
        return device
    fetched = fetch.get(dev_get)
    if not (isinstance(fetched, tuple) and fetched[0] == "location"):
        raise _Fallback
    return fetched[1]


def _same(fetched: Any, value: Any) -> bool:
    return fetched is value if isinstance(value, Global) else type(fetched) is str and fetched == value


def _tensor(g: tuple, kinds: dict, names: dict, storage_dtype: Callable[[Any], str], device: str) -> tuple:
    """(dtype, shape, nbytes, (dtype, size, location), opcodes but PUTs) of a record, from its bytes."""
    kind = kinds.get(g[7]) if g[7] is not None else _kind(g, kinds, names, storage_dtype)
    if kind is None:
        raise _Fallback
    numel = _int(g[14])
    if numel < 0:
        raise _Fallback   # torchfiles._storages refuses it: the walk says so
    shape, product, ops = _shape(g[16], g[18])
    return kind[0], shape, None if kind[1] is None else product * kind[1], (kind[0], numel, device), ops


def _kind(g: tuple, kinds: dict, names: dict, storage_dtype: Callable[[Any], str]) -> tuple[str, int | None]:
    """A storage type put by this record (GLOBAL torch.XStorage): its dtype and item size, for the fetches."""
    if g[5] is None:      # a fetch of something the records did not put as a storage type
        raise _Fallback
    kind = Global("torch", g[5].decode("ascii"))
    names.setdefault(kind.dotted, None)
    dtype = storage_dtype(kind)
    kinds[_get_of(g[6])] = found = (dtype, ITEMSIZE.get(dtype))
    return found


def _put_of(get: bytes) -> bytes:
    return (b"q" if get[0] == 0x68 else b"r") + get[1:]


def _get_of(put: bytes) -> bytes:
    """The fetch (BINGET/LONG_BINGET) that reads back what `put` (BINPUT/LONG_BINPUT) stored."""
    return (b"h" if put[0] == 0x71 else b"j") + put[1:]


def _sequential_puts(length: int) -> bytes:
    """What pickle writes for PUTs 0, 1, 2, … filling `length` bytes: BINPUT below 256, then LONG_BINPUT
    (little-endian). Built a byte column at a time (each repeats in runs of 256**k), so in C but for
    a loop of length/1280 turns."""
    if length <= len(_Q_PUTS):
        return _Q_PUTS[:length]
    longs = (length - len(_Q_PUTS)) // 5
    first, stop = 256, 256 + longs
    out = bytearray(5 * longs)
    out[0::5] = b"r" * longs
    out[1::5] = (_BYTES * (longs // 256 + 2))[first % 256:first % 256 + longs]
    for column, shift in ((2, 8), (3, 16), (4, 24)):
        run = bytearray()
        for value in range(first >> shift, ((stop - 1) >> shift) + 1):
            run += bytes([value & 0xFF]) * (min(stop, (value + 1) << shift) - max(first, value << shift))
        out[column::5] = run
    return _Q_PUTS + bytes(out)


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
        raise _Fallback
    if stride_raw and stride_raw[0] != 0x28 and len(_INT_ONE.findall(stride_raw)) != stride_raw[-1] - 0x84:
        raise _Fallback
    numel = 1
    for n in shape:
        numel *= n
    return shape, numel, _tuple_ops(shape_raw) + _tuple_ops(stride_raw)


def _tuple_ops(raw: bytes | None) -> int:
    if not raw:
        return 1                                         # EMPTY_TUPLE
    ints = len(_INT_ONE.findall(raw[1:] if raw[0] == 0x28 else raw))
    return ints + (2 if raw[0] == 0x28 else 1)           # MARK … TUPLE, or TUPLE1/2/3
