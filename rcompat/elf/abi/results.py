"""The data of an ABI diff: exported symbols, their changes, the impact on dependents, the whole diff.

Shared by the computation (abi.py, abi_impact.py) and the output (abi_render.py); it imports none of
them, so the dependencies run one way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

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
                "old": sym_dict(self.old), "new": sym_dict(self.new), "breaking_for": self.breaking_for}


def sym_dict(sym: AbiSymbol | None) -> dict | None:
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
                "dependents": [d.to_dict() for d in self.dependents]}

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


@dataclass(frozen=True)
class ImportProblem:
    name: str
    version: str  # the version the dependent asks for; "" when its reference is unversioned
    change: str  # removed | type | size | binding | visibility
    detail: str

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


@dataclass
class DependentImpact:
    path: str
    needs_old: bool  # its DT_NEEDED names the old build's SONAME
    imports_checked: int = 0  # undefined symbols that bind to this library
    broken_imports: list[ImportProblem] = field(default_factory=list)
    affected_imports: list[ImportProblem] = field(default_factory=list)  # changed, still compatible
    missing_versions: list[str] = field(default_factory=list)
    soname_note: str = ""

    @property
    def broken(self) -> bool:
        return bool(self.broken_imports or self.missing_versions)

    def to_dict(self) -> dict:
        return {"path": self.path, "broken": self.broken, "needs_old": self.needs_old,
                "imports_checked": self.imports_checked,
                "broken_imports": [p.__dict__ for p in self.broken_imports],
                "affected_imports": [p.__dict__ for p in self.affected_imports],
                "missing_versions": self.missing_versions, "soname_note": self.soname_note}


class Exports(dict):
    """(name, version) -> (type, bind, visibility, size, value, hidden) of every exported symbol.
    Plain tuples, because libtorch_cpu.so has 74,000 of them and only the changed few become
    AbiSymbol objects."""

    def symbol(self, key: tuple[str, str]) -> AbiSymbol:
        typ, bind, vis, size, value, hidden = self[key]
        return AbiSymbol(key[0], key[1], hidden, typ, bind, vis, size, value)

    def get_symbol(self, key: tuple[str, str]) -> AbiSymbol | None:
        return self.symbol(key) if key in self else None
