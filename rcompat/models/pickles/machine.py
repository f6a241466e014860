"""A pickle read as data: its opcodes walked by a symbolic machine that builds placeholders, never objects.

`walk` is the pickle VM's loop, written for speed: one pass over the bytes, dispatching on the opcode
byte and reading arguments with struct, with the stack, marks (a metastack, as pickle.py keeps them)
and memo of the real VM. But a GLOBAL becomes a `Global(module, name)`, a REDUCE/NEWOBJ/INST/OBJ a
`Call(func, args)` and a persistent id a `Persistent(pid)`: nothing is imported, nothing is called.
What torch needs to load the file is then read off the result: the globals the pickle names (what the
`weights_only` unpickler must allow), the storages its persistent ids record (dtype, key, device,
size), the tensors rebuilt from them (shape) and whether they are `nn.Parameter`s.

Why not `pickletools.genops`: it builds an OpcodeInfo lookup, a tuple and a bytes copy per opcode and
reads each argument through a file object. Measured on the data.pkl of a 1 GiB, 256-tensor checkpoint
(7,691 opcodes; benchmarks/bench_model.py, 2 shared cores): genops plus the old per-name dispatch took
~2.7 ms, this loop ~1.7 ms (0.22 µs an opcode), and `model inspect` of the file went from 1.47x to
0.12x of torch.load(weights_only=True, mmap=True). tests/models/test_pickles.py holds it to pickle.loads
on every protocol.

Hostile input is bounded: arguments are read only inside the window [pos, end) (a length field claiming
gigabytes is refused before anything is sliced); the walk stops with ModelFileError at MAX_OPCODES
opcodes, a stack of MAX_STACK items or MAX_MEMO memo entries (checked every CHECK_EVERY opcodes: each
opcode adds at most one item) and at marks nested MAX_MARKS deep. The result is traversed iteratively
with a visited set (torchfiles._tensors, at most MAX_VISIT values), so a cycle or a deep nesting
built through the memo costs bounded work.
"""
from __future__ import annotations

import codecs
import struct
from typing import Any

from rcompat.models.errors import ModelFileError
from rcompat.models.pickles.values import (CHECK_EVERY, MAX_MARKS, MAX_MEMO, MAX_OPCODES, MAX_STACK, Call, Dict,
                                           Global, Persistent, PickleFacts, Resume, Window)


_U2 = struct.Struct("<H").unpack_from
_U4 = struct.Struct("<I").unpack_from
_I4 = struct.Struct("<i").unpack_from
_U8 = struct.Struct("<Q").unpack_from
_F8 = struct.Struct(">d").unpack_from
_ERRORS = (ValueError, IndexError, KeyError, TypeError, UnicodeDecodeError, struct.error, OverflowError,
           MemoryError, AttributeError)


def walk(window: Window, what: str, resume: Resume | None = None) -> PickleFacts:
    """Run the symbolic machine over one pickle starting at window.pos, up to and including STOP;
    window.pos is left just past STOP. With `resume`, from that state (window.pos then being where the
    opcodes it accounts for end); error messages then count bytes from window.pos."""
    try:
        facts = _run(window.data, window.pos, window.end, what, resume)
    except ModelFileError:
        raise
    except _ERRORS as exc:
        raise ModelFileError(f"{what}: not a readable pickle ({type(exc).__name__}: {_short(exc)})") from None
    window.pos = facts.end
    return facts


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:160] + ("…" if len(text) > 160 else "")


def _run(data, pos: int, end: int, what: str, resume: Resume | None) -> PickleFacts:  # noqa: C901 - the VM's one loop, by design
    def short_read(n) -> ModelFileError:
        return ModelFileError(f"{what}: not a readable pickle (an argument of {n:,} bytes runs past the end "
                              f"of the {end - start:,} bytes there: truncated or hostile)")

    def line() -> str:  # the text argument of a protocol-0 opcode, up to its newline
        nonlocal pos
        nl = data.find(b"\n", pos, end)
        if nl < 0:
            raise short_read(end - pos)
        text = bytes(data[pos:nl]).decode("utf-8")
        pos = nl + 1
        return text

    def add_global(module, name) -> Global:
        if isinstance(module, str) and isinstance(name, str):
            g = Global(module, name)
            names.setdefault(f"{module}.{name}", None)
            return g
        counts[0] += 1  # a name computed at load time: no static reader can say what it imports
        names.setdefault("<dynamic STACK_GLOBAL>", None)
        return Global("<dynamic>", "<dynamic>")

    start = pos
    stack: list = resume.stack if resume else []
    append = stack.append
    metastack: list[list] = []
    below = 0  # items on the stacks under the open marks
    memo: dict = resume.memo if resume else {}
    names: dict[str, None] = resume.names if resume else {}
    pids: list = []
    counts = [0, 0]  # dynamic STACK_GLOBALs, EXT opcodes
    count = resume.count if resume else 0
    check_at = (count // CHECK_EVERY + 1) * CHECK_EVERY  # the same check points as a walk from the start
    while True:
        if pos >= end:
            raise ModelFileError(f"{what}: the pickle ends before its STOP opcode (truncated)")
        op = data[pos]
        pos += 1
        count += 1
        if count >= check_at:
            check_at += CHECK_EVERY
            if count > MAX_OPCODES:
                raise ModelFileError(f"{what}: more than {MAX_OPCODES:,} pickle opcodes; refused as hostile")
            if below + len(stack) > MAX_STACK:
                raise ModelFileError(f"{what}: pickle stack over {MAX_STACK:,} items; refused as hostile")
            if len(memo) > MAX_MEMO:
                raise ModelFileError(f"{what}: pickle memo over {MAX_MEMO:,} entries; refused as hostile")
        # Most frequent first (the data.pkl of a torch.save state_dict: LONG_BINPUT, BINGET, BINUNICODE, MARK…)
        if op == 0x72:  # LONG_BINPUT
            memo[_U4(data, pos)[0]] = stack[-1]
            pos += 4
        elif op == 0x68:  # BINGET
            append(memo[data[pos]])
            pos += 1
        elif op == 0x58:  # BINUNICODE
            n = _U4(data, pos)[0]
            pos += 4
            if pos + n > end:
                raise short_read(n)
            append(str(data[pos:pos + n], "utf-8", "surrogatepass"))
            pos += n
        elif op == 0x28:  # MARK
            if len(metastack) >= MAX_MARKS:
                raise ModelFileError(f"{what}: pickle marks nested over {MAX_MARKS:,} deep; refused as hostile")
            below += len(stack)
            metastack.append(stack)
            stack = []
            append = stack.append
        elif op == 0x4A:  # BININT
            append(_I4(data, pos)[0])
            pos += 4
        elif op == 0x74:  # TUPLE
            items = tuple(stack)
            stack = metastack.pop()
            below -= len(stack)
            append = stack.append
            append(items)
        elif op == 0x4B:  # BININT1
            append(data[pos])
            pos += 1
        elif op == 0x85:  # TUPLE1
            stack[-1] = (stack[-1],)
        elif op == 0x52 or op == 0x81:  # REDUCE, NEWOBJ
            args = stack.pop()
            stack[-1] = Call(stack[-1], args)
        elif op == 0x71:  # BINPUT
            memo[data[pos]] = stack[-1]
            pos += 1
        elif op == 0x51:  # BINPERSID
            pid = stack[-1]
            pids.append(pid)
            stack[-1] = Persistent(pid)
        elif op == 0x89:  # NEWFALSE
            append(False)
        elif op == 0x29:  # EMPTY_TUPLE
            append(())
        elif op == 0x86:  # TUPLE2
            stack[-2:] = [(stack[-2], stack[-1])]
        elif op == 0x87:  # TUPLE3
            stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
        elif op == 0x6A:  # LONG_BINGET
            append(memo[_U4(data, pos)[0]])
            pos += 4
        elif op == 0x4D:  # BININT2
            append(_U2(data, pos)[0])
            pos += 2
        elif op == 0x63 or op == 0x69:  # GLOBAL, INST
            module = line()
            g = add_global(module, line())
            if op == 0x63:
                append(g)
            else:
                items = tuple(stack)
                stack = metastack.pop()
                below -= len(stack)
                append = stack.append
                append(Call(g, items))
        elif op == 0x4E:  # NONE
            append(None)
        elif op == 0x88:  # NEWTRUE
            append(True)
        elif op == 0x7D:  # EMPTY_DICT
            append(Dict())
        elif op == 0x5D or op == 0x8F:  # EMPTY_LIST, EMPTY_SET
            append([])
        elif op == 0x75 or op == 0x65 or op == 0x90 or op == 0x64 or op == 0x6C or op == 0x91 or op == 0x6F:
            # SETITEMS, APPENDS, ADDITEMS; DICT, LIST, FROZENSET, OBJ: the items above the mark
            items = stack
            stack = metastack.pop()
            below -= len(stack)
            append = stack.append
            if op == 0x75:
                _setitems(stack[-1], items)
            elif op == 0x65 or op == 0x90:
                _extend(stack[-1], items)
            elif op == 0x64:
                append(Dict(zip(items[::2], items[1::2])))
            elif op == 0x6C:
                append(items)
            elif op == 0x91:
                append(tuple(items))
            else:
                if not items:
                    raise ModelFileError(f"{what}: OBJ without a class; corrupt pickle")
                append(Call(items[0], tuple(items[1:])))
        elif op == 0x73:  # SETITEM
            value = stack.pop()
            key = stack.pop()
            _setitems(stack[-1], [key, value])
        elif op == 0x61:  # APPEND
            value = stack.pop()
            _extend(stack[-1], [value])
        elif op == 0x62:  # BUILD
            state = stack.pop()
            if isinstance(stack[-1], Call):
                stack[-1].state = state
        elif op == 0x8C or op == 0x55 or op == 0x43:  # SHORT_BINUNICODE, SHORT_BINSTRING, SHORT_BINBYTES
            n = data[pos]
            pos += 1
            if pos + n > end:
                raise short_read(n)
            raw = bytes(data[pos:pos + n])
            pos += n
            append(raw if op == 0x43 else raw.decode("utf-8", "surrogatepass") if op == 0x8C else raw.decode("latin-1"))
        elif op in (0x54, 0x42, 0x8D, 0x8E, 0x96):  # BINSTRING, BINBYTES (4-byte length); BINUNICODE8, BINBYTES8, BYTEARRAY8
            n = _U4(data, pos)[0] if op < 0x80 else _U8(data, pos)[0]
            pos += 4 if op < 0x80 else 8
            if pos + n > end:
                raise short_read(n)
            raw = bytes(data[pos:pos + n])
            pos += n
            append(raw.decode("latin-1") if op == 0x54 else raw.decode("utf-8", "surrogatepass") if op == 0x8D else raw)
        elif op == 0x94:  # MEMOIZE
            memo[len(memo)] = stack[-1]
        elif op == 0x93:  # STACK_GLOBAL
            name = stack.pop()
            stack[-1] = add_global(stack[-1], name)
        elif op == 0x80:  # PROTO
            pos += 1
        elif op == 0x95:  # FRAME: a length hint only
            pos += 8
        elif op == 0x2E:  # STOP
            root = stack.pop()
            return PickleFacts(root, list(names), pids, count, pos, counts[0], counts[1])
        elif op == 0x8A or op == 0x8B:  # LONG1, LONG4
            n = data[pos] if op == 0x8A else _I4(data, pos)[0]
            pos += 1 if op == 0x8A else 4
            if n < 0 or pos + n > end:
                raise short_read(n)
            append(int.from_bytes(data[pos:pos + n], "little", signed=True))
            pos += n
        elif op == 0x47:  # BINFLOAT
            append(_F8(data, pos)[0])
            pos += 8
        elif op == 0x30:  # POP (of a MARK too, as pickle's own VM allows)
            if stack:
                stack.pop()
            else:
                stack = metastack.pop()
                below -= len(stack)
                append = stack.append
        elif op == 0x31:  # POP_MARK
            stack = metastack.pop()
            below -= len(stack)
            append = stack.append
        elif op == 0x32:  # DUP
            append(stack[-1])
        elif op == 0x92:  # NEWOBJ_EX
            kwargs = stack.pop()
            args = stack.pop()
            stack[-1] = Call(stack[-1], (args, kwargs))
        elif op == 0x82 or op == 0x83 or op == 0x84:  # EXT1, EXT2, EXT4: copyreg's registry, a global by number
            code = data[pos] if op == 0x82 else _U2(data, pos)[0] if op == 0x83 else _I4(data, pos)[0]
            pos += 1 if op == 0x82 else 2 if op == 0x83 else 4
            counts[1] += 1
            names.setdefault(f"<copyreg extension {code}>", None)
            append(Global("<extension>", str(code)))
        elif op == 0x70 or op == 0x67:  # PUT, GET (protocol 0: the key as text)
            key = int(line())
            if op == 0x70:
                memo[key] = stack[-1]
            else:
                append(memo[key])
        elif op == 0x49 or op == 0x4C:  # INT, LONG (text; INT 00/01 are False/True)
            text = line()
            append({"00": False, "01": True}[text] if op == 0x49 and text in ("00", "01")
                   else int(text[:-1] if text.endswith("L") else text))
        elif op == 0x46:  # FLOAT (text)
            append(float(line()))
        elif op == 0x53:  # STRING (a quoted repr)
            text = line()
            if len(text) < 2 or text[0] != text[-1] or text[0] not in "'\"":
                raise ValueError("STRING argument is not quoted")
            append(codecs.escape_decode(text[1:-1].encode("latin-1"))[0].decode("latin-1"))
        elif op == 0x56:  # UNICODE (raw-unicode-escape text)
            nl = data.find(b"\n", pos, end)
            if nl < 0:
                raise short_read(end - pos)
            append(bytes(data[pos:nl]).decode("raw-unicode-escape"))
            pos = nl + 1
        elif op == 0x50:  # PERSID (text)
            pid = line()
            pids.append(pid)
            append(Persistent(pid))
        elif op == 0x97 or op == 0x98:  # NEXT_BUFFER, READONLY_BUFFER: out-of-band data rcompat never has
            if op == 0x97:
                append(b"")
        else:
            raise ModelFileError(f"{what}: pickle opcode 0x{op:02x} at byte {pos - 1 - start} is not a pickle "
                                 "opcode; corrupt pickle")


def _extend(target: Any, items: list[Any]) -> None:
    if isinstance(target, list):
        target.extend(items)
    elif isinstance(target, Call):
        target.items.extend(items)


def _setitems(target: Any, items: list[Any]) -> None:
    pairs = list(zip(items[::2], items[1::2]))
    if isinstance(target, Dict):
        target.extend(pairs)
    elif isinstance(target, Call):
        target.items.extend(pairs)
