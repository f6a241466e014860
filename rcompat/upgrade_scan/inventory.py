"""The ELF objects of one root filesystem, and which of them OLD and NEW hold with identical content.

A root is walked once; a regular file named like a shared object or marked executable is an ELF
object when its first four bytes are the ELF magic (symlinks are names, not objects: the resolver
follows them). Two objects at the same in-root path are
identical when their sizes match and then their bytes do: sizes are compared first, so only same-size
candidates are read, and hard links (the same inode) need no reading at all.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from rcompat.elf.read.files import is_elf_file

# Pseudo and volatile file systems of a live machine: never part of an installed stack, and walking
# /proc or /sys would read forever. Image roots hold none of them.
HOST_SKIP = ("proc", "sys", "dev", "run", "tmp", "var/tmp", "var/cache", "var/lib/docker", "var/lib/containers",
             "mnt", "media", "lost+found", "snap", "boot")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ElfFile:
    inside: str  # the in-root path ("/usr/lib/x86_64-linux-gnu/libc.so.6")
    host: str  # where the bytes are on this machine
    size: int
    file_id: tuple[int, int]  # (st_dev, st_ino)


@dataclass
class Inventory:
    objects: dict[str, ElfFile]  # in-root path -> object

    def __len__(self) -> int:
        return len(self.objects)


def inventory(root_dir: str, is_host: bool = False) -> Inventory:
    """Every ELF object under `root_dir` (regular files only), keyed by in-root path."""
    root_dir = os.path.realpath(root_dir)
    skip = {os.path.join(root_dir, p) for p in HOST_SKIP} if is_host else set()
    objects: dict[str, ElfFile] = {}
    for directory, subdirs, files in os.walk(root_dir):
        if skip:
            subdirs[:] = [d for d in subdirs if os.path.join(directory, d) not in skip]
        for name in files:
            host = os.path.join(directory, name)
            try:
                st = os.lstat(host)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size < 64 or not _may_be_object(name, st.st_mode):
                continue
            if not is_elf_file(host):
                continue
            inside = "/" + os.path.relpath(host, root_dir) if root_dir != "/" else host
            objects[inside] = ElfFile(inside, host, st.st_size, (st.st_dev, st.st_ino))
    return Inventory(objects)


def object_at(host: str, inside: str) -> ElfFile | None:
    """The ELF object at host path `host` (in-root path `inside`), also where the inventory did not
    look (this machine's /tmp, /var/tmp: a --carry the user names); None when there is none."""
    try:
        st = os.stat(host)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or not is_elf_file(host):
        return None
    return ElfFile(inside, os.path.realpath(host), st.st_size, (st.st_dev, st.st_ino))


def _may_be_object(name: str, mode: int) -> bool:
    """Only a file named like a shared object (libx.so, libx.so.1.2, x.cpython-311-x86_64-linux-gnu.so)
    or marked executable is opened: ld.so maps nothing else, and opening every data file of a machine's
    / (sources, wheels, models) costs minutes."""
    return ".so" in name or bool(mode & 0o111)


def same_content(a: ElfFile, b: ElfFile) -> bool:
    """Byte-identical? Size first; the same inode without reading; else read both, stop at the first
    differing chunk."""
    if a.size != b.size:
        return False
    if a.file_id == b.file_id:
        return True
    from rcompat.inputs import InputRefused, open_mapped

    try:  # through rcompat.inputs: an image's member left in place is read from the image (rcompat/standins.py)
        with open_mapped(a.host) as fa, open_mapped(b.host) as fb:
            while True:
                chunk = fa.read(_CHUNK)
                if chunk != fb.read(_CHUNK):
                    return False
                if not chunk:
                    return True
    except (OSError, InputRefused):
        return False


def identical_objects(old: Inventory, new: Inventory) -> dict[str, tuple[ElfFile, ElfFile]]:
    """In-root path -> (OLD's file, NEW's file) for every object both roots hold with the same bytes."""
    out = {}
    for inside, a in old.objects.items():
        b = new.objects.get(inside)
        if b is not None and same_content(a, b):
            out[inside] = (a, b)
    return out
