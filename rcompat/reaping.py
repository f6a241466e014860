"""Ending a child and everything it started, and finding executables without touching special files.

A child runs in its own session (rcompat.isolate starts it with start_new_session), so its process id
is also its session id. Killing its process group is not enough: a grandchild may move to another
group of the same session (setpgid), or leave the session altogether (`setsid`, a daemon) while it
still holds the child's stdout/stderr pipes, and then reading the pipes waits for ever. At the deadline
`kill_tree` kills the group, every process whose session id is the child's (read from /proc), and every
process holding one of the child's pipes (the pipe's inode among its /proc/<pid>/fd links).
"""
from __future__ import annotations

import os
import signal
import stat
from typing import Iterable


def kill_tree(pid: int, pipe_inodes: Iterable[int] = (), reaped: bool = False) -> int:
    """SIGKILL the group and session led by `pid` and whoever holds one of `pipe_inodes`; the number
    of processes signalled beyond the group (0 when /proc cannot be read). Once the child is `reaped`
    its number may belong to a stranger's group, so then only the pipe holders are killed."""
    if not reaped:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    inodes = {f"pipe:[{ino}]" for ino in pipe_inodes}
    me, killed = os.getpid(), 0
    for other in _pids():
        if other == me:
            continue
        if (not reaped and _session_of(other) == pid) or (inodes and _holds_any(other, inodes)):
            try:
                os.kill(other, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
    return killed


def session_members(leader: int) -> list[int]:
    """The other live processes of the session `leader` leads, read from /proc."""
    return [other for other in _pids() if other != leader and _session_of(other) == leader]


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def running_session_members(leader: int) -> list[int]:
    """session_members without the zombies (ended, not yet reaped by their new parent, which may take a
    while: they hold no file and write nothing)."""
    return [other for other in session_members(leader) if (_stat_fields(other) or [b"Z"])[0] != b"Z"]


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/<pid>/stat's fields from the third on (state, ppid, pgrp, session, ...); the command name
    (field 2) may hold spaces and parentheses, so the fields are counted after its last ')'."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read()
    except OSError:
        return None
    return text[text.rfind(b")") + 2:].split()


def _session_of(pid: int) -> int | None:
    """Field 6 of /proc/<pid>/stat."""
    fields = _stat_fields(pid)
    try:
        return int(fields[3])  # state, ppid, pgrp, session
    except (TypeError, IndexError, ValueError):
        return None


def _holds_any(pid: int, links: set[str]) -> bool:
    directory = f"/proc/{pid}/fd"
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(f"{directory}/{name}") in links:
                return True
        except OSError:
            continue
    return False


def pipe_inode(fd: int) -> int | None:
    try:
        return os.fstat(fd).st_ino
    except OSError:
        return None


def find_executable(name: str, path: str | None = None) -> str | None:
    """What `shutil.which` finds, but only a regular file: a FIFO, socket or device named `R` on PATH
    is passed over (shutil.which accepts any non-directory with the x bit, and reading or running a
    FIFO waits for a writer for ever). Nothing is opened, only stat()ed."""
    if os.sep in name:
        return name if is_executable_file(name) else None
    for directory in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep):
        candidate = os.path.join(directory or os.curdir, name)
        if is_executable_file(candidate):
            return candidate
    return None


def is_executable_file(path: "str | os.PathLike[str]") -> bool:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and os.access(path, os.X_OK)
