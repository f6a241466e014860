"""Resolve DT_NEEDED like ld.so does, from the files alone (never running them, unlike ldd).

Modelled after glibc's elf/dl-load.c (_dl_map_object) and dl-deps.c, in the spirit of auditwheel's
lddtree but with the rules it leaves out:
- a needed name that matches an object already loaded (its SONAME, a name it was requested under,
  or the same file by device+inode) is reused, without searching: this is also how cycles end;
- a name with a slash is opened as a path ($ORIGIN expanded);
- otherwise, in this order: DT_RPATH of the loader, then of the loader's loader and on up (only
  when the loader has no DT_RUNPATH; an object with both has its RPATH ignored), LD_LIBRARY_PATH,
  DT_RUNPATH of the loader only (not inherited), /etc/ld.so.cache, the default directories
  (the last two not for DF_1_NODEFLIB loaders);
- $ORIGIN, $LIB and $PLATFORM are expanded (also as ${...});
- a candidate of the wrong ELF class or machine is skipped and the search goes on, as ld.so does.
Load order is breadth first, which is also the order of the global symbol scope.
With `root=` (rcompat.elf.link.root.Root) all of this happens inside another root filesystem, chroot-style;
the types of the result live in rcompat.elf.link.resolution.
Not modelled: glibc-hwcaps/legacy hwcap subdirectories, LD_PRELOAD, setuid restrictions, dlmopen
namespaces, DT_AUDIT/DT_FILTER.
"""
from __future__ import annotations

import os
import re

from rcompat.elf.errors import ElfError
from rcompat.elf.link.ldcache import DEFAULT_CACHE
from rcompat.elf.link.ldconf import PLATFORMS
from rcompat.elf.read.objinfo import ObjectInfo, read_object
from rcompat.elf.link.resolution import (VIA_CACHE, VIA_DERIVED_CACHE, Attempt, Edge, MissingLibrary, Node,  # noqa: F401
                                         Resolution)
from rcompat.elf.link.root import Root, as_root

# A closure is bounded by the distinct (name, directory) places its search may try: a real one tries
# hundreds (libtorch_cuda.so: about 100 libraries, a few directories each); 20,000 DT_NEEDED entries
# times 500 RUNPATH directories (a 577 KB file) would try 10 million and keep each attempt.
MAX_PLACES_DEFAULT = 200_000
MAX_PLACES_VARIABLE = "RCOMPAT_MAX_LINK_PLACES"
_DST = re.compile(r"\$(\{ORIGIN\}|ORIGIN|\{LIB\}|LIB|\{PLATFORM\}|PLATFORM)")


class Resolver:
    """One search configuration (environment, cache, defaults, root filesystem), reusable for many
    libraries. With a non-host `root`, every path the search tries is read inside it (see
    rcompat.elf.link.root): RPATH/RUNPATH, LD_LIBRARY_PATH, the root's ld.so.cache, its default
    directories; $ORIGIN is the in-root directory of the loader; this process's LD_LIBRARY_PATH is
    not used unless passed."""

    def __init__(self, ld_library_path: "str | list[str] | None" = None, cache_path: str = DEFAULT_CACHE,
                 default_dirs: list[str] | None = None, executable: "str | None" = None,
                 root: "Root | str | None" = None) -> None:
        self.root = as_root(root)
        if ld_library_path is None:
            ld_library_path = os.environ.get("LD_LIBRARY_PATH", "") if self.root.is_host else ""
        if isinstance(ld_library_path, str):
            # ld.so treats an empty element as the current directory.
            ld_library_path = ld_library_path.split(":") if ld_library_path else []
            ld_library_path = [p or "." for p in ld_library_path]
        self.ld_library_path = list(ld_library_path)
        self.cache_path = cache_path
        self._default_dirs = default_dirs
        self.executable, self._executable_inside = None, ""
        self.max_places = _max_places()
        self._tried: set[str] = set()
        self._resolving = ""
        if executable:
            self._executable_inside = self.root.locate(executable)
            self.executable = self._read_given(self._executable_inside)

    # -- public -------------------------------------------------------------------------------
    def resolve(self, path: "str | os.PathLike[str]", preloaded: "list[ObjectInfo] | None" = None) -> Resolution:
        """Load `path` (as dlopen(path) would; in-root with a root); `preloaded` objects are already
        in the process."""
        inside = self.root.locate(path)
        root_info = self._read_given(inside)
        self._tried, self._resolving = set(), inside
        nodes: list[Node] = []
        for info in preloaded or []:
            nodes.append(Node(len(nodes), info.path, info, "already loaded", None,
                              {info.path, info.name, os.path.basename(info.path), self.root.inside(info.path)},
                              inside=self.root.inside(info.path)))
        loaded = _Loaded(nodes)
        reused_root = loaded.find(root_info.path, root_info)
        first = len(nodes)
        if reused_root is None:
            nodes.append(Node(first, inside, root_info, "root", None,
                              {root_info.path, inside} | ({root_info.soname} if root_info.soname else set()),
                              inside=inside))
            loaded.add(nodes[-1])
        cache = self.root.ld_cache(self.cache_path)
        res = Resolution(nodes, {}, [], {}, root_index=first if reused_root is None else reused_root,
                         preloaded=first, root_fs=self.root,
                         ld_cache=(f"derived from {self.root.inside(cache.path)}" if cache.layout == "derived"
                                   else self.root.inside(cache.path)))
        queue = [first] if reused_root is None else []
        while queue:
            index = queue.pop(0)
            loader = nodes[index]
            edges = res.edges.setdefault(index, [])
            for name in loader.info.needed:
                hit = loaded.find(name)
                if hit is not None:
                    loaded.name(hit, name)
                    edges.append(Edge(name, hit, reused=True))
                    continue
                info, via, attempts = self._search(name, loader, nodes)
                if info is None:
                    edges.append(Edge(name, None))
                    res.missing.append(MissingLibrary(name, loader.info.name, attempts))
                    continue
                hit = loaded.find(info.path, info)
                if hit is not None:  # same file under another name
                    loaded.name(hit, name)
                    edges.append(Edge(name, hit, reused=True))
                    continue
                found_at = attempts[-1].inside
                node = Node(len(nodes), name, info, via, index,
                            {name, info.path, found_at} | ({info.soname} if info.soname else set()), inside=found_at)
                nodes.append(node)
                loaded.add(node)
                res.attempts[node.index] = attempts
                edges.append(Edge(name, node.index))
                queue.append(node.index)
        return res

    def read(self, path: "str | os.PathLike[str]") -> ObjectInfo:
        """The facts of the object at `path` (in-root with a root), without resolving its needs."""
        return self._read_given(self.root.locate(path))

    def closure(self, paths: "list[str] | tuple[str, ...]") -> list[ObjectInfo]:
        """Every object loaded by loading `paths` one after another (unique files, load order)."""
        out: list[ObjectInfo] = []
        for p in paths:
            res = self.resolve(p, preloaded=out)
            out = [n.info for n in res.nodes]
        return out

    def default_dirs(self, info: ObjectInfo) -> list[str]:
        if self._default_dirs is not None:
            return list(self._default_dirs)
        triplet, _platform, libdir = PLATFORMS.get((info.e_machine, info.bits), ("", "", "lib"))
        if triplet and self.root.isdir(f"/lib/{triplet}"):
            return [f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib"]
        return [f"/{libdir}", f"/usr/{libdir}"] if libdir != "lib" else ["/lib", "/usr/lib"]

    def expand(self, text: str, obj: ObjectInfo, origin: "str | None" = None) -> str:
        """$ORIGIN, $LIB, $PLATFORM in `text`; `origin` is the loader's directory as found (in-root),
        by default the directory of `obj.path`."""
        triplet, platform, libdir = PLATFORMS.get((obj.e_machine, obj.bits), ("", "", "lib"))
        lib = f"lib/{triplet}" if triplet and self.root.isdir(f"/lib/{triplet}") else libdir

        def sub(m: re.Match) -> str:
            token = m.group(1).strip("{}")
            if token == "ORIGIN":
                return origin if origin is not None else os.path.dirname(os.path.abspath(obj.path))
            return lib if token == "LIB" else platform

        return _DST.sub(sub, text)

    # -- search -------------------------------------------------------------------------------
    def _origin(self, inside: str) -> str:
        """ld.so's l_origin: the directory of the name the object was opened under, symlinks kept.
        On the host that string is normalised as before; in a root `..` must stay for chroot-style
        resolution (after a symlinked directory it climbs from the link's target)."""
        return os.path.dirname(os.path.abspath(inside) if self.root.is_host else inside)

    def _read_given(self, inside: str) -> ObjectInfo:
        """The object at a path the caller gave (errors name the in-root path with a root)."""
        if self.root.is_host:  # host() is the identity here, unless a root lays other files over / (--carry)
            return read_object(self.root.host(inside))
        try:
            return read_object(self.root.host(inside))
        except ElfError as exc:
            raise ElfError(f"{inside} (in root {self.root.path})", exc.reason, exc.offset) from None

    def _search(self, name: str, loader: Node, nodes: list[Node]):
        kind = loader.info
        attempts: list[Attempt] = []
        if "/" in name:
            path = self.expand(name, kind, self._origin(loader.inside))
            info = self._try(path, "path in DT_NEEDED", kind, attempts)
            return info, "path in DT_NEEDED", attempts
        for directory, via in self._search_dirs(loader, nodes):
            info = self._try(os.path.join(directory, name), via, kind, attempts)
            if info is not None:
                return info, via, attempts
        if not kind.nodeflib:
            cache = self.root.ld_cache(self.cache_path)
            via = VIA_DERIVED_CACHE if cache.layout == "derived" else VIA_CACHE
            cached = cache.lookup(name, kind.e_machine, kind.bits)
            for entry in cached:
                info = self._try(entry.path, via, kind, attempts)
                if info is not None:
                    return info, via, attempts
            if not cached:
                attempts.append(Attempt(cache.path, via, "not found", self.root.inside(cache.path)))
            for directory in self.default_dirs(kind):
                info = self._try(os.path.join(directory, name), "default directory", kind, attempts)
                if info is not None:
                    return info, "default directory", attempts
        return None, "", attempts

    def _search_dirs(self, loader: Node, nodes: list[Node]) -> list[tuple[str, str]]:
        dirs: list[tuple[str, str]] = []
        if not loader.info.runpath:
            chain, cursor = [], loader
            while cursor is not None:
                chain.append(cursor)
                cursor = nodes[cursor.loader] if cursor.loader is not None else None
            for obj in chain:
                if obj.info.rpath and not obj.info.runpath:
                    dirs += [(self.expand(d, obj.info, self._origin(obj.inside)), f"RPATH of {obj.info.name}: {d}")
                             for d in obj.info.rpath]
            exe = self.executable
            if exe is not None and exe.rpath and not exe.runpath:
                dirs += [(self.expand(d, exe, self._origin(self._executable_inside)),
                          f"RPATH of executable {exe.name}: {d}") for d in exe.rpath]
        dirs += [(d, "LD_LIBRARY_PATH") for d in self.ld_library_path]
        dirs += [(self.expand(d, loader.info, self._origin(loader.inside)), f"RUNPATH of {loader.info.name}: {d}")
                 for d in loader.info.runpath]
        return dirs

    def _try(self, inside: str, via: str, kind: ObjectInfo, attempts: list[Attempt]) -> ObjectInfo | None:
        self._tried.add(inside)
        if len(self._tried) > self.max_places:
            raise ElfError(self._resolving, f"resolving its dependencies would try more than {self.max_places:,} "
                           f"distinct (library, directory) places (DT_NEEDED entries times RPATH/RUNPATH "
                           f"directories); refused as hostile or broken (raise {MAX_PLACES_VARIABLE} if it is real)")
        try:
            path = self.root.host(inside)
        except ElfError as exc:  # a symlink loop: open() fails with ELOOP and ld.so tries the next place
            attempts.append(Attempt(inside, via, f"unusable: {exc.reason}", inside))
            return None
        if not os.path.exists(path):
            attempts.append(Attempt(path, via, "not found", inside))
            return None
        try:
            info = read_object(path)
        except ElfError as exc:
            attempts.append(Attempt(path, via, f"unusable: {exc.reason}", inside))
            return None
        if not info.same_kind(kind):
            attempts.append(Attempt(path, via, f"skipped: wrong ELF class/machine ({info.elf_class} "
                                               f"{info.machine}, need {kind.elf_class} {kind.machine})", inside))
            return None
        attempts.append(Attempt(path, via, "found", inside))
        return info


class _Loaded:
    """The objects of a closure by every name they answer to and by file: what a scan over all nodes
    would answer (the first node matching either), in constant time per needed name, so a
    closure of thousands of objects is not quadratic."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.names: dict[str, int] = {}
        self.files: dict[object, int] = {}
        for node in nodes:
            self.add(node)

    def add(self, node: Node) -> None:
        for name in node.names:
            self.names.setdefault(name, node.index)
        self.files.setdefault(node.info.file_id, node.index)

    def name(self, index: int, name: str) -> None:
        self.nodes[index].names.add(name)
        self.names.setdefault(name, index)

    def find(self, name: str, info: ObjectInfo | None = None) -> int | None:
        hits = [self.names.get(name), self.files.get(info.file_id) if info is not None else None]
        return min((h for h in hits if h is not None), default=None)


def _max_places() -> int:
    text = os.environ.get(MAX_PLACES_VARIABLE, "").strip()
    if not text:
        return MAX_PLACES_DEFAULT
    if not text.isascii() or not text.isdigit():
        from rcompat.errors import UsageError

        raise UsageError(f"{MAX_PLACES_VARIABLE}={text[:40]!r} is not a whole number")
    return int(text)


def deps(path: "str | os.PathLike[str]", ld_library_path: "str | list[str] | None" = None,
         cache_path: str = DEFAULT_CACHE, default_dirs: list[str] | None = None,
         executable: str | None = None, root: "Root | str | None" = None) -> Resolution:
    """The dependency closure of `path` in ld.so's load order, with how each was found; with `root`,
    resolved inside that root filesystem (`path` in-root)."""
    return Resolver(ld_library_path, cache_path, default_dirs, executable, root).resolve(path)
