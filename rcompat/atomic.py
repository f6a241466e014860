"""Write files so that a reader never sees half of one: temp file in the same directory, then rename."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rcompat.errors import RcompatError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable_target(path: "str | os.PathLike[str]") -> Path:
    """Raise RcompatError unless a file can be written at `path`. The CLI calls this before a long run
    (doctor, race) so a bad --output fails at once, not after the work."""
    target = Path(path)
    directory = target.parent  # "." for a bare name
    if not directory.is_dir():
        raise RcompatError(f"cannot write {target}: directory {directory} does not exist")
    if target.is_dir():  # else os.replace fails late, with the temp file's name in the message
        raise RcompatError(f"cannot write {target}: is a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise RcompatError(f"cannot write {target}: directory {directory} is not writable")
    return target


def write_text_atomic(path: "str | os.PathLike[str]", text: str, encoding: str = "utf-8") -> Path:
    with replaced_atomically(path) as tmp:
        with open(tmp, "w", encoding=encoding) as fh:
            fh.write(text)
    return Path(path)


@contextmanager
def replaced_atomically(path: "str | os.PathLike[str]") -> Iterator[Path]:
    """Yield a temp path next to `path` for a library to write (e.g. numpy.savez); on success it is
    synced and renamed onto `path`, on any error removed, so `path` is never half-written."""
    target = check_writable_target(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates 0600; a report or trace is meant to be shared, so give it the mode a plain
        # open() would (0666 less the umask), or keep the mode of the file being replaced.
        os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask())
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
