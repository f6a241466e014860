"""The one way rcompat opens what a user hands it, so every reader says the same true thing about a bad one.

`open_input` takes regular files only (and `-` for stdin where the command documents it): the path is
stat()ed before it is opened, opened with O_NONBLOCK (opening a FIFO never waits for a writer) and
fstat()ed again on the descriptor, so a FIFO, a socket or a device swapped in between is refused too;
nothing ever waits on a FIFO or reads a device. Each kind of input has a size limit (LIMITS); a file
over it is refused before it is read, naming the file, the limit and the variable that raises it.
`open_if_regular` / `read_if_regular` are the same open for what rcompat wrote itself (cache entries):
symbolic links refused too, and a refusal is None (a miss to rebuild), never an error.
"""
from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
import sys
from collections import namedtuple

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up of every command)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import BinaryIO

from rcompat.errors import RcompatError, UsageError
from rcompat.standins import ExtentReader, extent_of

MIB = 1 << 20


class Limit(namedtuple("Limit", "what default_mb")):  # what: how a message names this kind of file
    __slots__ = ()

    def env(self, kind: str) -> str:
        return f"RCOMPAT_MAX_{kind.upper()}_MB"


# Sizes far above any real file of the kind, far below what would exhaust a CI machine.
LIMITS: dict[str, Limit] = {
    "table": Limit("knowledge tables and rule files", 16),
    "json": Limit("JSON documents (lock files, snapshots, manifests)", 64),
    "log": Limit("logs and text to explain", 256),
    "config": Limit("configuration files (ld.so.conf)", 4),
    "ldcache": Limit("ld.so caches", 64),
    "cache": Limit("cache entries", 512),
    "record": Limit("parity records", 4096),
    "image": Limit("images and their layers", 65536),
    "disk": Limit("files kept from an image's layers", 65536),
}


def limit_bytes(kind: str) -> int:
    """The size limit of `kind` in bytes: RCOMPAT_MAX_<KIND>_MB when set to a whole number, else the default."""
    limit = LIMITS[kind]
    text = os.environ.get(limit.env(kind), "").strip()
    try:
        mb = int(text) if text else limit.default_mb
    except ValueError:
        raise UsageError(f"{limit.env(kind)}={text!r} is not a whole number of MiB") from None
    return max(mb, 0) * MIB


def size_problem(size: int, kind: str) -> str | None:
    """Why `size` bytes is too much for an input of `kind`, or None."""
    limit = limit_bytes(kind)
    if size <= limit:
        return None
    return (f"{human_size(size)} is more than the {human_size(limit)} limit for {LIMITS[kind].what} "
            f"(set {LIMITS[kind].env(kind)} to raise it)")


def human_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


def kind_of_mode(mode: int) -> str:
    """'a FIFO', 'a character device', … — what a non-regular file is, for messages."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def file_problem(path: "str | os.PathLike[str]", kind: str = "a file") -> str | None:
    """Why `path` cannot be read as a regular file ("no such file", "is a directory, not a file", …),
    or None when it can. A FIFO or device is refused too: reading one can block forever."""
    try:  # os, not pathlib: pathlib (and urllib.parse under it) costs every command's start-up 3 ms
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            return f"dangling symbolic link to {os.readlink(path)}"
        return "no such file"
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return _os_problem(exc)
    return _mode_problem(st.st_mode, kind)


def _mode_problem(mode: int, kind: str = "a file") -> str | None:
    if stat.S_ISDIR(mode):
        return f"is a directory, not {kind}"
    if not stat.S_ISREG(mode):
        name = kind_of_mode(mode)
        return "is not a regular file" if name == "not a regular file" else f"is {name}, not a regular file"
    return None


def _os_problem(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    if exc.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return exc.strerror or str(exc)


def _prefix(path: "str | os.PathLike[str]", what: str) -> str:
    return f"cannot read {what + ' ' if what else ''}{path}"


def open_input(path: "str | os.PathLike[str]", kind: str, what: str = "", *,
               error: type[RcompatError] = UsageError, stdin_ok: bool = False) -> BinaryIO:
    """`path` opened for binary reading, after the checks above; `error` ("cannot read WHAT PATH: why")
    otherwise. `-` is stdin only where `stdin_ok` (the command documents it)."""
    if stdin_ok and str(path) == "-":
        return sys.stdin.buffer
    problem = file_problem(path)
    if problem:
        raise error(f"{_prefix(path, what)}: {problem}")
    try:
        return _open_checked(path, limit_bytes(kind), kind, follow_links=True)[0]
    except InputRefused as refused:
        raise error(f"{_prefix(path, what)}: {refused}") from None


def open_if_regular(path: "str | os.PathLike[str]", limit: int) -> "tuple[BinaryIO, int] | None":
    """(open binary file, size) when `path` is a regular file of at most `limit` bytes and not a symbolic
    link; None otherwise, never an error. For what rcompat wrote itself (cache entries): a damaged one
    (a directory, a FIFO, a link planted in its place, one too big) is a miss, rebuilt by the caller."""
    try:
        return _open_checked(path, limit, "", follow_links=False)
    except InputRefused:
        return None


def read_if_regular(path: "str | os.PathLike[str]", limit: int) -> bytes | None:
    """The bytes of `path` when open_if_regular opens it and it stays within `limit` while read; else None."""
    opened = open_if_regular(path, limit)
    if opened is None:
        return None
    fh, _ = opened
    with fh:
        try:
            data = fh.read(limit + 1)
        except OSError:
            return None
    return data if len(data) <= limit else None


def open_mapped(path: "str | os.PathLike[str]", kind: str = "a file") -> BinaryIO:
    """`path` opened like open_input but with no size limit, for files that are mapped, not read (ELF
    objects: libtorch_cuda.so is over a GiB); InputRefused(why) otherwise, for the caller's own error."""
    from rcompat.mapguard import guard

    problem = file_problem(path, kind)
    if problem:
        raise InputRefused(problem)
    fh = _open_checked(path, sys.maxsize, "", follow_links=True)[0]
    if not isinstance(fh, ExtentReader):  # a stand-in's image file is guarded where it was opened
        guard(fh.fileno(), os.fspath(path))  # a truncation meanwhile: reported, not a SIGBUS (rcompat/mapguard.py)
    return fh


class InputRefused(Exception):
    """Why a path was not opened (the message's last part: "is a FIFO, not a regular file")."""



def _open_checked(path: "str | os.PathLike[str]", limit: int, kind: str, *,
                  follow_links: bool) -> "tuple[BinaryIO, int]":
    """Open without blocking, then check the open descriptor: a FIFO or a device swapped in after any
    earlier stat() is refused too, and never blocks nor streams. `kind` names the limit in messages."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        link = not follow_links and exc.errno == errno.ELOOP
        raise InputRefused("is a symbolic link" if link else _os_problem(exc)) from None
    try:
        st = os.fstat(fd)
        problem = _mode_problem(st.st_mode)
        if problem is None and st.st_size > limit:
            problem = size_problem(st.st_size, kind) if kind else f"more than {human_size(limit)}"
        if problem:
            raise InputRefused(problem)
        extent = extent_of(fd, st)  # an image member left in place (rcompat/standins.py): its real bytes
        if extent is not None:
            os.close(fd)
            return ExtentReader(extent, os.fspath(path)), st.st_size
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def read_input(path: "str | os.PathLike[str]", kind: str, what: str = "", *,
               error: type[RcompatError] = UsageError, stdin_ok: bool = False) -> bytes:
    """The bytes of `path` (see open_input), never more than the limit of `kind`: a file that grows
    while read, or a /proc file that says it is empty, is cut off with the same error."""
    limit = limit_bytes(kind)
    fh = open_input(path, kind, what, error=error, stdin_ok=stdin_ok)
    try:
        data = fh.read(limit + 1)
    except OSError as exc:
        raise error(f"{_prefix(path, what)}: {_os_problem(exc)}") from None
    finally:
        if fh is not sys.stdin.buffer:
            fh.close()
    if len(data) > limit:
        raise error(f"{_prefix(path, what)}: {size_problem(len(data), kind)}")
    return data


def read_text_input(path: "str | os.PathLike[str]", kind: str, what: str = "", *,
                    error: type[RcompatError] = UsageError, errors: str = "strict", stdin_ok: bool = False) -> str:
    """read_input decoded as UTF-8; undecodable bytes are `error` ("not UTF-8 text") unless `errors`
    says how to replace them."""
    data = read_input(path, kind, what, error=error, stdin_ok=stdin_ok)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise error(f"{_prefix(path, what)}: not UTF-8 text (byte {exc.start})") from None


def bounded_reader(fh: BinaryIO, limit: int, describe) -> io.RawIOBase:
    """A reader of `fh` that raises describe(read_so_far) (an exception) once more than `limit` bytes come
    out: decompression and streaming readers stop at the budget instead of filling memory or disk."""
    return _Bounded(fh, limit, describe)


class _Bounded(io.RawIOBase):
    def __init__(self, fh: BinaryIO, limit: int, describe) -> None:
        self._fh, self._left, self._limit, self._describe = fh, limit, limit, describe

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._fh.read(min(len(buffer), self._left + 1))
        if len(data) > self._left:
            raise self._describe(self._limit - self._left + len(data))
        self._left -= len(data)
        buffer[:len(data)] = data
        return len(data)


def require_file(path: "str | os.PathLike[str]", what: str = "", error: type[RcompatError] = UsageError) -> Path:
    """`path` as a Path, or `error` ("cannot read WHAT PATH: why")."""
    problem = file_problem(path)
    if problem:
        raise error(f"{_prefix(path, what)}: {problem}")
    from pathlib import Path

    return Path(path)


def require_dir(path: "str | os.PathLike[str]", what: str = "directory") -> Path:
    from pathlib import Path

    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what} {path} does not exist")
    if not p.is_dir():
        raise UsageError(f"{what} {path} is not a directory")
    return p
