"""A layer blob read once: its bytes hashed as they are read (the digest checked at the end) and, for a
compressed layer, inflated on the way, in bounded pieces (no layer is ever held whole in memory).

gzip is inflated with the fastest binding installed, measured on this project's benchmark machine on a
180 MB layer of shared libraries (benchmarks/bench_image_read.py): zlib-ng 0.41 s, ISA-L (python-isal)
0.74 s, the standard zlib 0.88 s; `gzip -dc` 1.96 s. Measured again on the benchmark's 880 MB of gzip
layers (CPU time, best of 2): zlib 2.64 s, zlib-ng 1.33 s, ISA-L 1.17 s (isal 1.9.1: 14% less than
zlib-ng on layers of libraries, the same on incompressible data), `gzip -dc` 6.82 s; the whole scan
showed no difference beyond noise, so zlib-ng (already an extra) stays first. Each is optional
(`pip install rcompat[images]`); the standard zlib is the fallback. zstd layers (skopeo --dest-compress-format zstd, podman push
--compression-format zstd, containerd) need the `zstandard` package, imported only when one is met.
All of these release the GIL while inflating and hashing, so layers inflate in parallel threads.
"""
from __future__ import annotations

import io
import os
import threading

from rcompat.errors import ImageError
from rcompat.mapguard import guard
from rcompat.standins import Extent, ExtentRaw, map_extent
from rcompat.upgrade_scan.image.manifest import Blob, check_digest, new_hasher

MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"))
_CHUNK = 1 << 20
_HASH_WINDOW = 64 << 20
_MAX_ZSTD_WINDOW = 1 << 31  # zstd's own default limit for a frame's window (what `zstd -d` accepts)


def compression_of(blob: Blob) -> str:
    head = os.pread(blob.fd, 6, blob.offset)
    return next((c for magic, c in MAGIC if head.startswith(magic)), "")


def gzip_module():
    """The zlib-compatible module that inflates fastest here (see the module doc)."""
    for name in ("zlib_ng.zlib_ng", "isal.isal_zlib"):
        try:
            return __import__(name, fromlist=["decompressobj"])
        except ImportError:
            continue
    import zlib

    return zlib


def gzip_library() -> str:
    return {"zlib_ng.zlib_ng": "zlib-ng", "isal.isal_zlib": "isal"}.get(gzip_module().__name__, "zlib")


class Window(ExtentRaw):
    """A read-only, seekable view of `blob.size` bytes at `blob.offset` of a descriptor, hashing what is
    read in order; check_digest() hashes the rest (skipped, or read in place by pread) and compares."""

    def __init__(self, blob: Blob) -> None:
        super().__init__(Extent(blob.fd, blob.offset, blob.size))
        self._blob = blob
        guard(blob.fd, blob.name)  # the blob is mapped to be hashed: a truncation meanwhile is reported, not a SIGBUS
        self._hasher, self._hashed = new_hasher(blob.digest), 0

    def check_digest(self, stop: "threading.Event | None" = None) -> None:
        """Hash what was not read in order (all of an uncompressed layer: its headers and members are
        read by offset), then compare. `stop` set: give up with ImageError("stopped")."""
        if self._hasher is None:
            return
        self._hash_upto(self._blob.size, stop)
        check_digest(self._hasher, b"", self._blob.digest, "")

    def _hash_upto(self, end: int, stop: "threading.Event | None" = None) -> None:
        # From the page cache mapped in 64 MB windows, one hashlib call each (it lets go of the GIL for
        # the whole window): run beside the scan's Python thread, 1 MB reads each waited up to the GIL's
        # 5 ms switch interval to take it back, and hashing ran 6-8 times slower (1.5 GB/s alone here).
        fd = self._blob.fd
        while self._hashed < end:
            if stop is not None and stop.is_set():
                raise ImageError("stopped")
            start = self._blob.offset + self._hashed
            length = min(end - self._hashed, _HASH_WINDOW)
            try:
                mapping, at = map_extent(Extent(fd, start, length))
            except ValueError:  # the file is shorter than the blob
                raise ImageError("ends early: truncated layer") from None
            except OSError:  # a file system that cannot map it: read it instead
                data = os.pread(fd, length, start)
                if len(data) < length:
                    raise ImageError("ends early: truncated layer") from None
                self._hasher.update(data)
            else:
                try:
                    with memoryview(mapping) as whole, whole[at:] as window:
                        self._hasher.update(window)
                finally:
                    mapping.close()
            self._hashed += length

    def readinto(self, buffer) -> int:
        start = self.tell()
        n = super().readinto(buffer)
        if n and self._hasher is not None and self._hashed == start:  # read in order: hashed on the way
            with memoryview(buffer) as view:
                self._hasher.update(view[:n])
            self._hashed += n
        return n


class Gunzip(io.RawIOBase):
    """The inflated bytes of a gzip stream (concatenated members too), CRC and length checked by zlib."""

    def __init__(self, raw: io.RawIOBase) -> None:
        self._raw, self._zlib = raw, gzip_module()
        self._inflater = self._zlib.decompressobj(31)
        self._pending = b""  # compressed input not yet given to the inflater
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._done:
            if not self._pending:
                self._pending = self._inflater.unconsumed_tail or self._raw.read(_CHUNK)
                if not self._pending:
                    if not self._inflater.eof:
                        raise ImageError("truncated or corrupt (the gzip stream ends early)")
                    self._done = True
                    break
            data = self._inflater.decompress(self._pending, len(buffer))
            self._pending = self._inflater.unconsumed_tail
            if self._inflater.eof:
                rest = self._inflater.unused_data
                if rest.strip(b"\0"):  # another gzip member follows
                    self._inflater = self._zlib.decompressobj(31)
                    self._pending = rest
            if data:
                buffer[:len(data)] = data
                return len(data)
        return 0


def inflated(window: Window, compression: str) -> io.BufferedReader:
    """The tar bytes of a layer read through `window`."""
    if compression == "gzip":
        return io.BufferedReader(Gunzip(io.BufferedReader(window, _CHUNK)), _CHUNK)
    if compression == "zstd":
        try:
            import zstandard
        except ImportError:
            raise ImageError("is zstd-compressed, and reading it needs the zstandard package: "
                             "pip install 'rcompat[images]' (or zstandard)") from None
        reader = zstandard.ZstdDecompressor(max_window_size=_MAX_ZSTD_WINDOW).stream_reader(
            io.BufferedReader(window, _CHUNK), read_size=_CHUNK, read_across_frames=True, closefd=False)
        return io.BufferedReader(reader, _CHUNK)
    if compression:
        raise ImageError(f"is {compression}-compressed; rcompat reads uncompressed, gzip and zstd layers "
                         "(what docker, podman, skopeo and containerd write): re-save the image with one of those")
    return io.BufferedReader(window, _CHUNK)


def inflate_errors() -> tuple:
    """The exceptions a damaged compressed stream raises, whichever library inflates it."""
    import zlib

    errors = [zlib.error, EOFError]
    module = gzip_module()
    if module is not zlib:
        errors.append(module.error)
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(errors)


def check_zstd_frames(blob: Blob) -> None:
    """Walk the zstd frames of `blob` by their block headers (RFC 8878 section 3.1): the zstandard
    stream reader ends quietly at a frame cut short, so a truncated layer would read as a shorter one."""
    pos, end = blob.offset, blob.offset + blob.size

    def take(n: int) -> bytes:
        nonlocal pos
        data = os.pread(blob.fd, n, pos)
        if len(data) < n:
            raise ImageError("truncated or corrupt (a zstd frame is cut short)")
        pos += n
        return data

    while pos < end:
        magic = int.from_bytes(take(4), "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:  # a skippable frame
            pos += int.from_bytes(take(4), "little")
            continue
        if magic != 0xFD2FB528:
            raise ImageError("truncated or corrupt (data after the last zstd frame)")
        descriptor = take(1)[0]
        single_segment = (descriptor >> 5) & 1
        pos += (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3] \
            + ((1 if single_segment else 0), 2, 4, 8)[descriptor >> 6]
        while True:
            header = int.from_bytes(take(3), "little")
            kind, size = (header >> 1) & 3, header >> 3
            if kind == 3:
                raise ImageError("truncated or corrupt (a zstd block of the reserved type)")
            pos += 1 if kind == 1 else size
            if header & 1:
                break
        if (descriptor >> 2) & 1:
            take(4)  # the content checksum, which the reader verified
    if pos > end:
        raise ImageError("truncated or corrupt (a zstd frame is cut short)")
