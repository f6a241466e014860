"""The members of a parity record's npz, read from one memory mapping of the file.

zipfile and `numpy.lib.format` read a member through three Python file objects, check its CRC in
small chunks and parse its .npy header with ast.literal_eval (compile() for every header): on the
built-in suite's records (86 members, one 8 MB input) that was three quarters of `parity compare`
(benchmarks/bench_parity.py; 4.8x a torch.testing loop over the same outputs). Here the zip's central
directory is still zipfile's, but a stored member (np.savez stores, never deflates) is sliced out of
the mapping, its CRC-32 checked in one zlib call, and the header numpy writes is parsed with one
regular expression; anything else (a deflated member, a header of another form) takes numpy's own
readers. Inputs are decoded only when asked for: comparing two records compares each input's size and
CRC-32 as the zip's directory records them (`Member.fingerprint`), and only inputs whose fingerprints
differ are decoded (their CRC checked) and compared as arrays. Reading the suite's 8 MB input from both
files, even as one copy each, took longer than the whole torch.testing loop it is measured against.
"""
from __future__ import annotations

import io
import math
import mmap
import re
import struct
import zipfile
import zlib
from typing import Any, Callable, Iterator, Mapping

NPY_MAGIC = b"\x93NUMPY"
# zipfile's local file header: signature, versions, flags, method, time, date, CRC, sizes, name and
# extra lengths (APPNOTE 4.3.7); the member's bytes follow the name and the extra field.
LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
LOCAL_SIGNATURE = b"PK\x03\x04"
# The header numpy's write_array_header writes: a dict literal with these three keys in this order,
# padded with spaces to a multiple of 64 bytes and ended by a newline.
CANONICAL_HEADER = re.compile(rb"\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': (True|False), "
                              rb"'shape': \(((?:\d+, ?)*\d*)\), \} *\n")


class MemberError(Exception):
    """A member that cannot be read; the caller names the file."""


class Member:
    """One `.npy` member: its header read, its data still in the file (`array()` decodes it)."""

    __slots__ = ("name", "shape", "fortran", "dtype", "fingerprint", "_load")

    def __init__(self, info: zipfile.ZipInfo, header: tuple, load: Callable[[], bytes]) -> None:
        self.name = info.filename[:-len(".npy")]
        self.shape, self.fortran, self.dtype = header
        # The uncompressed size and CRC-32 of the whole .npy (header and data): equal fingerprints,
        # equal bytes, but for a CRC collision, the same odds zip's own integrity check takes.
        self.fingerprint = (info.file_size, info.CRC)
        self._load = load

    def array(self) -> Any:
        """The array, after the member's CRC-32 is checked (MemberError when it does not match)."""
        import numpy as np

        data = self._load()
        array = np.frombuffer(bytearray(data), dtype=self.dtype)
        return array.reshape(self.shape[::-1]).transpose() if self.fortran else array.reshape(self.shape)


def read_members(fh: Any, archive: zipfile.ZipFile) -> list[Member]:
    """Every member of `archive` (open on `fh`, a regular file), header parsed and size checked.
    Raises MemberError, or zipfile's, zlib's and OSError exceptions for a damaged zip."""
    mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return [_stored_member(mapping, info) if info.compress_type == zipfile.ZIP_STORED
            else _zipfile_member(archive, info) for info in archive.infolist()]


def _stored_member(mapping: mmap.mmap, info: zipfile.ZipInfo) -> Member:
    start = info.header_offset
    if start < 0 or start + LOCAL_HEADER.size > len(mapping):
        raise zipfile.BadZipFile(f"member {info.filename!r} lies beyond the end of the file")
    fields = LOCAL_HEADER.unpack_from(mapping, start)
    if fields[0] != LOCAL_SIGNATURE:
        raise zipfile.BadZipFile(f"bad local header of member {info.filename!r}")
    name_end = start + LOCAL_HEADER.size + fields[10]
    if bytes(mapping[start + LOCAL_HEADER.size:name_end]) != _encoded_name(info):
        raise zipfile.BadZipFile(f"member {info.filename!r}: its local and central names differ")
    begin = name_end + fields[11]
    end = begin + info.compress_size
    if info.compress_size != info.file_size or end > len(mapping):
        raise zipfile.BadZipFile(f"member {info.filename!r} lies beyond the end of the file")
    header, offset = _npy_header(info.filename, mapping[begin:min(end, begin + 65536 + 12)])
    _check_size(info.filename, header, end - begin - offset)

    def load() -> bytes:
        data = mapping[begin:end]
        if zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"bad CRC-32 for member {info.filename!r}")
        return memoryview(data)[offset:]

    return Member(info, header, load)


def _zipfile_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Member:
    """A deflated member (np.savez_compressed), read through zipfile: it checks the CRC as it ends."""
    with archive.open(info) as fh:
        data = fh.read()
    header, offset = _npy_header(info.filename, data[:65536 + 12])
    _check_size(info.filename, header, len(data) - offset)
    return Member(info, header, lambda: memoryview(data)[offset:])


def _encoded_name(info: zipfile.ZipInfo) -> bytes:
    return info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")


def _npy_header(name: str, head: bytes) -> tuple[tuple, int]:
    """((shape, fortran, dtype), offset of the data) of a .npy member's first bytes."""
    head = bytes(head)
    if head[:6] != NPY_MAGIC or len(head) < 10:
        raise MemberError(f"member {name!r} has no valid .npy header (no .npy magic)")
    version = (head[6], head[7])
    if version == (1, 0):
        size, start = struct.unpack_from("<H", head, 8)[0], 10
    elif version == (2, 0) and len(head) >= 12:
        size, start = struct.unpack_from("<I", head, 8)[0], 12
    else:
        raise MemberError(f"member {name!r} has no valid .npy header (format version {version})")
    text = head[start:start + size]
    if len(text) != size:
        raise MemberError(f"member {name!r} has no valid .npy header (it ends early)")
    match = CANONICAL_HEADER.fullmatch(text)
    if match:
        import numpy as np

        shape = tuple(int(n) for n in match.group(3).split(b",") if n.strip())
        try:
            dtype = np.dtype(match.group(1).decode("ascii"))
        except TypeError as exc:
            raise MemberError(f"member {name!r} has no valid .npy header ({exc})") from None
        header = (shape, match.group(2) == b"True", dtype)
    else:  # another writer's header: numpy's own parser (ast.literal_eval) decides
        header = _numpy_header(name, head[:start + size], version)
    return header, start + size


def _numpy_header(name: str, head: bytes, version: tuple[int, int]) -> tuple:
    from numpy.lib import format as npy

    readers = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}
    fh = io.BytesIO(head)
    fh.seek(8)
    try:
        return readers[version](fh)
    except Exception as exc:  # noqa: BLE001 - on a hostile header: ValueError, SyntaxError, tokenize.TokenError
        raise MemberError(f"member {name!r} has no valid .npy header ({' '.join(str(exc).split())[:200]})") from None


def _check_size(name: str, header: tuple, held: int) -> None:
    shape, _, dtype = header
    if dtype.hasobject:
        raise MemberError("holds pickled data (an object array); parity records hold numeric arrays only and "
                          "are never unpickled")
    if any(n < 0 for n in shape):
        raise MemberError(f"member {name!r} claims the shape {shape}")
    claimed = math.prod(shape) * dtype.itemsize
    if claimed != held:
        raise MemberError(f"member {name!r} claims a {dtype} array of shape {shape} ({claimed} bytes) but holds "
                          f"{held} bytes; the file is corrupt")


class LazyArrays(Mapping):
    """name -> array, each member decoded (and its CRC checked) when first asked for; `decode(member)`
    turns a damaged one into the caller's error."""

    def __init__(self, members: Mapping[str, Member], decode: Callable[[Member], Any]) -> None:
        self.members = dict(members)
        self._decode = decode
        self._arrays: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._arrays:
            self._arrays[name] = self._decode(self.members[name])
        return self._arrays[name]

    @property
    def decoded(self) -> set[str]:
        """The names decoded so far."""
        return set(self._arrays)

    def __contains__(self, name: object) -> bool:  # Mapping's own would decode the member to answer
        return name in self.members

    def __iter__(self) -> Iterator[str]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)
