"""The loader cache a root would have after `ldconfig -r ROOT`, built from its /etc/ld.so.conf.

For a root without /etc/ld.so.cache (a minimal image, a test root). Modelled on glibc 2.36
elf/ldconfig.c and readelflib.c:
- /etc/ld.so.conf: `#` starts a comment; `include PATTERN…` reads the files the glob matches (sorted;
  a relative pattern is relative to the including file's directory), all inside the root; `hwcap`
  lines are ignored; any other line is a directory (a `=TYPE` suffix is dropped);
- then the built-in system directories: on a multiarch (Debian/Ubuntu) root /lib/<triplet>,
  /usr/lib/<triplet>, /lib, /usr/lib (as Debian's ldconfig), on a lib64 root /lib64, /usr/lib64;
  a directory named twice is scanned once, at its first place;
- in each directory, files named lib*/ld-* containing ".so" that are ELF shared objects (ET_DYN), by
  their SONAME (the file name without one); the entry is DIR/SONAME (the link ldconfig would make),
  with the class/ABI flags ld.so checks; directories come in order, so the first one wins.
Not modelled: glibc-hwcaps and hwcap subdirectories, libc5/a.out libraries, ldconfig's link updates.

Reading SONAMEs through the ELF reader (which maps each file and parses its section headers) takes
0.18 s for the 942 libraries of this machine's /usr/lib/x86_64-linux-gnu, warm; ldconfig reads only
the program headers and the dynamic segment, and so does `soname_and_kind` here, with struct over a
few reads per file: 0.036 s, 5x less.
"""
from __future__ import annotations

import os
import posixpath
import struct

from rcompat.elf.errors import ElfError
from rcompat.elf.link.ldcache import CACHE_ABI, FLAG_ELF_LIBC6, CacheEntry, LdCache
from rcompat.elf.read.format import DT_SONAME, EHDR_FORMATS, ELF_MAGIC

# Loader defaults per (e_machine, class): multiarch triplet, $PLATFORM, non-multiarch lib dir name.
# Source: glibc sysdeps/*/dl-machine.h (platform), Debian multiarch tuples, `ld.so --help` here.
PLATFORMS = {(62, 64): ("x86_64-linux-gnu", "x86_64", "lib64"), (3, 32): ("i386-linux-gnu", "i686", "lib"),
             (183, 64): ("aarch64-linux-gnu", "aarch64", "lib64"), (62, 32): ("x86_64-linux-gnux32", "x86_64", "libx32"),
             (21, 64): ("powerpc64le-linux-gnu", "ppc64le", "lib64")}
LD_SO_CONF = "/etc/ld.so.conf"
ET_DYN, PT_LOAD, PT_DYNAMIC, DT_STRTAB = 3, 1, 2, 5
MAX_INCLUDE_DEPTH = 16  # ldconfig has no guard: a file including itself would recurse for ever
# Each file is read once: the depth cap alone let a file that includes itself three times be read
# 3^16 times (40 minutes for 56 bytes). ldconfig would read it again, but only adds directories it
# has seen already, so reading it once gives the same directories in the same order.


def conf_dirs(root) -> list[str]:
    """The directories of `root`'s ld.so.conf (includes followed), then the system ones: in-root paths."""
    dirs: list[str] = []
    _read_conf(root, LD_SO_CONF, dirs, 0, set())
    dirs += system_dirs(root)
    return list(dict.fromkeys(d.rstrip("/") or "/" for d in dirs))


def system_dirs(root) -> list[str]:
    triplets = [t for t, _p, _l in PLATFORMS.values() if root.isdir(f"/lib/{t}") or root.isdir(f"/usr/lib/{t}")]
    if triplets:
        return [d for t in triplets for d in (f"/lib/{t}", f"/usr/lib/{t}")] + ["/lib", "/usr/lib"]
    if root.isdir("/usr/lib64") or root.isdir("/lib64"):
        return ["/lib64", "/usr/lib64"]
    return ["/lib", "/usr/lib"]


def _read_conf(root, inside: str, dirs: list[str], depth: int, read: set[str]) -> None:
    from rcompat.errors import RcompatError
    from rcompat.inputs import read_text_input

    name = posixpath.normpath(inside)
    if name in read:
        return
    read.add(name)
    try:
        lines = read_text_input(root.host(inside), "config", errors="replace").splitlines()
    except (OSError, RcompatError):  # absent, unreadable, a loop, a FIFO: ldconfig warns and goes on
        return
    for line in lines:
        line = line.split("#", 1)[0].strip()
        words = line.split()
        if not words:
            continue
        if words[0] == "include" and len(words) > 1:
            if depth < MAX_INCLUDE_DEPTH:
                for pattern in words[1:]:
                    if not pattern.startswith("/"):
                        pattern = posixpath.join(posixpath.dirname(inside), pattern)
                    for match in root.glob(pattern):
                        _read_conf(root, match, dirs, depth + 1, read)
        elif words[0].lower() != "hwcap":
            dirs.append(line.split("=", 1)[0].strip())


def derive_cache(root) -> LdCache:
    """An LdCache equal in content to what `ldconfig -X -r ROOT` would write (layout "derived")."""
    entries: list[CacheEntry] = []
    scanned: set[tuple[int, int]] = set()
    for directory in conf_dirs(root):
        try:
            host_dir = root.host(directory)
            st = os.stat(host_dir)
            names = sorted(e.name for e in os.scandir(host_dir))
        except (OSError, ElfError):
            continue
        if (st.st_dev, st.st_ino) in scanned:  # /usr/lib/<triplet> again through a merged-/usr /lib link
            continue
        scanned.add((st.st_dev, st.st_ino))
        found: dict[tuple[str, int], CacheEntry] = {}
        for name in names:
            if not (name.startswith(("lib", "ld-")) and ".so" in name):
                continue
            entry_path = os.path.join(host_dir, name)
            try:
                path = entry_path
                if os.path.islink(entry_path):  # followed inside the root (the host's own root: realpath)
                    path = os.path.realpath(path) if root.is_host else root.host(posixpath.join(directory, name))
            except ElfError:  # a symlink loop: ldconfig's stat() fails the same way and skips it
                continue
            kind = soname_and_kind(path)
            if kind is None:
                continue
            soname, machine, bits = kind
            soname = _cache_key(name, soname, path != entry_path)
            flags = FLAG_ELF_LIBC6 | CACHE_ABI.get((machine, bits), 0)
            found.setdefault((soname, flags), CacheEntry(soname, posixpath.join(directory, soname), flags))
        entries += found.values()
    return LdCache(entries, root.host(LD_SO_CONF), "derived")


def _cache_key(name: str, soname: str, is_link: bool) -> str:
    """ldconfig's key for directory entry `name`: its SONAME (the file name without one), except for
    the development link (libfoo.so -> libfoo.so.1 with SONAME libfoo.so.1: a symlink whose own
    name ends in .so and starts the SONAME), which is listed under its own name (glibc ldconfig.c
    search_dir compares the link's name, not its target's)."""
    if not soname:
        return name
    if is_link and name.endswith(".so") and soname.startswith(name):
        return name
    return soname


def soname_and_kind(path: str) -> "tuple[str, int, int] | None":
    """(SONAME or "", e_machine, bits) of an ELF shared object, from its program headers and dynamic
    segment; None for anything else (not ELF, not ET_DYN, truncated)."""
    from rcompat.inputs import InputRefused, open_mapped

    try:
        if not os.path.isfile(path):
            return None
        with open_mapped(path) as fh:  # never blocks on a FIFO swapped in after isfile()
            head = fh.read(64)
            if len(head) < 52 or head[:4] != ELF_MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
                return None
            bits, end = (64 if head[4] == 2 else 32), ("<" if head[5] == 1 else ">")
            e_type, machine, _v, _entry, phoff, _sh, _fl, _eh, phentsize, phnum, *_ = struct.unpack_from(
                end + EHDR_FORMATS[bits], head, 16)
            if e_type != ET_DYN:
                return None
            if bits == 64:
                ph_fmt, dyn_fmt = end + "IIQQQQ", end + "qQ"  # type, flags, offset, vaddr, paddr, filesz
            else:
                ph_fmt, dyn_fmt = end + "IIIIIII", end + "iI"  # type, offset, vaddr, paddr, filesz, memsz, flags
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
            segments = []
            for i in range(phnum):
                f = struct.unpack_from(ph_fmt, table, i * phentsize)
                p_type, offset, vaddr, filesz = (f[0], f[2], f[3], f[5]) if bits == 64 else (f[0], f[1], f[2], f[4])
                segments.append((p_type, offset, vaddr, filesz))
            dynamic = next((s for s in segments if s[0] == PT_DYNAMIC), None)
            if dynamic is None:
                return "", machine, bits
            fh.seek(dynamic[1])
            raw = fh.read(dynamic[3])
            tags: dict[int, int] = {}
            for tag, value in struct.iter_unpack(dyn_fmt, raw[: len(raw) // struct.calcsize(dyn_fmt)
                                                              * struct.calcsize(dyn_fmt)]):
                if tag == 0:
                    break
                tags.setdefault(tag, value)
            if DT_SONAME not in tags or DT_STRTAB not in tags:
                return "", machine, bits
            strtab = next((off + tags[DT_STRTAB] - va for t, off, va, size in segments
                           if t == PT_LOAD and va <= tags[DT_STRTAB] < va + size), None)
            if strtab is None:
                return None
            fh.seek(strtab + tags[DT_SONAME])
            return fh.read(4096).split(b"\0", 1)[0].decode("utf-8", "replace"), machine, bits
    except (OSError, InputRefused, struct.error, ValueError, OverflowError):
        return None

