"""ABI drift between two builds of a shared library, from their dynamic symbol tables alone.

The ABI here is what the dynamic linker can bind to: exported symbols — defined, GLOBAL/WEAK/
GNU_UNIQUE, DEFAULT/PROTECTED visibility — keyed by (name, symbol version), as abidiff does for
libraries without debug info ("functions" are FUNC/GNU_IFUNC, "variables" OBJECT/TLS/COMMON; NOTYPE
markers such as `_end` and the ABS symbols that name a version definition are not ABI). On top of the
symbol sets this compares what abidiff's ELF-only mode does not: object sizes (a grown object breaks
every dependent that copy-relocated it), type/binding/visibility, version definitions, SONAME and
DT_NEEDED. With `used_by`, each dependent's undefined symbols and version needs are matched against
the changes, so a maintainer sees which change breaks *their* library.
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Iterable, Sequence

from rcompat.elf.abi.impact import assess_dependent
from rcompat.elf.abi.results import FUNCTION_TYPES, VARIABLE_TYPES, AbiDiff, Exports, SymbolChange
from rcompat.elf.errors import ElfError
from rcompat.elf.read.format import SHN_ABS, VER_FLG_BASE
from rcompat.elf.read.reader import ElfImage
from rcompat.elf.read.symindex import EXPORTED_BINDS, EXPORTED_VISIBILITIES

if TYPE_CHECKING:
    from rcompat.progress import Progress

__all__ = ["abi_diff", "exported_symbols"]


def exported_symbols(image: ElfImage) -> Exports:
    table = image.dynamic_symbols
    version_markers = {v.name for v in image.version_definitions.values()}
    out = Exports()
    for name, version, hidden, typ, bind, vis, size, value, ndx in zip(
            table.names, table.versions, table.hidden, table.types, table.binds, table.visibilities, table.sizes,
            table.values, table.shndx):
        if not ndx or bind not in EXPORTED_BINDS or vis not in EXPORTED_VISIBILITIES:
            continue
        if typ not in FUNCTION_TYPES and typ not in VARIABLE_TYPES:
            continue
        if ndx == SHN_ABS and name in version_markers:
            continue
        out[(name, version)] = (typ, bind, vis, size, value, hidden)
    return out


def _symbol_changes(old: Exports, new: Exports) -> tuple[list, list, list]:
    removed = [SymbolChange("removed", old.symbol(k), None, True) for k in old.keys() - new.keys()]
    added = [SymbolChange("added", None, new.symbol(k), False) for k in new.keys() - old.keys()]
    changed = []
    for key, before in old.items():
        after = new.get(key)
        if after is None or after[:4] == before[:4] or (after[:3] == before[:3] and before[0] in FUNCTION_TYPES):
            continue  # function sizes are not ABI
        a, b = old.symbol(key), new.symbol(key)
        if a.type != b.type:
            changed.append(SymbolChange("type", a, b, a.kind != b.kind, detail=f"{a.type} → {b.type}"))
        if a.kind == "variable" and b.kind == "variable" and a.size != b.size:
            changed.append(SymbolChange("size", a, b, True, detail=f"{a.size} → {b.size} bytes"))
        if a.bind != b.bind:
            changed.append(SymbolChange("binding", a, b, False, detail=f"{a.bind} → {b.bind}"))
        if a.visibility != b.visibility:
            changed.append(SymbolChange("visibility", a, b, False, detail=f"{a.visibility} → {b.visibility}"))
    order = lambda c: (c.symbol.name, c.symbol.version, c.change)  # noqa: E731
    return sorted(removed, key=order), sorted(added, key=order), sorted(changed, key=order)


def _compile_filters(filters: "str | Sequence[str] | None") -> list[re.Pattern]:
    if filters is None:
        return []
    if isinstance(filters, str):
        filters = [filters]
    out = []
    for pattern in filters:
        try:
            out.append(re.compile(pattern))
        except re.error as exc:
            from rcompat.errors import UsageError

            raise UsageError(f"--filter {pattern!r} is not a valid regular expression: {exc}") from None
    return out


def _annotate(changes: list[SymbolChange], filters: list[re.Pattern]) -> list[SymbolChange]:
    """Demangle, group by scope, and keep only the changes a filter pattern selects."""
    from rcompat.elf.abi.scope import scope_of
    from rcompat.elf.read.demangle import demangle_all

    demangled = demangle_all(c.symbol.name for c in changes)
    kept = []
    for change, pretty in zip(changes, demangled):
        change.demangled = pretty if pretty != change.symbol.name else ""
        change.namespace, change.scope = scope_of(pretty)
        if filters and not any(p.search(change.symbol.name) or p.search(pretty) for p in filters):
            continue
        kept.append(change)
    return kept


def _version_names(image: ElfImage) -> set[str]:
    return {v.name for v in image.version_definitions.values() if not v.flags & VER_FLG_BASE}


def abi_diff(old: "str | os.PathLike[str]", new: "str | os.PathLike[str]",
             filter: "str | Sequence[str] | None" = None,  # noqa: A002 - the CLI option's name
             used_by: Iterable["str | os.PathLike[str]"] = (), progress: "Progress | None" = None) -> AbiDiff:
    """Compare the exported ABI of two builds of a library. Raises ElfError on unreadable input.
    `progress` (rcompat.progress) is told each phase: reading old, reading new, diffing, --used-by."""
    from rcompat.progress import disabled

    progress = progress or disabled()
    patterns = _compile_filters(filter)
    used_by = [str(p) for p in used_by]
    with ElfImage(old) as a, ElfImage(new) as b:
        with progress.step(f"reading old {os.path.basename(str(old))}"):
            old_syms = exported_symbols(a)
        with progress.step(f"reading new {os.path.basename(str(new))}"):
            new_syms = exported_symbols(b)
        with progress.step("diffing"):
            removed, added, changed = _symbol_changes(old_syms, new_syms)
            old_versions, new_versions = _version_names(a), _version_names(b)
            all_new_versions = {v.name for v in b.version_definitions.values()}
            diff = AbiDiff(
                old_path=str(old), new_path=str(new), old_soname=a.soname, new_soname=b.soname,
                removed=_annotate(removed, patterns), added=_annotate(added, patterns),
                changed=_annotate(changed, patterns),
                versions_removed=sorted(old_versions - new_versions), versions_added=sorted(new_versions - old_versions),
                needed_removed=[n for n in a.needed if n not in b.needed],
                needed_added=[n for n in b.needed if n not in a.needed],
                filters=tuple(p.pattern for p in patterns), exported_counts=(len(old_syms), len(new_syms)))
    for k, path in enumerate(used_by, 1):
        progress.note(f"--used-by {k}/{len(used_by)}: {os.path.basename(path)}")
        try:
            with ElfImage(path) as dep:
                diff.dependents.append(assess_dependent(dep, diff, old_syms, new_syms, all_new_versions))
        except ElfError as exc:
            raise ElfError(path, f"--used-by: {exc.reason}", exc.offset) from None
    return diff
