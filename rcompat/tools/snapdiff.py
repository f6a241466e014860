"""`rcompat snapshot diff OLD NEW`: what changed between two snapshots and which changes are risky.

Both snapshots are flattened to "/"-separated keys (`r/version`, `python/packages/numpy`,
`libraries/<path>/build_id`); each key present in one or both with different values is a change.
The risks in rcompat/data/snapshot_risks.toml are then evaluated over the changes: a `fail` risk
makes the diff exit 1 (the upgrade is risky), a `warn` only with --strict.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from rcompat.data import load_toml
from rcompat.errors import DataError
from rcompat.model import Finding, Report, Status
from rcompat.versions import Version

AREA = "snapshot"
CHANGES = ("added", "removed", "changed", "any", "major", "major_minor", "decreased", "increased")
# Bookkeeping, not the stack: never reported as changes.
IGNORED = ("created_at", "tool/*", "errors/*", "libraries/searched*", "*/status", "*/via", "*/rscript",
           "r/packages/*/built", "r/packages/*/libpath", "snapshot_version")


@dataclass(frozen=True)
class Change:
    key: str
    old: Any
    new: Any

    @property
    def kind(self) -> str:
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        return "changed"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "old": self.old, "new": self.new}

    def line(self) -> str:
        mark = {"added": "+", "removed": "-", "changed": "~"}[self.kind]
        if self.kind == "added":
            return f"{mark} {self.key} {self.new}"
        if self.kind == "removed":
            return f"{mark} {self.key} {self.old}"
        return f"{mark} {self.key} {self.old} → {self.new}"


def flatten(snap: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in snap.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, path + "/"))
        elif value is not None and value != "":
            out[path] = value if not isinstance(value, list) else tuple(
                str(v) if not isinstance(v, Mapping) else str(sorted(v.items())) for v in value)
    return out


def changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    """The changes between two flattened stacks (`stack_keys` of each snapshot)."""
    out = []
    for key in sorted(set(a) | set(b)):
        if any(fnmatch.fnmatchcase(key, pat) for pat in IGNORED):
            continue
        if a.get(key) != b.get(key):
            out.append(Change(key, a.get(key), b.get(key)))
    return out


def stack_keys(snap: Mapping[str, Any]) -> dict[str, Any]:
    """A snapshot flattened to "/"-separated keys, host and library bookkeeping lifted out."""
    return flatten(_stack_of(snap))


def _stack_of(snap: Mapping[str, Any]) -> dict[str, Any]:
    """Libraries are keyed by path under `files`; lift them so keys read `libraries/<path>/…`."""
    stack = {k: v for k, v in snap.items() if k not in ("host",)}
    libs = stack.get("libraries")
    if isinstance(libs, Mapping) and isinstance(libs.get("files"), Mapping):
        stack["libraries"] = dict(libs["files"])
    return stack


def load_risks(path: str | None = None) -> list[dict[str, Any]]:
    rows = load_toml(Path(path) if path else "snapshot_risks.toml", "risk",
                     required=("id", "keys", "change", "status", "title", "message", "remedy", "source",
                               "confidence"))
    for row in rows:
        if row["change"] not in CHANGES:
            raise DataError(f"snapshot_risks.toml: risk {row['id']}: change must be one of {', '.join(CHANGES)}")
        if row["status"] not in ("fail", "warn"):
            raise DataError(f"snapshot_risks.toml: risk {row['id']}: status must be fail or warn")
    return rows


def risk_applies(risk: Mapping[str, Any], change: Change, old_flat: Mapping[str, Any],
                 new_flat: Mapping[str, Any]) -> bool:
    if not any(fnmatch.fnmatchcase(change.key, pat) for pat in risk["keys"]):
        return False
    if risk.get("same"):
        sibling = change.key.rsplit("/", 1)[0] + "/" + risk["same"]
        if old_flat.get(sibling) is None or old_flat.get(sibling) != new_flat.get(sibling):
            return False
    kind = risk["change"]
    if kind == "any":
        return True
    if kind in ("added", "removed", "changed"):
        return change.kind == kind
    if change.kind != "changed":
        return False
    try:
        old_v, new_v = Version.parse(str(change.old)), Version.parse(str(change.new))
    except ValueError:
        return kind == "changed"
    if kind == "major":
        return old_v.major != new_v.major
    if kind == "major_minor":
        return (old_v.major, old_v.minor) != (new_v.major, new_v.minor)
    if kind == "decreased":
        return new_v < old_v
    return new_v > old_v  # increased


def diff(old: Mapping[str, Any], new: Mapping[str, Any], risks: Iterable[Mapping[str, Any]] | None = None,
         old_name: str = "OLD", new_name: str = "NEW") -> Report:
    risks = list(risks) if risks is not None else load_risks()
    old_flat, new_flat = stack_keys(old), stack_keys(new)
    found = changes(old_flat, new_flat)
    report = Report(command="snapshot diff")
    risky = 0
    for change in found:
        for risk in risks:
            if risk_applies(risk, change, old_flat, new_flat):
                risky += 1
                report.add(_risk_finding(risk, change))
    lines = change_lines(found)
    report.add(Finding(
        id="SNAP-CHANGES", area=AREA, status=Status.OK,
        title=f"{len(lines)} change(s) between {old_name} and {new_name}, {risky} flagged by the risk table",
        message="\n".join(lines[:50]),
        evidence={"counts": _counts(found)}))
    report.facts[AREA] = {"old": {"file": old_name, "created_at": old.get("created_at")},
                          "new": {"file": new_name, "created_at": new.get("created_at")},
                          "changes": [c.to_dict() for c in found]}
    return report


def _counts(found: list[Change]) -> dict[str, int]:
    counts = {"added": 0, "removed": 0, "changed": 0}
    for c in found:
        counts[c.kind] += 1
    return counts


def _risk_finding(risk: Mapping[str, Any], change: Change) -> Finding:
    values = {"key": change.key, "path": library_path(change.key) or change.key,
              "old": change.old if change.old is not None else "(none)",
              "new": change.new if change.new is not None else "(none)"}
    return Finding(id=risk["id"], area=AREA, status=Status(risk["status"]), title=risk["title"],
                   message=risk["message"].format_map(values), remedy=risk["remedy"].format_map(values),
                   evidence=change.to_dict(), source=risk["source"], confidence=risk["confidence"])


def library_path(key: str) -> str | None:
    """`libraries//usr/lib/libx.so/build_id` -> `/usr/lib/libx.so`; None for other keys."""
    if not key.startswith("libraries/") or key.count("/") < 2:
        return None
    return key[len("libraries/"):].rsplit("/", 1)[0]


def change_lines(found: Iterable[Change]) -> list[str]:
    """One line per change; a library's field changes are folded into one line per file."""
    lines: list[str] = []
    libs: dict[str, list[Change]] = {}
    for c in found:
        path = library_path(c.key)
        if path is None:
            lines.append(c.line())
        else:
            libs.setdefault(path, []).append(c)
    for path, cs in libs.items():
        kinds = {c.kind for c in cs}
        mark = "+" if kinds == {"added"} else "-" if kinds == {"removed"} else "~"
        fields = ", ".join(f"{c.key.rsplit('/', 1)[1]} {c.old if c.old is not None else ''}"
                           f"{' → ' if c.kind == 'changed' else ''}{c.new if c.new is not None and c.kind != 'removed' else ''}".strip()
                           for c in cs)
        lines.append(f"{mark} library {path}: {fields}")
    return lines


def render_text(report: Report) -> str:
    """Changes first (the diff a user reads), then each risky change with its reason and fix; wrapped
    to 80 columns like every text report (rcompat.renderers.text.wrap), names escaped."""
    from rcompat.renderers.escape import one_line, printable
    from rcompat.renderers.text import DETAIL, wrap

    facts = report.facts.get(AREA, {})
    lines = wrap(one_line(f"rcompat snapshot diff: {facts.get('old', {}).get('file')} → "
                          f"{facts.get('new', {}).get('file')}"), "", subsequent="  ")
    changes_ = facts.get("changes", [])
    rendered = change_lines(Change(c["key"], c["old"], c["new"]) for c in changes_)
    lines.append(f"{len(rendered)} change(s):" if rendered else "no changes")
    for line in rendered:
        lines.extend(wrap(one_line(line), "  ", subsequent="      "))
    risks = [f for f in report.findings if f.id != "SNAP-CHANGES"]
    lines.append("")
    lines.append(f"{len(risks)} risky change(s):" if risks else "no risky changes")
    for f in risks:
        lines.extend(wrap(one_line(f"{f.status.value.upper():<5} {f.id}: {f.title}"), "  ", subsequent=DETAIL))
        lines.extend(wrap(printable(f.message), DETAIL))
        lines.extend(wrap("fix: " + printable(f.remedy), DETAIL))
        lines.extend(wrap(f"source: {printable(f.source)} ({f.confidence})", DETAIL))
    return "\n".join(lines) + "\n"
