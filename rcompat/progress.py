"""Progress of long commands on stderr: which step is running and for how long.

Shown only when stderr is a terminal and the user did not ask for `--quiet`; otherwise every call is a
no-op, so piped output, JSON and JUnit are byte-identical with and without a TTY. One status line is
rewritten in place (carriage return) and cleared at the end, so nothing is left between the report's
lines. A ticker thread refreshes the elapsed time while a step runs longer than a second. Safe to call
from several threads (the doctor runs areas concurrently): the line shows the steps under way.
"""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Callable, Iterator, TypeVar

if TYPE_CHECKING:
    import os

T = TypeVar("T")

_TICK_S = 0.5


class Progress:
    def __init__(self, label: str = "rcompat", stream: IO[str] | None = None,
                 enabled: bool | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = _is_tty(self.stream)
        self.enabled = enabled
        self._lock = threading.Lock()
        self._running: dict[int, str] = {}
        self._next_id = 0
        self._start = time.monotonic()
        self._width = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- lifetime -----------------------------------------------------------------------------------
    def __enter__(self) -> "Progress":
        if self.enabled:
            self._start = time.monotonic()
            self._ticker = threading.Thread(target=self._tick, name="rcompat-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if not self.enabled:
            return
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1.0)
            self._ticker = None
        with self._lock:
            self._clear()

    # -- steps --------------------------------------------------------------------------------------
    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        """Show `what` while the block runs; several steps may run at once (one per thread)."""
        if not self.enabled:
            yield
            return
        with self._lock:
            key = self._next_id
            self._next_id += 1
            self._running[key] = what
            self._draw()
        try:
            yield
        finally:
            with self._lock:
                self._running.pop(key, None)
                self._draw()

    def note(self, what: str) -> None:
        """Show `what` as the current state until the next step or note (for loops: 'trial 3/10')."""
        if not self.enabled:
            return
        with self._lock:
            self._running[-1] = what
            self._draw()

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    # -- drawing (lock held) -----------------------------------------------------------------------
    def _tick(self) -> None:
        while not self._stop.wait(_TICK_S):
            with self._lock:
                if self._running:
                    self._draw()

    def _draw(self) -> None:
        steps = ", ".join(self._running[k] for k in sorted(self._running)) or "…"
        line = f"{self.label}: {steps} [{self.elapsed():.1f}s]"
        columns = _columns(self.stream)
        if len(line) > columns - 1:
            line = line[: columns - 2] + "…"
        pad = max(0, self._width - len(line))
        self._write("\r" + line + " " * pad)
        self._width = len(line)

    def _clear(self) -> None:
        if self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or vanished terminal must not fail the command
            self.enabled = False


def progress_for(args: object, label: str = "rcompat") -> Progress:
    """The Progress of a command: on stderr's terminal, unless the command was given --quiet."""
    return Progress(label=label, enabled=None if not getattr(args, "quiet", False) else False)


def showing_file(run: "Callable[[], T]", path: "str | os.PathLike[str]", progress: "Progress | None",
                 first: str = "starting the child (import torch)", poll_s: float = 0.2) -> "T":
    """`run()` here (so an interrupt still kills and reaps the child it runs), while a thread shows the
    text a child keeps rewriting in `path` (its stdout is read only at the end): the case or iteration
    it is on. Without an enabled progress, just `run()`."""
    if progress is None or not progress.enabled:
        return run()
    progress.note(first)
    stop = threading.Event()

    def show() -> None:
        while not stop.wait(poll_s):
            try:
                with open(path, encoding="utf-8") as fh:
                    progress.note(" ".join(fh.read().split()))  # one line, whatever the child wrote
            except OSError:
                pass

    thread = threading.Thread(target=show, name="rcompat-child-progress", daemon=True)
    thread.start()
    try:
        return run()
    finally:
        stop.set()
        thread.join()


def disabled() -> Progress:
    return Progress(enabled=False)


def _is_tty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _columns(stream: IO[str]) -> int:
    import os

    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns or 100  # a terminal that does not know its width (a serial console, a bare pty) says 0
