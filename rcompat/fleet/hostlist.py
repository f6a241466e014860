"""Slurm hostlists: `n[1-3,5]` to names and names to the shortest such ranges, as `scontrol show
hostnames` / `scontrol show hostlist` do (the tests hold these against the real scontrol).

A name's last run of digits is its index; names with the same prefix, suffix and digit width share a
bracket (`x[01-02,3]`: `3` has no leading zero, so it cannot be written as `03`, but Slurm keeps it in
the same bracket when the width is the natural one). Names are ordered naturally (n2 before n10).
"""
from __future__ import annotations

import re
from typing import Iterable

from rcompat.errors import UsageError

_INDEX = re.compile(r"^(.*?)(\d+)(\D*)$")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
MAX_EXPANDED = 1_000_000  # a typo like n[1-99999999] must not fill the memory


def natural_key(name: str) -> tuple:
    """Sort key: digit runs compared as numbers, the rest as text (n2 < n10 < x1)."""
    return tuple((0, int(part), len(part)) if part.isdigit() else (1, part, 0)
                 for part in re.split(r"(\d+)", name) if part)


def expand(expression: str) -> list[str]:
    """The names of a hostlist expression (`n[1-3,5],gpu[01-02]`, brackets may repeat in one name)."""
    names: list[str] = []
    for item in _split_top(expression):
        names.extend(_expand_one(item, expression))
        if len(names) > MAX_EXPANDED:
            raise UsageError(f"hostlist {expression!r} names more than {MAX_EXPANDED:,} nodes")
    return names


def _split_top(expression: str) -> list[str]:
    """Split at commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(expression):
        if char == "[":
            depth += 1
            if depth > 1:
                raise UsageError(f"hostlist {expression!r}: nested brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise UsageError(f"hostlist {expression!r}: ']' without '['")
        elif char == "," and depth == 0:
            items.append(expression[start:i])
            start = i + 1
    if depth:
        raise UsageError(f"hostlist {expression!r}: '[' without ']'")
    items.append(expression[start:])
    return [item.strip() for item in items if item.strip()]


def _expand_one(item: str, expression: str) -> list[str]:
    match = _BRACKET.search(item)
    if not match:
        return [item]
    head, tail = item[: match.start()], item[match.end():]
    out = []
    for index in _ranges(match.group(1), expression):
        out.extend(head + index + rest for rest in _expand_one(tail, expression))
    return out


def _ranges(body: str, expression: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        low, sep, high = part.strip().partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise UsageError(f"hostlist {expression!r}: {part!r} is not a number or a range like 1-16")
        if not sep:
            out.append(low)
            continue
        start, end = int(low), int(high)
        if end < start:
            raise UsageError(f"hostlist {expression!r}: range {part!r} runs backwards")
        if end - start > MAX_EXPANDED:
            raise UsageError(f"hostlist {expression!r} names more than {MAX_EXPANDED:,} nodes")
        width = len(low) if low.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(start, end + 1))
    return out


def compress(names: Iterable[str]) -> str:
    """The shortest hostlist of `names` (duplicates dropped), in natural order."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    order: list[tuple[str, str] | str] = []
    for name in sorted(set(names), key=natural_key):
        match = _INDEX.match(name)
        if not match:
            order.append(name)
            continue
        prefix, digits, suffix = match.groups()
        key = (prefix, suffix)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((int(digits), digits))
    parts = []
    for key in order:
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, suffix = key
        indices = groups[key]
        if len(indices) == 1:
            parts.append(f"{prefix}{indices[0][1]}{suffix}")
        else:
            parts.append(f"{prefix}[{_runs(indices)}]{suffix}")
    return ",".join(parts)


def _runs(indices: list[tuple[int, str]]) -> str:
    """`1-3,5` from (number, digits) pairs, as Slurm writes them: a run goes on while the numbers are
    consecutive and the digits keep their width (09, 10) or neither is zero-padded (8, 9, 10)."""
    runs: list[list] = []  # [first digits, last number, last digits]
    for number, digits in sorted(indices, key=lambda p: (p[0], len(p[1]))):
        if runs and number == runs[-1][1] + 1 and _continues(runs[-1][2], digits):
            runs[-1][1:] = [number, digits]
        else:
            runs.append([digits, number, digits])
    return ",".join(first if first == last else f"{first}-{last}" for first, _, last in runs)


def _continues(previous: str, digits: str) -> bool:
    return len(previous) == len(digits) or not (_padded(previous) or _padded(digits))


def _padded(digits: str) -> bool:
    return digits.startswith("0") and len(digits) > 1


class IndexedHostlist:
    """Hostlists of subsets of one list of names in natural order, written from ranges of indices into
    it: each name is parsed once, and a range of nodes that are consecutive names costs one step, so
    the hostlist of 9,999 of 10,000 nodes is as quick as that of two (the fleet view writes many)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.keys: list[tuple[str, str] | None] = []
        self.digits: list[str] = []
        for name in names:
            match = _INDEX.match(name)
            self.keys.append((match.group(1), match.group(3)) if match else None)
            self.digits.append(match.group(2) if match else "")
        # run_end[i]: one past the last index of the run of consecutive names that i belongs to
        self.run_end = [0] * len(names)
        end = len(names)
        for i in range(len(names) - 1, -1, -1):
            if i + 1 < len(names) and self._follows(i, i + 1):
                self.run_end[i] = end
            else:
                end = i + 1
                self.run_end[i] = end

    def _follows(self, i: int, j: int) -> bool:
        return (self.keys[i] is not None and self.keys[i] == self.keys[j]
                and int(self.digits[j]) == int(self.digits[i]) + 1 and _continues(self.digits[i], self.digits[j]))

    def write(self, ranges: Iterable[tuple[int, int] | list[int]]) -> str:
        """The hostlist of the names at the indices in `ranges` ([start, end) pairs, in order)."""
        groups: dict[tuple[str, str] | str, list[list]] = {}
        for start, end in ranges:
            i = start
            while i < end:
                stop = min(end, self.run_end[i])
                key = self.keys[i]
                if key is None:
                    groups.setdefault(self.names[i], [])
                    i += 1
                    continue
                runs = groups.setdefault(key, [])
                first, last = self.digits[i], self.digits[stop - 1]
                if runs and int(first) == int(runs[-1][1]) + 1 and _continues(runs[-1][1], first):
                    runs[-1][1] = last
                else:
                    runs.append([first, last])
                i = stop
        parts = []
        for key, runs in groups.items():
            if isinstance(key, str):
                parts.append(key)
            elif len(runs) == 1 and runs[0][0] == runs[0][1]:
                parts.append(f"{key[0]}{runs[0][0]}{key[1]}")
            else:
                body = ",".join(a if a == b else f"{a}-{b}" for a, b in runs)
                parts.append(f"{key[0]}[{body}]{key[1]}")
        return ",".join(parts)
