"""Undefined symbols: which loaded object provides each one, and who would provide the rest.

Lookup order is ld.so's global scope (the host objects given, then the load order of the
resolution, breadth first); the first object with a matching definition wins. An undefined,
non-weak symbol without a provider is what ld.so reports as `undefined symbol: NAME` at dlopen
(R's dyn.load and Python's import both use RTLD_NOW). For those, directories outside the search
path are scanned (--search, /usr/local/cuda*/lib64, pip's nvidia/*/lib) to name the library that
would provide it. With a root filesystem (`root=`), the load order and that search are both inside it.
"""
from __future__ import annotations

import glob
import os
import site
import sysconfig
from dataclasses import dataclass, field
from typing import Callable

from rcompat.elf.errors import ElfError
from rcompat.elf.link.hostproc import host_provider, hosts_for, needs_by_row, resolve_hosts
from rcompat.elf.link.resolve import Resolution, Resolver
from rcompat.elf.link.root import Root, as_root
from rcompat.elf.read.symindex import Reference, SymbolIndex, readable_index, symbol_index


@dataclass
class ElsewhereProvider:
    path: str
    soname: str | None
    version_ok: bool
    versions: list[str]
    inside: str = ""  # the in-root path with a root (what messages name); else `path`

    def __post_init__(self) -> None:
        self.inside = self.inside or self.path

    def describe(self, ref: Reference) -> str:
        lib = self.soname or os.path.basename(self.path)
        where = os.path.dirname(self.inside)
        if not self.version_ok:
            return f"{lib} in {where} defines it only as {', '.join(self.versions)}, not {ref.version}"
        return f"is provided by {lib} in {where}, which is not on the search path"


@dataclass
class MissingSymbol:
    ref: Reference
    needed_by: str  # path of the object with the undefined reference
    near_misses: list[str] = field(default_factory=list)  # loaded objects defining it in another version
    elsewhere: list[ElsewhereProvider] = field(default_factory=list)
    display: Callable[[str], str] = field(default=str, repr=False, compare=False)  # host path -> shown path

    @property
    def name(self) -> str:
        return self.ref.name

    def loader_message(self) -> str:
        """The text ld.so puts in the dlopen error (in-root paths with a root, as ld.so there would)."""
        return self.ref.loader_message(self.display(self.needed_by))

    def explanation(self) -> str:
        parts = []
        if self.near_misses:
            parts.append("defined with another version in " + "; ".join(self.near_misses))
        hits = [e for e in self.elsewhere if e.version_ok]
        if hits:
            parts.append(f"{self.ref.name} " + hits[0].describe(self.ref))
        elif self.elsewhere:
            parts.append(self.elsewhere[0].describe(self.ref))
        host = host_provider(self.ref.name)
        if host and not hits:
            parts.append(f"normally provided by {host['host']}: {host['hint']}")
        return "; ".join(parts) or "no library found on this machine provides it"

    @property
    def host_symbol(self) -> bool:
        return host_provider(self.ref.name) is not None


@dataclass
class Binding:
    ref: Reference
    needed_by: str
    provider: str  # path


@dataclass
class MissingReport:
    resolution: Resolution
    bindings: list[Binding]
    missing: list[MissingSymbol]
    weak_unresolved: list[Binding]
    searched_elsewhere: list[str]
    hosts: list[str] = field(default_factory=list)  # in-root paths of the process's executable/libraries

    @property
    def ok(self) -> bool:
        return not self.missing and not self.resolution.missing

    def to_dict(self) -> dict:
        show = self.resolution.display
        return {"root": show(self.resolution.root.path), "hosts": self.hosts, "bound": len(self.bindings),
                "missing_libraries": [m.name for m in self.resolution.missing],
                "missing_symbols": [{"name": m.name, "version": m.ref.version, "needed_by": m.needed_by,
                                     "loader_message": m.loader_message(), "explanation": m.explanation(),
                                     "elsewhere": [e.inside for e in m.elsewhere if e.version_ok]}
                                    for m in self.missing],
                "weak_unresolved": len(self.weak_unresolved), "searched_elsewhere": self.searched_elsewhere}


def scope_indexes(resolution: Resolution,
                  index: "Callable[[str], SymbolIndex | None] | None" = None) -> list[tuple[str, SymbolIndex]]:
    """(path, index) of each loaded object, load order; `index`: how a path's index is read
    (default readable_index)."""
    index = index or readable_index
    return [(node.path, idx) for node in resolution.nodes if (idx := index(node.path)) is not None]


def bind_all(resolution: Resolution, objects: "list[int] | None" = None,
             scope: "list[tuple[str, SymbolIndex]] | None" = None,
             index: "Callable[[str], SymbolIndex | None] | None" = None):
    """(bindings, missing, weak_unresolved) for the undefined symbols of `objects` (default: all);
    `index` as for scope_indexes."""
    index = index or readable_index
    scope = scope if scope is not None else scope_indexes(resolution, index)
    chosen = range(resolution.preloaded, len(resolution.nodes)) if objects is None else objects
    bindings, missing, weak = [], [], []
    for i in chosen:
        node = resolution.nodes[i]
        own = index(node.path)
        if own is None:
            continue
        for ref in own.references:
            provider = next((path for path, idx in scope if idx.lookup(ref.name, ref.version)), None)
            if provider is not None:
                bindings.append(Binding(ref, node.path, provider))
            elif ref.weak:
                weak.append(Binding(ref, node.path, ""))
            else:
                near = [f"{os.path.basename(path)} ({', '.join(idx.versions_of(ref.name))})"
                        for path, idx in scope if ref.name in idx.definitions]
                missing.append(MissingSymbol(ref, node.path, near, display=resolution.display))
    return bindings, missing, weak


# Where pip puts packages in an image's Pythons (no interpreter of the root is run to ask it).
ROOT_SITE_PACKAGES = ("/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages",
                      "/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
                      "/opt/conda/lib/python3*/site-packages", "/opt/conda/envs/*/lib/python3*/site-packages",
                      "/opt/venv/lib/python3*/site-packages", "/root/.local/lib/python3*/site-packages")


def default_search_dirs(root: "Root | str | None" = None) -> list[str]:
    """Where CUDA and pip-installed NVIDIA libraries usually live, though not on the search path;
    with a non-host root, in-root directories of that root."""
    fs = as_root(root)
    dirs = fs.glob("/usr/local/cuda*/lib64") + fs.glob("/usr/local/cuda*/targets/*/lib")
    if not fs.is_host:
        return dirs + [d for pattern in ROOT_SITE_PACKAGES for d in fs.glob(f"{pattern}/nvidia/*/lib")]
    roots = set(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    roots.add(sysconfig.get_paths()["purelib"])
    for site_dir in sorted(roots):
        dirs += sorted(glob.glob(os.path.join(site_dir, "nvidia", "*", "lib")))
    return dirs


def find_elsewhere(missing: list[MissingSymbol], dirs: list[str], skip: set[str],
                   root: "Root | str | None" = None) -> None:
    """Name, for each missing symbol, the libraries in `dirs` (in-root with a root) that define it;
    `skip`: real host paths already looked at (the loaded objects)."""
    wanted = {m.name for m in missing}
    if not wanted:
        return
    fs = as_root(root)
    for d in dirs:
        try:
            host_dir = fs.host(d)
        except ElfError:
            continue
        for path in sorted(glob.glob(os.path.join(glob.escape(host_dir), "*.so*"))):
            real = os.path.realpath(path)
            if real in skip or os.path.isdir(real) or os.path.islink(path):
                continue
            skip.add(real)
            try:
                idx = symbol_index(path)
                soname = _soname(path)
            except ElfError:
                continue
            for m in missing:
                if m.name in idx.definitions:
                    ok = idx.lookup(m.name, m.ref.version) is not None
                    m.elsewhere.append(ElsewhereProvider(path, soname, ok, idx.versions_of(m.name),
                                                         os.path.join(d, os.path.basename(path))))


def _soname(path: str) -> str | None:
    from rcompat.elf.read.objinfo import read_object

    return read_object(path).soname


def missing(path: "str | os.PathLike[str]", search: "list[str] | tuple[str, ...]" = (),
            ld_library_path: "str | list[str] | None" = None, host: "list[str] | tuple[str, ...]" = (),
            root_only: bool = False, search_defaults: bool = True, root: "Root | str | None" = None) -> MissingReport:
    """Bind every undefined symbol of `path` (and, unless root_only, of its closure). With `root`,
    `path`, `host` and `search` are in-root paths and everything is looked up inside that root.
    `host`: what the process started with (paths, commands like python3, sonames like libR.so);
    without it, the host each object calls for (rcompat.elf.link.hostproc: the interpreter that would
    import an extension module, libR.so for R API code) is found and bound against."""
    resolver = Resolver(ld_library_path, root=root)
    fs = resolver.root
    hosts = resolve_hosts(host, fs)
    resolution = resolver.resolve(path, preloaded=resolver.closure(hosts))
    objects = [resolution.root_index] if root_only else None
    bindings, lost, weak = bind_all(resolution, objects)
    if not host:
        hosts, _unfound = hosts_for(needs_by_row(lost), fs)
        if hosts:
            resolution = resolver.resolve(path, preloaded=resolver.closure(hosts))
            objects = [resolution.root_index] if root_only else None
            bindings, lost, weak = bind_all(resolution, objects)
    dirs = [d if fs.is_host else fs.locate(d) for d in search] + (default_search_dirs(fs) if search_defaults else [])
    loaded = {os.path.realpath(n.path) for n in resolution.nodes}
    find_elsewhere(lost, dirs, set(loaded), root=fs)
    return MissingReport(resolution, bindings, lost, weak, dirs, hosts)


def implied_hosts(paths, resolver: Resolver) -> list[str]:
    """The hosts (in-root paths) the objects at `paths` call for, each bound in its own closure."""
    needers: dict[str, set[str]] = {}
    for p in paths:
        res = resolver.resolve(p)
        for row, objects in needs_by_row(bind_all(res, [res.root_index])[1]).items():
            needers.setdefault(row, set()).update(objects)
    return hosts_for(needers, resolver.root)[0]
