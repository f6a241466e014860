"""The one way rcompat writes an output, so a reader never sees half of one and nothing is replaced by mistake.

A regular file (or a symbolic link to one: the link is kept, its target replaced) is written to a temp
file in the same directory, synced and renamed over it. A target that exists and is not a regular file
is never replaced: a character device (`-o /dev/null`, a terminal, `/proc/self/fd/1`) or a FIFO with a
reader is written through; a FIFO without a reader, a socket, a block device or a directory is refused.
`-o -` is stdout, handled by the CLI before this module.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rcompat.errors import RcompatError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _existing_mode(target: Path) -> int | None:
    try:
        return os.stat(target).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RcompatError(f"cannot write {target}: {exc.strerror or exc}") from None


def check_writable_target(path: "str | os.PathLike[str]") -> Path:
    """Raise RcompatError unless `path` can be written (see the module's rules). The CLI calls this before
    a long run (doctor, race) so a bad --output fails at once, not after the work."""
    target = Path(path)
    mode = _existing_mode(target)
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):  # else os.replace fails late, with the temp file's name in the message
            raise RcompatError(f"cannot write {target}: is a directory")
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):  # not opened yet: closing a FIFO would end its reader
            if not os.access(target, os.W_OK):
                raise RcompatError(f"cannot write {target}: permission denied")
            return target
        from rcompat.inputs import kind_of_mode

        raise RcompatError(f"cannot write {target}: is {kind_of_mode(mode)}; rcompat writes regular files, "
                           "character devices and FIFOs only")
    directory = _real(target).parent  # "." for a bare name
    if not directory.is_dir():
        raise RcompatError(f"cannot write {target}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise RcompatError(f"cannot write {target}: directory {directory} is not writable")
    return target


def _real(target: Path) -> Path:
    """The file a symbolic link names, so replacing it keeps the link."""
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def _open_through(target: Path) -> int:
    """A descriptor writing into the existing device or FIFO `target`: O_NONBLOCK so that a FIFO with no
    reader is refused (ENXIO) instead of waiting for one; blocking again once open."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        why = "a FIFO with no reader" if exc.errno == errno.ENXIO else (exc.strerror or str(exc))
        raise RcompatError(f"cannot write {target}: {why}") from None
    st = os.fstat(fd)
    if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):  # swapped since it was stat()ed
        os.close(fd)
        raise RcompatError(f"cannot write {target}: it changed while being opened")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def write_text_atomic(path: "str | os.PathLike[str]", text: str, encoding: str = "utf-8") -> Path:
    with replaced_atomically(path) as tmp:
        with open(tmp, "w", encoding=encoding) as fh:
            fh.write(text)
    return Path(path)


@contextmanager
def replaced_atomically(path: "str | os.PathLike[str]") -> Iterator[Path]:
    """Yield a temp path for a library to write (e.g. numpy.savez). On success a regular target is synced
    and renamed onto (never half-written); a device or FIFO target gets the temp file's bytes written
    through. On any error the temp file is removed and the target left as it was."""
    target = check_writable_target(path)
    mode = _existing_mode(target)
    through = mode is not None and not stat.S_ISREG(mode)
    real = _real(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=None if through else real.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        if through:
            _copy_through(Path(tmp), target)
            os.unlink(tmp)
            return
        # mkstemp creates 0600; a report or trace is meant to be shared, so give it the mode a plain
        # open() would (0666 less the umask), or keep the mode of the file being replaced.
        os.chmod(tmp, real.stat().st_mode & 0o7777 if real.exists() else 0o666 & ~_umask())
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename is None:  # a full disk: say which file did not fit
            raise OSError(exc.errno, f"{exc.strerror}, writing", str(path)) from None
        raise


def _copy_through(source: Path, target: Path) -> None:
    with open(source, "rb") as src, open(_open_through(target), "wb") as out:
        shutil.copyfileobj(src, out)
