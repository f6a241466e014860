"""A pickle read as data: its opcodes walked by a symbolic machine that builds placeholders, never objects.

`pickletools.genops` decodes each opcode and its argument; this module keeps the pickle VM's stack, marks
and memo, but a GLOBAL becomes a `Global(module, name)`, a REDUCE/NEWOBJ/INST/OBJ a `Call(func, args)`
and a persistent id a `Persistent(pid)`: nothing is imported, nothing is called. What torch needs to
load the file is then read off the result: the globals the pickle names (what the `weights_only`
unpickler must allow), the storages its persistent ids record (dtype, key, device, size), the tensors
rebuilt from them (shape) and whether they are `nn.Parameter`s.

Hostile input is bounded: the bytes read come from a window of the file (`Window`), and the walk stops
with ModelFileError at MAX_OPCODES opcodes, a stack of MAX_STACK items, marks nested MAX_MARKS deep or
MAX_MEMO memo entries. The result is traversed iteratively with a visited set, so a cycle or a deep
nesting built through the memo costs bounded work, not a RecursionError.
"""
from __future__ import annotations

import pickletools
import struct
from dataclasses import dataclass, field
from typing import Any

from rcompat.models.errors import ModelFileError

MAX_OPCODES = 20_000_000      # a 10,000-tensor checkpoint takes ~1M
MAX_STACK = 1_000_000
MAX_MARKS = 10_000            # MARKs open at once: real pickles nest a few dozen deep
MAX_MEMO = 5_000_000
MAX_VISIT = 5_000_000         # values traversed when reading the result


@dataclass(frozen=True)
class Global:
    module: str
    name: str

    @property
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
    """read(n) over bytes or a memory map between `start` and `end`; never returns more than is there,
    so a length field claiming gigabytes costs nothing (genops then reports the short read)."""

    def __init__(self, data, start: int = 0, end: int | None = None) -> None:
        self.data, self.pos, self.end = data, start, len(data) if end is None else end

    def read(self, n: int = -1) -> bytes:
        stop = self.end if n is None or n < 0 else min(self.end, self.pos + n)
        chunk = bytes(self.data[self.pos:stop])
        self.pos = stop
        return chunk

    def readline(self) -> bytes:
        nl = self.data.find(b"\n", self.pos, self.end)
        return self.read((nl + 1 - self.pos) if nl >= 0 else self.end - self.pos)

    def tell(self) -> int:
        return self.pos


@dataclass
class PickleFacts:
    root: Any
    globals: list[str]                 # dotted names in order of first appearance
    persistent_ids: list[Any]
    opcodes: int
    end: int                           # offset just past STOP
    dynamic_globals: int = 0           # STACK_GLOBALs whose names were not plain strings
    extensions: int = 0                # EXT1/2/4: copyreg's registry, a global by number


_TUPLE_N = {"TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}
_CONST = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False, "EMPTY_TUPLE": ()}
_PUSH_ARG = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT", "STRING",
             "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
             "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"}
_IGNORED = {"PROTO", "FRAME", "NEXT_BUFFER", "READONLY_BUFFER"}


def walk(window: Window, what: str) -> PickleFacts:
    """Run the symbolic machine over one pickle starting at window.pos, up to and including STOP."""
    vm = _Machine(what)
    try:
        for count, (op, arg, pos) in enumerate(pickletools.genops(window), 1):
            if count > MAX_OPCODES:
                raise ModelFileError(f"{what}: more than {MAX_OPCODES:,} pickle opcodes; refused as hostile")
            if op.name == "STOP":
                root = vm.pop()
                return PickleFacts(root, list(vm.globals), vm.pids, count, window.tell(), vm.dynamic, vm.ext)
            vm.step(op.name, arg, pos)
    except ModelFileError:
        raise
    except (ValueError, EOFError, IndexError, KeyError, TypeError, UnicodeDecodeError, struct.error,
            OverflowError, MemoryError) as exc:
        raise ModelFileError(f"{what}: not a readable pickle ({type(exc).__name__}: {_short(exc)})") from None
    raise ModelFileError(f"{what}: the pickle ends before its STOP opcode (truncated)")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:160] + ("…" if len(text) > 160 else "")


class _Machine:
    def __init__(self, what: str) -> None:
        self.what = what
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.globals: dict[str, None] = {}
        self.pids: list[Any] = []
        self.dynamic = self.ext = 0

    def pop(self) -> Any:
        if not self.stack or (self.marks and len(self.stack) <= self.marks[-1]):
            raise ModelFileError(f"{self.what}: a pickle opcode pops an empty stack; the pickle is corrupt")
        return self.stack.pop()

    def peek(self) -> Any:
        """The container APPEND/SETITEM add to: it stays on the stack."""
        value = self.pop()
        self.stack.append(value)
        return value

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            raise ModelFileError(f"{self.what}: a pickle opcode needs a MARK that is not there; corrupt pickle")
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    def push(self, value: Any) -> None:
        if len(self.stack) >= MAX_STACK:
            raise ModelFileError(f"{self.what}: pickle stack over {MAX_STACK:,} items; refused as hostile")
        self.stack.append(value)

    def add_global(self, module: Any, name: Any) -> None:
        if isinstance(module, str) and isinstance(name, str):
            g = Global(module, name)
            self.globals.setdefault(g.dotted, None)
            self.push(g)
        else:  # a name computed at load time: no static reader can say what it imports
            self.dynamic += 1
            self.globals.setdefault("<dynamic STACK_GLOBAL>", None)
            self.push(Global("<dynamic>", "<dynamic>"))

    def step(self, name: str, arg: Any, pos: int) -> None:  # noqa: C901 - one branch per opcode family
        if name in _PUSH_ARG:
            self.push(arg)
        elif name in _CONST:
            self.push(_CONST[name])
        elif name in _IGNORED:
            pass
        elif name == "MARK":
            if len(self.marks) >= MAX_MARKS:
                raise ModelFileError(f"{self.what}: pickle marks nested over {MAX_MARKS:,} deep; refused as hostile")
            self.marks.append(len(self.stack))
        elif name in ("EMPTY_LIST", "EMPTY_SET"):
            self.push([])
        elif name == "EMPTY_DICT":
            self.push(Dict())
        elif name in ("LIST", "TUPLE", "FROZENSET"):
            items = self.pop_mark()
            self.push(tuple(items) if name != "LIST" else items)
        elif name == "DICT":
            items = self.pop_mark()
            self.push(Dict(zip(items[::2], items[1::2])))
        elif name in _TUPLE_N:
            n = _TUPLE_N[name]
            items = [self.pop() for _ in range(n)][::-1]
            self.push(tuple(items))
        elif name in ("APPEND", "APPENDS", "ADDITEMS"):
            items = [self.pop()] if name == "APPEND" else self.pop_mark()
            self._extend(self.peek(), items)
        elif name in ("SETITEM", "SETITEMS"):
            items = [self.pop(), self.pop()][::-1] if name == "SETITEM" else self.pop_mark()
            self._setitems(self.peek(), items)
        elif name == "POP":
            if self.marks and len(self.stack) == self.marks[-1]:
                self.marks.pop()  # POP of a MARK (pickle's own VM allows it)
            else:
                self.pop()
        elif name == "POP_MARK":
            self.pop_mark()
        elif name == "DUP":
            value = self.pop()
            self.push(value)
            self.push(value)
        elif name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
            if len(self.memo) >= MAX_MEMO:
                raise ModelFileError(f"{self.what}: pickle memo over {MAX_MEMO:,} entries; refused as hostile")
            value = self.pop()
            self.push(value)
            self.memo[len(self.memo) if name == "MEMOIZE" else int(arg)] = value
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            if int(arg) not in self.memo:
                raise ModelFileError(f"{self.what}: pickle memo key {arg} read before it was written; corrupt pickle")
            self.push(self.memo[int(arg)])
        elif name == "GLOBAL":
            module, _, attr = str(arg).partition(" ")
            self.add_global(module, attr)
        elif name == "STACK_GLOBAL":
            attr = self.pop()
            self.add_global(self.pop(), attr)
        elif name in ("EXT1", "EXT2", "EXT4"):
            self.ext += 1
            self.globals.setdefault(f"<copyreg extension {arg}>", None)
            self.push(Global("<extension>", str(arg)))
        elif name == "REDUCE":
            args = self.pop()
            self.push(Call(self.pop(), args))
        elif name == "NEWOBJ":
            args = self.pop()
            self.push(Call(self.pop(), args))
        elif name == "NEWOBJ_EX":
            kwargs, args = self.pop(), self.pop()
            self.push(Call(self.pop(), (args, kwargs)))
        elif name == "INST":
            module, _, attr = str(arg).partition(" ")
            self.add_global(module, attr)
            cls = self.pop()
            self.push(Call(cls, tuple(self.pop_mark())))
        elif name == "OBJ":
            items = self.pop_mark()
            if not items:
                raise ModelFileError(f"{self.what}: OBJ without a class; corrupt pickle")
            self.push(Call(items[0], tuple(items[1:])))
        elif name == "BUILD":
            state = self.pop()
            target = self.pop()
            if isinstance(target, Call):
                target.state = state
            self.push(target)
        elif name in ("PERSID", "BINPERSID"):
            pid = arg if name == "PERSID" else self.pop()
            self.pids.append(pid)
            self.push(Persistent(pid))
        else:
            raise ModelFileError(f"{self.what}: pickle opcode {name} at byte {pos} is not supported")

    @staticmethod
    def _extend(target: Any, items: list[Any]) -> None:
        if isinstance(target, list):
            target.extend(items)
        elif isinstance(target, Call):
            target.items.extend(items)

    @staticmethod
    def _setitems(target: Any, items: list[Any]) -> None:
        pairs = list(zip(items[::2], items[1::2]))
        if isinstance(target, Dict):
            target.extend(pairs)
        elif isinstance(target, Call):
            target.items.extend(pairs)


def iter_values(root: Any):
    """Every value reachable from `root`, each once, breadth first (no recursion: a hostile depth is data)."""
    seen: set[int] = set()
    queue = [root]
    while queue:
        value = queue.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if len(seen) > MAX_VISIT:
            raise ModelFileError(f"pickle holds over {MAX_VISIT:,} values; refused as hostile")
        yield value
        if isinstance(value, (list, tuple)):
            queue.extend(value)
        elif isinstance(value, Call):
            queue.extend((value.func, value.args, value.state, value.items))
        elif isinstance(value, Persistent):
            queue.append(value.pid)
