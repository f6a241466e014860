"""Reading a child's stdout and stderr with a bounded memory and a deadline that always holds.

`Popen.communicate` keeps all output (a child printing for ever fills memory) and, after the child
is killed, waits for the pipes to close, which a grandchild that left the session (a daemon) never
does. Here each stream keeps its first HEAD_BYTES and last TAIL_BYTES, counting what it drops and
saying so where it was cut; the loop stops at the deadline, and once the child itself has ended it
waits at most LINGER_S for whoever else holds the pipes.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections import deque
from typing import Callable

HEAD_BYTES = 8 << 20   # r_facts.R's JSON is tens of KB; a crash report's start is what matters
TAIL_BYTES = 1 << 20   # and its end: the last step and the signal
LINGER_S = 1.0         # the child has ended: only an escaped grandchild would keep the pipes open
CHUNK = 1 << 16


class CappedStream:
    """The head and the tail of one stream, and how many bytes fell between them."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.cut = 0

    def add(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)
        while self.tail and self.tail_size - len(self.tail[0]) >= self.tail_limit:
            self.cut += len(self.tail[0])
            self.tail_size -= len(self.tail.popleft())

    def text(self, name: str) -> str:
        tail = b"".join(self.tail)
        over = len(tail) - self.tail_limit
        if over > 0:
            tail, self.cut = tail[over:], self.cut + over
        if not self.cut:
            return (bytes(self.head) + tail).decode("utf-8", "replace")
        marker = f"\n[rcompat: {self.cut} bytes of the child's {name} cut here]\n"
        return bytes(self.head).decode("utf-8", "replace") + marker + tail.decode("utf-8", "replace")


class Collected:
    def __init__(self) -> None:
        self.streams = {"stdout": CappedStream(), "stderr": CappedStream()}
        self.timed_out = False
        self.reason: str | None = None
        self.pipes_abandoned = False

    def text(self, name: str) -> str:
        return self.streams[name].text(name)

    @property
    def cut(self) -> dict[str, int]:
        return {name: s.cut for name, s in self.streams.items() if s.cut}


def collect(proc: subprocess.Popen, stdin: bytes | None, deadline: float | None,
            tick: Callable[[float], str | None] | None, kill: Callable[[bool], None], start: float,
            poll_s: float) -> Collected:
    """Read until both pipes close, the deadline passes (then `kill(False)` and stop) or `tick(elapsed)`
    names a reason to kill (a patient run's judgement, asked every `poll_s`); `kill(True)` once the
    child has ended and been reaped but someone still holds its pipes."""
    got = Collected()
    selector = selectors.DefaultSelector()
    names = {}
    for name in ("stdout", "stderr"):
        pipe = getattr(proc, name)
        selector.register(pipe.fileno(), selectors.EVENT_READ)
        names[pipe.fileno()] = name
    pending = memoryview(stdin or b"")
    if proc.stdin is not None:
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
    ended_at: float | None = None
    next_tick = time.monotonic() + poll_s
    try:
        while selector.get_map():
            now = time.monotonic()
            if ended_at is None and proc.poll() is not None:
                ended_at = now
            if ended_at is not None and now - ended_at > LINGER_S:
                got.pipes_abandoned = True
                kill(True)
                break
            if deadline is not None and now >= deadline:
                got.timed_out = ended_at is None  # ended in time: only its pipes outlived the deadline
                kill(ended_at is not None)
                _drain(selector, names, got, time.monotonic() + 0.5)
                break
            if tick is not None and now >= next_tick:
                next_tick = now + poll_s
                got.reason = tick(now - start)
                if got.reason is not None:
                    got.timed_out = True
                    kill(ended_at is not None)
                    _drain(selector, names, got, time.monotonic() + 0.5)
                    break
            wait = min(poll_s, LINGER_S / 4)
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - now))
            for key, _ in selector.select(wait):
                if key.fd in names:
                    _read(selector, key.fd, names, got)
                else:
                    pending = _write(selector, proc, pending)
    finally:
        for fd in list(selector.get_map()):
            selector.unregister(fd)
        selector.close()
    return got


def _read(selector: selectors.BaseSelector, fd: int, names: dict[int, str], got: Collected) -> None:
    try:
        chunk = os.read(fd, CHUNK)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if chunk:
        got.streams[names[fd]].add(chunk)
    else:
        selector.unregister(fd)


def _write(selector: selectors.BaseSelector, proc: subprocess.Popen, pending: memoryview) -> memoryview:
    try:
        sent = os.write(proc.stdin.fileno(), pending[:CHUNK])
    except BlockingIOError:
        return pending
    except OSError:  # the child closed its stdin: what it did not read, it does not want
        sent = len(pending)
    pending = pending[sent:]
    if not pending:
        selector.unregister(proc.stdin.fileno())
        proc.stdin.close()
    return pending


def _drain(selector: selectors.BaseSelector, names: dict[int, str], got: Collected, until: float) -> None:
    """What the killed child left in the pipes, for at most until - now seconds."""
    while any(fd in names for fd in selector.get_map()):
        left = until - time.monotonic()
        if left <= 0:
            got.pipes_abandoned = True
            return
        for key, _ in selector.select(left):
            if key.fd in names:
                _read(selector, key.fd, names, got)
            else:
                selector.unregister(key.fd)
