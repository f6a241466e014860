"""What a static resolution found: the objects in load order, how each was found, what is missing.

Shared by the resolver (rcompat.elf.link.resolve, which builds it) and everything that reads it (missing,
verreq, coload, checks, the upgrade scan). Paths in `.path` are where the bytes are on this machine
(the reader needs them); with a non-host root (`root_fs`), `display()` gives the in-root path a
finding or an output line should name.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from rcompat.elf.read.objinfo import ObjectInfo

VIA_CACHE = "ld.so.cache"
VIA_DERIVED_CACHE = "ld.so.cache derived from ld.so.conf"  # a root without /etc/ld.so.cache


@dataclass
class Attempt:
    path: str  # host path tried
    via: str
    outcome: str  # found | not found | wrong ELF class … | not an ELF file …
    inside: str = ""  # the path as the loader would try it (in-root with a root; else `path`)

    def __post_init__(self) -> None:
        self.inside = self.inside or self.path


@dataclass
class Node:
    index: int
    requested: str  # the DT_NEEDED text (or the root's path)
    info: ObjectInfo
    via: str  # root | RPATH of X | LD_LIBRARY_PATH | RUNPATH of X | ld.so.cache | default directory | path
    loader: int | None  # the node that caused it to be loaded (ld.so's l_loader)
    names: set[str] = field(default_factory=set)  # names it answers to when reused
    inside: str = ""  # the path it was found under, as the loader saw it: $ORIGIN is its directory

    def __post_init__(self) -> None:
        self.inside = self.inside or self.info.path

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
            where = a.inside if a.via.startswith(VIA_CACHE) else (os.path.dirname(a.inside) or a.inside)
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
    root_fs: "object | None" = None  # the rcompat.elf.link.root.Root resolved inside (None: this machine)
    ld_cache: str = ""  # where the cache came from: the file read, or "derived from …/etc/ld.so.conf"

    @property
    def root(self) -> Node:
        return self.nodes[self.root_index]

    @property
    def in_other_root(self) -> bool:
        return self.root_fs is not None and not self.root_fs.is_host

    def display(self, path: str) -> str:
        """The path to show for a host path: in-root (as the loader found it) with a non-host root."""
        if not self.in_other_root or not path:
            return path
        for n in self.nodes:
            if n.path == path:
                return n.inside
        return self.root_fs.inside(path)

    def load_order(self) -> list[ObjectInfo]:
        return [n.info for n in self.nodes]

    def by_soname(self) -> dict[str, Node]:
        return {n.info.name: n for n in self.nodes}

    def tree_lines(self, show_reused: bool = False) -> list[str]:
        """libtree-like: each library under the one that loaded it, with the rule that found it;
        `show_reused` also lists needed entries satisfied by an object loaded earlier."""
        root = self.root
        lines = [f"{root.info.name} ({self.display(root.path)}) [{root.info.elf_class} {root.info.machine}]"]
        if self.in_other_root:
            lines[0] += f" inside {self.root_fs.path}"
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
                lines.append(f"{prefix}{branch}{edge.name} => {self.display(node.path)} [already loaded]")
                continue
            lines.append(f"{prefix}{branch}{edge.name} => {self.display(node.path)} [{node.via}]")
            self._tree(node.index, prefix + child_prefix, lines, show_reused)

    def to_dict(self) -> dict:
        out = {
            "root": self.display(self.root.path),
            "load_order": [{"name": n.info.name, "requested": n.requested, "path": self.display(n.path),
                            "via": n.via, "loader": self.nodes[n.loader].info.name if n.loader is not None else None,
                            "soname": n.info.soname, "build_id": n.info.build_id} for n in self.nodes],
            "missing": [{"name": m.name, "needed_by": m.needed_by, "searched": m.searched_dirs}
                        for m in self.missing],
        }
        if self.in_other_root:
            out.update(root_fs=self.root_fs.path, ld_cache=self.ld_cache)
        return out
