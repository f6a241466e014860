"""The standard streams as rcompat finds them: closed, full, broken or in a non-UTF-8 locale.

`prepare()` runs first in the CLI:

- A closed descriptor 0, 1 or 2 gets /dev/null opened onto it, so no file rcompat opens later lands
  on it (a report written into an input), and the closed stream is named when used: reading a closed
  stdin or writing the report to a closed stdout is rcompat's own error (exit 2, "standard input is
  closed"), never an internal one.
- stdout is written in the terminal's (the locale's) encoding with replacement: under LANG=C or a
  Latin-1 locale a report holding "≥" or a library's non-ASCII name prints "?", instead of dying with
  UnicodeEncodeError after the whole run. Files (--output) are always UTF-8 (rcompat.atomic).
- stderr never changes the exit code: a message that cannot be written (stderr closed, a full disk, a
  closed pipe) is dropped, so exit 2 stays 2.
`settle()` runs last: output still buffered for a stdout that failed is discarded, so Python's own
flush at exit does not print "Exception ignored" and turn the exit code into 120.
"""
from __future__ import annotations

import errno
import io
import os
import sys
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up of every command)
if TYPE_CHECKING:
    from typing import Any, Callable


class ClosedStream(io.TextIOBase):
    """A standard stream whose descriptor was closed when rcompat started."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def _refuse(self, *_: Any) -> Any:
        raise OSError(errno.EBADF, f"standard {self.name} is closed")

    read = readline = write = _refuse

    @property
    def buffer(self) -> "ClosedStream":
        return self

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        self._refuse()
        return -1

    def flush(self) -> None:
        pass


class ForgivingStream:
    """stderr that drops what it cannot write: a diagnostic that cannot be shown must not become one
    more failure (an OSError escaping the error handler exits 1 instead of 2)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def prepare() -> "Callable[[], None]":
    """Make the streams safe (see the module's text); returns what puts sys.std* back (for callers
    running the CLI in-process, such as tests)."""
    saved = (sys.stdin, sys.stdout, sys.stderr)
    closed = [fd for fd in (0, 1, 2) if not _is_open(fd)]
    for fd in closed:
        _fill(fd)
    if 0 in closed or sys.stdin is None:
        sys.stdin = ClosedStream("input")
    if 1 in closed or sys.stdout is None:
        sys.stdout = ClosedStream("output")
    elif hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")
    if 2 in closed or sys.stderr is None:
        sys.stderr = ForgivingStream(open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    elif not isinstance(sys.stderr, ForgivingStream):
        if hasattr(sys.stderr, "reconfigure"):
            sys.stderr.reconfigure(errors="replace")
        sys.stderr = ForgivingStream(sys.stderr)

    def restore() -> None:
        sys.stdin, sys.stdout, sys.stderr = saved

    return restore


def settle() -> None:
    """Flush stdout; when that fails, point descriptor 1 at /dev/null so the exit flush succeeds."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
        except OSError:
            pass


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _fill(fd: int) -> None:
    try:
        null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
    except OSError:
        return
    if null != fd:
        os.dup2(null, fd)
        os.close(null)
