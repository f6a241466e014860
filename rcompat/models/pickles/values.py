"""The placeholders the symbolic pickle machine builds instead of objects, and its hostile-input limits."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

MAX_OPCODES = 20_000_000      # a 10,000-tensor checkpoint takes ~300k
MAX_STACK = 1_000_000
MAX_MARKS = 10_000            # MARKs open at once: real pickles nest a few dozen deep
MAX_MEMO = 5_000_000
MAX_VISIT = 5_000_000         # values traversed when reading the result
CHECK_EVERY = 4096            # opcodes between the stack/memo/opcode-count checks


@dataclass(frozen=True)
class Global:
    module: str
    name: str

    @cached_property  # asked once per tensor of a checkpoint; a pickle names each global once (then BINGET)
    def dotted(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass(eq=False)
class Call:
    """What REDUCE/NEWOBJ/INST/OBJ would have built: `func(*args)`, with BUILD's state if any."""
    func: Any
    args: Any
    state: Any = None
    items: list = field(default_factory=list)  # APPEND/SETITEM on the would-be object


@dataclass(eq=False)
class Persistent:
    pid: Any


class Dict(list):
    """A dict as its (key, value) pairs: keys may be placeholders, which are not hashable by value."""


class Window:
    """Where a pickle lies: bytes or a memory map, and the span [pos, end) `walk` may read; `walk` leaves
    pos just past the pickle's STOP (the legacy format holds several pickles in a row)."""

    def __init__(self, data, start: int = 0, end: int | None = None) -> None:
        self.data, self.pos, self.end = data, start, len(data) if end is None else min(end, len(data))


@dataclass
class PickleFacts:
    root: Any
    globals: list[str]                 # dotted names in order of first appearance
    persistent_ids: list[Any]
    opcodes: int
    end: int                           # offset just past STOP
    dynamic_globals: int = 0           # STACK_GLOBALs whose names were not plain strings
    extensions: int = 0                # EXT1/2/4: copyreg's registry, a global by number


@dataclass
class Resume:
    """The machine's state at a point between opcodes, to walk on from there: what a bulk reader that
    consumed a prefix of the pickle hands over (rcompat/models/torchrecords.py). No marks may be open;
    `memo` may be a dict subclass (its len() is what the memo limit counts), `names` the globals named so
    far in order, `count` the opcodes read so far."""
    stack: list
    memo: dict
    names: dict
    count: int
