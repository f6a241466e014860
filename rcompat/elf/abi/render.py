"""Findings and text/markdown/json output of an AbiDiff, symbols grouped by namespace and class."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING

from rcompat.model import Finding, Status

if TYPE_CHECKING:
    from rcompat.elf.abi.results import AbiDiff, SymbolChange

AREA = "elf"
_TAG = {"removed": "[D]", "added": "[A]"}
_SOURCE = "abidiff(1) exit status bitmask and ELF-symbol-only mode (REFERENCE.md: What the anchor tools print)"


def _name(change: "SymbolChange", demangle: bool) -> str:
    sym = change.symbol
    if demangle and change.demangled:
        return change.demangled + (sym.label[len(sym.name):] if sym.version else "")
    return sym.label


def _preview(changes, limit: int = 5) -> str:
    names = [c.demangled or c.symbol.label for c in changes[:limit]]
    more = f" (and {len(changes) - limit} more)" if len(changes) > limit else ""
    return ", ".join(names) + more


def abi_findings(diff: "AbiDiff") -> list[Finding]:
    out = []
    ev = {"old": diff.old_path, "new": diff.new_path}
    if diff.soname_changed:
        out.append(Finding("abi.soname", AREA, Status.FAIL, f"SONAME changed: {diff.old_soname} → {diff.new_soname}",
                           "Dependents linked against the old SONAME do not load the new file.",
                           remedy="rebuild dependents against the new library, or keep the old one installed",
                           evidence=ev, source=_SOURCE))
    if diff.removed:
        out.append(Finding("abi.removed", AREA, Status.FAIL, f"{len(diff.removed)} exported symbols removed",
                           _preview(diff.removed), evidence={**ev, "symbols": [c.symbol.label for c in diff.removed]},
                           remedy="dependents that import them fail to load: check with --used-by", source=_SOURCE))
    for change, status in (("size", Status.FAIL), ("type", None), ("binding", Status.WARN), ("visibility", Status.WARN)):
        items = [c for c in diff.changed if c.change == change]
        if not items:
            continue
        st = status or (Status.FAIL if any(c.incompatible for c in items) else Status.WARN)
        out.append(Finding(f"abi.{change}", AREA, st, f"{len(items)} exported symbols changed {change}",
                           "; ".join(f"{c.symbol.label}: {c.detail}" for c in items[:5]),
                           evidence={**ev, "symbols": {c.symbol.label: c.detail for c in items}}, source=_SOURCE))
    if diff.versions_removed:
        out.append(Finding("abi.versions_removed", AREA, Status.FAIL,
                           f"symbol versions removed: {', '.join(diff.versions_removed)}",
                           "Dependents that need one of these versions fail to load.", evidence=ev, source=_SOURCE))
    if diff.needed_removed or diff.needed_added:
        text = ", ".join([f"+{n}" for n in diff.needed_added] + [f"-{n}" for n in diff.needed_removed])
        out.append(Finding("abi.needed", AREA, Status.WARN, f"needed libraries changed: {text}", evidence=ev))
    if diff.added or diff.versions_added:
        title = f"{len(diff.added)} exported symbols added"
        if diff.versions_added:
            title += f"; new symbol versions {', '.join(diff.versions_added)}"
        out.append(Finding("abi.added", AREA, Status.OK, title, _preview(diff.added), evidence=ev))
    for dep in diff.dependents:
        fid = f"abi.used_by.{dep.path.rsplit('/', 1)[-1]}"
        if dep.broken:
            what = [f"{p.label} {p.change} ({p.detail})" for p in dep.broken_imports]
            what += [f"version {v} no longer defined" for v in dep.missing_versions]
            out.append(Finding(fid, AREA, Status.FAIL, f"{dep.path} is broken by the new build", "; ".join(what),
                               remedy="rebuild it against the new library", evidence=dep.to_dict()))
        else:
            status = Status.WARN if dep.affected_imports or dep.soname_note else Status.OK
            message = "; ".join([f"{p.label}: {p.change} {p.detail}" for p in dep.affected_imports]
                                + ([dep.soname_note] if dep.soname_note else []))
            out.append(Finding(fid, AREA, status, f"{dep.path}: none of its {dep.imports_checked} imports "
                                                  "from this library broke", message, evidence=dep.to_dict()))
    verdict_status = (Status.OK if not diff.has_changes else
                      Status.FAIL if diff.exit_code & 8 else Status.WARN)
    out.insert(0, Finding("abi.verdict", AREA, verdict_status, diff.verdict, f"exit code {diff.exit_code}",
                          evidence={**ev, **diff.counts()}, source=_SOURCE))
    return out


def _grouped(changes) -> dict[str, dict[str, list]]:
    groups: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for c in changes:
        groups[c.namespace][c.scope].append(c)
    return groups


def _symbol_lines(title: str, changes, demangle: bool) -> list[str]:
    if not changes:
        return []
    lines = ["", f"{title} ({len(changes)}):"]
    groups = _grouped(changes)
    for namespace in sorted(groups, key=lambda n: (n != "", n)):
        scopes = groups[namespace]
        indent = "  "
        if namespace:
            lines.append(f"  {namespace}:: ({sum(len(v) for v in scopes.values())})")
            indent = "    "
        for scope in sorted(scopes):
            items = scopes[scope]
            inner = indent
            if scope and scope != namespace:
                lines.append(f"{indent}{scope} ({len(items)})")
                inner = indent + "  "
            for c in items:
                tag = _TAG.get(c.change, "[C]")
                detail = f"  {c.change} {c.detail}" if c.detail else ""
                breaks = f"  ← breaks {', '.join(p.rsplit('/', 1)[-1] for p in c.breaking_for)}" if c.breaking_for else ""
                lines.append(f"{inner}{tag} {_name(c, demangle)}{detail}{breaks}")
    return lines


def render_text(diff: "AbiDiff", demangle: bool = False) -> str:
    n = diff.counts()
    lines = [f"rcompat elf abi-diff: {diff.old_path} → {diff.new_path}",
             f"verdict: {diff.verdict} (exit {diff.exit_code})"]
    if diff.filters:
        lines.append(f"filter: {' | '.join(diff.filters)}")
    lines.append("")
    lines.append(f"Function symbols: {n['removed_functions']} removed, {n['added_functions']} added")
    lines.append(f"Variable symbols: {n['removed_variables']} removed, {n['added_variables']} added")
    lines.append(f"Changed symbols: {n['changed']}  (exported: {n['old_exported']} → {n['new_exported']})")
    if diff.soname_changed:
        lines.append(f"SONAME changed: {diff.old_soname} → {diff.new_soname}")
    for label, plus, minus in (("Symbol versions", diff.versions_added, diff.versions_removed),
                               ("Needed libraries", diff.needed_added, diff.needed_removed)):
        if plus or minus:
            lines.append(f"{label}: " + ", ".join([f"+{v}" for v in plus] + [f"-{v}" for v in minus]))
    removed_f = [c for c in diff.removed if c.kind == "function"]
    removed_v = [c for c in diff.removed if c.kind == "variable"]
    added_f = [c for c in diff.added if c.kind == "function"]
    added_v = [c for c in diff.added if c.kind == "variable"]
    lines += _symbol_lines("Removed function symbols", removed_f, demangle)
    lines += _symbol_lines("Removed variable symbols", removed_v, demangle)
    lines += _symbol_lines("Changed symbols", diff.changed, demangle)
    lines += _symbol_lines("Added function symbols", added_f, demangle)
    lines += _symbol_lines("Added variable symbols", added_v, demangle)
    if diff.dependents:
        lines += ["", "Dependents (--used-by):"]
        for dep in diff.dependents:
            state = "BROKEN" if dep.broken else "ok"
            lines.append(f"  {state:<6} {dep.path}  ({dep.imports_checked} import(s) from this library checked)")
            for p in dep.broken_imports:
                lines.append(f"         {p.label}: {p.change}, {p.detail}")
            for v in dep.missing_versions:
                lines.append(f"         needs version {v}, which the new build no longer defines")
            for p in dep.affected_imports:
                lines.append(f"         {p.label}: {p.change} {p.detail} (compatible)")
            if dep.soname_note:
                lines.append(f"         note: {dep.soname_note}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(diff: "AbiDiff", demangle: bool = True) -> str:
    n = diff.counts()
    out = [f"### ABI diff: `{diff.old_path}` → `{diff.new_path}`", "",
           f"**Verdict:** {diff.verdict} (exit {diff.exit_code})", "",
           "| | removed | added |", "|---|---|---|",
           f"| function symbols | {n['removed_functions']} | {n['added_functions']} |",
           f"| variable symbols | {n['removed_variables']} | {n['added_variables']} |",
           f"| symbol versions | {len(diff.versions_removed)} | {len(diff.versions_added)} |",
           f"| needed libraries | {len(diff.needed_removed)} | {len(diff.needed_added)} |", ""]
    if diff.soname_changed:
        out += [f"SONAME changed: `{diff.old_soname}` → `{diff.new_soname}`", ""]
    for title, items in (("Removed", diff.removed), ("Changed", diff.changed), ("Added", diff.added)):
        if not items:
            continue
        out += [f"#### {title} ({len(items)})", ""]
        for namespace, scopes in sorted(_grouped(items).items(), key=lambda kv: (kv[0] != "", kv[0])):
            count = sum(len(v) for v in scopes.values())
            out += [f"<details><summary>{_cell(namespace + '::' if namespace else '(global)')} ({count})</summary>",
                    "", "| symbol | change | breaks |", "|---|---|---|"]
            for scope in sorted(scopes):
                for c in scopes[scope]:
                    breaks = ", ".join(f"`{p.rsplit('/', 1)[-1]}`" for p in c.breaking_for)
                    out.append(f"| `{_cell(_name(c, demangle))}` | {_cell((c.change + ' ' + c.detail).strip())} "
                               f"| {breaks} |")
            out += ["", "</details>", ""]
    if diff.dependents:
        out += ["#### Dependents", "", "| library | verdict | why |", "|---|---|---|"]
        for dep in diff.dependents:
            why = [f"`{p.label}` {p.change}" for p in dep.broken_imports] + [f"needs `{v}`" for v in dep.missing_versions]
            out.append(f"| `{dep.path}` | {'❌ broken' if dep.broken else '✅ ok'} | {_cell('; '.join(why))} |")
        out.append("")
    return "\n".join(out)


def render_abi(diff: "AbiDiff", fmt: str = "text", demangle: bool = False, **_: object) -> str:
    if fmt == "json":
        data = {**diff.to_dict(), "findings": [f.to_dict() for f in abi_findings(diff)]}
        return json.dumps(data, indent=2) + "\n"
    if fmt in ("markdown", "md"):
        return render_markdown(diff, demangle=True)
    if fmt == "text":
        return render_text(diff, demangle=demangle)
    from rcompat.errors import UsageError

    raise UsageError(f"unknown format '{fmt}'; choose from: text, json, markdown")
