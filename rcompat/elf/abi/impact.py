"""Which ABI changes break one dependent library: its imports (undefined symbols, version-aware) and
its version needs, matched against the old and new builds of the library it links to."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rcompat.elf.abi.results import AbiDiff, AbiSymbol, DependentImpact, Exports, ImportProblem

if TYPE_CHECKING:
    from rcompat.elf.read.reader import ElfImage


def _by_name(symbols: "Exports") -> dict[str, list[tuple[str, str]]]:
    index: dict[str, list] = {}
    for key in symbols:
        index.setdefault(key[0], []).append(key)
    return index


def _bind(name: str, version: str, symbols: "Exports", by_name: dict) -> "AbiSymbol | None":
    """The definition a reference would bind to: the exact version, or for an unversioned reference
    the default (non-hidden) definition, as ld.so does."""
    if version:
        return symbols.get_symbol((name, version))
    for key in by_name.get(name, ()):
        if not symbols[key][5]:  # not hidden
            return symbols.symbol(key)
    return None


def assess_dependent(dep: "ElfImage", diff: "AbiDiff", old_syms: "Exports", new_syms: "Exports",
                     new_versions: set[str]) -> DependentImpact:
    library_names = {n for n in (diff.old_soname, diff.new_soname, os.path.basename(diff.old_path),
                                 os.path.basename(diff.new_path)) if n}
    impact = DependentImpact(path=str(dep.path), needs_old=bool(diff.old_soname and diff.old_soname in dep.needed))
    if diff.soname_changed and impact.needs_old:
        impact.soname_note = (f"needs {diff.old_soname} but the new build's SONAME is {diff.new_soname}: it keeps "
                              f"loading the old file, or fails to load if only the new one is installed")
    old_by_name, new_by_name = _by_name(old_syms), _by_name(new_syms)
    table = dep.dynamic_symbols
    for i, name in enumerate(table.names):
        if table.shndx[i]:
            continue  # defined here: not an import
        version, vfile = table.versions[i], table.version_files[i]
        if vfile and vfile not in library_names:
            continue  # versioned for another library (libc.so.6, libstdc++.so.6, …)
        before = _bind(name, version, old_syms, old_by_name)
        if before is None:
            continue  # not something the old build provided
        impact.imports_checked += 1
        after = _bind(name, version, new_syms, new_by_name)
        problem = _compare(name, version, before, after)
        if problem is None:
            continue
        (impact.broken_imports if problem[1] else impact.affected_imports).append(problem[0])
        if problem[1]:
            _mark_breaking(diff, before, problem[0].change, impact.path)
    for need in dep.version_needs.values():
        if need.file in library_names and need.name not in new_versions and not need.weak:
            impact.missing_versions.append(need.name)
    return impact


def _compare(name, version, before, after) -> "tuple[ImportProblem, bool] | None":
    if after is None:
        return ImportProblem(name, version, "removed", "no longer exported"), True
    if before.kind != after.kind:
        return ImportProblem(name, version, "type", f"{before.type} → {after.type}"), True
    if before.kind == "variable" and before.size != after.size:
        return ImportProblem(name, version, "size", f"{before.size} → {after.size} bytes: code built against the "
                                                    "old layout reads or copies the wrong size"), True
    if before.type != after.type:
        return ImportProblem(name, version, "type", f"{before.type} → {after.type}"), False
    if before.bind != after.bind:
        return ImportProblem(name, version, "binding", f"{before.bind} → {after.bind}"), False
    if before.visibility != after.visibility:
        return ImportProblem(name, version, "visibility", f"{before.visibility} → {after.visibility}"), False
    return None


def _mark_breaking(diff: "AbiDiff", before: "AbiSymbol", change: str, path: str) -> None:
    for item in diff.removed + diff.changed:
        if item.old is not None and item.old.key == before.key and (item.change == change or change == "removed"):
            if path not in item.breaking_for:
                item.breaking_for.append(path)
