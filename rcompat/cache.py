"""rcompat's cache directory, the switch that bypasses every cache, and checked cache files.

What does not change between runs (a library's symbol index, the torch child's facts) is kept under
$XDG_CACHE_HOME/rcompat (or ~/.cache/rcompat). A cache file is a header (magic, the format of its
kind, payload length, CRC-32) and a payload; a truncated, corrupt or other-format file reads as a
miss and is rewritten, so a bad entry costs a rebuild and never an error. So does an entry that is
not a regular file at all (a directory, a FIFO, a socket, a symlink): it is never opened for reading
(a FIFO would block the reader forever) and is removed before the rebuilt entry is written (a
directory in its place made every write fail, so it was never rebuilt). `--no-cache`
(`bypassed()`) or RCOMPAT_NO_CACHE=1 turns every cache off: nothing is read or written.
"""
from __future__ import annotations

import os
import stat
import struct
import threading
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

NO_CACHE_ENV = "RCOMPAT_NO_CACHE"
_MAGIC = b"RCMPCACH"
_HEADER = struct.Struct("<8sIQI")  # magic, format, payload length, crc32
_bypass_depth = 0
_bypass_lock = threading.Lock()


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rcompat"


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """False inside `bypassed()` or when RCOMPAT_NO_CACHE is set to anything but 0/empty."""
    env = os.environ if env is None else env
    if _bypass_depth:
        return False
    return env.get(NO_CACHE_ENV, "").strip().lower() in ("", "0", "false", "no")


@contextmanager
def bypassed(active: bool = True) -> Iterator[None]:
    """Every cache off while the block runs (process-wide: the doctor's threads share it)."""
    global _bypass_depth
    if not active:
        yield
        return
    with _bypass_lock:
        _bypass_depth += 1
    try:
        yield
    finally:
        with _bypass_lock:
            _bypass_depth -= 1


def file_stamp(path: str) -> list[int] | None:
    """[st_dev, st_ino, st_size, st_mtime_ns] of `path`: a file replaced or rewritten on disk gets a new
    stamp; None when it cannot be stat()ed. A list, so it reads back from a JSON entry unchanged."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def file_identity(path: str) -> tuple[str, int, int, int, int]:
    """(realpath, st_dev, st_ino, st_size, st_mtime_ns): the key of what is read from a file, so a file
    replaced on disk is read again; (path, 0, 0, 0, 0) when it cannot be stat()ed (reading it then
    reports why)."""
    stamp = file_stamp(path)
    return (path, 0, 0, 0, 0) if stamp is None else (os.path.realpath(path), *stamp)


def entry_path(kind: str, name: str) -> Path:
    return default_cache_dir() / kind / name


def read_entry(path: Path, fmt: int) -> bytes | None:
    """The payload of a cache file of format `fmt`; None when missing, not a regular file,
    truncated, corrupt or of another format (the caller rebuilds and writes it again)."""
    from rcompat.inputs import limit_bytes, open_if_regular

    opened = open_if_regular(path, limit_bytes("cache"))
    if opened is None:
        return None
    fh, size = opened
    with fh:
        try:
            if size < _HEADER.size:
                return None
            magic, found_fmt, length, crc = _HEADER.unpack(fh.read(_HEADER.size))
            if magic != _MAGIC or found_fmt != fmt or length != size - _HEADER.size:
                return None  # the header says what size to expect: garbage is never read whole
            payload = fh.read(length + 1)
        except (OSError, struct.error):
            return None
    if len(payload) != length or zlib.crc32(payload) != crc:
        return None
    return payload


def clear_damaged(path: Path) -> None:
    """Make room for a rebuilt entry at `path`: whatever is there that is not a regular file goes (a
    directory with its contents, a FIFO, a socket, any symlink), and so does a non-directory where one
    of the cache's directories belongs. os.replace then puts the new file there."""
    for directory in _directories_of(path):
        if os.path.lexists(directory) and not os.path.isdir(directory):
            _remove(directory)
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        _remove(path)


def _directories_of(path: Path) -> list[Path]:
    """The cache's own directories leading to `path`, outermost first; none for a path outside the
    cache (a directory the user named is never removed)."""
    root = default_cache_dir()
    try:
        inner = path.relative_to(root).parents[:-1]
    except ValueError:
        return []
    return [root, *(root / p for p in reversed(inner))]


def _remove(path: Path) -> None:
    import shutil

    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass  # the write that follows fails and says why; the answer stays intact


def read_json(path: Path, fmt: int, key: object) -> dict | None:
    """The object write_json stored for `key` (its other fields beside "key"); None when the entry is
    missing, corrupt, of another format, not a JSON object, nested deeper than a document may be, or
    written for another key (compared as JSON: a tuple in `key` matches the list it was stored as)."""
    import json

    from rcompat.documents import parse_json
    from rcompat.errors import RcompatError

    payload = read_entry(path, fmt)
    if payload is None:
        return None
    try:  # an entry nested past the documents' limit (json.loads: RecursionError) is a miss too
        data = parse_json(payload, str(path))
    except RcompatError:
        return None
    if not isinstance(data, dict) or data.get("key") != json.loads(json.dumps(key, default=str)):
        return None
    return data


def write_json(path: Path, fmt: int, key: object, data: Mapping[str, object]) -> bool:
    """write_entry of the JSON object {"key": key, **data} (what JSON cannot hold is written as str)."""
    import json

    return write_entry(path, fmt, json.dumps({"key": key, **data}, default=str).encode("utf-8"))


def write_entry(path: Path, fmt: int, payload: bytes) -> bool:
    """Write atomically; False (and nothing half-written) when the cache directory is not writable:
    a read-only home costs speed, never the answer."""
    from rcompat.atomic import replaced_atomically

    try:
        clear_damaged(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with replaced_atomically(path) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(_HEADER.pack(_MAGIC, fmt, len(payload), zlib.crc32(payload)))
                fh.write(payload)
    except Exception:  # noqa: BLE001 - any failure to cache leaves the answer intact
        return False
    return True
