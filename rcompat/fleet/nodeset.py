"""Sets of node numbers as sorted ranges: a fleet's nodes are read in order, so the nodes sharing a
value are a few runs whatever their number, and 10,000 identical nodes cost one range, not 10,000 ints."""
from __future__ import annotations

from typing import Iterable, Iterator


class NodeSet:
    """Node numbers as [start, end) ranges, added in increasing order (the order reports are read)."""

    __slots__ = ("ranges", "count")

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        self.ranges: list[list[int]] = []
        self.count = 0
        for start, end in sorted(ranges):
            self.add_range(start, end)

    def add(self, node: int) -> None:
        self.add_range(node, node + 1)

    def add_range(self, start: int, end: int) -> None:
        if end <= start:
            return
        if self.ranges and self.ranges[-1][1] >= start:
            last = self.ranges[-1]
            self.count += max(0, end - last[1])
            last[1] = max(last[1], end)
        else:
            self.ranges.append([start, end])
            self.count += end - start

    def __iter__(self) -> Iterator[int]:
        for start, end in self.ranges:
            yield from range(start, end)

    def __len__(self) -> int:
        return self.count

    def __contains__(self, node: int) -> bool:
        return any(start <= node < end for start, end in self.ranges)

    def first(self) -> int:
        return self.ranges[0][0]

    def minus(self, other: "NodeSet") -> "NodeSet":
        out = NodeSet()
        theirs = other.ranges
        j = 0
        for start, end in self.ranges:
            while j < len(theirs) and theirs[j][1] <= start:
                j += 1
            k, cursor = j, start
            while k < len(theirs) and theirs[k][0] < end:
                out.add_range(cursor, min(theirs[k][0], end))
                cursor = max(cursor, theirs[k][1])
                k += 1
            out.add_range(cursor, end)
        return out


def union(sets: Iterable[NodeSet]) -> NodeSet:
    return NodeSet((start, end) for s in sets for start, end in s.ranges)
