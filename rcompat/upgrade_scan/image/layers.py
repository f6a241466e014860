"""Merging an image's layers into one root, keeping only what the upgrade scan reads.

Layers are applied in order, as overlayfs would stack them: an entry replaces what a lower layer had
at its path (a directory merges with a lower directory); `.wh.NAME` removes NAME from the lower layers;
`.wh..wh..opq` empties its directory of what the lower layers put there. A whiteout never removes what
its own layer wrote, whatever the member order. A path through a lower layer's symlink is resolved
inside the root, as containerd's applier and podman's do (rcompat.upgrade_scan.image.safety).

Two phases. Reading (one thread per layer, as many at once as there are cores): each blob is read
once, hashed as it is read and inflated on the way (rcompat.upgrade_scan.image.inflate); the files kept
are written to a staging directory beside the root, everything else of the layer is only recorded
(names, links, whiteouts). Merging (in layer order, one thread): the records are replayed and each kept
file is renamed into place. Regular files are kept when they are ELF shared objects or executables (the
magic and e_type sniffed from the first bytes) or match METADATA_PATTERNS; symlinks and directories are
always kept (sonames resolve through them), directories made when something is written in them (an
image has thousands, most holding nothing kept); devices and FIFOs never. An uncompressed layer is
walked header by header; a kept file is copied in the kernel (copy_file_range) straight from the blob,
or, for the scan (`stand_ins`), an ELF object is not copied at all: its file is a stand-in read from
the blob (rcompat/standins.py), and the blob's digest is checked later, beside the scan.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import threading
import tarfile
from dataclasses import dataclass, field
from fnmatch import translate
from typing import TYPE_CHECKING, Callable

from rcompat.errors import ImageError
from rcompat.upgrade_scan.image.inflate import Window, check_zstd_frames, compression_of, inflate_errors, inflated
from rcompat.upgrade_scan.image.manifest import Blob, LayerRef
from rcompat.upgrade_scan.image.safety import RootWriter, member_parts, rel
from rcompat.upgrade_scan.image.tarheaders import (Unsupported, expect_zeros, read_headers, stream_members,
                                                        zeros_to_end)

if TYPE_CHECKING:
    from rcompat.standins import StandIns

# Besides ELF objects, the files the upgrade scan reads (paths inside the root; `*` also crosses '/').
METADATA_PATTERNS = (
    "etc/ld.so.cache", "etc/ld.so.conf", "etc/ld.so.conf.d/*", "etc/ld.so.preload",  # the loader's view
    "etc/os-release", "usr/lib/os-release",
    "*.dist-info/METADATA", "*.egg-info/PKG-INFO", "*.egg-info",  # Python packages' versions
    "*/torch/version.py",  # torch's CUDA build
    "*/library/*/DESCRIPTION", "*/site-library/*/DESCRIPTION",  # R packages' versions
    "*/R/etc/Renviron", "*/R/etc/ldpaths",  # where R looks for libraries
    "*include/cudnn_version*.h",  # cuDNN's version
    "*cuda*/version.json", "*cuda*/version.txt",  # the CUDA toolkit's version
)
_METADATA = re.compile("|".join(translate(p) for p in METADATA_PATTERNS))
# A path can match a pattern only if it ends with the pattern's literal tail (or, tail-less, starts with
# its literal head): two C-level string tests spare the regex for almost every file of an image.
_LITERAL_ENDS = [(parts[0], parts[-1]) for parts in (re.split(r"[*?[]", p) for p in METADATA_PATTERNS)]
_TAILS = tuple(tail for _head, tail in _LITERAL_ENDS if tail)
_HEADS = tuple(head for head, tail in _LITERAL_ENDS if not tail)
_ELF_HEAD = 20  # e_ident (16) + e_type (2)
_ELF_MIN_SIZE = 52  # the smallest ELF header: anything shorter is no object
_ELF_OBJECT_TYPES = (2, 3)  # ET_EXEC, ET_DYN: not .o files or core dumps
_WHITEOUT, _OPAQUE = ".wh.", ".wh..wh..opq"
_COPY_CHUNK = 1 << 30
_STAGED_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_RATIO = 100


@dataclass
class Tally:
    """What was left out, over all layers, for the Source's notes."""

    skipped: int = 0
    skipped_bytes: int = 0
    written: int = 0  # bytes of kept files, against the run's disk budget
    special: list[str] = field(default_factory=list)
    unlinked: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)  # layers are read in parallel threads

    def notes(self, everything: bool) -> list[str]:
        notes = []
        if self.skipped:
            notes.append(f"{_count(self.skipped, 'file')} ({human_size(self.skipped_bytes)}) not materialised: "
                         "neither ELF objects nor metadata the scan reads")
        if self.special:
            notes.append(f"{_count(len(self.special), 'device file or FIFO', 'device files or FIFOs')} skipped "
                         f"(e.g. {self.special[0]})")
        if self.unlinked and everything:
            notes.append(f"{_count(len(self.unlinked), 'hard link')} skipped: the target is not in the image "
                         f"(e.g. {self.unlinked[0]})")
        return notes


@dataclass
class Staged:
    """One layer read: what it holds, in member order, and its description for Source.layers."""

    number: int
    ops: list = field(default_factory=list)  # (kind, parts, argument)
    description: dict = field(default_factory=dict)
    attempt: int = 0  # 1: read again through tarfile (staged names must not clash with the first try's)
    skipped: int = 0  # counted into the Tally once the layer is read, so a second try counts once
    skipped_bytes: int = 0
    special: list = field(default_factory=list)
    verify: "Callable[[threading.Event], None] | None" = None  # the digest check, when it is left for later


def read_layer(layer: LayerRef, number: int, stage_fd: int, *, everything: bool, tally: Tally,
               stop: threading.Event, stand_ins: "StandIns | None" = None) -> Staged:
    """Read one layer blob once (hashed and inflated on the way), writing the files kept into the
    staging directory `stage_fd` as NUMBER.SEQ; checked against its digest at the end. With
    `stand_ins`, an ELF object of an uncompressed layer is not copied: its file is a stand-in for
    its bytes in the blob (rcompat/standins.py)."""
    blob = layer.blob
    if blob.size == 0:
        raise ImageError("is empty (0 bytes): truncated, or not a layer")
    compression = compression_of(blob)
    window = Window(blob)
    stream = inflated(window, compression)
    # What one kept member may claim: a gzip layer of zeros inflates 1000-fold, no real library does 100-fold.
    ceiling = max(64 << 20, _MAX_RATIO * blob.size) if compression else blob.size
    staged = Staged(number)
    try:
        if compression:
            try:
                _stage(staged, _streamed(stream), stage_fd, everything, tally, ceiling, stop, None)
            except _Restart:
                window = Window(blob)
                stream = inflated(window, compression)
                staged = Staged(number, attempt=1)
                _stage(staged, _tarfile_streamed(stream), stage_fd, everything, tally, ceiling, stop, None)
            zeros_to_end(stream)  # read to the end: gzip's CRC checked, only zeros after the tar
            if compression == "zstd":
                check_zstd_frames(blob)
        else:
            _stage(staged, _in_place(stream, blob), stage_fd, everything, tally, ceiling, stop, stand_ins)
    except (tarfile.TarError, *inflate_errors()) as exc:
        raise ImageError(f"truncated or corrupt ({' '.join(str(exc).split()) or type(exc).__name__})") from None
    if stand_ins is not None and not compression:
        staged.verify = window.check_digest  # the blob's hash, left to run beside the scan (source.Verifier)
    else:
        window.check_digest()
    with tally.lock:
        tally.skipped += staged.skipped
        tally.skipped_bytes += staged.skipped_bytes
        tally.special += staged.special
    staged.description = {"layer": blob.name, "size": blob.size, "members": len(staged.ops), "taken": 0,
                          "media_type": layer.media_type or f"tar{'+' + compression if compression else ''}"}
    return staged


def _stage(staged: Staged, entries, stage_fd: int, everything: bool, tally: Tally, ceiling: int,
           stop: threading.Event, stand_ins: "StandIns | None") -> None:
    ops = staged.ops
    for member, head, fill, place in entries:  # place: (fd, offset) of data lying in place in the blob
        if stop.is_set():  # another layer failed, or Ctrl-C: stop reading this one
            raise ImageError("stopped")
        try:
            parts = member_parts(member.name)
            if not parts:
                ops.append(("none", parts, None))
            elif parts[-1].startswith(_WHITEOUT):
                ops.append(("wh", parts, None))
            elif member.isdir():
                ops.append(("dir", parts, None))
            elif member.issym():
                ops.append(("sym", parts, member.linkname))
            elif member.islnk():
                ops.append(("hard", parts, (member_parts(member.linkname, "hard link target"), member.linkname)))
            elif member.isreg() and (everything or _is_metadata(rel(parts)) or _is_elf_object(member, head)):
                _check_claim(member, ceiling, tally)
                name = f"{staged.number}.{staged.attempt}.{len(ops)}"
                fd = os.open(name, _STAGED_FLAGS, (member.mode & 0o755) | 0o600, dir_fd=stage_fd)
                try:
                    if stand_ins is not None and place is not None and not everything and \
                            not _is_metadata(rel(parts)):  # an ELF object: read from the blob, never copied
                        stand_ins.make(fd, *place, member.size)
                    else:
                        fill(fd)
                finally:
                    os.close(fd)
                ops.append(("file", parts, name))
            else:
                ops.append(("hide", parts, None))  # hides what a lower layer had there
                if member.isreg():
                    staged.skipped += 1
                    staged.skipped_bytes += member.size
                else:
                    staged.special.append(rel(parts))
        except OSError as exc:  # ENAMETOOLONG, ENOSPC, EFBIG: named by member, in one short line
            raise ImageError(f"member {short_name(member.name)}: {exc.strerror or type(exc).__name__}") from None


def merge_layer(writer: RootWriter, staged: Staged, stage_fd: int, tally: Tally, everything: bool) -> int:
    """Replay one read layer onto writer's root, in member order; how many members were kept (files,
    symlinks, hard links)."""
    touched: set[str] = set()  # what this layer wrote, with every ancestor: whiteouts spare it
    taken = 0
    for kind, parts, argument in staged.ops:
        try:
            if kind == "none":
                continue
            if kind == "wh":
                _whiteout(writer, parts, touched)
                continue
            _touch(touched, parts)
            if kind == "dir":
                writer.mkdir(parts, make=everything)
            elif kind == "sym":
                writer.symlink(parts, argument)
                taken += 1
            elif kind == "hard":
                linked = writer.hardlink(parts, argument[0])
                taken += linked
                if not linked:
                    tally.unlinked.append(f"{rel(parts)} -> {argument[1]}")
            elif kind == "file":
                writer.move_in(parts, stage_fd, argument)
                taken += 1
            else:
                writer.remove(parts)
        except OSError as exc:
            raise ImageError(f"member {short_name(rel(parts))}: {exc.strerror or type(exc).__name__}") from None
    return taken


def _check_claim(member: tarfile.TarInfo, ceiling: int, tally: Tally) -> None:
    """Refuse, before anything is written, a member the layer cannot really hold or the run cannot afford."""
    from rcompat.inputs import limit_bytes, size_problem

    if member.issparse():  # 20 KB of tar can claim terabytes of holes; no image writer makes these
        raise ImageError(f"member {short_name(member.name)} is a sparse file of {human_size(member.size)}, "
                         "which no image writer makes")
    if member.size > ceiling:
        raise ImageError(f"member {short_name(member.name)} claims {human_size(member.size)}, more than "
                         f"{_MAX_RATIO} times its compressed layer: a decompression bomb")
    with tally.lock:
        tally.written += member.size
        written = tally.written
    if written > limit_bytes("disk"):
        raise ImageError(f"member {short_name(member.name)}: the image's kept files come to "
                         f"{size_problem(written, 'disk')}")


def short_name(name: str, keep: int = 80) -> str:
    """A member name fit for a one-line message: a 5 KB name is cut, its length said."""
    text = repr(name)
    return text if len(text) <= keep else f"{text[:keep]}… ({len(name)} characters)"


def _touch(touched: set[str], parts: tuple[str, ...]) -> None:
    for depth in range(len(parts), 0, -1):
        path = rel(parts[:depth])
        if path in touched:
            return  # so are its ancestors
        touched.add(path)


def _whiteout(writer: RootWriter, parts: tuple[str, ...], touched: set[str]) -> None:
    if parts[-1] == _OPAQUE:
        writer.clear_dir(parts[:-1], touched)
        return
    hidden = parts[-1][len(_WHITEOUT):]
    if hidden in ("", ".", ".."):
        raise ImageError(f"whiteout {rel(parts)!r} names no entry")
    victim = parts[:-1] + (hidden,)
    if rel(victim) not in touched:
        writer.remove(victim)


def _is_metadata(path: str) -> bool:
    return (path.endswith(_TAILS) or path.startswith(_HEADS)) and _METADATA.fullmatch(path) is not None


def _is_elf_object(member: tarfile.TarInfo, head) -> bool:
    if member.size < _ELF_MIN_SIZE:
        return False
    data = head()
    if data[:4] != b"\x7fELF" or len(data) < _ELF_HEAD:
        return False
    return int.from_bytes(data[16:18], "little" if data[5] == 1 else "big") in _ELF_OBJECT_TYPES


def _in_place(window: io.BufferedReader, blob: Blob):
    """Members of an uncompressed layer: headers walked (in bulk where rcompat.upgrade_scan.image.tarheaders can),
    data read once, if kept, straight from the file."""
    try:
        members = read_headers(blob.fd, blob.offset, blob.size)
    except Unsupported:
        yield from _tarfile_in_place(window, blob)
        return
    for member in members:
        yield (member, *_at(blob, member), (blob.fd, blob.offset + member.offset_data))


def _tarfile_in_place(window: io.BufferedReader, blob: Blob):
    tar = tarfile.open(fileobj=window, mode="r:")
    for member in tar:
        if member.issparse():
            yield from _one_streamed(tar, member)
        else:
            yield (member, *_at(blob, member), (blob.fd, blob.offset + member.offset_data))
    expect_zeros(blob.fd, blob.offset, tar.offset, blob.size)


def _at(blob: Blob, member: tarfile.TarInfo):
    """Sniffing and copying of a member whose data lies in place in the blob."""
    start = blob.offset + member.offset_data

    def head() -> bytes:
        return os.pread(blob.fd, _ELF_HEAD, start)

    def fill(fd: int) -> None:
        _copy_range(blob.fd, fd, start, member.size)

    return head, fill


def _streamed(stream: io.BufferedReader):
    """Members of a compressed layer, read in one pass (tarheaders.stream_members; tarfile where it
    cannot: then the layer is read again from its start, before anything of it was merged)."""
    try:
        for member, head, fill in stream_members(stream, _ELF_HEAD):
            yield member, head, fill, None
    except Unsupported:
        raise _Restart() from None


def _tarfile_streamed(stream: io.BufferedReader):
    tar = tarfile.open(fileobj=stream, mode="r|")
    for member in tar:
        yield from _one_streamed(tar, member)


class _Restart(Exception):
    """A compressed layer whose headers need tarfile: read it again, through tarfile."""


def _one_streamed(tar: tarfile.TarFile, member: tarfile.TarInfo):
    reader = tar.extractfile(member) if member.isreg() else None
    first = b""

    def head() -> bytes:
        nonlocal first
        first = first or reader.read(_ELF_HEAD)
        return first

    def fill(fd: int) -> None:
        with open(fd, "wb", closefd=False) as out:
            out.write(head())
            shutil.copyfileobj(reader, out, 1 << 20)

    yield member, head, fill, None


def _copy_range(src: int, dst: int, offset: int, size: int) -> None:
    done = 0
    try:
        while done < size:
            n = os.copy_file_range(src, dst, min(size - done, _COPY_CHUNK), offset + done)
            if n == 0:
                raise ImageError("a member's data ends early: truncated layer")
            done += n
    except OSError:  # no copy_file_range between these files: copy through user space
        while done < size:
            chunk = os.pread(src, min(size - done, 1 << 20), offset + done)
            if not chunk:
                raise ImageError("a member's data ends early: truncated layer") from None
            done += os.write(dst, chunk)


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def human_size(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"
