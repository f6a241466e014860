"""Rebind one carried object against NEW's libraries, as ld.so would at dlopen (RTLD_NOW), and resolve
the same object in OLD to say what used to provide what NEW lacks.

What can fail, in ld.so's order: a needed soname not found in the closure; a version node the
object needs (GLIBC_2.x, GLIBCXX_3.4.x, CXXABI_1.3.x, a library's own) missing from the provider NEW
would load; an undefined, non-weak symbol of the object that nothing in its load-order scope
defines. Symbols the host process provides (Python's C API, R's API: rcompat/data/
elf_host_symbols.toml) are bound against that host in NEW (rcompat.elf.link.hostproc), as NEW's python or
R would provide them; only where NEW has no such host are they left unjudged. Everything the same object lacked in OLD
too is kept apart as pre-existing: the upgrade did not cause it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from rcompat.upgrade_scan.side import SharedIndexes, Side, lacking


@dataclass
class Unbound:
    name: str
    version: str
    demangled: str = ""
    old_provider: str | None = None  # in-root path of OLD's library that defined it

    def label(self) -> str:
        return self.demangled or self.name


@dataclass
class MissingLib:
    name: str
    needed_by: str  # the soname (or file name) of the object that needs it
    searched: list[str] = field(default_factory=list)


@dataclass
class UnmetVersion:
    version: str
    provider: str  # in-root path of the library NEW loads that lacks it


@dataclass
class Rebinding:
    inside: str
    how: str  # "identical" | "--carry"
    object_host: str = ""  # OLD's copy of the object's bytes
    missing: list[MissingLib] = field(default_factory=list)  # introduced by the upgrade
    unbound: list[Unbound] = field(default_factory=list)
    unmet: list[UnmetVersion] = field(default_factory=list)
    pre_missing: list[MissingLib] = field(default_factory=list)  # the same in OLD
    cxx_abi: list = field(default_factory=list)  # AbiMismatch in NEW that OLD did not have
    pre_unbound: list[Unbound] = field(default_factory=list)
    pre_unmet: list[UnmetVersion] = field(default_factory=list)
    bound: int = 0
    new_links: dict[str, str] = field(default_factory=dict)  # soname -> NEW host path of each library loaded
    old_links: dict[str, str] = field(default_factory=dict)  # soname -> OLD host path

    @property
    def breaks(self) -> bool:
        return bool(self.missing or self.unbound or self.unmet)

    @property
    def pre_existing(self) -> bool:
        return bool(self.pre_missing or self.pre_unbound or self.pre_unmet)

    def to_dict(self) -> dict:
        return {"object": self.inside, "carried": self.how, "bound": self.bound,
                "missing_libraries": [m.__dict__ for m in self.missing],
                "undefined_symbols": [u.__dict__ for u in self.unbound],
                "unmet_versions": [u.__dict__ for u in self.unmet],
                "pre_existing": {"missing_libraries": [m.__dict__ for m in self.pre_missing],
                                 "undefined_symbols": [u.__dict__ for u in self.pre_unbound],
                                 "unmet_versions": [u.__dict__ for u in self.pre_unmet]},
                "cxx_abi_mismatches": [m.to_dict() for m in self.cxx_abi]}


def rebind(inside: str, how: str, old: Side, new: Side, indexes: SharedIndexes) -> Rebinding:
    """`new` may be NEW with OLD's --carry objects laid over it (rcompat.upgrade_scan.side.overlay)."""
    new_res = new.resolve(inside)
    old_res = old.resolve(inside)
    out = Rebinding(inside, how, old.inventory.objects[inside].host)
    out.new_links = {n.info.name: n.path for n in new_res.nodes[1:]}
    out.old_links = {n.info.name: n.path for n in old_res.nodes[1:]}
    old_missing = {m.name for m in old_res.missing}
    for m in lacking(new_res):
        lib = MissingLib(m.name, m.needed_by, m.searched_dirs)
        (out.pre_missing if m.name in old_missing else out.missing).append(lib)
    _versions(out, old_res, new_res, old, new)
    _symbols(out, old_res, new_res, old, new, indexes)
    _string_abi(out, old_res, new_res)
    return out


def _string_abi(out: Rebinding, old_res, new_res) -> None:
    """Dependency edges of the object whose ends use different std::string ABIs in NEW and did not in OLD
    (compared by file name: the same pair of libraries, wherever each root keeps them)."""
    from rcompat.elf.link.cxx_abi import string_abi_mismatches

    def pair(m):
        return os.path.basename(m.library), os.path.basename(m.dependency)

    before = {pair(m) for m in string_abi_mismatches(old_res)}
    out.cxx_abi = [m for m in string_abi_mismatches(new_res) if pair(m) not in before]


def _versions(out: Rebinding, old_res, new_res, old: Side, new: Side) -> None:
    from rcompat.elf.link.verreq import check_versions

    def unmet(res, side):
        root_path = res.root.path
        return {u.version: side.show(u.provider) for u in check_versions(res, find_alternatives=False).unmet
                if u.required_by == root_path and not u.weak}

    before = unmet(old_res, old)
    for version, provider in unmet(new_res, new).items():
        (out.pre_unmet if version in before else out.unmet).append(UnmetVersion(version, provider))


def _symbols(out: Rebinding, old_res, new_res, old: Side, new: Side, indexes: SharedIndexes) -> None:
    """Bind the object's undefined symbols in NEW, with the host process it calls for (NEW's
    interpreter for an extension module, NEW's libR.so for R API code) in front: those symbols are
    NEW's host's to provide, not excused. Only a host NEW lacks leaves its symbols unjudged."""
    from rcompat.elf.link.hostproc import hosts_for, needs_by_row
    from rcompat.elf.link.missing import bind_all, host_provider, scope_indexes

    bindings, missing, _weak = bind_all(new_res, [new_res.root_index], index=indexes.index)
    needers = needs_by_row(missing)
    new_hosts, unjudged = hosts_for(needers, new.root)
    if new_hosts:
        scope = _host_scope(new, new_hosts, indexes) + scope_indexes(new_res, indexes.index)
        bindings, missing, _weak = bind_all(new_res, [new_res.root_index], scope=scope, index=indexes.index)
    out.bound = len(bindings)
    lost = [m.ref for m in missing if (row := host_provider(m.name)) is None or row["id"] not in unjudged]
    if not lost:
        return
    old_hosts, _ = hosts_for(needers, old.root)
    old_scope = _host_scope(old, old_hosts, indexes) + scope_indexes(old_res, indexes.index)
    names = {n.path: n.info.name for n in old_res.nodes}
    names.update({path: os.path.basename(path) for path, _idx in old_scope if path not in names})
    missing_names = {m.name for m in out.missing + out.pre_missing}
    from rcompat.elf.read.demangle import demangle_all

    for ref, pretty in zip(lost, demangle_all([r.name for r in lost])):
        provider = next((path for path, idx in old_scope if idx.lookup(ref.name, ref.version)), None)
        item = Unbound(ref.name, ref.version, pretty if pretty != ref.name else "",
                       old.show(provider) if provider else None)
        if provider is None:
            out.pre_unbound.append(item)
        elif os.path.basename(provider) in missing_names or names[provider] in missing_names:
            continue  # it would come from a library NEW does not have: reported as that library
        else:
            out.unbound.append(item)


def _host_scope(side: Side, hosts: list[str], indexes: SharedIndexes) -> list:
    """(host path, index) of the host process's objects in `side` (its executable and closure)."""
    from rcompat.elf.errors import ElfError

    try:
        infos = side.resolver.closure(hosts)
    except ElfError:
        return []
    return [(info.path, idx) for info in infos if (idx := indexes.index(info.path)) is not None]
