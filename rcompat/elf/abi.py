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
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from rcompat.elf.abi_impact import DependentImpact, assess_dependent
from rcompat.elf.errors import ElfError
from rcompat.elf.reader import SHN_ABS, VER_FLG_BASE, ElfImage
from rcompat.elf.symindex import EXPORTED_BINDS, EXPORTED_VISIBILITIES

FUNCTION_TYPES = frozenset({"FUNC", "GNU_IFUNC"})
VARIABLE_TYPES = frozenset({"OBJECT", "TLS", "COMMON"})

# Exit-code bits, as abidiff documents them (abidiff's 1 "error" is never used: rcompat's own errors,
# usage or input, exit 2 like every rcompat command).
EXIT_NO_CHANGE, EXIT_OWN_ERROR, EXIT_ABI_CHANGE, EXIT_INCOMPATIBLE = 0, 2, 4, 8


@dataclass(frozen=True)
class AbiSymbol:
    name: str
    version: str
    hidden: bool  # name@VER (not the default version) rather than name@@VER
    type: str
    bind: str
    visibility: str
    size: int
    value: int

    @property
    def kind(self) -> str:
        return "function" if self.type in FUNCTION_TYPES else "variable"

    @property
    def key(self) -> tuple[str, str]:
        return self.name, self.version

    @property
    def label(self) -> str:
        """As abidiff prints it: name, name@@VERSION (default) or name@VERSION."""
        if not self.version:
            return self.name
        return f"{self.name}{'@' if self.hidden else '@@'}{self.version}"


@dataclass
class SymbolChange:
    change: str  # removed | added | size | type | binding | visibility
    old: AbiSymbol | None
    new: AbiSymbol | None
    incompatible: bool
    demangled: str = ""
    namespace: str = ""
    scope: str = ""
    detail: str = ""
    breaking_for: list[str] = field(default_factory=list)

    @property
    def symbol(self) -> AbiSymbol:
        return self.new if self.old is None else self.old

    @property
    def kind(self) -> str:
        return self.symbol.kind

    def to_dict(self) -> dict:
        sym = self.symbol
        return {"change": self.change, "kind": sym.kind, "name": sym.name, "version": sym.version,
                "label": sym.label, "demangled": self.demangled, "namespace": self.namespace,
                "scope": self.scope, "detail": self.detail, "incompatible": self.incompatible,
                "old": _sym_dict(self.old), "new": _sym_dict(self.new), "breaking_for": self.breaking_for}


def _sym_dict(sym: AbiSymbol | None) -> dict | None:
    if sym is None:
        return None
    return {"type": sym.type, "bind": sym.bind, "visibility": sym.visibility, "size": sym.size,
            "value": sym.value, "version": sym.version, "hidden": sym.hidden}


@dataclass
class AbiDiff:
    old_path: str
    new_path: str
    old_soname: str | None
    new_soname: str | None
    removed: list[SymbolChange] = field(default_factory=list)
    added: list[SymbolChange] = field(default_factory=list)
    changed: list[SymbolChange] = field(default_factory=list)
    versions_removed: list[str] = field(default_factory=list)
    versions_added: list[str] = field(default_factory=list)
    needed_removed: list[str] = field(default_factory=list)
    needed_added: list[str] = field(default_factory=list)
    dependents: list[DependentImpact] = field(default_factory=list)
    filters: tuple[str, ...] = ()
    exported_counts: tuple[int, int] = (0, 0)

    # -- verdict -----------------------------------------------------------------------------
    @property
    def soname_changed(self) -> bool:
        return self.old_soname != self.new_soname

    @property
    def has_changes(self) -> bool:
        return bool(self.soname_changed or self.removed or self.added or self.changed or self.versions_removed
                    or self.versions_added or self.needed_removed or self.needed_added)

    @property
    def has_incompatible_changes(self) -> bool:
        return bool(self.soname_changed or self.versions_removed
                    or any(c.incompatible for c in self.removed + self.changed))

    @property
    def exit_code(self) -> int:
        """abidiff's bitmask: 4 ABI changed; 4|8 incompatible. With dependents given, 8 means a
        dependent is broken (what a maintainer's CI asks), not merely that something was removed."""
        if not self.has_changes:
            return EXIT_NO_CHANGE
        incompatible = (any(d.broken for d in self.dependents) if self.dependents
                        else self.has_incompatible_changes)
        return EXIT_ABI_CHANGE | (EXIT_INCOMPATIBLE if incompatible else 0)

    @property
    def verdict(self) -> str:
        if not self.has_changes:
            return "no ABI change"
        if self.dependents:
            broken = [d.path for d in self.dependents if d.broken]
            return (f"incompatible for {len(broken)} of {len(self.dependents)} dependents" if broken
                    else "ABI changed, compatible with the given dependents")
        return "incompatible ABI change" if self.has_incompatible_changes else "compatible ABI change"

    def counts(self) -> dict[str, int]:
        def n(items, kind):
            return sum(1 for c in items if c.kind == kind)

        return {"removed_functions": n(self.removed, "function"), "added_functions": n(self.added, "function"),
                "removed_variables": n(self.removed, "variable"), "added_variables": n(self.added, "variable"),
                "changed": len(self.changed), "versions_removed": len(self.versions_removed),
                "versions_added": len(self.versions_added), "needed_removed": len(self.needed_removed),
                "needed_added": len(self.needed_added), "old_exported": self.exported_counts[0],
                "new_exported": self.exported_counts[1]}

    # -- output ------------------------------------------------------------------------------
    def symbol_changes(self) -> list[SymbolChange]:
        return self.removed + self.added + self.changed

    def to_dict(self) -> dict:
        return {"old": {"path": self.old_path, "soname": self.old_soname},
                "new": {"path": self.new_path, "soname": self.new_soname},
                "verdict": self.verdict, "exit_code": self.exit_code, "counts": self.counts(),
                "filters": list(self.filters), "soname_changed": self.soname_changed,
                "versions_removed": self.versions_removed, "versions_added": self.versions_added,
                "needed_removed": self.needed_removed, "needed_added": self.needed_added,
                "symbols": [c.to_dict() for c in self.symbol_changes()],
                "dependents": [d.to_dict() for d in self.dependents],
                "findings": [f.to_dict() for f in self.findings()]}

    def to_frame(self):
        """One row per symbol change. pandas is imported only here."""
        import pandas as pd

        columns = ["change", "kind", "name", "version", "demangled", "namespace", "scope", "incompatible",
                   "old_size", "new_size", "detail", "breaking_for"]
        rows = []
        for c in self.symbol_changes():
            d = c.to_dict()
            rows.append({**{k: d[k] for k in columns if k in d},
                         "old_size": c.old.size if c.old else None, "new_size": c.new.size if c.new else None,
                         "breaking_for": list(c.breaking_for)})
        return pd.DataFrame(rows, columns=columns)

    def findings(self):
        from rcompat.elf.abi_render import abi_findings

        return abi_findings(self)

    def render(self, fmt: str = "text", **options) -> str:
        from rcompat.elf.abi_render import render_abi

        return render_abi(self, fmt, **options)


# -- computing the diff ----------------------------------------------------------------------
class Exports(dict):
    """(name, version) -> (type, bind, visibility, size, value, hidden) of every exported symbol.
    Plain tuples, because libtorch_cpu.so has 74,000 of them and only the changed few become
    AbiSymbol objects."""

    def symbol(self, key: tuple[str, str]) -> AbiSymbol:
        typ, bind, vis, size, value, hidden = self[key]
        return AbiSymbol(key[0], key[1], hidden, typ, bind, vis, size, value)

    def get_symbol(self, key: tuple[str, str]) -> AbiSymbol | None:
        return self.symbol(key) if key in self else None


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
    from rcompat.elf.abi_scope import scope_of
    from rcompat.elf.demangle import demangle_all

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
             used_by: Iterable["str | os.PathLike[str]"] = ()) -> AbiDiff:
    """Compare the exported ABI of two builds of a library. Raises ElfError on unreadable input."""
    patterns = _compile_filters(filter)
    used_by = [str(p) for p in used_by]
    with ElfImage(old) as a, ElfImage(new) as b:
        old_syms, new_syms = exported_symbols(a), exported_symbols(b)
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
    for path in used_by:
        try:
            with ElfImage(path) as dep:
                diff.dependents.append(assess_dependent(dep, diff, old_syms, new_syms, all_new_versions))
        except ElfError as exc:
            raise ElfError(path, f"--used-by: {exc.reason}", exc.offset) from None
    return diff
