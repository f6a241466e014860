"""A mapped file truncated under rcompat: reported, not a SIGBUS that kills the run.

The ELF reader and patch-diff memory-map what they read (libtorch_cuda.so is over a GiB). When another
process truncates such a file meanwhile (pip upgrading torch, a build rewriting its output), touching
a page past the new end raises SIGBUS, which Python cannot turn into an exception: the process died
with exit 135 and no report. So the CLI takes a read lease (fcntl F_SETLEASE) on each mapped file:
the kernel then holds any open-for-write or truncate of that file back (up to
/proc/sys/fs/lease-break-time, 45 s) and sends SIGIO first; the handler raises FileChanged, and rcompat
ends with "changed under rcompat" (exit 2) before the truncation can happen.

Leases are taken only while the handler is installed (the CLI, `installed()`), only where the kernel
grants them (the file's owner, or CAP_LEASE; no writer has it open); elsewhere nothing changes.
FileChanged is a KeyboardInterrupt, like rcompat.termination.Terminated, so no `except Exception`
on the way swallows it and every clean-up runs.
"""
from __future__ import annotations

import fcntl
import os
import signal
import threading
from contextlib import contextmanager
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up of every command)
if TYPE_CHECKING:
    from typing import Iterator

_leases: dict[int, tuple[str, int, int]] = {}  # fd -> (path, st_dev, st_ino)
_lock = threading.Lock()
_active = False


class FileChanged(KeyboardInterrupt):
    def __init__(self, path: str) -> None:
        super().__init__(f"{path} changed under rcompat while it was read (truncated or rewritten by another "
                         "process); rerun once nothing writes it")
        self.path = path


def guard(fd: int, path: str) -> None:
    """Take a read lease on `fd` (opened read-only) when the CLI's handler is installed."""
    if not _active:
        return
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        st = os.fstat(fd)
    except OSError:  # not the owner, a writer has it open, a filesystem without leases
        return
    with _lock:
        if len(_leases) >= 1024:  # files closed since: their descriptors hold no lease (or another file)
            for old in [f for f, entry in _leases.items() if not _still_leased(f, entry)]:
                del _leases[old]
        _leases[fd] = (str(path), st.st_dev, st.st_ino)


def _still_leased(fd: int, entry: tuple[str, int, int]) -> bool:
    try:
        st = os.fstat(fd)
        return (st.st_dev, st.st_ino) == entry[1:] and fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK
    except OSError:
        return False


def _on_sigio(_signum: int, _frame) -> None:
    with _lock:
        entries = list(_leases.items())
    for fd, (path, dev, ino) in entries:
        try:
            st = os.fstat(fd)
            broken = (st.st_dev, st.st_ino) == (dev, ino) and fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK
        except OSError:
            broken = False
        if not broken:
            continue
        with _lock:
            _leases.clear()  # raised once; the clean-up that follows must not be cut short again
        raise FileChanged(path)


@contextmanager
def installed() -> Iterator[None]:
    """While the block runs (main thread only), mapped files are leased and a lease break raises
    FileChanged in the main thread."""
    global _active
    if threading.current_thread() is not threading.main_thread() or not hasattr(fcntl, "F_SETLEASE"):
        yield
        return
    previous = signal.signal(signal.SIGIO, _on_sigio)
    _active = True
    try:
        yield
    finally:
        _active = False
        signal.signal(signal.SIGIO, previous)
        with _lock:
            _leases.clear()
