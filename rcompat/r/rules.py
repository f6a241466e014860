"""R stack breakage rules as data (rcompat/data/r_rules.toml) and their evaluation.

Public API, used by doctor and by lockfile / CI-matrix checks alike:

    load_rules(path=None) -> list[Rule]
    evaluate(stack, rules=None) -> list[RuleHit]      # stack: {"R": "4.5.0", "torch": "0.12.1", ...}
    RuleHit.to_finding(area="r") -> Finding

A stack maps component names to version strings: "R", R package names, "python:<distribution>" for
the Python reticulate binds, and "os" (linux | windows | macos), which is matched as a name. A rule
fires only when every component it names is present and matches, so evaluating a lockfile that
lacks torch never raises a torch rule.

Derived components are looked up in other tables rather than written into rules: "libtorch(torch)"
is the LibTorch that the stack's R torch ships (rcompat/data/rtorch_libtorch.csv). A rule with
`differ = [A, B]` fires only when A and B are both known and differ in major.minor, so "R torch and
Python torch must use the same LibTorch" is one rule that follows the table, not one rule per release.
Messages may name components in braces ("{libtorch(torch)}"); they are filled from the stack.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from rcompat.data import load_toml
from rcompat.errors import DataError
from rcompat.model import Finding, Status
from rcompat.versions import Specifier, Version, matches, shown

RULES_FILE = "r_rules.toml"
NAME_COMPONENTS = frozenset({"os"})
RULE_STATUSES = (Status.FAIL, Status.WARN, Status.OK)
_REQUIRED = ("id", "when", "status", "title", "message", "remedy", "source", "confidence")


@dataclass(frozen=True)
class Rule:
    id: str
    when: dict[str, str]
    status: Status
    title: str
    message: str
    remedy: str
    source: str
    confidence: str
    fires_on: tuple[dict[str, str], ...] = ()
    quiet_on: tuple[dict[str, str], ...] = ()
    differ: tuple[str, str] | None = None

    def matches(self, stack: Mapping[str, str]) -> bool:
        if not all(component_matches(name, spec, stack.get(name)) for name, spec in self.when.items()):
            return False
        if self.differ is None:
            return True
        left, right = (stack.get(name) for name in self.differ)
        return bool(left and right) and Version.parse(left).truncate(2) != Version.parse(right).truncate(2)

    def components(self) -> tuple[str, ...]:
        return tuple(self.when) + tuple(c for c in (self.differ or ()) if c not in self.when)

    def describe_when(self) -> str:
        text = ", ".join(f"{name} {spec}" for name, spec in self.when.items())
        if self.differ:
            text += f", {self.differ[0]} and {self.differ[1]} differ in major.minor"
        return text


@dataclass(frozen=True)
class RuleHit:
    rule: Rule
    matched: dict[str, str] = field(default_factory=dict)  # component -> the version that matched

    def to_finding(self, area: str = "r") -> Finding:
        rule = self.rule
        stack_text = ", ".join(f"{k} {v}" for k, v in self.matched.items())
        fill = self._fill
        caveat = {"unverified": " This claim is unverified: no upstream report confirms it.",
                  "low": " Low confidence: a single report."}.get(rule.confidence, "")
        return Finding(
            id=rule.id, area=area, status=rule.status, title=fill(rule.title),
            message=f"{fill(rule.message)} Found: {stack_text} (rule: {rule.describe_when()}).{caveat}",
            remedy=fill(rule.remedy), source=rule.source, confidence=rule.confidence,
            evidence={"matched": dict(self.matched), "when": dict(rule.when)})


    def _fill(self, text: str) -> str:
        for name, value in self.matched.items():
            text = text.replace("{" + name + "}", value)
        return text


def _libtorch_of_rtorch(version: str) -> str | None:
    from rcompat.cuda.tables import rtorch_to_libtorch

    return rtorch_to_libtorch(version)


# Derived component -> (the component it is computed from, the table lookup).
DERIVED_COMPONENTS = {"libtorch(torch)": ("torch", _libtorch_of_rtorch)}


def with_derived(stack: Mapping[str, str]) -> dict[str, str]:
    out = dict(stack)
    for name, (base, lookup) in DERIVED_COMPONENTS.items():
        if name not in out and out.get(base):
            try:
                derived = lookup(out[base])
            except ValueError:
                derived = None
            if derived:
                out[name] = derived
    return out


def component_matches(name: str, spec: str, value: str | None) -> bool:
    if value is None or str(value).strip() == "":
        return False
    if name in NAME_COMPONENTS:
        return str(value).strip().lower() in {s.strip().lower() for s in spec.split(",") if s.strip()}
    return matches(value, spec)


def load_rules(path: "str | Path | None" = None) -> list[Rule]:
    """Every [[rule]] of the table, validated: a malformed row raises DataError naming it."""
    source = Path(path) if path is not None else RULES_FILE  # a Path: the caller's file, read as given
    rows = load_toml(source, "rule", required=_REQUIRED)
    rules, seen = [], set()
    for row in rows:
        rule = _rule_from_row(source, row)
        if rule.id in seen:
            raise DataError(f"{source}: rule id {rule.id} appears twice")
        seen.add(rule.id)
        rules.append(rule)
    return rules


def _rule_from_row(source: Any, row: Mapping[str, Any]) -> Rule:
    where = f"{source}: rule {row.get('id')}"
    when = row["when"]
    if not isinstance(when, dict) or not when:
        raise DataError(f"{where}: 'when' must be a non-empty table of component = specifier")
    for name, spec in when.items():
        if not isinstance(spec, str):
            raise DataError(f"{where}: when.{name} must be a string")
        if name not in NAME_COMPONENTS:
            try:
                for _, target in Specifier(spec).clauses():
                    Version.parse(target[:-2] if target.endswith(".*") else target)
            except ValueError as exc:
                raise DataError(f"{where}: when.{name}: {exc}") from exc
    try:
        status = Status(row["status"])
    except ValueError as exc:
        raise DataError(f"{where}: status {row['status']!r} is not one of fail, warn, ok") from exc
    if status not in RULE_STATUSES:
        raise DataError(f"{where}: status must be fail, warn or ok")
    examples = {}
    for key in ("fires_on", "quiet_on"):
        value = row.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise DataError(f"{where}: {key} must be a list of stacks")
        examples[key] = tuple({str(k): str(v) for k, v in stack.items()} for stack in value)
    differ = row.get("differ")
    if differ is not None and not (isinstance(differ, list) and len(differ) == 2
                                   and all(isinstance(c, str) and c for c in differ)):
        raise DataError(f"{where}: differ must be a list of two component names")
    return Rule(id=str(row["id"]), when={str(k): str(v) for k, v in when.items()}, status=status,
                differ=tuple(differ) if differ else None,
                title=str(row["title"]), message=str(row["message"]), remedy=str(row["remedy"]),
                source=str(row["source"]), confidence=str(row["confidence"]), **examples)


def evaluate(stack: Mapping[str, str], rules: Iterable[Rule] | None = None) -> list[RuleHit]:
    """The rules that fire on `stack`, in table order. Unparseable versions raise DataError."""
    rules = load_rules() if rules is None else list(rules)
    clean = with_derived({str(k): str(v).strip() for k, v in stack.items() if v is not None and str(v).strip()})
    hits = []
    for rule in rules:
        try:
            fired = rule.matches(clean)
        except ValueError as exc:
            raise DataError(f"rule {rule.id}: cannot compare {rule.describe_when()} with the stack: {exc}") from exc
        if fired:
            hits.append(RuleHit(rule, {name: clean[name] for name in rule.components()}))
    return hits


def parse_stack(items: Iterable[str]) -> dict[str, str]:
    """`["R=4.5.0", "torch=0.12.1"]` -> a stack; bad items raise UsageError (CLI exit 2)."""
    from rcompat.errors import UsageError

    stack: dict[str, str] = {}
    for item in items:
        name, sep, version = item.partition("=")
        name, version = name.strip(), version.strip()
        if not sep or not name or not version:
            raise UsageError(f"expected COMPONENT=VERSION, got {shown(item)}")
        if name in stack:
            raise UsageError(f"{name} given twice ({stack[name]} and {version}); give each component once")
        if name not in NAME_COMPONENTS:
            try:
                Version.parse(version)
            except ValueError as exc:
                raise UsageError(f"{name}: {exc}") from exc
        stack[name] = version
    return stack
