"""R stack breakage rules as data (rcompat/data/r_rules.toml) and their evaluation.

Public API, used by doctor and by lockfile / CI-matrix checks alike:

    load_rules(path=None) -> list[Rule]
    evaluate(stack, rules=None) -> list[RuleHit]      # stack: {"R": "4.5.0", "torch": "0.12.1", ...}
    RuleHit.to_finding(area="r") -> Finding

A stack maps component names to version strings: "R", R package names, "python:<distribution>" for
the Python reticulate binds, and "os" (linux | windows | macos), which is matched as a name. A rule
fires only when every component it names is present and matches, so evaluating a lockfile that
lacks torch never raises a torch rule.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from rcompat.data import load_toml
from rcompat.errors import DataError
from rcompat.model import Finding, Status
from rcompat.versions import Specifier, Version, matches

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

    def matches(self, stack: Mapping[str, str]) -> bool:
        return all(component_matches(name, spec, stack.get(name)) for name, spec in self.when.items())

    def describe_when(self) -> str:
        return ", ".join(f"{name} {spec}" for name, spec in self.when.items())


@dataclass(frozen=True)
class RuleHit:
    rule: Rule
    matched: dict[str, str] = field(default_factory=dict)  # component -> the version that matched

    def to_finding(self, area: str = "r") -> Finding:
        rule = self.rule
        stack_text = ", ".join(f"{k} {v}" for k, v in self.matched.items())
        caveat = {"unverified": " This claim is unverified: no upstream report confirms it.",
                  "low": " Low confidence: a single report."}.get(rule.confidence, "")
        return Finding(
            id=rule.id, area=area, status=rule.status, title=rule.title,
            message=f"{rule.message} Found: {stack_text} (rule: {rule.describe_when()}).{caveat}",
            remedy=rule.remedy, source=rule.source, confidence=rule.confidence,
            evidence={"matched": dict(self.matched), "when": dict(rule.when)})


def component_matches(name: str, spec: str, value: str | None) -> bool:
    if value is None or str(value).strip() == "":
        return False
    if name in NAME_COMPONENTS:
        return str(value).strip().lower() in {s.strip().lower() for s in spec.split(",") if s.strip()}
    return matches(value, spec)


def load_rules(path: "str | Path | None" = None) -> list[Rule]:
    """Every [[rule]] of the table, validated: a malformed row raises DataError naming it."""
    source = path if path is not None else RULES_FILE
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
    return Rule(id=str(row["id"]), when={str(k): str(v) for k, v in when.items()}, status=status,
                title=str(row["title"]), message=str(row["message"]), remedy=str(row["remedy"]),
                source=str(row["source"]), confidence=str(row["confidence"]), **examples)


def evaluate(stack: Mapping[str, str], rules: Iterable[Rule] | None = None) -> list[RuleHit]:
    """The rules that fire on `stack`, in table order. Unparseable versions raise DataError."""
    rules = load_rules() if rules is None else list(rules)
    clean = {str(k): str(v).strip() for k, v in stack.items() if v is not None and str(v).strip()}
    hits = []
    for rule in rules:
        try:
            fired = rule.matches(clean)
        except ValueError as exc:
            raise DataError(f"rule {rule.id}: cannot compare {rule.describe_when()} with the stack: {exc}") from exc
        if fired:
            hits.append(RuleHit(rule, {name: clean[name] for name in rule.when}))
    return hits


def parse_stack(items: Iterable[str]) -> dict[str, str]:
    """`["R=4.5.0", "torch=0.12.1"]` -> a stack; bad items raise UsageError (CLI exit 2)."""
    from rcompat.errors import UsageError

    stack: dict[str, str] = {}
    for item in items:
        name, sep, version = item.partition("=")
        name, version = name.strip(), version.strip()
        if not sep or not name or not version:
            raise UsageError(f"expected COMPONENT=VERSION, got {item!r}")
        if name not in NAME_COMPONENTS:
            try:
                Version.parse(version)
            except ValueError as exc:
                raise UsageError(f"{name}: {exc}") from exc
        stack[name] = version
    return stack
