"""Checks on paths the user gives, so every command says the same true thing about a bad one."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rcompat.errors import RcompatError, UsageError


def file_problem(path: "str | os.PathLike[str]", kind: str = "a file") -> str | None:
    """Why `path` cannot be read as a regular file ("no such file", "is a directory, not a file", …),
    or None when it can. A FIFO or device is refused too: reading one can block forever."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        if p.is_symlink():
            return f"dangling symbolic link to {os.readlink(p)}"
        return "no such file"
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return "symbolic link loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
    if stat.S_ISDIR(st.st_mode):
        return f"is a directory, not {kind}"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    return None


def require_file(path: "str | os.PathLike[str]", what: str = "", error: type[RcompatError] = UsageError) -> Path:
    """`path` as a Path, or `error` ("cannot read WHAT PATH: why")."""
    problem = file_problem(path)
    if problem:
        raise error(f"cannot read {what + ' ' if what else ''}{path}: {problem}")
    return Path(path)


def require_dir(path: "str | os.PathLike[str]", what: str = "directory") -> Path:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{what} {path} does not exist")
    if not p.is_dir():
        raise UsageError(f"{what} {path} is not a directory")
    return p
