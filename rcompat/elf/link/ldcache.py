"""Read /etc/ld.so.cache (glibc's binary format) without running ldconfig.

Two layouts exist (glibc elf/cache.c, sysdeps/generic/dl-cache.h):
- old: "ld.so-1.7.0", uint32 nlibs, nlibs × {int32 flags, uint32 key, uint32 value}; string offsets
  count from the end of that entry array;
- new: "glibc-ld.so.cache1.1", uint32 nlibs, uint32 len_strings, uint8 flags, 3 pad, uint32
  extension_offset, 3 × uint32 unused, then nlibs × {int32 flags, uint32 key, uint32 value,
  uint32 osversion, uint64 hwcap}; string offsets count from the start of the new header.
glibc ≥ 2.32 writes only the new one; older ones wrote the old layout followed by the new one
(aligned to 8). Entry flags: low byte the type (3 = ELF libc6), next byte the ABI (0x0300 x86-64
lib64, 0x0a00 aarch64 lib64, 0x0800 x32, 0 = plain 32-bit), which is how ld.so skips entries of
the wrong class.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rcompat.elf.errors import ElfError

DEFAULT_CACHE = "/etc/ld.so.cache"
OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
FLAG_TYPE_MASK, FLAG_ELF_LIBC6 = 0x00FF, 0x0003
FLAG_REQUIRED_MASK = 0xFF00
# e_machine (+ class) -> the ABI byte ld.so requires (glibc's _DL_CACHE_DEFAULT_ID per arch).
CACHE_ABI = {(62, 64): 0x0300, (183, 64): 0x0A00, (62, 32): 0x0800, (3, 32): 0x0000, (21, 64): 0x0500,
             (22, 64): 0x0400, (43, 64): 0x0100, (243, 64): 0x1000, (40, 32): 0x0900}


@dataclass(frozen=True)
class CacheEntry:
    soname: str
    path: str
    flags: int
    hwcap: int = 0

    @property
    def abi(self) -> int:
        return self.flags & FLAG_REQUIRED_MASK

    def matches(self, machine: int, bits: int) -> bool:
        wanted = CACHE_ABI.get((machine, bits))
        if (self.flags & FLAG_TYPE_MASK) != FLAG_ELF_LIBC6:
            return False
        return wanted is None or self.abi == wanted


class LdCache:
    def __init__(self, entries: list[CacheEntry], path: str, layout: str) -> None:
        self.entries = entries
        self.path = path
        self.layout = layout
        self._by_name: dict[str, list[CacheEntry]] = {}
        for e in entries:
            self._by_name.setdefault(e.soname, []).append(e)

    def lookup(self, soname: str, machine: int | None = None, bits: int | None = None) -> list[CacheEntry]:
        """Entries for `soname` in cache order, those of the wrong class/arch left out when given."""
        found = self._by_name.get(soname, [])
        if machine is None or bits is None:
            return list(found)
        return [e for e in found if e.matches(machine, bits)]

    def __len__(self) -> int:
        return len(self.entries)


@lru_cache(maxsize=4)
def load_cache(path: str = DEFAULT_CACHE) -> LdCache:
    """read_cache, kept per path for the process (the host's cache does not change under a run)."""
    return read_cache(path)


def read_cache(path: str = DEFAULT_CACHE) -> LdCache:
    """The parsed cache; an absent file is an empty cache (layout "absent": musl, containers), a
    corrupt one an ElfError."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return LdCache([], path, "absent")
    except OSError as exc:
        raise ElfError(path, f"cannot read the loader cache: {exc.strerror or exc}") from None
    return parse_cache(data, path)


def parse_cache(data: bytes, path: str = DEFAULT_CACHE) -> LdCache:
    if data.startswith(NEW_MAGIC):
        return LdCache(_parse_new(data, 0, path), path, "new")
    if data.startswith(OLD_MAGIC):
        (nlibs,) = _unpack("<I", data, 12, path)
        old_end = 16 + nlibs * 12
        if old_end > len(data):
            raise ElfError(path, f"truncated loader cache: {nlibs} old-format entries", 12)
        new_at = (old_end + 7) & ~7
        if data[new_at:new_at + len(NEW_MAGIC)] == NEW_MAGIC:
            return LdCache(_parse_new(data, new_at, path), path, "old+new")
        return LdCache(_parse_old(data, nlibs, old_end, path), path, "old")
    raise ElfError(path, "not a glibc loader cache (unknown magic)", 0)


def _parse_new(data: bytes, base: int, path: str) -> list[CacheEntry]:
    nlibs, _len_strings = _unpack("<II", data, base + 20, path)
    start = base + 48
    if start + nlibs * 24 > len(data):
        raise ElfError(path, f"truncated loader cache: {nlibs} entries do not fit", base + 20)
    out = []
    for i in range(nlibs):
        flags, key, value, _osv, hwcap = struct.unpack_from("<iIIIQ", data, start + i * 24)
        out.append(CacheEntry(_string(data, base + key, path), _string(data, base + value, path), flags, hwcap))
    return out


def _parse_old(data: bytes, nlibs: int, strings: int, path: str) -> list[CacheEntry]:
    out = []
    for i in range(nlibs):
        flags, key, value = struct.unpack_from("<iII", data, 16 + i * 12)
        out.append(CacheEntry(_string(data, strings + key, path), _string(data, strings + value, path), flags))
    return out


def _unpack(fmt: str, data: bytes, offset: int, path: str) -> tuple:
    if offset + struct.calcsize(fmt) > len(data):
        raise ElfError(path, "truncated loader cache header", offset)
    return struct.unpack_from(fmt, data, offset)


def _string(data: bytes, offset: int, path: str) -> str:
    if not 0 <= offset < len(data):
        raise ElfError(path, "loader cache string offset outside the file", offset)
    end = data.find(b"\0", offset)
    return data[offset:end if end >= 0 else len(data)].decode("utf-8", "replace")
