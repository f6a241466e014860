"""A model's zip archive read by its central directory, and only the small members a reader asks for.

torch.save, torch.jit.save and Keras write zips. Their names come from whoever wrote the file, so each
is checked (absolute, `..`, backslashes, NUL: refused, nothing is ever extracted anyway); a member's
claimed size is bounded before it is read and the bytes that come out are bounded while it inflates
(`bounded_reader`), so a zip bomb stops at the budget; every member must lie inside the file, so a
truncated archive is told apart from a good one without reading gigabytes of storages.

Why the directory is read here and not by zipfile first: zipfile builds a ZipInfo per member through
Python-level parsing (~2 µs each); a 256-tensor checkpoint has 262 members and that was ~0.5 ms of
`model inspect`'s ~3.3 ms (benchmarks/bench_model.py). `_plain_directory` reads the end record and
the whole directory in one read and unpacks each 46-byte entry with one struct call (~0.15 ms), and a
STORED member (every member torch writes) is read as a slice checked like zipfile checks it (local
header signature and name, CRC-32). Anything else (ZIP64, an archive comment, data before the
archive, extra fields, a compressed or encrypted member, any mismatch) goes to zipfile itself, so
its errors and its reading of unusual archives stay the reference; tests/models/test_archive.py
holds both readers to the same names, sizes and bytes.
"""
from __future__ import annotations

import struct
import zipfile
import zlib
from typing import BinaryIO, NamedTuple

from rcompat.inputs import bounded_reader, human_size
from rcompat.models.errors import ModelFileError

MAX_MEMBERS = 500_000
MAX_MEMBER_BYTES = 256 << 20       # data.pkl of a huge checkpoint is a few MB; code/ files are KB
MAX_RATIO = 200                    # deflate of real code/JSON: < 20; a bomb of zeros: ~1000
_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, zlib.error, NotImplementedError,
           UnicodeDecodeError, ValueError)
_END = struct.Struct("<4s4H2LH")                    # end of central directory record (22 bytes)
_ENTRY = struct.Struct("<4s6H3L5H2L")              # central directory entry (46 bytes + name, extra, comment)
_LOCAL = struct.Struct("<4s5H3L2H")                # local file header (30 bytes + name, extra)
_LOCATOR64 = struct.Struct("<4sLQL")               # ZIP64 end locator (20 bytes), before the end record
_END64 = struct.Struct("<4sQ2H2L4Q")               # ZIP64 end record (56 bytes): torch always writes one
_FAST_FLAGS = 0x0800 | 0x0008                      # UTF-8 names, sizes in a data descriptor: nothing else


class Member(NamedTuple):
    """What ModelZip needs of a central directory entry (the fields zipfile.ZipInfo names the same)."""
    filename: str
    header_offset: int
    compress_size: int
    file_size: int
    compress_type: int
    flag_bits: int
    CRC: int


class ModelZip:
    def __init__(self, fh: BinaryIO, size: int, path: str) -> None:
        self.path, self.size, self.fh, self._zip = path, size, fh, None
        infos = _plain_directory(fh, size)
        if infos is None:
            infos = self._zipfile().infolist()
        if len(infos) > MAX_MEMBERS:
            raise ModelFileError(f"{path}: {len(infos):,} zip members; rcompat reads at most {MAX_MEMBERS:,}")
        if _suspect_names(infos):  # a few C-speed scans over all names; the loop then names the culprit
            for info in infos:
                _check_name(path, info.filename)
        for info in (infos if infos and max(i.header_offset + i.compress_size for i in infos) > size else ()):
            if info.header_offset + info.compress_size > size:
                raise ModelFileError(f"{path}: member {info.filename!r} ends past the end of the file "
                                     f"(truncated archive)")
        self.infos = {i.filename: i for i in infos}

    def _zipfile(self) -> zipfile.ZipFile:
        if self._zip is None:
            try:
                self._zip = zipfile.ZipFile(self.fh)
                self._zip.infolist()
            except _ERRORS as exc:
                raise ModelFileError(f"{self.path}: truncated or corrupt zip ({type(exc).__name__}: {exc})") from None
        return self._zip

    def names(self) -> list[str]:
        return list(self.infos)

    def read(self, name: str, limit: int = MAX_MEMBER_BYTES) -> bytes:
        info = self.infos[name]
        if info.flag_bits & 0x1:
            raise ModelFileError(f"{self.path}: member {name!r} is encrypted")
        if info.file_size > limit:
            raise ModelFileError(f"{self.path}: member {name!r} claims {human_size(info.file_size)}, more than "
                                 f"the {human_size(limit)} rcompat reads of one member")
        if isinstance(info, Member):
            data = _read_stored(self.fh, info, self.size)
            if data is not None:
                return data
        budget = min(limit, max(info.compress_size, 1 << 16) * MAX_RATIO)

        def too_much(n: int) -> ModelFileError:
            return ModelFileError(f"{self.path}: member {name!r} inflates past {human_size(budget)} "
                                  f"(from {human_size(info.compress_size)}): a zip bomb, refused")
        try:
            zf = self._zipfile()
            with zf.open(zf.getinfo(name)) as raw:
                data = bounded_reader(raw, budget, too_much).read()
        except ModelFileError:
            raise
        except (_ERRORS + (KeyError,)) as exc:
            raise ModelFileError(f"{self.path}: member {name!r} is truncated or corrupt "
                                 f"({type(exc).__name__}: {exc})") from None
        return data

    def stored_at(self, name: str) -> int:
        """Where member `name`'s bytes are in the file (after its local header), for the size check."""
        return self.infos[name].header_offset


def _plain_directory(fh: BinaryIO, size: int) -> list[Member] | None:
    """The central directory of a plain archive (no ZIP64, no comments or extra fields, nothing before the
    archive), as zipfile would list it; None for anything else, which zipfile then reads."""
    tail = _END.size + _LOCATOR64.size + _END64.size
    if size < tail:
        return None
    fh.seek(size - tail)
    raw = fh.read(tail)
    sig, disk, cd_disk, _, count, cd_size, cd_offset, comment = _END.unpack_from(raw, tail - _END.size)
    if sig != b"PK\x05\x06" or disk or cd_disk or comment:
        return None
    cd_end = size - _END.size
    if raw[_END64.size:_END64.size + 4] == b"PK\x06\x07":  # ZIP64: its record holds the real numbers
        _, disk64, _, disks = _LOCATOR64.unpack_from(raw, _END64.size)
        sig, _, _, _, disk, cd_disk, _, count, cd_size, cd_offset = _END64.unpack_from(raw, 0)
        if sig != b"PK\x06\x06" or disk64 or disks > 1 or disk or cd_disk:
            return None
        cd_end = size - tail
    if count == 0xFFFF or cd_offset + cd_size != cd_end or count * _ENTRY.size > cd_size:
        return None
    fh.seek(cd_offset)
    directory = fh.read(cd_size)
    out, at, unpack, new = [], 0, _ENTRY.unpack_from, tuple.__new__
    append = out.append
    while at < cd_size:
        if at + _ENTRY.size > cd_size:
            return None
        (sig, _, _, flags, method, _, _, crc, csize, usize, n_name, n_extra, n_comment, _, _, _,
         offset) = unpack(directory, at)
        at += _ENTRY.size
        if sig != b"PK\x01\x02" or n_extra or n_comment or flags & ~_FAST_FLAGS or at + n_name > cd_size \
                or 0xFFFFFFFF in (csize, usize, offset):
            return None
        raw = directory[at:at + n_name]
        at += n_name
        try:
            name = raw.decode("utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError:  # zipfile's own refusal (a ModelFileError) stays the reference
            return None
        if "\x00" in name:  # zipfile cuts a name at NUL: leave that reading to it
            return None
        append(new(Member, (name, offset, csize, usize, method, flags, crc)))  # tuple.__new__: no Python frame
    return out if len(out) == count and at == cd_size else None


def _read_stored(fh: BinaryIO, info: Member, size: int) -> bytes | None:
    """A STORED member's bytes, checked as zipfile checks them; None when zipfile should read it."""
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
        return None
    fh.seek(info.header_offset)
    head = fh.read(_LOCAL.size)
    if len(head) < _LOCAL.size:
        return None
    sig, *_, n_name, n_extra = _LOCAL.unpack(head)
    start = info.header_offset + _LOCAL.size + n_name + n_extra
    if sig != b"PK\x03\x04" or start + info.compress_size > size:
        return None
    raw = fh.read(n_name + n_extra + info.compress_size)
    data = raw[n_name + n_extra:]
    if raw[:n_name] != info.filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437") \
            or len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        return None
    return data


def _suspect_names(infos) -> bool:
    """Whether any name might be one _check_name refuses: a superset (a `..` or `:` anywhere, a leading / or
    \\ after the NUL that joins them: no listed name holds a NUL, zipfile cuts names there)."""
    joined = "\x00" + "\x00".join(i.filename for i in infos)
    return ".." in joined or ":" in joined or "\x00/" in joined or "\x00\\" in joined \
        or joined.count("\x00") != len(infos)


def _check_name(path: str, name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or "\x00" in name or (len(name) > 1 and name[1] == ":"):
        shown = name if len(name) < 80 else name[:80] + "…"
        raise ModelFileError(f"{path}: zip member name {shown!r} points outside the archive (path traversal); "
                             "refused as hostile")
