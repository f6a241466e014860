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
Not modelled: glibc-hwcaps/legacy hwcap subdirectories, LD_PRELOAD, setuid restrictions, dlmopen
namespaces, DT_AUDIT/DT_FILTER.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rcompat.elf.errors import ElfError
from rcompat.elf.ldcache import DEFAULT_CACHE, load_cache
from rcompat.elf.objinfo import ObjectInfo, read_object

# Loader defaults per (e_machine, class): multiarch triplet, $PLATFORM, non-multiarch lib dir name.
# Source: glibc sysdeps/*/dl-machine.h (platform), Debian multiarch tuples, `ld.so --help` here.
PLATFORMS = {(62, 64): ("x86_64-linux-gnu", "x86_64", "lib64"), (3, 32): ("i386-linux-gnu", "i686", "lib"),
             (183, 64): ("aarch64-linux-gnu", "aarch64", "lib64"), (62, 32): ("x86_64-linux-gnux32", "x86_64", "libx32"),
             (21, 64): ("powerpc64le-linux-gnu", "ppc64le", "lib64")}
_DST = re.compile(r"\$(\{ORIGIN\}|ORIGIN|\{LIB\}|LIB|\{PLATFORM\}|PLATFORM)")


@dataclass
class Attempt:
    path: str
    via: str
    outcome: str  # found | not found | wrong ELF class … | not an ELF file …


@dataclass
class Node:
    index: int
    requested: str  # the DT_NEEDED text (or the root's path)
    info: ObjectInfo
    via: str  # root | RPATH of X | LD_LIBRARY_PATH | RUNPATH of X | ld.so.cache | default directory | path
    loader: int | None  # the node that caused it to be loaded (ld.so's l_loader)
    names: set[str] = field(default_factory=set)  # names it answers to when reused

    @property
    def path(self) -> str:
        return self.info.path


@dataclass
class Edge:
    name: str
    target: int | None  # None: not found
    reused: bool = False


@dataclass
class MissingLibrary:
    name: str
    needed_by: str
    attempts: list[Attempt]

    @property
    def searched_dirs(self) -> list[str]:
        seen: dict[str, None] = {}
        for a in self.attempts:
            where = a.path if a.via == "ld.so.cache" else (os.path.dirname(a.path) or a.path)
            seen.setdefault(f"{where} ({a.via})", None)
        return list(seen)


@dataclass
class Resolution:
    nodes: list[Node]  # load order (breadth first); nodes[0] is the root
    edges: dict[int, list[Edge]]
    missing: list[MissingLibrary]
    attempts: dict[int, list[Attempt]]  # how each node was found
    root_index: int = 0
    preloaded: int = 0  # nodes[:preloaded] were in the process before the root was loaded

    @property
    def root(self) -> Node:
        return self.nodes[self.root_index]

    def load_order(self) -> list[ObjectInfo]:
        return [n.info for n in self.nodes]

    def by_soname(self) -> dict[str, Node]:
        return {n.info.name: n for n in self.nodes}

    def tree_lines(self, show_reused: bool = False) -> list[str]:
        """libtree-like: each library under the one that loaded it, with the rule that found it;
        `show_reused` also lists needed entries satisfied by an object loaded earlier."""
        root = self.root
        lines = [f"{root.info.name} ({root.path}) [{root.info.elf_class} {root.info.machine}]"]
        self._tree(root.index, "", lines, show_reused)
        for m in self.missing:
            lines.append(f"not found: {m.name} (needed by {m.needed_by}); searched: "
                         + ", ".join(m.searched_dirs or ["nothing"]))
        return lines

    def _tree(self, index: int, prefix: str, lines: list[str], show_reused: bool) -> None:
        edges = [e for e in self.edges.get(index, []) if show_reused or not e.reused]
        for k, edge in enumerate(edges):
            last = k == len(edges) - 1
            branch, child_prefix = ("└── ", "    ") if last else ("├── ", "│   ")
            if edge.target is None:
                lines.append(f"{prefix}{branch}{edge.name} => not found")
                continue
            node = self.nodes[edge.target]
            if edge.reused:
                lines.append(f"{prefix}{branch}{edge.name} => {node.path} [already loaded]")
                continue
            lines.append(f"{prefix}{branch}{edge.name} => {node.path} [{node.via}]")
            self._tree(node.index, prefix + child_prefix, lines, show_reused)

    def to_dict(self) -> dict:
        return {
            "root": self.root.path,
            "load_order": [{"name": n.info.name, "requested": n.requested, "path": n.path, "via": n.via,
                            "loader": self.nodes[n.loader].info.name if n.loader is not None else None,
                            "soname": n.info.soname, "build_id": n.info.build_id} for n in self.nodes],
            "missing": [{"name": m.name, "needed_by": m.needed_by, "searched": m.searched_dirs}
                        for m in self.missing],
        }


class Resolver:
    """One search configuration (environment, cache, defaults), reusable for many roots."""

    def __init__(self, ld_library_path: "str | list[str] | None" = None, cache_path: str = DEFAULT_CACHE,
                 default_dirs: list[str] | None = None, executable: "str | None" = None) -> None:
        if ld_library_path is None:
            ld_library_path = os.environ.get("LD_LIBRARY_PATH", "")
        if isinstance(ld_library_path, str):
            # ld.so treats an empty element as the current directory.
            ld_library_path = ld_library_path.split(":") if ld_library_path else []
            ld_library_path = [p or "." for p in ld_library_path]
        self.ld_library_path = list(ld_library_path)
        self.cache_path = cache_path
        self._default_dirs = default_dirs
        self.executable = read_object(executable) if executable else None

    # -- public -------------------------------------------------------------------------------
    def resolve(self, root: "str | os.PathLike[str]", preloaded: "list[ObjectInfo] | None" = None) -> Resolution:
        """Load `root` (as dlopen(path) would); `preloaded` objects are already in the process."""
        root_info = read_object(os.path.abspath(os.fspath(root)))
        nodes: list[Node] = []
        for info in preloaded or []:
            nodes.append(Node(len(nodes), info.path, info, "already loaded", None,
                              {info.path, info.name, os.path.basename(info.path)}))
        reused_root = self._find_loaded(nodes, root_info.path, root_info)
        first = len(nodes)
        if reused_root is None:
            nodes.append(Node(first, root_info.path, root_info, "root", None,
                              {root_info.path} | ({root_info.soname} if root_info.soname else set())))
        res = Resolution(nodes, {}, [], {}, root_index=first if reused_root is None else reused_root,
                         preloaded=first)
        queue = [first] if reused_root is None else []
        while queue:
            index = queue.pop(0)
            loader = nodes[index]
            edges = res.edges.setdefault(index, [])
            for name in loader.info.needed:
                hit = self._find_loaded(nodes, name)
                if hit is not None:
                    nodes[hit].names.add(name)
                    edges.append(Edge(name, hit, reused=True))
                    continue
                info, via, attempts = self._search(name, loader, nodes)
                if info is None:
                    edges.append(Edge(name, None))
                    res.missing.append(MissingLibrary(name, loader.info.name, attempts))
                    continue
                hit = self._find_loaded(nodes, info.path, info)
                if hit is not None:  # same file under another name
                    nodes[hit].names.add(name)
                    edges.append(Edge(name, hit, reused=True))
                    continue
                node = Node(len(nodes), name, info, via, index,
                            {name, info.path} | ({info.soname} if info.soname else set()))
                nodes.append(node)
                res.attempts[node.index] = attempts
                edges.append(Edge(name, node.index))
                queue.append(node.index)
        return res

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
        if triplet and os.path.isdir(f"/lib/{triplet}"):
            return [f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib"]
        return [f"/{libdir}", f"/usr/{libdir}"] if libdir != "lib" else ["/lib", "/usr/lib"]

    def expand(self, text: str, obj: ObjectInfo) -> str:
        triplet, platform, libdir = PLATFORMS.get((obj.e_machine, obj.bits), ("", "", "lib"))
        lib = f"lib/{triplet}" if triplet and os.path.isdir(f"/lib/{triplet}") else libdir

        def sub(m: re.Match) -> str:
            token = m.group(1).strip("{}")
            if token == "ORIGIN":
                return os.path.dirname(os.path.abspath(obj.path))
            return lib if token == "LIB" else platform

        return _DST.sub(sub, text)

    # -- search -------------------------------------------------------------------------------
    @staticmethod
    def _find_loaded(nodes: list[Node], name: str, info: ObjectInfo | None = None) -> int | None:
        for n in nodes:
            if name in n.names or (info is not None and n.info.file_id == info.file_id):
                return n.index
        return None

    def _search(self, name: str, loader: Node, nodes: list[Node]):
        kind = loader.info
        attempts: list[Attempt] = []
        if "/" in name:
            path = self.expand(name, kind)
            info = self._try(path, "path in DT_NEEDED", kind, attempts)
            return info, "path in DT_NEEDED", attempts
        for directory, via in self._search_dirs(loader, nodes):
            info = self._try(os.path.join(directory, name), via, kind, attempts)
            if info is not None:
                return info, via, attempts
        if not kind.nodeflib:
            cached = load_cache(self.cache_path).lookup(name, kind.e_machine, kind.bits)
            for entry in cached:
                info = self._try(entry.path, "ld.so.cache", kind, attempts)
                if info is not None:
                    return info, "ld.so.cache", attempts
            if not cached:
                attempts.append(Attempt(self.cache_path, "ld.so.cache", "not found"))
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
                    dirs += [(self.expand(d, obj.info), f"RPATH of {obj.info.name}: {d}") for d in obj.info.rpath]
            exe = self.executable
            if exe is not None and exe.rpath and not exe.runpath:
                dirs += [(self.expand(d, exe), f"RPATH of executable {exe.name}: {d}") for d in exe.rpath]
        dirs += [(d, "LD_LIBRARY_PATH") for d in self.ld_library_path]
        dirs += [(self.expand(d, loader.info), f"RUNPATH of {loader.info.name}: {d}") for d in loader.info.runpath]
        return dirs

    @staticmethod
    def _try(path: str, via: str, kind: ObjectInfo, attempts: list[Attempt]) -> ObjectInfo | None:
        if not os.path.exists(path):
            attempts.append(Attempt(path, via, "not found"))
            return None
        try:
            info = read_object(path)
        except ElfError as exc:
            attempts.append(Attempt(path, via, f"unusable: {exc.reason}"))
            return None
        if not info.same_kind(kind):
            attempts.append(Attempt(path, via, f"skipped: wrong ELF class/machine ({info.elf_class} "
                                               f"{info.machine}, need {kind.elf_class} {kind.machine})"))
            return None
        attempts.append(Attempt(path, via, "found"))
        return info


def deps(path: "str | os.PathLike[str]", ld_library_path: "str | list[str] | None" = None,
         cache_path: str = DEFAULT_CACHE, default_dirs: list[str] | None = None,
         executable: str | None = None) -> Resolution:
    """The dependency closure of `path` in ld.so's load order, with how each was found."""
    return Resolver(ld_library_path, cache_path, default_dirs, executable).resolve(path)
