"""The member headers of an uncompressed layer, read in bulk.

tarfile builds each TarInfo through a dozen Python calls per field (~100 µs a member here: 1.5 s for the
15 000 members of a torch package, most of opening it). An image layer written by docker, podman or
buildkit uses a small part of the format: ustar headers, pax records for long or non-ASCII names and big
sizes, GNU long names. Those are read here, one pread per header; anything else (GNU sparse files, pax
global headers, base-256 numbers, a checksum only tarfile's signed sum accepts, an unknown type) raises
Unsupported, and the caller walks the layer with tarfile instead. Member names are not trusted here:
rcompat.upgrade_scan.image.safety judges them.
"""
from __future__ import annotations

import os
import tarfile

from rcompat.errors import ImageError

_BLOCK = 512
_KNOWN = {tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE,
          tarfile.DIRTYPE, tarfile.FIFOTYPE, tarfile.CONTTYPE}
_MAX_EXTENSION = 1 << 20  # a pax record block or GNU long name larger than this is not a name


class Unsupported(Exception):
    """A header this reader leaves to tarfile."""


def read_headers(fd: int, offset: int, size: int) -> list[tarfile.TarInfo]:
    """The members of the tar of `size` bytes at `offset` in `fd`, each with `offset_data` relative to
    the tar's start. ImageError when a header or a member's data runs past the end, or when something
    other than zeros follows the end-of-archive mark."""
    members = []
    pos = 0
    pax: dict[str, str] = {}
    long_name = long_link = None
    while pos < size:
        block = os.pread(fd, _BLOCK, offset + pos) if pos + _BLOCK <= size else b""
        if len(block) < _BLOCK:
            raise ImageError(f"truncated layer: the header at byte {pos} is cut short")
        if not block.strip(b"\0"):
            expect_zeros(fd, offset, pos, size)
            return members
        if _number(block[148:156]) != 256 + sum(block[:148]) + sum(block[156:]):
            raise Unsupported("checksum")
        kind, length, data = block[156:157], _number(block[124:136]), pos + _BLOCK
        if kind in (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            if length > _MAX_EXTENSION:
                raise Unsupported("huge extended header")
            pos = _after(data, length, size)
            pax, long_name, long_link = _extended(kind, os.pread(fd, length, offset + data), pax, long_name, long_link)
            continue
        if kind not in _KNOWN or any(key.startswith("GNU.sparse") for key in pax):
            raise Unsupported(f"type {kind!r}")
        member = _member(block, kind, length, data, pax, long_name, long_link)
        members.append(member)
        pos = _after(data, member.size, size) if member.isreg() else data  # as tarfile skips data
        pax, long_name, long_link = {}, None, None
    return members  # no end-of-archive blocks: tolerated, as tarfile does


def _extended(kind: bytes, extension: bytes, pax: dict, long_name, long_link) -> tuple:
    """(pax, long_name, long_link) after an extended header of type `kind` holding `extension`."""
    if kind == tarfile.XHDTYPE:
        return _pax_records(extension), long_name, long_link
    text = _text(extension.split(b"\0", 1)[0])
    return (pax, text, long_link) if kind == tarfile.GNUTYPE_LONGNAME else (pax, long_name, text)


def _after(data: int, length: int, size: int) -> int:
    end = data + -(-length // _BLOCK) * _BLOCK
    if end > size:
        raise ImageError(f"truncated layer: the member at byte {data - _BLOCK} runs past its end")
    return end


def _member(block: bytes, kind: bytes, length: int, data: int, pax: dict, long_name, long_link) -> tarfile.TarInfo:
    name = block[:100].split(b"\0", 1)[0]
    if block[257:263] == tarfile.POSIX_MAGIC and block[345] != 0:
        name = block[345:500].split(b"\0", 1)[0] + b"/" + name
    name = pax.get("path") or long_name or _text(name)
    if kind == tarfile.AREGTYPE and name.endswith("/"):
        kind = tarfile.DIRTYPE
    info = tarfile.TarInfo(name.rstrip("/") if kind == tarfile.DIRTYPE else name)
    info.type = kind
    info.mode = _number(block[100:108])
    info.size = int(pax["size"]) if "size" in pax else length
    info.linkname = pax.get("linkpath") or long_link or _text(block[157:257].split(b"\0", 1)[0])
    info.offset_data = data
    return info


def _pax_records(data: bytes) -> dict[str, str]:
    """'LEN key=value\\n' records; LEN counts the whole record."""
    records = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos)
        try:
            length = int(data[pos:space])
        except ValueError:
            raise Unsupported("malformed pax record") from None
        if space < 0 or length <= 0 or data[pos + length - 1:pos + length] != b"\n":
            raise Unsupported("malformed pax record")
        key, _eq, value = data[space + 1:pos + length - 1].partition(b"=")
        records[_text(key)] = _text(value)
        pos += length
    if "hdrcharset" in records:  # names in another encoding than UTF-8
        raise Unsupported("pax hdrcharset")
    return records


def _number(field: bytes) -> int:
    if field[:1] and field[0] & 0x80:
        raise Unsupported("base-256 number")
    try:
        return int(field.split(b"\0", 1)[0].strip() or b"0", 8)
    except ValueError:
        raise Unsupported("malformed number") from None


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")  # as tarfile decodes names on Linux


def expect_zeros(fd: int, offset: int, start: int, size: int) -> None:
    """What follows the end-of-archive mark at byte `start` of the tar at `offset` must be zeros:
    tarfile ends a walk at a header it cannot read as if the archive ended there."""
    position = start
    while position < size:
        chunk = os.pread(fd, min(1 << 20, size - position), offset + position)
        if not chunk:
            return
        if chunk.strip(b"\0"):
            raise ImageError(f"damaged layer: data after the end-of-archive mark at byte {start} (a header "
                             "that could not be read?)")
        position += len(chunk)


def stream_members(stream, elf_head: int):
    """(member, head, fill) for each member of a tar read once from `stream` (an inflating reader), as
    read_headers reads them: tarfile's streaming mode costs twice the inflating itself (10 KB reads
    joined and sliced per header). `head()` returns the first `elf_head` bytes of a regular member's
    data, `fill(fd)` writes all of it to `fd`; what the caller does not read is skipped. Raises
    Unsupported on a header this reader leaves to tarfile, before yielding that member."""
    pax: dict[str, str] = {}
    long_name = long_link = None
    while True:
        block = _read_exact(stream, _BLOCK, "header", allow_eof=True)
        if not block:
            return  # no end-of-archive blocks: tolerated, as tarfile does
        if not block.strip(b"\0"):
            zeros_to_end(stream)
            return
        if _number(block[148:156]) != 256 + sum(block[:148]) + sum(block[156:]):
            raise Unsupported("checksum")
        kind, length = block[156:157], _number(block[124:136])
        if kind in (tarfile.XHDTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            if length > _MAX_EXTENSION:
                raise Unsupported("huge extended header")
            extension = _read_exact(stream, -(-length // _BLOCK) * _BLOCK, "extended header")[:length]
            pax, long_name, long_link = _extended(kind, extension, pax, long_name, long_link)
            continue
        if kind not in _KNOWN or any(key.startswith("GNU.sparse") for key in pax):
            raise Unsupported(f"type {kind!r}")
        member = _member(block, kind, length, 0, pax, long_name, long_link)
        pax, long_name, long_link = {}, None, None
        data = _MemberData(stream, member.size if member.isreg() else 0, elf_head)
        yield member, data.head, data.fill
        data.skip_rest()


class _MemberData:
    """One member's data in the stream: sniffed, copied out, or skipped, each byte read once."""

    def __init__(self, stream, size: int, elf_head: int) -> None:
        self.stream, self.left, self.elf_head = stream, size, elf_head
        self.padding = -size % _BLOCK
        self.first = b""

    def head(self) -> bytes:
        if not self.first and self.left:
            self.first = _read_exact(self.stream, min(self.elf_head, self.left), "member")
            self.left -= len(self.first)
        return self.first

    def fill(self, fd: int) -> None:
        view = self.head()
        while view:
            view = view[os.write(fd, view):]
        while self.left:
            chunk = memoryview(_read_exact(self.stream, min(self.left, 1 << 20), "member"))
            self.left -= len(chunk)
            while chunk:
                chunk = chunk[os.write(fd, chunk):]

    def skip_rest(self) -> None:
        rest, self.left = self.left + self.padding, 0
        while rest:
            rest -= len(_read_exact(self.stream, min(rest, 1 << 20), "member"))


def _read_exact(stream, size: int, what: str, allow_eof: bool = False) -> bytes:
    data = stream.read(size)
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            if allow_eof and not data:
                return b""
            raise ImageError(f"truncated layer: a {what} is cut short")
        data += more
    return data


def zeros_to_end(stream) -> None:
    """Read `stream` to its end (so a compressed layer's own check runs), insisting on zeros only."""
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            return
        if chunk.strip(b"\0"):
            raise ImageError("damaged tar header in the layer (data after the last readable member)")
