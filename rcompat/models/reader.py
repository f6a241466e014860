"""`read_model(path)`: which format a file is (by its bytes, not its name) and its facts, read statically.

A file is opened once through rcompat.inputs (regular files only, never a FIFO); a zip (torch.save,
TorchScript, Keras) is read by its directory and the members asked for, anything else memory-mapped,
so a multi-GB checkpoint costs its directory and pickle, not its storages. `find_models(paths)` expands
directories: SavedModel directories are models themselves; elsewhere files with a model extension.
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path

from rcompat.inputs import InputRefused, open_mapped
from rcompat.models.archive import ModelZip
from rcompat.models.errors import ModelFileError
from rcompat.models.facts import ModelInfo

MODEL_SUFFIXES = {".pt", ".pth", ".bin", ".ckpt", ".tar", ".safetensors", ".keras", ".h5", ".hdf5", ".rds",
                  ".pkl", ".torch", ".ptc", ".jit"}
MAX_FILES = 10_000
_LEGACY_HEAD = b"\x80\x02\x8a\x0a"  # PROTO 2, LONG1 of 10 bytes: the legacy magic number


def read_model(path: "str | os.PathLike[str]") -> ModelInfo:
    p = Path(path)
    try:  # opened first, a directory refused there: a file costs one stat, not two
        fh = open_mapped(p, "a model file")
    except InputRefused as why:
        if p.is_dir():
            if (p / "saved_model.pb").is_file() or (p / "saved_model.pbtxt").is_file():
                from rcompat.models.otherfiles import read_savedmodel

                return read_savedmodel(p)
            raise ModelFileError(f"{path}: a directory without saved_model.pb; not a SavedModel") from None
        raise ModelFileError(f"cannot read model {path}: {why}") from None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise ModelFileError(f"{path}: an empty file, not a model")
        head = fh.read(16)
        if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):  # zips: directory and members read
            return _read_zip(str(path), fh, size)                                # from the file, never mapped
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _read_mapped(str(path), head, data, size)


def _read_zip(path: str, fh, size: int) -> ModelInfo:
    mz = ModelZip(fh, size, path)
    if "metadata.json" in mz and "config.json" in mz:
        from rcompat.models.otherfiles import read_keras_zip

        return read_keras_zip(mz)
    from rcompat.models.torchfiles import read_zip

    return read_zip(mz)


def _read_mapped(path: str, head: bytes, data: mmap.mmap, size: int) -> ModelInfo:
    from rcompat.models import otherfiles

    if head.startswith(_LEGACY_HEAD):
        from rcompat.models.torchfiles import read_legacy

        return read_legacy(data, path)
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        return otherfiles.read_keras_h5(path, size)
    if otherfiles.looks_like_safetensors(head, size):
        return otherfiles.read_safetensors(data, path)
    if head[:2] == b"\x1f\x8b" or head[:2] in otherfiles.R_SERIALIZE_MAGIC:
        return otherfiles.read_rds(data, path)
    if head[:1] == b"\x80":
        raise ModelFileError(f"{path}: a bare pickle, not a torch.save file; rcompat does not judge arbitrary pickles")
    raise ModelFileError(f"{path}: not a model format rcompat reads (torch.save zip or legacy, TorchScript, "
                         "safetensors, R torch, .rds, .keras, .h5, SavedModel)")


def find_models(paths: "list[str]") -> list[Path]:
    """The model files and SavedModel directories named by `paths` (files as given, directories searched)."""
    found: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.exists() and not p.is_symlink():
            raise ModelFileError(f"cannot read model {given}: no such file or directory")
        if not p.is_dir() or (p / "saved_model.pb").is_file():
            found.append(p)
            continue
        for root, dirs, files in os.walk(p):  # os.walk does not follow symlinked directories
            here = Path(root)
            if (here / "saved_model.pb").is_file():
                found.append(here)
                dirs[:] = []
                continue
            dirs.sort()
            found.extend(here / f for f in sorted(files) if Path(f).suffix.lower() in MODEL_SUFFIXES
                         and (here / f).is_file() and not (here / f).is_symlink())
            if len(found) > MAX_FILES:
                raise ModelFileError(f"{given}: more than {MAX_FILES:,} model files; name fewer directories")
    return found
