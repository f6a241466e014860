"""The formats that are not torch pickles: safetensors, R torch's files, Keras `.keras`/`.h5`, SavedModel dirs.

Each reads only headers: safetensors' JSON header (bounded, its offsets checked against the file);
R torch's v3 file (a safetensors file followed by R's `serialize()` data: only the R header is read) and
`saveRDS` files (gzip or plain: the first bytes of the stream, inflated under a bound); Keras's zip by
`metadata.json` and `config.json` (through the safe zip reader and the project's JSON limits); legacy
HDF5 by the root attributes (h5py, imported here only; no dataset is read); a SavedModel directory by
which of its files exist.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

from rcompat.models.archive import ModelZip
from rcompat.models.errors import ModelFileError
from rcompat.models.facts import (KERAS_H5, KERAS_ZIP, RDS, RTORCH, SAFETENSORS, SAVEDMODEL, ModelInfo,
                                  TensorInfo, nbytes)

MAX_HEADER = 100 << 20  # safetensors refuses headers over 100 MB itself
_ST_DTYPE = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
             "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "U16": "uint16",
             "U32": "uint32", "U64": "uint64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
R_SERIALIZE_MAGIC = (b"X\n", b"B\n", b"A\n")


def looks_like_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 9:
        return False
    (n,) = struct.unpack("<Q", head[:8])
    return 2 <= n <= min(MAX_HEADER, size - 8) and head[8:9] == b"{"


def read_safetensors(data, path: str) -> ModelInfo:
    from rcompat.documents import parse_json

    (n,) = struct.unpack("<Q", bytes(data[:8]))
    header = parse_json(bytes(data[8:8 + n]), f"{path}: safetensors header", ModelFileError)
    if not isinstance(header, dict):
        raise ModelFileError(f"{path}: safetensors header is not a JSON object")
    start, end_of_data = 8 + n, 8 + n
    tensors = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _ST_DTYPE.get(entry["dtype"], str(entry["dtype"]).lower())
            shape = tuple(int(d) for d in entry["shape"])
            lo, hi = (int(x) for x in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ModelFileError(f"{path}: safetensors entry {name!r} lacks dtype, shape or data_offsets") from None
        if not 0 <= lo <= hi or any(d < 0 for d in shape):
            raise ModelFileError(f"{path}: safetensors entry {name!r} has negative offsets or shape")
        end_of_data = max(end_of_data, start + hi)
        tensors.append(TensorInfo(name, dtype, shape, nbytes(dtype, shape) if dtype in _ST_DTYPE.values() else hi - lo))
    if end_of_data > len(data):
        raise ModelFileError(f"{path}: safetensors data ends at byte {end_of_data}, past the file's "
                             f"{len(data)} (truncated)")
    meta = header.get("__metadata__")
    info = ModelInfo(path, SAFETENSORS, len(data), tensors=tensors, devices=["cpu"] if tensors else [])
    info.details = {"metadata": meta if isinstance(meta, dict) else {}}
    rest = bytes(data[end_of_data:end_of_data + 16])
    if rest[:2] in R_SERIALIZE_MAGIC:  # R torch's serialization v3: R's own data follows the tensors
        info.format, info.producer = RTORCH, "R torch (serialization v3)"
        info.details["r_serialization"] = _r_header(rest, path)
    elif rest:
        info.details["trailing_bytes"] = len(data) - end_of_data
    return info


def _r_header(head: bytes, path: str) -> dict[str, Any]:
    """R serialize()'s header: format (X xdr, B binary, A ascii) and version (2 or 3)."""
    if head[:2] == b"A\n":
        return {"format": "ascii"}
    if len(head) < 14:
        raise ModelFileError(f"{path}: R serialization header is truncated")
    version, writer, minimal = struct.unpack(">III" if head[:1] == b"X" else "<III", head[2:14])
    return {"format": "xdr" if head[:1] == b"X" else "binary", "version": version,
            "written_by_r": _r_version(writer), "readable_from_r": _r_version(minimal)}


def _r_version(code: int) -> str:
    return f"{code >> 16}.{(code >> 8) & 0xFF}.{code & 0xFF}"


def read_rds(data, path: str) -> ModelInfo:
    head = bytes(data[:2])
    if head == b"\x1f\x8b":
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            stream = inflater.decompress(bytes(data[:1 << 16]), 64)  # at most 64 bytes out: the header
        except zlib.error as exc:
            raise ModelFileError(f"{path}: gzip stream is corrupt ({exc})") from None
    else:
        stream = bytes(data[:64])
    if stream[:2] not in R_SERIALIZE_MAGIC:
        raise ModelFileError(f"{path}: gzip data that is not R's serialize() format; not an .rds file")
    info = ModelInfo(path, RDS, len(data), producer="R saveRDS()")
    info.details = {"r_serialization": _r_header(stream[:16], path), "compression": "gzip" if head == b"\x1f\x8b" else "none"}
    info.format_version = info.details["r_serialization"].get("version")
    return info


def read_keras_zip(mz: ModelZip) -> ModelInfo:
    from rcompat.documents import parse_json

    meta = parse_json(mz.read("metadata.json", 1 << 20), f"{mz.path}: metadata.json", ModelFileError)
    config = parse_json(mz.read("config.json", 64 << 20), f"{mz.path}: config.json", ModelFileError)
    meta = meta if isinstance(meta, dict) else {}
    info = ModelInfo(mz.path, KERAS_ZIP, mz.size, producer=f"keras {meta.get('keras_version', '?')}")
    info.details = {"keras_version": meta.get("keras_version"), "date_saved": meta.get("date_saved"),
                    **keras_config_facts(config), "members": sorted(mz.names())}
    return info


def keras_config_facts(config: Any) -> dict[str, Any]:
    """Layer classes, Lambda layers (code inside the file) and custom objects of a Keras model config."""
    classes: dict[str, None] = {}
    lambdas, custom = 0, []
    todo = [config]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            cls = value.get("class_name")
            if isinstance(cls, str):
                classes.setdefault(cls, None)
                lambdas += cls in ("Lambda", "__lambda__") and cls == "Lambda"
                module = value.get("module")
                if isinstance(module, str) and not module.startswith(("keras", "builtins")) and cls != "__lambda__":
                    custom.append(f"{module}.{cls}")
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    root = config.get("class_name") if isinstance(config, dict) else None
    return {"model_class": root, "layer_classes": sorted(classes), "lambda_layers": lambdas,
            "custom_objects": sorted(set(custom))}


def read_keras_h5(path: str, size: int) -> ModelInfo:
    try:
        import h5py
    except ImportError:
        raise ModelFileError(f"{path}: an HDF5 file; reading it needs h5py (pip install h5py)") from None
    from rcompat.documents import parse_json

    try:
        with h5py.File(path, "r") as f:
            attrs = {k: _attr(f.attrs[k]) for k in f.attrs.keys()}
    except (OSError, ValueError, KeyError) as exc:
        raise ModelFileError(f"{path}: unreadable HDF5 ({' '.join(str(exc).split())[:160]})") from None
    info = ModelInfo(path, KERAS_H5, size, producer=f"keras {attrs.get('keras_version', '?')}")
    config = attrs.get("model_config")
    facts = keras_config_facts(parse_json(config, f"{path}: model_config", ModelFileError)) if isinstance(config, str) else {}
    info.details = {"keras_version": attrs.get("keras_version"), "backend": attrs.get("backend"),
                    "has_model_config": isinstance(config, str), **facts}
    return info


def _attr(value: Any) -> Any:
    value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return value if isinstance(value, (str, int, float)) else str(value)


def read_savedmodel(path: Path) -> ModelInfo:
    present = {name: (path / name).is_file() for name in
               ("saved_model.pb", "saved_model.pbtxt", "keras_metadata.pb", "fingerprint.pb")}
    size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    info = ModelInfo(str(path), SAVEDMODEL, size, producer="tensorflow SavedModel")
    info.details = {"files": sorted(k for k, v in present.items() if v),
                    "variables": (path / "variables").is_dir(), "keras_metadata": present["keras_metadata.pb"]}
    return info
