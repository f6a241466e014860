"""The data.pkl of a torch.save state dict read in bulk: whole tensor records matched in C, one pattern each.

torch.save of `{name: tensor}` (a dict, or the OrderedDict of `module.state_dict()`) writes, with
protocol 2 and pickle's sequential memo, the same record for every tensor (pickletools.dis of a torch
2.13 file): the name (BINUNICODE), then `_rebuild_tensor_v2((('storage', torch.XStorage, key, device,
numel) as a persistent id, offset, shape, stride, False, OrderedDict()))`, each global, string and tuple
memoized (BINPUT/LONG_BINPUT) or fetched again (BINGET/LONG_BINGET). `read` reads, in batches of at most
1,000 (pickle's own batch: MARK, records, SETITEMS; a lone record: SETITEM), the first record, and any
that memoizes something new, alone (its name's length in Python, the rest with one compiled pattern),
and the records between them as runs (torchruns.py: one split per window, columns, no Python per
record); then it hands the rest of the pickle (STOP, or the
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
from rcompat.models.torchruns import (GET, INT, PUT, STEADY, TUPLE_BODY, ORDERED, REBUILD, Fallback, State, facts,
                                      run, same)

BATCH = 1000                  # pickle's _BATCHSIZE: items per MARK … SETITEMS
_MAX_RECORDS = MAX_OPCODES // 25  # a record is 25 opcodes or more (18, two empty tuples, 5 PUTs at least)
_KEY = b"|".join(bytes([n]) + b"\0\0\0" + rb"\d{%d}[qr]" % n for n in range(1, 10))   # str(int): torch's keys
_RECORD = re.compile(
    PUT                                                                      # 1  the name, memoized
    + rb"(?:ctorch\._utils\n_rebuild_tensor_v2\n" + PUT + rb"|" + GET + rb")"    # 2 3
    + rb"\(\("
    + rb"(?:X\x07\0\0\0storage" + PUT + rb"|" + GET + rb")"                     # 4 5
    + rb"(?:ctorch\n(\w{1,40}Storage)\n" + PUT + rb"|" + GET + rb")"            # 6 7 8
    + rb"(?:X(?=" + _KEY + rb")....(\d+)" + PUT + rb"|" + GET + rb")"          # 9 10 11
    + rb"(?:X([\x01-\x20]\0\0\0[\w:.\-]{1,32}?)" + PUT + rb"|" + GET + rb")"     # 12 13 14 (length: _constants)
    + rb"(" + INT + rb")t" + PUT + rb"Q"                                       # 15 numel, 16
    + INT
    + rb"(?:\)|" + TUPLE_BODY + PUT + rb")"                                     # 17 shape, 18
    + rb"(?:\)|" + TUPLE_BODY + PUT + rb")"                                     # 19 stride, 20
    + rb"[\x88\x89]"
    + rb"(?:ccollections\nOrderedDict\n" + PUT + rb"|" + GET + rb")"            # 21 22
    + rb"\)R" + PUT + rb"t" + PUT + rb"R" + PUT,                               # 23 24 25
    re.DOTALL)
_PUTS = itemgetter(0, 1, 3, 6, 9, 12, 15, 17, 19, 20, 22, 23, 24)       # the groups above, from 0
_CONSTANTS = itemgetter(1, 2, 3, 4, 20, 21, 11, 12, 13)                  # rebuild, 'storage', OrderedDict, location
_U4 = struct.Struct("<I").unpack_from
_PLAIN_TOP = b"\x80\x02}q\x00"
_ORDERED_TOP = b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01"
_Q_PUTS = b"".join(b"q" + bytes([i]) for i in range(256))  # pickle's BINPUT 0..255, as it writes them
_BYTES = bytes(range(256))
_WINDOW = 1024   # bytes a run first looks at; x8 each time a run reaches its window's end (so a pickle of
                 # records that are each followed by one that is not costs at most 1 KiB of scanning each)


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
        root, pos, count = Call(ORDERED, ()), len(_ORDERED_TOP), 4
        puts, fetch = [b"q\x00", b"q\x01"], {b"h\x00": ORDERED}
    else:
        return None
    try:
        return _read(data, what, root, pos, State(fetch, puts, count, storage_dtype))
    except (Fallback, struct.error, UnicodeDecodeError, ValueError):
        return None


def _read(data, what: str, root, pos: int, st: State) -> TorchRecords | None:
    """The batches: in each, runs of steady records (torchruns.run) and, between them, a record alone."""
    end, window = len(data), _WINDOW
    while pos < end:
        op = data[pos]
        if op == 0x28:        # MARK: a batch of records up to SETITEMS
            pos, closer, limit = pos + 1, 0x75, BATCH
            st.count += 2     # MARK, SETITEMS
        elif op == 0x58:      # a lone record, then SETITEM
            closer, limit = 0x73, 1
            st.count += 1
        else:
            break
        if len(st.tensors) > _MAX_RECORDS or st.put_bytes // 2 > MAX_MEMO:
            raise Fallback    # near the walk's opcode or memo limit: it decides, before the records cost more
        n = 0
        while pos < end and data[pos] == 0x58 and n < limit:
            if st.tensors:    # the constants are memoized: try a run (its first record matched first, cheaply)
                name_end = pos + 5 + _U4(data, pos + 1)[0]
                if STEADY.match(data, name_end) is not None:
                    done, was = len(st.tensors), pos
                    pos, filled = run(data, pos, limit - n, window, st)
                    got = len(st.tensors) - done
                    n += got
                    # a run that filled its window: the next one looks 8x as far, but not much past what the
                    # batch's remaining records take at this run's bytes per record (split scans it all)
                    window = min(window * 8, (limit - n) * (pos - was) // got * 5 // 4 + _WINDOW) if filled \
                        else _WINDOW
                    if got:
                        continue
            pos = _record(data, pos, st)
            n += 1
        if pos >= end or data[pos] != closer:
            raise Fallback
        pos += 1
    return _rest(data, what, root, pos, st) if st.tensors else None


def _record(data, pos: int, st: State) -> int:
    """One record read alone (the first, or one that memoizes a new storage type or location): where it ends."""
    start = pos + 5 + _U4(data, pos + 1)[0]
    name = str(data[pos + 5:start], "utf-8", "surrogatepass")
    m = _RECORD.match(data, start)
    if m is None:
        raise Fallback
    g = m.groups()
    record_puts = _PUTS(g)
    packed = b"".join(filter(None, record_puts))
    st.puts.append(packed)
    st.put_bytes += len(packed)
    constants = _CONSTANTS(g)
    device = _constants(constants, st)
    if constants[0] is not None:   # in the order the pickle names them: rebuild, storage type, OrderedDict
        st.names.setdefault(REBUILD.dotted, None)
    kind = st.kinds.get(g[7]) if g[7] is not None else _kind(g, st)
    if kind is None:
        raise Fallback
    if constants[4] is not None:
        st.names.setdefault(ORDERED.dotted, None)
    sizes = (g[7], g[14], g[16], g[18])
    tensor = st.seen.get(sizes) if g[7] is not None else None
    if tensor is None:
        tensor = facts(kind, g[14], g[16], g[18])
        if g[7] is not None:     # a fetched storage type: the same bytes mean the same tensor facts
            st.seen[sizes] = tensor
    key = g[8]
    if key is not None:
        st.flush_keys()
        key = st.keys[g[9]] = key.decode("ascii")
    else:
        key = st.key(_put_of(g[10]))
        if key is None:
            raise Fallback
    st.storages[key] = (tensor[0], tensor[3], device)
    st.tensors.append(TensorInfo(name, tensor[0], tensor[1], tensor[2], device, False))
    st.count += tensor[4]
    return m.end()


def _rest(data, what: str, root, pos: int, st: State) -> TorchRecords:
    """The memo indices checked against pickle's sequence, then the rest of the pickle walked from the
    state the records leave."""
    packed = b"".join(st.puts)
    if not _in_sequence(packed):
        raise Fallback    # a memo index out of pickle's sequence: a fetch might not mean what the records say
    memo_size = len(packed) // 2 if len(packed) <= len(_Q_PUTS) else 256 + (len(packed) - len(_Q_PUTS)) // 5
    count = st.count + memo_size + 18 * len(st.tensors)   # every PUT, and the 18 other opcodes of a record
    if count > MAX_OPCODES - 1 or memo_size > MAX_MEMO:
        raise Fallback    # the walk's limits decide
    memo = _Withheld((int.from_bytes(get[1:], "little"), value) for get, value in st.fetch.items()
                     if isinstance(value, Global))
    memo.update({1: root} if isinstance(root, Call) else {0: root})
    memo.size = memo_size
    try:
        walked = walk(Window(data, pos), what, Resume([root], memo, st.names, count))
    except ModelFileError:
        raise Fallback from None
    if walked.root is not root or (root.items if isinstance(root, Call) else root) or walked.persistent_ids:
        raise Fallback
    return TorchRecords(walked, st.tensors, st.storages)


class _Withheld(dict):
    """The memo handed to the rest of the walk: the globals and the root, by index; every other index
    the records used is withheld, so a fetch of it, or a PUT over it, hands the whole pickle to the walk.
    len() is the whole memo's, as the machine's limit and MEMOIZE count it."""
    size = 0      # indices 0 .. size-1: the records' (pickle's sequence, checked)
    added = 0     # indices the rest of the walk put beyond them

    def __missing__(self, index):
        if isinstance(index, int) and 0 <= index < self.size:
            raise Fallback
        raise KeyError(index)

    def __setitem__(self, index, value):
        inside = isinstance(index, int) and 0 <= index < self.size
        if inside and not dict.__contains__(self, index):
            raise Fallback
        if not inside and not dict.__contains__(self, index):
            self.added += 1
        dict.__setitem__(self, index, value)

    def __len__(self) -> int:
        return self.size + self.added


def _constants(constants: tuple, st: State) -> str:
    """Check (or memoize) a record's rebuild function, 'storage', location and OrderedDict; the location."""
    rb_put, rb_get, st_put, st_get, od_put, od_get, dev, dev_put, dev_get = constants
    fetch = st.fetch
    for put, get, value in ((rb_put, rb_get, REBUILD), (st_put, st_get, "storage"), (od_put, od_get, ORDERED)):
        if get is None:
            fetch[_get_of(put)] = value
        elif not same(fetch.get(get), value):
            raise Fallback
    if dev_get is None:
        if dev[0] != len(dev) - 4:
            raise Fallback
        device = dev[4:].decode("ascii")
        fetch[_get_of(dev_put)] = ("location", device)
        st.locations[_get_of(dev_put)] = device
        return device
    fetched = fetch.get(dev_get)
    if not (isinstance(fetched, tuple) and fetched[0] == "location"):
        raise Fallback
    return fetched[1]


def _kind(g: tuple, st: State) -> tuple[str, int | None]:
    """A storage type put by this record (GLOBAL torch.XStorage): its dtype and item size, for the fetches."""
    if g[5] is None:      # a fetch of something the records did not put as a storage type
        raise Fallback
    kind = Global("torch", g[5].decode("ascii"))
    st.names.setdefault(kind.dotted, None)
    dtype = st.storage_dtype(kind)
    st.kinds[_get_of(g[6])] = found = (dtype, ITEMSIZE.get(dtype))
    return found


def _put_of(get: bytes) -> bytes:
    return (b"q" if get[0] == 0x68 else b"r") + get[1:]


def _get_of(put: bytes) -> bytes:
    """The fetch (BINGET/LONG_BINGET) that reads back what `put` (BINPUT/LONG_BINPUT) stored."""
    return (b"h" if put[0] == 0x71 else b"j") + put[1:]


def _in_sequence(packed: bytes) -> bool:
    """Whether `packed` (whole PUT opcodes) is what pickle writes for PUTs 0, 1, 2, …: a prefix of the
    sequence, made once a process (~20 us for a 256-tensor file's) and kept up to _KEPT bytes; a longer
    one is made for the call alone. Its length must end where one of the sequence's opcodes does, so a
    prefix means exactly what comparing with `_sequential_puts(len(packed))` meant."""
    length = len(packed)
    if (length & 1) if length <= len(_Q_PUTS) else (length - len(_Q_PUTS)) % 5:
        return False
    sequence = _SEQUENCE[0]
    if len(sequence) < len(packed):
        sequence = _sequential_puts(max(len(packed), min(2 * len(sequence), _KEPT)))
        if len(sequence) <= _KEPT:
            _SEQUENCE[0] = sequence
    return sequence.startswith(packed)


_KEPT = 1 << 20             # ~200,000 memo indices (~25,000 tensors); beyond, a file pays for its own
_SEQUENCE = [b""]           # the longest sequence made so far (a one-item list: replaced whole, never mutated)


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
