"""A root filesystem to resolve inside, as if chrooted there (an unpacked image, another machine's /).

Paths inside the root ("/usr/lib/x.so") map to host paths component by component, the way the kernel
resolves them after chroot(2): an absolute symlink target starts again at the root, `..` never climbs
above it, more than 40 symlinks on one path is a loop (ELOOP, Linux's MAXSYMLINKS). Every host path
this returns therefore lies under the root and holds no symlink below it, so opening it can never
leave the root. `Root("/")` is this machine: the identity mapping and the host's /etc/ld.so.cache.
"""
from __future__ import annotations

import os
import posixpath

from rcompat.elf.errors import ElfError
from rcompat.elf.link.ldcache import DEFAULT_CACHE, LdCache, load_cache, read_cache

MAXSYMLINKS = 40  # Linux include/linux/namei.h


class Root:
    def __init__(self, path: "str | os.PathLike[str]") -> None:
        given = os.fspath(path)
        real = os.path.realpath(given)
        if not os.path.exists(real):
            raise ElfError(given, "root directory does not exist (give the directory of an unpacked root filesystem)")
        if not os.path.isdir(real):
            raise ElfError(given, "not a directory: a root must be the directory of an unpacked root filesystem")
        self.path = real
        self._caches: dict[str, LdCache] = {}

    @property
    def is_host(self) -> bool:
        return self.path == "/"

    def __repr__(self) -> str:
        return f"Root({self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Root) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    # -- paths ---------------------------------------------------------------------------------
    def host(self, inside: str) -> str:
        """The host path of in-root path `inside` (relative: from the root's /), symlinks resolved
        inside the root; a path that does not exist maps to where it would be."""
        if self.is_host:
            return inside
        pending = list(reversed(inside.split("/")))
        resolved: list[str] = []
        links = 0
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = os.path.join(self.path, *resolved, name)
            if not os.path.islink(candidate):
                resolved.append(name)
                continue
            links += 1
            if links > MAXSYMLINKS:
                raise ElfError(f"{inside} (in root {self.path})",
                               "too many levels of symbolic links (a symlink loop inside the root)")
            try:
                target = os.readlink(candidate)
            except OSError as exc:
                raise ElfError(candidate, f"cannot read the symlink: {exc.strerror or exc}") from None
            if target.startswith("/"):
                resolved = []
            pending.extend(reversed(target.split("/")))
        return os.path.join(self.path, *resolved)

    def inside(self, host_path: str) -> str:
        """The in-root path of a host path under the root (what output names); others unchanged."""
        if self.is_host:
            return host_path
        if host_path == self.path:
            return "/"
        if host_path.startswith(self.path + "/"):
            return host_path[len(self.path):]
        return host_path

    def locate(self, given: "str | os.PathLike[str]") -> str:
        """The in-root path of a path a caller gave: in-root absolute ("/opt/app/lib/x.so"), or a host
        path already under the root; a relative path counts from the current directory when that
        lies in the root, from the root's / otherwise."""
        text = os.fspath(given)
        if self.is_host:
            return os.path.abspath(text)
        absolute = os.path.abspath(text)
        if absolute == self.path or absolute.startswith(self.path + "/"):
            return self.inside(absolute)
        return text if text.startswith("/") else posixpath.join("/", text)

    def isdir(self, inside: str) -> bool:
        try:
            return os.path.isdir(self.host(inside))
        except ElfError:
            return False

    def glob(self, pattern: str) -> list[str]:
        """In-root paths matching the absolute shell pattern (wildcards per component), each component
        resolved inside the root, so a symlink met on the way never leads out of it."""
        if self.is_host:
            import glob

            return sorted(glob.glob(pattern))
        import fnmatch

        found = ["/"]
        for part in [p for p in pattern.split("/") if p]:
            step: list[str] = []
            for base in found:
                if not any(c in part for c in "*?["):
                    candidate = posixpath.join(base, part)
                    try:
                        if os.path.exists(self.host(candidate)):
                            step.append(candidate)
                    except ElfError:
                        pass
                    continue
                try:
                    names = sorted(os.listdir(self.host(base)))
                except (OSError, ElfError):
                    continue
                step += [posixpath.join(base, n) for n in names
                         if fnmatch.fnmatchcase(n, part) and (part.startswith(".") or not n.startswith("."))]
            found = step
        return found

    # -- loader cache ----------------------------------------------------------------------------
    def ld_cache(self, cache_path: str = DEFAULT_CACHE) -> LdCache:
        """This root's loader cache: its /etc/ld.so.cache when present (layout new/old/old+new);
        otherwise, in a non-host root, the cache `ldconfig -r` would build from its ld.so.conf
        (layout "derived"). The host keeps today's behaviour: an absent cache is empty."""
        if cache_path not in self._caches:
            self._caches[cache_path] = self._read_cache(cache_path)
        return self._caches[cache_path]

    def _read_cache(self, cache_path: str) -> LdCache:
        if self.is_host:
            return load_cache(cache_path)
        cache = read_cache(self.host(cache_path))
        if cache.layout == "absent":
            from rcompat.elf.link.ldconf import derive_cache

            return derive_cache(self)
        return cache


HOST_ROOT_PATH = "/"


def as_root(value: "Root | str | os.PathLike[str] | None") -> Root:
    """A Root from what a caller passed: None is this machine."""
    if isinstance(value, Root):
        return value
    return Root(HOST_ROOT_PATH if value is None else value)
