"""The parity record on disk: one `.npz` (numpy's zip of `.npy` arrays), read without pickle.

Layout:
  manifest           0-d unicode array holding JSON text (rcompat version, torch, device, threads, BLAS,
                     cuDNN, TF32, seed, side, interpreter, and per case: status, message, outputs)
  input/<name>       float64 inputs from one seeded NumPy generator, shared by every side
  <case>_<dtype>     one array per output (`matmul_f32`, `mlp_backward_f64.grad_w1`)

Every array is numeric and loaded with `allow_pickle=False`, so a file cannot run code when read. A file
that is truncated, hand-edited, holds an object array, or is any other npz is refused with a one-line
ParityFileError naming the file and what is wrong.
"""
from __future__ import annotations

import json
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from rcompat.errors import RcompatError
from rcompat.parity.npzmembers import LazyArrays, Member, MemberError, read_members

FORMAT = "rcompat-parity"
FORMAT_VERSION = 1
MANIFEST = "manifest"
INPUT_PREFIX = "input/"
# How each precision is stored: numpy has no bfloat16, and float32 holds every bfloat16 exactly.
MAX_MEMBERS = 10_000
STORAGE_DTYPE = {"float64": "float64", "float32": "float32", "tfloat32": "float32",
                 "float16": "float16", "bfloat16": "float32"}


class ParityFileError(RcompatError):
    """A file that is not a readable rcompat parity record."""


@dataclass
class ParityRecord:
    manifest: dict[str, Any]
    inputs: Mapping[str, Any] = field(default_factory=dict)  # name (without input/) -> ndarray
    outputs: dict[str, Any] = field(default_factory=dict)   # output name -> ndarray
    path: str = ""

    def output_precisions(self) -> dict[str, str]:
        """Output name -> precision (float32, tfloat32, bfloat16, …) as the manifest records it."""
        return {name: precision for case in self.manifest.get("cases", {}).values()
                for name, precision in case.get("outputs", {}).items()}


def write_record(path: "str | Path", record: ParityRecord) -> Path:
    """Write `record` atomically (temp file + rename): inputs, outputs and the manifest."""
    import numpy as np

    from rcompat.atomic import replaced_atomically

    arrays = {MANIFEST: np.array(json.dumps(record.manifest, sort_keys=True))}
    arrays.update({INPUT_PREFIX + name: np.asarray(value) for name, value in record.inputs.items()})
    arrays.update({name: np.asarray(value) for name, value in record.outputs.items()})
    with replaced_atomically(path) as tmp:
        with open(tmp, "wb") as fh:  # a file object: given a name, savez would append ".npz" to it
            np.savez(fh, **arrays)
    return Path(path)


def read_record(path: "str | Path") -> ParityRecord:
    """The record in `path`, checked against the manifest: every member's header, and the manifest's and
    outputs' data (CRC-32) now; the inputs' data when an input is first read (`record.inputs[name]`)."""
    members = _load_members(path)
    if MANIFEST not in members:
        raise ParityFileError(f"{path}: an npz without a 'manifest' entry, not an rcompat parity record")
    manifest = _decode_manifest(path, _decoded(path, members.pop(MANIFEST)))
    inputs = LazyArrays({k[len(INPUT_PREFIX):]: m for k, m in members.items() if k.startswith(INPUT_PREFIX)},
                        lambda member: _decoded(path, member))
    outputs = {k: _decoded(path, m) for k, m in members.items() if not k.startswith(INPUT_PREFIX)}
    record = ParityRecord(manifest=manifest, inputs=inputs, outputs=outputs, path=str(path))
    _check_consistent(path, record)
    return record


def _load_members(path: "str | Path") -> dict[str, Member]:
    """Every member of the npz, each header checked against the member's real size before its array is
    allocated: a 16 MB file claiming a 100 GB array is refused, not loaded."""
    from rcompat.inputs import limit_bytes, open_input, size_problem

    with open_input(path, "record", "parity record", error=ParityFileError) as fh:
        head = fh.read(6)
        if not head.startswith((b"PK\x03\x04", b"PK\x05\x06", b"\x93NUMPY")):
            raise ParityFileError(f"{path}: not an npz file (no zip or .npy header); expected an rcompat parity "
                                  "record written by `rcompat parity record`")
        if head.startswith(b"\x93NUMPY"):
            raise ParityFileError(f"{path}: a single .npy array, not an .npz parity record")
        fh.seek(0)
        with _damage_refused(path):
            with zipfile.ZipFile(fh) as archive:
                infos = archive.infolist()
                if len(infos) > MAX_MEMBERS:
                    raise ParityFileError(f"{path}: {len(infos)} members; a parity record has at most {MAX_MEMBERS}")
                total = sum(m.file_size for m in infos)
                if total > limit_bytes("record"):
                    raise ParityFileError(f"{path}: its arrays unpack to {size_problem(total, 'record')}")
                for member in infos:
                    if not member.filename.endswith(".npy") or member.is_dir():
                        raise ParityFileError(f"{path}: member {member.filename!r} is not a .npy array; not an "
                                              "rcompat parity record")
                    if member.flag_bits & 0x1:
                        raise ParityFileError(f"{path}: member {member.filename!r} is encrypted; not an rcompat "
                                              "parity record")
                return {m.name: m for m in read_members(fh, archive)}


@contextmanager
def _damage_refused(path: "str | Path") -> Iterator[None]:
    """A damaged zip or .npy member as one ParityFileError naming the file."""
    try:
        yield
    except MemberError as exc:
        raise ParityFileError(f"{path}: {exc}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, zlib.error,
            NotImplementedError, UnicodeDecodeError) as exc:  # a member name that is not UTF-8 though its flag says so
        raise ParityFileError(f"{path}: truncated or corrupt npz ({type(exc).__name__}: "
                              f"{_one_line(str(exc))})") from None


def _decoded(path: "str | Path", member: Member) -> Any:
    with _damage_refused(path):
        return _numeric(path, member.name, member.array())


def _numeric(path: "str | Path", name: str, array: Any) -> Any:
    if name == MANIFEST:
        if array.dtype.kind != "U" or array.shape != ():
            raise ParityFileError(f"{path}: 'manifest' is a {array.dtype} array of shape {array.shape}, "
                                  "not the JSON text of an rcompat parity record")
        return array
    if array.dtype.kind not in "fiub":
        raise ParityFileError(f"{path}: array {name!r} has dtype {array.dtype}, not a numeric one")
    return array


def _decode_manifest(path: "str | Path", array: Any) -> dict[str, Any]:
    from rcompat.documents import parse_json

    manifest = parse_json(str(array[()]), f"{path}: the manifest", ParityFileError,
                          hint="was the file edited by hand? Record it again")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ParityFileError(f"{path}: the manifest does not say format {FORMAT!r}; "
                              "not an rcompat parity record")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ParityFileError(f"{path}: parity format version {manifest.get('format_version')!r}; this "
                              f"rcompat reads version {FORMAT_VERSION}")
    cases = manifest.get("cases")
    if not isinstance(cases, dict) or not all(isinstance(c, dict) and isinstance(c.get("outputs", {}), dict)
                                              for c in cases.values()):
        raise ParityFileError(f"{path}: the manifest's 'cases' is not a table of cases; record it again")
    for cid, case in cases.items():
        for name, precision in case.get("outputs", {}).items():
            if not isinstance(precision, str):  # a user's case may store any numeric dtype's name
                raise ParityFileError(f"{path}: case {cid!r} gives output {name!r} the precision {precision!r}, "
                                      "not a name such as float32; the file was edited")
    return manifest


def _check_consistent(path: "str | Path", record: ParityRecord) -> None:
    """Outputs named by the manifest and arrays in the file must be the same set: a difference means
    the file was cut short or edited."""
    precisions = record.output_precisions()
    named = set(precisions)
    present = set(record.outputs)
    if named - present:
        raise ParityFileError(f"{path}: the manifest names output(s) missing from the file: "
                              f"{', '.join(sorted(named - present)[:5])}; the file is incomplete")
    if present - named:
        raise ParityFileError(f"{path}: array(s) not in the manifest: {', '.join(sorted(present - named)[:5])}; "
                              "the file was edited")
    for name, precision in precisions.items():
        expected = STORAGE_DTYPE.get(precision, precision)
        if str(record.outputs[name].dtype) != expected:
            raise ParityFileError(f"{path}: output {name!r} is stored as {record.outputs[name].dtype}, but the "
                                  f"manifest says {precision}; the file was edited")


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def describe_side(manifest: Mapping[str, Any]) -> str:
    """`python torch 2.13.0+cpu on cpu, 2 threads` — how a record is named in messages."""
    threads = manifest.get("threads")
    cases = manifest.get("cases") or {}
    ran = any(isinstance(c, Mapping) and c.get("status") == "ok" for c in cases.values())
    device = manifest.get("device", "?")
    if cases and not ran:  # a record whose cases all skipped or failed ran nowhere
        unavailable = device == "cuda" and manifest.get("cuda_available") is False
        device = f"{device} requested, {'not available: ' if unavailable else ''}no case ran"
    return (f"{manifest.get('side', '?')} torch {manifest.get('torch_version', '?')} on "
            f"{device}" + (f", {threads} thread{'s' if threads != 1 else ''}" if threads else ""))
