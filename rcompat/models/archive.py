"""A model's zip archive read by its central directory, and only the small members a reader asks for.

torch.save, torch.jit.save and Keras write zips. Their names come from whoever wrote the file, so each
is checked (absolute, `..`, backslashes, NUL: refused, nothing is ever extracted anyway); a member's
claimed size is bounded before it is read and the bytes that come out are bounded while it inflates
(`bounded_reader`), so a zip bomb stops at the budget; every member must lie inside the file, so a
truncated archive is told apart from a good one without reading gigabytes of storages.
"""
from __future__ import annotations

import zipfile
import zlib
from typing import BinaryIO

from rcompat.inputs import bounded_reader, human_size
from rcompat.models.errors import ModelFileError

MAX_MEMBERS = 500_000
MAX_MEMBER_BYTES = 256 << 20       # data.pkl of a huge checkpoint is a few MB; code/ files are KB
MAX_RATIO = 200                    # deflate of real code/JSON: < 20; a bomb of zeros: ~1000
_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, zlib.error, NotImplementedError,
           UnicodeDecodeError, ValueError)


class ModelZip:
    def __init__(self, fh: BinaryIO, size: int, path: str) -> None:
        self.path, self.size = path, size
        try:
            self.zip = zipfile.ZipFile(fh)
            infos = self.zip.infolist()
        except _ERRORS as exc:
            raise ModelFileError(f"{path}: truncated or corrupt zip ({type(exc).__name__}: {exc})") from None
        if len(infos) > MAX_MEMBERS:
            raise ModelFileError(f"{path}: {len(infos):,} zip members; rcompat reads at most {MAX_MEMBERS:,}")
        for info in infos:
            _check_name(path, info.filename)
            if info.header_offset + info.compress_size > size:
                raise ModelFileError(f"{path}: member {info.filename!r} ends past the end of the file "
                                     f"(truncated archive)")
        self.infos = {i.filename: i for i in infos}

    def names(self) -> list[str]:
        return list(self.infos)

    def read(self, name: str, limit: int = MAX_MEMBER_BYTES) -> bytes:
        info = self.infos[name]
        if info.flag_bits & 0x1:
            raise ModelFileError(f"{self.path}: member {name!r} is encrypted")
        if info.file_size > limit:
            raise ModelFileError(f"{self.path}: member {name!r} claims {human_size(info.file_size)}, more than "
                                 f"the {human_size(limit)} rcompat reads of one member")
        budget = min(limit, max(info.compress_size, 1 << 16) * MAX_RATIO)

        def too_much(n: int) -> ModelFileError:
            return ModelFileError(f"{self.path}: member {name!r} inflates past {human_size(budget)} "
                                  f"(from {human_size(info.compress_size)}): a zip bomb, refused")
        try:
            with self.zip.open(info) as raw:
                data = bounded_reader(raw, budget, too_much).read()
        except ModelFileError:
            raise
        except _ERRORS as exc:
            raise ModelFileError(f"{self.path}: member {name!r} is truncated or corrupt "
                                 f"({type(exc).__name__}: {exc})") from None
        return data

    def stored_at(self, name: str) -> int:
        """Where member `name`'s bytes are in the file (after its local header), for the size check."""
        return self.infos[name].header_offset


def _check_name(path: str, name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or "\x00" in name or (len(name) > 1 and name[1] == ":"):
        shown = name if len(name) < 80 else name[:80] + "…"
        raise ModelFileError(f"{path}: zip member name {shown!r} points outside the archive (path traversal); "
                             "refused as hostile")
