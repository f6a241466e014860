"""Writing an image's members under one directory without ever writing outside it.

Member names come from untrusted tarballs. Two rules keep every write inside the root:
- a name is split into components up front; an absolute name or a `..` component is refused
  (`member_parts`), so no name can climb out lexically;
- every directory on the way is opened relative to its parent with O_NOFOLLOW, and files, links and
  symlinks are created relative to that directory's descriptor. A symlink met on the way (a lower
  layer's `lib -> usr/lib` on a merged-/usr Debian) is resolved inside the root, chroot-style, as
  containerd's applier does (archive.applyNaive resolves each member's parent with fs.RootPath), and
  the walk goes on from the root: a member `lib/evil.so` after `lib -> /tmp/outside` lands in
  ROOT/tmp/outside, never outside. Symlinks themselves are created as given, whatever they point at: the
  ELF resolver reads them chroot-style too.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
from collections import OrderedDict
from typing import Callable, Collection

from rcompat.errors import ImageError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN_DIRS_KEPT = 64  # descriptors of recently used directories: most members share a parent

MAX_PATH_DEPTH = 256  # far deeper than any real image; PATH_MAX allows ~2,000
MAX_SYMLINK_HOPS = 40  # Linux's limit on the symlinks one path resolution follows (ELOOP)


def member_parts(name: str, what: str = "member") -> tuple[str, ...]:
    """The components of a tar member name (`./usr/lib/` -> ('usr', 'lib')); ImageError for a name that
    is absolute or climbs out with '..'."""
    shown = repr(name) if len(name) < 80 else f"{name[:80]!r}… ({len(name)} characters)"
    if name.startswith("/"):
        raise ImageError(f"{what} {shown} has an absolute path")
    parts = tuple(p for p in name.split("/") if p not in ("", "."))
    if ".." in parts:
        raise ImageError(f"{what} {shown} climbs out of the root ('..')")
    if len(parts) > MAX_PATH_DEPTH:  # each level is a directory opened in turn: bounded work, no recursion limit
        raise ImageError(f"{what} {shown} is {len(parts)} directories deep; rcompat reads at most {MAX_PATH_DEPTH}")
    return parts


def rel(parts: "tuple[str, ...]") -> str:
    return "/".join(parts)


class RootWriter:
    """Creates, replaces and removes entries under `root`, resolving names one component at a time."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._root_fd = os.open(root, _DIR_FLAGS)
        self._dirs: "OrderedDict[tuple[str, ...], int]" = OrderedDict()
        self._absent: set[tuple[str, ...]] = set()  # no directory there: most skipped members' parents
        self._links: set[tuple[str, ...]] = set()  # symlinks followed: what is cached below them goes stale

    def close(self) -> None:
        self._forget_dirs()
        os.close(self._root_fd)

    def __enter__(self) -> "RootWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- directories ------------------------------------------------------------------------------
    def dir_fd(self, parts: "tuple[str, ...]", create: bool, hops: int = 0) -> "int | None":
        """A descriptor of the directory root/parts (owned by this writer's cache: use it at once, do
        not close it). With `create`, missing directories are made and a file in the way is replaced;
        without it, None when the directory is missing or is a file. A symlink in the way is followed
        inside the root (see the module doc); `hops` counts the symlinks followed so far."""
        if not parts:
            return self._root_fd
        cached = self._dirs.get(parts)
        if cached is not None:
            self._dirs.move_to_end(parts)
            return cached
        if not create and parts in self._absent:
            return None
        self._absent.discard(parts)
        parent = self.dir_fd(parts[:-1], create, hops)
        if parent is None:
            if not self._below_link(parts):  # the symlink's target may appear later
                self._absent.add(parts)
            return None
        name = parts[-1]
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError:
            kind = _kind(parent, name)
            if kind == "dir":
                raise  # a real directory that cannot be opened (permissions): not ours to hide
            if kind == "symlink":
                return self._through_link(parts, os.readlink(name, dir_fd=parent), create, hops)
            if not create:
                if not self._below_link(parts):
                    self._absent.add(parts)
                return None
            if kind == "file":
                os.unlink(name, dir_fd=parent)  # an upper layer's directory hides a lower file
            os.mkdir(name, 0o755, dir_fd=parent)
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        self._dirs[parts] = fd
        if len(self._dirs) > _OPEN_DIRS_KEPT:
            os.close(self._dirs.popitem(last=False)[1])
        return fd

    def _below_link(self, parts: "tuple[str, ...]") -> bool:
        return bool(self._links) and any(parts[:n] in self._links for n in range(1, len(parts)))

    def _through_link(self, parts: "tuple[str, ...]", target: str, create: bool, hops: int) -> "int | None":
        """The directory the symlink at root/parts leads to, resolved inside the root."""
        if hops >= MAX_SYMLINK_HOPS:
            raise ImageError(f"a member's path goes through {rel(parts)!r}, one of more than {MAX_SYMLINK_HOPS} "
                             "symlinks in a row (a loop?)")
        resolved = [] if target.startswith("/") else list(parts[:-1])
        for part in target.split("/"):
            if part == "..":
                if resolved:  # '..' of the root is the root, as in a chroot
                    resolved.pop()
            elif part not in ("", "."):
                resolved.append(part)
        if len(resolved) > MAX_PATH_DEPTH:
            raise ImageError(f"the symlink {rel(parts)!r} points {len(resolved)} directories deep; rcompat "
                             f"reads at most {MAX_PATH_DEPTH}")
        self._links.add(parts)
        return self.dir_fd(tuple(resolved), create, hops + 1)  # cached under the resolved path only

    def mkdir(self, parts: "tuple[str, ...]", make: bool = True) -> None:
        """An upper layer's directory at root/parts: a file or symlink there goes. `make=False` leaves
        the directory itself to be made when something is written in it (most never are)."""
        parent = self.dir_fd(parts[:-1], create=make)
        kind = None if parent is None else _kind(parent, parts[-1])
        if kind not in (None, "dir"):  # a lower layer's file or symlink: the directory replaces it
            os.unlink(parts[-1], dir_fd=parent)
            self._forget_dirs(under=parts)
        if make and kind != "dir":
            os.mkdir(parts[-1], 0o755, dir_fd=parent)
            self._absent.discard(parts)

    # -- entries ----------------------------------------------------------------------------------
    def remove(self, parts: "tuple[str, ...]") -> bool:
        """Remove root/parts, whatever it is (a directory with its contents); False when absent."""
        if not parts:
            raise ImageError("refusing to remove the root itself")
        parent = self.dir_fd(parts[:-1], create=False)
        return parent is not None and self._remove_at(parent, parts)

    def _remove_at(self, parent: int, parts: "tuple[str, ...]") -> bool:
        name = parts[-1]
        kind = _kind(parent, name)
        if kind is None:
            return False
        if kind == "dir":
            _remove_tree(parent, name)
        else:
            os.unlink(name, dir_fd=parent)
        if kind != "file":
            self._forget_dirs(under=parts)
        return True

    def clear_dir(self, parts: "tuple[str, ...]", keep: Collection[str]) -> int:
        """Opaque directory: remove everything under root/parts whose path is not in `keep` (the paths
        the current layer wrote, with their ancestors). Returns how many entries went."""
        cached = self.dir_fd(parts, create=False)
        if cached is None:
            return 0
        fd = os.dup(cached)  # the cache may close its copy while the children are visited
        try:
            removed = 0
            for name in sorted(os.listdir(fd)):
                child = parts + (name,)
                if rel(child) not in keep:
                    removed += self._remove_at(fd, child)
                elif _kind(fd, name) == "dir":
                    removed += self.clear_dir(child, keep)
            return removed
        finally:
            os.close(fd)

    def write_file(self, parts: "tuple[str, ...]", mode: int, fill: Callable[[int], None]) -> None:
        """Create root/parts afresh (replacing what is there) and let `fill(fd)` write its content.
        The owner may always read and write it, so the temporary root can be removed."""
        fd = os.open(parts[-1], _NEW_FILE_FLAGS, (mode & 0o755) | 0o600, dir_fd=self._fresh(parts))
        try:
            fill(fd)
        finally:
            os.close(fd)

    def move_in(self, parts: "tuple[str, ...]", stage_fd: int, name: str) -> None:
        """Put the file `name` of the staging directory `stage_fd` at root/parts (replacing what is
        there): a rename, or a copy where the staging directory is on another file system."""
        parent = self._fresh(parts)
        try:
            os.rename(name, parts[-1], src_dir_fd=stage_fd, dst_dir_fd=parent)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            src = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=stage_fd)
            try:
                mode = os.fstat(src).st_mode & 0o777
                dst = os.open(parts[-1], _NEW_FILE_FLAGS, mode, dir_fd=parent)
                try:
                    with open(src, "rb", closefd=False) as fin, open(dst, "wb", closefd=False) as fout:
                        shutil.copyfileobj(fin, fout, 1 << 20)
                finally:
                    os.close(dst)
            finally:
                os.close(src)
            os.unlink(name, dir_fd=stage_fd)

    def symlink(self, parts: "tuple[str, ...]", target: str) -> None:
        os.symlink(target, parts[-1], dir_fd=self._fresh(parts))

    def hardlink(self, parts: "tuple[str, ...]", target: "tuple[str, ...]") -> bool:
        """Hard-link root/parts to root/target (a symlink target is linked as the symlink: linkat
        never follows); False, and root/parts removed, when the target is not there."""
        destination = os.dup(self._fresh(parts))
        try:
            source = self.dir_fd(target[:-1], create=False) if target else None
            if source is None or _kind(source, target[-1]) in (None, "dir"):
                return False
            os.link(target[-1], parts[-1], src_dir_fd=source, dst_dir_fd=destination, follow_symlinks=False)
            return True
        finally:
            os.close(destination)

    def _fresh(self, parts: "tuple[str, ...]") -> int:
        """The directory descriptor in which root/parts can now be created (whatever was there is gone)."""
        if not parts:
            raise ImageError("a member cannot replace the root directory")
        parent = self.dir_fd(parts[:-1], create=True)
        self._remove_at(parent, parts)
        self._absent.discard(parts)  # whatever is made here next (a symlink, say) must be seen
        return parent

    def _forget_dirs(self, under: "tuple[str, ...]" = ()) -> None:
        for key in [k for k in self._dirs if k[:len(under)] == under]:
            os.close(self._dirs.pop(key))
        if under:  # what was missing below a removed symlink or directory may be there now
            self._absent = {k for k in self._absent if k[:len(under)] != under}
            if self._links:  # a directory reached through a symlink may be what went: look again
                for key in [k for k in self._dirs if self._below_link(k)]:
                    os.close(self._dirs.pop(key))
                self._absent.clear()
                self._links.clear()


def _remove_tree(parent: int, name: str) -> None:
    """rmtree by descriptors, never following a symlink inside (shutil.rmtree takes dir_fd only
    from Python 3.11)."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    try:
        with os.scandir(fd) as entries:
            for entry in list(entries):
                if entry.is_dir(follow_symlinks=False):
                    _remove_tree(fd, entry.name)
                else:
                    os.unlink(entry.name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent)


def _kind(dir_fd: int, name: str) -> "str | None":
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        return "dir"
    return "symlink" if stat.S_ISLNK(mode) else "file"


def is_empty_dir(path: str) -> bool:
    with os.scandir(path) as entries:
        return next(entries, None) is None
