"""rcompat/data/fleet_facts.toml read once: which facts never count as differences, and the names,
labels and must-agree marks of the facts that do."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from rcompat.errors import DataError

WILDCARD = "*"


@dataclass(frozen=True)
class NamedFact:
    name: str
    pattern: tuple[str, ...]
    label: str
    must_agree: bool
    info: bool
    source: str

    def matches(self, path: tuple) -> tuple[str, ...] | None:
        """What the pattern's `*` matched in `path` (a tuple of keys and list indices), or None."""
        if len(path) != len(self.pattern):
            return None
        caught = []
        for want, got in zip(self.pattern, path):
            if want == WILDCARD:
                caught.append(str(got))
            elif want != got:
                return None
        return tuple(caught)

    def describe(self, path: tuple) -> str:
        caught = self.matches(path) or ()
        return self.label.replace("{}", caught[0]) if caught and "{}" in self.label else self.label


@dataclass(frozen=True)
class FactTable:
    ignore: tuple[tuple[str, ...], ...]
    named: tuple[NamedFact, ...]

    @functools.cached_property
    def ignore_tree(self) -> dict:
        """The ignore patterns as one tree ({key: subtree, or None to drop}), walked once per report."""
        tree: dict = {}
        for pattern in self.ignore:
            node = tree
            for part in pattern[:-1]:
                node = node.setdefault(part, {})
                if node is None:
                    break
            else:
                node[pattern[-1]] = None
        return tree

    def strip(self, facts: dict) -> None:
        """Remove every ignored fact from `facts` in place."""
        _strip(facts, self.ignore_tree)

    def name_of(self, path: tuple) -> NamedFact | None:
        return next((fact for fact in self.named if fact.matches(path) is not None), None)


@functools.lru_cache(maxsize=None)
def fact_table(table: str = "fleet_facts.toml") -> FactTable:
    from rcompat.data import load_toml

    ignore = tuple(_pattern(row["path"], table) for row in load_toml(table, "ignore", ("path", "source")))
    named = tuple(NamedFact(name=row["name"], pattern=_pattern(row["path"], table), label=row["label"],
                            must_agree=bool(row.get("must_agree", False)), info=bool(row.get("info", False)),
                            source=row["source"])
                  for row in load_toml(table, "fact", ("name", "path", "label", "source")))
    return FactTable(ignore=ignore, named=named)


def _pattern(path: Any, table: str) -> tuple[str, ...]:
    if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
        raise DataError(f"{table}: path {path!r} is not dotted keys like 'cuda.nvml.driver_version'")
    return tuple(path.split("."))


def lookup(tree: Any, path: tuple) -> Any:
    """The value at `path` (keys and list indices) in `tree`, or KeyError."""
    for part in path:
        if isinstance(tree, dict):
            tree = tree[part]
        elif isinstance(tree, list) and isinstance(part, int) and 0 <= part < len(tree):
            tree = tree[part]
        else:
            raise KeyError(part)
    return tree


def _strip(value: Any, tree: dict) -> None:
    for key, sub in tree.items():
        if key == WILDCARD:
            children = list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []
            if sub is None:
                if isinstance(value, dict):
                    value.clear()
                continue
            for child in children:
                _strip(child, sub)
        elif isinstance(value, dict) and key in value:
            if sub is None:
                del value[key]
            else:
                _strip(value[key], sub)


def path_text(path: tuple) -> str:
    """`cuda.libraries.libraries[0].version`"""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
