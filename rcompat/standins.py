"""Stand-ins: files of a temporary image root whose bytes stay where they are, in an uncompressed
layer of the image itself, instead of being copied out.

Copying the ELF objects out of two uncompressed torch images wrote 2.4 GB (of their 3.7 GB) to the
temporary root, in system time and disk writes, for a scan that reads a small part of each object (its
headers, dynamic section and symbol tables). So the image reader (rcompat.upgrade_scan.image.layers)
makes, for such a member, a sparse file of the member's size holding only a random token, and registers
here where the bytes are (a descriptor of the image file, an offset, a size). Every path, link,
directory and size of the root is real, so the resolver and the walks see the image as it is;
rcompat.inputs opens a registered stand-in as a reader of the member's bytes, and the ELF reader maps
them from the image file. A stand-in is known by its inode *and* its token, so an inode that a whiteout
freed and a later file reused is never taken for it. Anything that reads a stand-in without
rcompat.inputs sees the token and zeros: never an ELF object, so never a quiet wrong answer.
"""
from __future__ import annotations

import _thread
import io
import os

TOKEN_SIZE = 16

_registry: "dict[tuple[int, int], tuple[bytes, Extent]]" = {}  # (st_dev, st_ino) -> (token, extent)
_lock = _thread.allocate_lock()  # not threading, dataclasses: rcompat.inputs imports this module at start-up


class Extent:
    """`size` bytes at `offset` of the open file `fd` (owned by the StandIns that registered it)."""

    __slots__ = ("fd", "offset", "size")

    def __init__(self, fd: int, offset: int, size: int) -> None:
        self.fd, self.offset, self.size = fd, offset, size


def extent_of(fd: int, st: "os.stat_result | None" = None) -> "Extent | None":
    """The extent whose stand-in `fd` is open on; None for any other file (the common case: one dict
    lookup, and none at all while no image is open)."""
    if not _registry:
        return None
    st = st if st is not None else os.fstat(fd)
    entry = _registry.get((st.st_dev, st.st_ino))
    if entry is None or entry[1].size != st.st_size or os.pread(fd, TOKEN_SIZE, 0) != entry[0]:
        return None
    return entry[1]


class ExtentRaw(io.RawIOBase):
    """A read-only, seekable view of an extent, read by pread (no shared file position: threads may
    read one descriptor at once)."""

    def __init__(self, extent: Extent) -> None:
        self._extent, self._pos = extent, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self._extent.size - self._pos)
        if want <= 0:
            return 0
        with memoryview(buffer) as view:
            n = os.preadv(self._extent.fd, [view[:want]], self._extent.offset + self._pos)
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._extent.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def fileno(self) -> int:  # the image file's descriptor would let a caller map all of it
        raise io.UnsupportedOperation("a stand-in has no descriptor of its own; map it with map_extent")


class ExtentReader(io.BufferedReader):
    """A stand-in opened: reads (and seeks in) the member's bytes; `extent` says where they are."""

    def __init__(self, extent: Extent, name: str) -> None:
        super().__init__(ExtentRaw(extent), 1 << 16)
        self.extent, self.stand_in = extent, name


def map_extent(extent: Extent) -> "tuple[mmap.mmap, int]":
    """The extent's bytes mapped read-only: (the mapping, to close; where the extent starts in it, since
    a mapping starts on a granularity boundary). The extent is mapping[start:start + extent.size]."""
    import mmap

    start = extent.offset % mmap.ALLOCATIONGRANULARITY
    mapping = mmap.mmap(extent.fd, start + extent.size, access=mmap.ACCESS_READ, offset=extent.offset - start)
    return mapping, start


class StandIns:
    """The stand-ins one image source made, forgotten (and its descriptors closed) by close()."""

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}  # the image reader's descriptor -> our duplicate of it
        self._keys: list[tuple[int, int]] = []
        self._lock = _thread.allocate_lock()

    def make(self, fd: int, source_fd: int, offset: int, size: int) -> None:
        """Turn the new, empty file `fd` into the stand-in of `size` bytes at `offset` of `source_fd`."""
        if size < TOKEN_SIZE:
            raise ValueError(f"a stand-in needs at least {TOKEN_SIZE} bytes")
        token = os.urandom(TOKEN_SIZE)
        os.ftruncate(fd, size)
        os.pwrite(fd, token, 0)
        st = os.fstat(fd)
        with self._lock:
            own = self._fds.get(source_fd)
            if own is None:
                own = self._fds[source_fd] = os.dup(source_fd)
            self._keys.append((st.st_dev, st.st_ino))
        with _lock:
            _registry[(st.st_dev, st.st_ino)] = (token, Extent(own, offset, size))

    def close(self) -> None:
        with _lock:
            for key in self._keys:
                entry = _registry.get(key)
                if entry is not None and entry[1].fd in self._fds.values():
                    del _registry[key]
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            self._keys.clear()

    def __enter__(self) -> "StandIns":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
