"""Many node reports into one cross-node view, read one report at a time in bounded memory.

Facts: each area's facts are compared with a reference, the first node that reported that area.
Subtrees equal to the reference are skipped by one dict comparison (done in C, no Python walk), so
a node like the others costs little more than parsing it; only the leaves that differ are walked and
recorded, as NodeSets per value (ranges of node numbers: nodes are read in natural order, so even the
majority value of 10,000 nodes is a few ranges). Findings: each node's (id, status) vector is its
signature; nodes with the same vector share one group (a row of the HTML grid). Memory grows with the
number of differences and distinct status vectors, not with the number of nodes (but for their names).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rcompat.fleet.facts_table import FactTable, fact_table
from rcompat.fleet.nodeset import NodeSet

MAX_VALUES = 64  # distinct values kept per fact; a fact more varied than this is counted, not listed


class Absent:
    """The value of a fact a node's report does not hold."""

    _instance: "Absent | None" = None

    def __new__(cls) -> "Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "(absent)"


ABSENT = Absent()


@dataclass
class Example:
    """How one finding read with one status, on the first node seen with it."""

    area: str
    title: str
    message: str
    node: int


@dataclass
class FactValues:
    values: dict[Any, NodeSet] = field(default_factory=dict)
    varied: NodeSet | None = None   # set once more than MAX_VALUES values were seen: nodes that differ

    def add(self, value: Any, node: int) -> None:
        if self.varied is not None:
            self.varied.add(node)
            return
        self.values.setdefault(value, NodeSet()).add(node)
        if len(self.values) > MAX_VALUES:
            self.varied = NodeSet((s, e) for ns in self.values.values() for s, e in ns.ranges)
            self.values = {}


class Aggregator:
    """Feed it (node, report dict) in natural node order; read the view off it at the end."""

    def __init__(self, table: FactTable | None = None) -> None:
        self.table = table or fact_table()
        self.nodes: list[str] = []
        self.reference: dict[str, Any] = {}          # area -> the reference node's facts of it
        self.reference_node: dict[str, int] = {}
        self.area_nodes: dict[str, NodeSet] = {}      # area -> nodes that reported it
        self.differences: dict[tuple, FactValues] = {}
        self.groups: dict[tuple, NodeSet] = {}        # status vector -> nodes
        self.findings: dict[str, tuple[str, str]] = {}  # id -> (area, title), first seen order
        self.examples: dict[tuple[str, str], Example] = {}

    def add(self, node: str, report: dict[str, Any]) -> None:
        index = len(self.nodes)
        self.nodes.append(node)
        self._add_findings(index, report.get("findings"))
        facts = report.get("facts")
        if isinstance(facts, dict):
            self._add_facts(index, facts)

    def _add_findings(self, index: int, findings: Any) -> None:
        try:  # the common case in one comprehension; a malformed list takes the careful way below
            signature = tuple([(f["id"], f["status"]) for f in findings])
            if not all(type(i) is str and type(s) is str for i, s in signature):
                raise TypeError
        except (TypeError, KeyError):
            findings = [f for f in findings if isinstance(f, dict) and isinstance(f.get("id"), str)
                        and isinstance(f.get("status"), str)] if isinstance(findings, list) else []
            signature = tuple((f["id"], f["status"]) for f in findings)
        group = self.groups.get(signature)
        if group is None:
            group = self.groups[signature] = NodeSet()
            for f in findings:
                key = (f["id"], f["status"])
                self.findings.setdefault(f["id"], (str(f.get("area", "")), str(f.get("title", ""))))
                if key not in self.examples:
                    self.examples[key] = Example(str(f.get("area", "")), str(f.get("title", "")),
                                                 str(f.get("message", "")), index)
        group.add(index)

    def _add_facts(self, index: int, facts: dict[str, Any]) -> None:
        self.table.strip(facts)
        for area, value in facts.items():
            nodes = self.area_nodes.get(area)
            if nodes is None:
                self.area_nodes[area] = NodeSet([(index, index + 1)])
                self.reference[area] = value
                self.reference_node[area] = index
                continue
            nodes.add(index)
            reference = self.reference[area]
            if value != reference:
                self._record(reference, value, (area,), index)

    def _record(self, reference: Any, value: Any, path: tuple, index: int) -> None:
        """Walk where `value` differs from `reference`, recording this node's value at each leaf."""
        if isinstance(reference, dict) or isinstance(value, dict):
            if not (isinstance(reference, (dict, Absent)) and isinstance(value, (dict, Absent))):
                self._leaf(path, value, index)
                return
            ref = reference if isinstance(reference, dict) else {}
            cur = value if isinstance(value, dict) else {}
            for key in ref.keys() | cur.keys():
                a, b = ref.get(key, ABSENT), cur.get(key, ABSENT)
                if a is ABSENT or b is ABSENT or a != b:
                    self._record(a, b, path + (key,), index)
            return
        if _nested_list(reference) or _nested_list(value):
            if not (isinstance(reference, (list, Absent)) and isinstance(value, (list, Absent))):
                self._leaf(path, value, index)
                return
            ref = reference if isinstance(reference, list) else []
            cur = value if isinstance(value, list) else []
            for i in range(max(len(ref), len(cur))):
                a = ref[i] if i < len(ref) else ABSENT
                b = cur[i] if i < len(cur) else ABSENT
                if a is ABSENT or b is ABSENT or a != b:
                    self._record(a, b, path + (i,), index)
            return
        self._leaf(path, value, index)

    def _leaf(self, path: tuple, value: Any, index: int) -> None:
        values = self.differences.get(path)
        if values is None:
            values = self.differences[path] = FactValues()
        values.add(value_key(value), index)


def _nested_list(value: Any) -> bool:
    return isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value)


def value_key(value: Any) -> Any:
    """A hashable stand-in for a fact's value: scalars as they are, lists of scalars as tuples, the rest
    as canonical JSON text."""
    if value is None or isinstance(value, (str, int, float, bool, Absent)):
        return value
    if isinstance(value, list) and all(v is None or isinstance(v, (str, int, float, bool)) for v in value):
        return tuple(value)
    return json.dumps(value, sort_keys=True, default=str)


def shown(value: Any) -> str:
    """A fact's value as a message shows it."""
    if isinstance(value, Absent):
        return "(not reported)"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ":".join(map(str, value)) if value else "(empty)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
