"""A model's zip archive read by its central directory, and only the small members a reader asks for.

torch.save, torch.jit.save and Keras write zips. Their names come from whoever wrote the file, so each
is checked (absolute, `..`, backslashes, NUL: refused, nothing is ever extracted anyway); a member's
claimed size is bounded before it is read and the bytes that come out are bounded while it inflates
(`bounded_reader`), so a zip bomb stops at the budget; every member must lie inside the file, so a
truncated archive is told apart from a good one without reading gigabytes of storages.

Why the directory is read here and not by zipfile first: zipfile builds a ZipInfo per member through
Python-level parsing (~2 µs each); a 256-tensor checkpoint has 262 members and that was ~0.5 ms of
`model inspect`'s ~3.3 ms (benchmarks/bench_model.py). `_plain_directory` reads the end record and
the whole directory in one read, splits it at the entries' fixed parts with one regex (the names are
what lies between) and unpacks all of them with one struct call: columns, no object per member
(~0.13 ms with the checks, was ~0.27 ms with a NamedTuple per entry), and a STORED member (every member torch writes) is read as a slice checked like zipfile checks it (local
header signature and name, CRC-32). Anything else (ZIP64, an archive comment, data before the
archive, extra fields, a compressed or encrypted member, any mismatch) goes to zipfile itself, so
its errors and its reading of unusual archives stay the reference; tests/models/test_archive.py
holds both readers to the same names, sizes and bytes.
"""
from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from operator import add
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
_FAST_FLAG_SET = frozenset((0, 0x0800, 0x0008, 0x0808))  # UTF-8 names, sizes in a data descriptor: nothing else
# An entry's fixed part after its signature, no extra field nor comment (their lengths zero): what split
# cuts the directory at, so the names are what lies between; _HEAD_FIELDS reads flags, compressed and
# file size, name length and local header offset out of it (method and CRC: only of a member read).
_ENTRY_HEAD = re.compile(rb"PK\x01\x02(.{26}\0\0\0\0.{12})", re.DOTALL)
_HEAD_FIELDS = "4xH10xIIH12xI"
_METHOD_CRC = struct.Struct("<6xH4xI")            # an entry head's method and CRC, for the members read
_HEAD_SIZE = 42


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
    """A zip's directory as columns (names, and per member its offset, sizes, method, flags, CRC, by index),
    so opening a 262-member checkpoint builds no object per member; `member(name)` makes the one a read
    needs, `infos` all of them for whoever asks (zipfile's ZipInfos where zipfile read the directory)."""

    def __init__(self, fh: BinaryIO, size: int, path: str) -> None:
        self._opened = fh   # kept: the buffered file closes its raw file when collected
        if type(fh) is io.BufferedReader:  # seek and read as they come: a buffer would refill 8 KiB at each seek
            fh = fh.raw
        self.path, self.size, self.fh, self._zip, self._infos = path, size, fh, None, None
        columns = _plain_directory(fh, size)
        if columns is None:
            self._listed = self._zipfile().infolist()
            columns = ([i.filename for i in self._listed], [i.header_offset for i in self._listed],
                       [i.compress_size for i in self._listed], [i.file_size for i in self._listed])
        else:
            self._listed = None
        names, offsets, compressed, self.file_sizes, *rest = columns
        self._flags, self._heads = rest or (None, None)
        self.offsets, self.compressed = offsets, compressed
        if len(names) > MAX_MEMBERS:
            raise ModelFileError(f"{path}: {len(names):,} zip members; rcompat reads at most {MAX_MEMBERS:,}")
        self.listed = "\0" + "\0".join(names) + "\0"  # every name between NULs: one text to search in C
        if _suspect_text(self.listed, len(names)):  # a few C-speed scans over all names; the loop names the culprit
            for name in names:
                _check_name(path, name)
        if names and max(offsets) + max(compressed) > size and max(map(add, offsets, compressed)) > size:
            for name, offset, csize in zip(names, offsets, compressed):
                if offset + csize > size:
                    raise ModelFileError(f"{path}: member {name!r} ends past the end of the file "
                                         f"(truncated archive)")
        self.index = dict(zip(names, range(len(names))))  # a name listed twice: the last, as zipfile's lookup
        self.unique_names = len(self.index) == len(names)

    def __contains__(self, name: str) -> bool:
        return name in self.index

    def member(self, name: str) -> "Member | zipfile.ZipInfo":
        """The directory entry of `name` (KeyError when not listed)."""
        i = self.index[name]
        if self._listed is not None:
            return self._listed[i]
        method, crc = _METHOD_CRC.unpack_from(self._heads, i * _HEAD_SIZE)
        return Member(name, self.offsets[i], self.compressed[i], self.file_sizes[i], method, self._flags[i], crc)

    @property
    def infos(self) -> "dict[str, Member | zipfile.ZipInfo]":
        """Every listed name's entry, in the directory's order (built on first use: readers use member())."""
        if self._infos is None:
            self._infos = {name: self.member(name) for name in self.index}
        return self._infos

    def _zipfile(self) -> zipfile.ZipFile:
        if self._zip is None:
            try:
                self._zip = zipfile.ZipFile(self.fh)
                self._zip.infolist()
            except _ERRORS as exc:
                raise ModelFileError(f"{self.path}: truncated or corrupt zip ({type(exc).__name__}: {exc})") from None
        return self._zip

    def names(self) -> list[str]:
        return list(self.index)

    def read(self, name: str, limit: int = MAX_MEMBER_BYTES) -> bytes:
        info = self.member(name)
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
        return self.offsets[self.index[name]]


def _plain_directory(fh: BinaryIO, size: int) -> tuple | None:
    """The central directory of a plain archive (no ZIP64, no comments or extra fields, nothing before the
    archive) as columns: names, offsets, compressed and file sizes, flags, as zipfile would list them, and
    the entries' fixed parts joined (each _HEAD_SIZE bytes: methods and CRCs are read from there); None for anything else, which zipfile then reads. One split of the whole directory at its
    entries' fixed parts and one struct call over them: no Python work per entry."""
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
    parts = _ENTRY_HEAD.split(fh.read(cd_size))  # ['', head, name, head, name, ...]: names are what lies between
    if parts[0] or len(parts) != 2 * count + 1:
        return None   # bytes before the first entry, an entry with extra fields or a comment, a name holding a signature
    raw_names = parts[2::2]
    heads = b"".join(parts[1::2])
    fields = struct.unpack("<" + _HEAD_FIELDS * count, heads)
    flags, compressed, sizes, name_lengths, offsets = (fields[i::5] for i in range(5))
    if name_lengths != tuple(map(len, raw_names)) or not _FAST_FLAG_SET.issuperset(flags) \
            or 0xFFFFFFFF in compressed or 0xFFFFFFFF in sizes or 0xFFFFFFFF in offsets:
        return None
    joined = b"\0".join(raw_names)
    if count and joined.isascii() and joined.count(0) == count - 1:  # ASCII: the same in UTF-8 and cp437
        names = joined.decode("ascii").split("\0")
    else:
        try:
            names = [raw.decode("utf-8" if flag & 0x800 else "cp437") for raw, flag in zip(raw_names, flags)]
        except UnicodeDecodeError:  # zipfile's own refusal (a ModelFileError) stays the reference
            return None
        if any("\x00" in name for name in names):  # zipfile cuts a name at NUL: leave that reading to it
            return None
    return names, offsets, compressed, sizes, flags, heads


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


def _suspect_names(names: "list[str]") -> bool:
    return _suspect_text("\0" + "\0".join(names) + "\0", len(names))


def _suspect_text(listed: str, count: int) -> bool:
    """Whether any of the `count` names in `listed` (each between NULs) might be one _check_name refuses:
    a superset (a `..` or `:` anywhere, a leading / or \\ after a NUL, a NUL inside a name: zipfile
    cuts names there, so no listed name should hold one)."""
    return ".." in listed or ":" in listed or "\0/" in listed or "\0\\" in listed or listed.count("\0") != count + 1


def _check_name(path: str, name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or "\x00" in name or (len(name) > 1 and name[1] == ":"):
        shown = name if len(name) < 80 else name[:80] + "…"
        raise ModelFileError(f"{path}: zip member name {shown!r} points outside the archive (path traversal); "
                             "refused as hostile")
