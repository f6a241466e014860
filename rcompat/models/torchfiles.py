"""torch.save files (zip and legacy) and TorchScript archives, read without torch and without unpickling.

Zip (torch ≥ 1.6): `<top>/data.pkl` is walked by the symbolic machine (pickles.py); each tensor's
persistent id is `('storage', <torch.XStorage>, key, location, numel)` and its `_rebuild_tensor_v2` call
gives the shape; `<top>/data/<key>` must hold the storage's bytes (a shorter member is a truncated file);
`<top>/version` is the file format version. A TorchScript archive (`torch.jit.save`) also has `code/`
(the serialized TorchScript, recompiled at load: its operator calls are read here by namespace) and
`constants.pkl`. Legacy (`_use_new_zipfile_serialization=False`): five pickles in a row — the magic
number, the protocol version (1001), sys_info, the object, the storage keys — then the raw storages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter, le, mul
from typing import Any

from rcompat.models.archive import ModelZip
from rcompat.models.errors import ModelFileError
from rcompat.models.facts import ITEMSIZE, TORCH_LEGACY, TORCH_ZIP, TORCHSCRIPT, ModelInfo, TensorInfo, nbytes
from rcompat.models import torchrecords
from rcompat.models.pickles import MAX_VISIT, Call, Dict, Global, Persistent, PickleFacts, Window, walk

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
MAX_PICKLE_BYTES = 512 << 20
MAX_CODE_FILES = 20_000
_REBUILD = {"_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_tensor_v3", "_rebuild_qtensor",
            "_rebuild_device_tensor_from_cpu_tensor", "_rebuild_meta_tensor_no_storage"}
_REBUILD_DOTTED = {f"torch._utils.{name}" for name in _REBUILD}
_PARAMETER = {"torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
              "torch.nn.parameter.Parameter"}
_STORAGE_DTYPE = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
                  "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
                  "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
                  "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32", "Untyped": "uint8"}
_DTYPE_OF_STORAGE = {f"{kind}Storage": dtype for kind, dtype in _STORAGE_DTYPE.items()}
# TorchScript's serialized code calls operators as torch.<aten op>(…) and ops.<namespace>.<op>(…).
_OPS_CALL = re.compile(r"(?<![\w.])(?:torch\.)?ops\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*\(")
_ATEN_CALL = re.compile(r"(?<![\w.])torch\.([A-Za-z_]\w*)\s*\(")
_DATA_PKL = re.compile(r"\0([^/\0]*/[^/\0]*)data\.pkl(?=\0)")  # in the NUL-joined member names
_NOT_OPERATORS = {"device", "dtype", "layout", "Size", "Tensor", "Generator", "memory_format", "qscheme"}


def read_zip(mz: ModelZip) -> ModelInfo:
    names, listed = mz.index, mz.listed  # a dict for membership; one text to search in C
    top = _top_folder(mz, listed)
    scripted = f"{top}constants.pkl" in names or f"\0{top}code/" in listed
    info = ModelInfo(mz.path, TORCHSCRIPT if scripted else TORCH_ZIP, mz.size)
    for member in (f"{top}version", f"{top}.data/version"):
        if member in names:
            info.format_version = _int_text(mz.read(member, 64), f"{mz.path}: {member}")
            break
    read = _read_data_pkl(mz, top, scripted)
    facts, info.tensors, storages = read.facts, read.tensors, read.storages
    info.globals = facts.globals
    _check_storages(mz, f"{top}data/", storages)
    info.devices = sorted(set(map(itemgetter(2), storages.values())))
    info.details = {"top_level": read.top_level, "storages": len(storages), "archive_folder": top.rstrip("/"),
                    "pickle_opcodes": facts.opcodes}
    if scripted:
        info.operators = _operators(mz, top)
    return info


def _check_storages(mz: ModelZip, folder: str, storages: dict[str, tuple[str, int, str]]) -> None:
    """Every storage has its member `folder + key`, holding at least its bytes: all at once in C (member
    indices, sizes, needs; one need when every storage is alike, as in a stack of equal layers), then,
    only when one fails, the loop that names the first in order."""
    if storages:
        values = list(storages.values())
        stored = _listed_in_order(mz, folder, storages) \
            or map(mz.file_sizes.__getitem__, map(mz.index.get, map(folder.__add__, storages)))
        try:     # a storage without its member: file_sizes[None], a TypeError
            if values.count(values[0]) == len(values):   # compared, not hashed: equal tuples, one need
                if min(stored) >= values[0][1] * ITEMSIZE.get(values[0][0], 0):
                    return
            else:
                dtypes, numels, _ = zip(*values)
                if all(map(le, map(mul, numels, map(ITEMSIZE.get, dtypes, repeat(0))), stored)):
                    return
        except TypeError:
            pass
    for key, (dtype, numel, _) in storages.items():
        member = folder + key
        if member not in mz.index:
            raise ModelFileError(f"{mz.path}: storage {key!r} has no member {member!r} (truncated or edited file)")
        stored = mz.file_sizes[mz.index[member]]
        if numel * ITEMSIZE.get(dtype, 0) > stored:  # what nbytes(dtype, (numel,)) is, unknown dtypes 0
            raise ModelFileError(f"{mz.path}: member {member!r} holds {stored} bytes, its "
                                 f"storage needs {nbytes(dtype, (numel,))} (truncated member)")


@dataclass
class DataPickle:
    """What read_zip takes from data.pkl (and TorchScript's constants.pkl)."""
    facts: PickleFacts
    tensors: list[TensorInfo]
    storages: dict[str, tuple[str, int, str]]   # key -> (dtype, numel, location)
    top_level: str
    bulk: bool                                  # read by torchrecords.py, not walked opcode by opcode


def read_pickle(data, path: str, member: str = "data.pkl", bulk: bool = True) -> DataPickle:
    """A data.pkl's tensors and storages: a state dict's records read in bulk (torchrecords.py) where `bulk`
    and they all match, else the symbolic machine's walk, the reference the bulk read equals."""
    what = f"{path}: {member}"
    records = torchrecords.read(data, what, storage_dtype) if bulk else None
    if records is not None:  # the tensors the rest of the pickle holds (state_dict's _metadata: none), then theirs
        root = records.facts.root
        return DataPickle(records.facts, _tensors(root, len(records.tensors)) + records.tensors, records.storages,
                          _type_name(root), True)
    facts = walk(Window(data), what)
    return DataPickle(facts, _tensors(facts.root), _storages(facts.persistent_ids, path), _type_name(facts.root), False)


def _read_data_pkl(mz: ModelZip, top: str, scripted: bool) -> DataPickle:
    what = f"{mz.path}: {top}data.pkl"
    if not scripted:
        return read_pickle(mz.read(f"{top}data.pkl", MAX_PICKLE_BYTES), mz.path, f"{top}data.pkl")
    facts = walk(Window(mz.read(f"{top}data.pkl", MAX_PICKLE_BYTES)), what)
    if f"{top}constants.pkl" in mz:
        constants = walk(Window(mz.read(f"{top}constants.pkl", MAX_PICKLE_BYTES)), f"{mz.path}: constants.pkl")
        facts.globals += [g for g in constants.globals if g not in facts.globals]
        facts.persistent_ids.extend(constants.persistent_ids)
    return DataPickle(facts, _tensors(facts.root), _storages(facts.persistent_ids, mz.path), _type_name(facts.root),
                      False)


def read_legacy(data, path: str) -> ModelInfo:
    """The legacy format from `data` (bytes or a memory map of the whole file)."""
    window = Window(data, 0, len(data))
    magic = walk(window, f"{path}: legacy magic number").root
    if magic != LEGACY_MAGIC:
        raise ModelFileError(f"{path}: a pickle, but not one torch.save wrote (no legacy magic number); "
                             "rcompat reads torch.save files, never arbitrary pickles")
    protocol = walk(window, f"{path}: legacy protocol version").root
    sys_info = walk(window, f"{path}: legacy sys_info").root
    end = min(len(data), window.pos + MAX_PICKLE_BYTES)
    facts = walk(Window(data, window.pos, end), f"{path}: pickled object")
    key_list = walk(Window(data, facts.end, len(data)), f"{path}: storage keys")
    keys = key_list.root
    info = ModelInfo(path, TORCH_LEGACY, len(data), format_version=protocol if isinstance(protocol, int) else None)
    info.globals = facts.globals
    info.tensors = _tensors(facts.root)
    storages = _storages(facts.persistent_ids, path)
    if isinstance(keys, list) and any(str(k) not in storages for k in keys):
        raise ModelFileError(f"{path}: the storage key list names storages the object does not use (corrupt)")
    info.devices = sorted({location for _, _, location in storages.values()})
    need = sum(8 + (nbytes(d, (n,)) or 0) for d, n, _ in storages.values())
    if len(data) - key_list.end < need:  # each storage: its numel (8 bytes), then its bytes
        raise ModelFileError(f"{path}: the file ends before its {len(storages)} storages do (truncated)")
    plain = {k: v for k, v in sys_info if isinstance(k, str) and isinstance(v, (str, int, bool))} \
        if isinstance(sys_info, Dict) else {}
    info.details = {"top_level": _type_name(facts.root), "storages": len(storages), "sys_info": plain,
                    "pickle_opcodes": facts.opcodes}
    return info


def _listed_in_order(mz: ModelZip, folder: str, storages: dict) -> "list[int] | None":
    """The sizes of the storages' members where the directory lists them one after another in the
    storages' order, as torch.save writes them: one text search and a slice, no member name built nor
    looked up (~5 us against ~50 us for 256 storages); None otherwise. With every name listed once and no
    NUL in a name (ModelZip), the joined names found between NULs are exactly those consecutive entries."""
    run = "\0" + folder + ("\0" + folder).join(storages) + "\0"
    if not mz.unique_names or run.count("\0") != len(storages) + 1 or run not in mz.listed:
        return None
    first = mz.index[folder + next(iter(storages))]
    return mz.file_sizes[first:first + len(storages)]


def _top_folder(mz: ModelZip, listed: str) -> str:
    """The first member named <top>data.pkl with one slash in all: where torch.save put the archive."""
    found = _DATA_PKL.search(listed)
    if found is None:
        raise ModelFileError(f"{mz.path}: a zip without <folder>/data.pkl; not a torch.save or torch.jit.save file")
    return found.group(1)


def _int_text(raw: bytes, what: str) -> int:
    try:
        return int(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ModelFileError(f"{what} is not a version number ({raw[:20]!r})") from None


def _storages(pids: list[Any], path: str) -> dict[str, tuple[str, int, str]]:
    """key -> (dtype, numel, location) of every ('storage', type, key, location, numel[, view]) id."""
    out: dict[str, tuple[str, int, str]] = {}
    for pid in pids:
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise ModelFileError(f"{path}: a persistent id that is not a torch storage ({str(pid)[:60]}); "
                                 "not a torch.save file")
        _, kind, key, location, numel = pid[:5]
        if not (isinstance(numel, int) and numel >= 0 and isinstance(location, str)):
            raise ModelFileError(f"{path}: storage {key!r} has a malformed size or location")
        out[str(key)] = (storage_dtype(kind), numel, location)
    return out


def storage_dtype(kind: Any) -> str:
    if isinstance(kind, Global):
        return _DTYPE_OF_STORAGE.get(kind.name, kind.name)  # FloatStorage, or torch.float32 in newer ids
    return str(kind)


def _tensors(root: Any, visited: int = 0) -> list[TensorInfo]:
    """Tensors reachable from `root`, named by their path of dict keys / attributes; `visited` values were
    already traversed elsewhere (the bulk-read records), counted against MAX_VISIT."""
    found: list[TensorInfo] = []
    seen: set[int] = set()
    todo: list[tuple[str, Any, bool]] = [("", root, False)]
    while todo:
        name, value, param = todo.pop()
        if id(value) in seen and not isinstance(value, (int, str, float)):
            continue
        seen.add(id(value))
        if len(seen) + visited > MAX_VISIT:  # a memo-built graph of hostile size: bounded work, then refused
            raise ModelFileError(f"pickle holds over {MAX_VISIT:,} values; refused as hostile")
        if isinstance(value, Dict):
            todo.extend((_join(name, k), v, False) for k, v in reversed(value))
        elif isinstance(value, (list, tuple)) and not isinstance(value, Dict):
            todo.extend((_join(name, str(i)), v, False) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, Call):
            func = value.func.dotted if isinstance(value.func, Global) else ""
            if func in _REBUILD_DOTTED:
                found.append(_tensor(name, value, param))
            elif func in _PARAMETER:
                args = value.args if isinstance(value.args, tuple) else ()
                if args:
                    todo.append((name, args[0], True))
            else:
                pairs = [p for p in value.items if isinstance(p, tuple) and len(p) == 2]
                todo.extend((_join(name, k), v, False) for k, v in reversed(pairs))
                if value.state is not None:
                    todo.append((name, value.state, False))
                if func == "torch._tensor._rebuild_from_type_v2" and isinstance(value.args, tuple):
                    todo.extend((name, a, param) for a in value.args[:1])
    return found


def _join(prefix: str, key: Any) -> str:
    key = key if isinstance(key, str) else str(key)
    return f"{prefix}.{key}" if prefix else key


def _tensor(name: str, call: Call, param: bool) -> TensorInfo:
    args = call.args if isinstance(call.args, tuple) else ()
    storage = args[0] if args else None
    dtype, device = "unknown", "cpu"
    if isinstance(storage, Persistent) and isinstance(storage.pid, tuple) and len(storage.pid) >= 5:
        dtype, device = storage_dtype(storage.pid[1]), str(storage.pid[3])
    shape = args[2] if len(args) > 2 and isinstance(args[2], tuple) and all(isinstance(n, int) for n in args[2]) else None
    if call.func.name == "_rebuild_meta_tensor_no_storage":
        device = "meta"
    return TensorInfo(name, dtype, shape, nbytes(dtype, shape), device, param)


def _type_name(value: Any) -> str:
    if isinstance(value, Dict):
        return "dict"
    if isinstance(value, Call) and isinstance(value.func, Global):
        return value.func.dotted
    return type(value).__name__


def _operators(mz: ModelZip, top: str) -> dict[str, list[str]]:
    ops: dict[str, set[str]] = {}
    code = [n for n in mz.names() if n.startswith(f"{top}code/") and n.endswith(".py")]
    if len(code) > MAX_CODE_FILES:
        raise ModelFileError(f"{mz.path}: {len(code):,} TorchScript code files; rcompat reads at most {MAX_CODE_FILES:,}")
    for member in code:
        text = mz.read(member, 64 << 20).decode("utf-8", "replace")
        for ns, name in _OPS_CALL.findall(text):
            ops.setdefault(ns, set()).add(name)
        for name in _ATEN_CALL.findall(text):
            if name not in _NOT_OPERATORS and name != "ops":
                ops.setdefault("aten", set()).add(name)
    return {ns: sorted(names) for ns, names in sorted(ops.items())}
