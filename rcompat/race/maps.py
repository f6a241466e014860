"""Parse a Linux process memory map (/proc/PID/maps format) into regions.

One line per mapping: `start-end perms offset dev inode [path]`, addresses and offset in hex, the path
optional (anonymous memory), possibly with spaces, possibly ending in " (deleted)", or a pseudo-path
like [heap], [stack], [vdso], [anon:name].
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rcompat.errors import RcompatError
from rcompat.inputs import read_text_input

DELETED = " (deleted)"


class MapsError(RcompatError):
    """A maps file that cannot be read or parsed; names the file and line."""


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    perms: str
    offset: int
    dev: str
    inode: int
    path: str = ""
    deleted: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def shared(self) -> bool:
        return self.perms[3:4] == "s"

    @property
    def anonymous(self) -> bool:
        return not self.path or self.path.startswith("[anon")

    @property
    def heap(self) -> bool:
        return self.path == "[heap]"

    @property
    def file_backed(self) -> bool:
        return self.path.startswith("/")

    def label(self) -> str:
        what = self.path or "anonymous"
        return f"{self.start:#x}-{self.end:#x} {self.perms} {size_text(self.size)} {what}"

    def to_dict(self) -> dict:
        return {"start": hex(self.start), "end": hex(self.end), "size": self.size, "perms": self.perms,
                "offset": hex(self.offset), "dev": self.dev, "inode": self.inode, "path": self.path,
                "deleted": self.deleted}


def parse_maps(text: str, source: str = "maps") -> list[Region]:
    regions = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        regions.append(_parse_line(line, number, source))
    return regions


def _parse_line(line: str, number: int, source: str) -> Region:
    fields = line.split(None, 5)
    if len(fields) < 5:
        raise MapsError(f"{source}:{number}: expected 'start-end perms offset dev inode [path]', got {line[:80]!r}")
    span, perms, offset, dev, inode = fields[:5]
    path = fields[5].strip() if len(fields) == 6 else ""
    try:
        start_text, end_text = span.split("-", 1)
        start, end, off, ino = int(start_text, 16), int(end_text, 16), int(offset, 16), int(inode)
    except ValueError:
        raise MapsError(f"{source}:{number}: bad address range, offset or inode in {line[:80]!r}") from None
    if end < start or len(perms) != 4 or ":" not in dev:
        raise MapsError(f"{source}:{number}: not a maps line: {line[:80]!r}")
    deleted = path.endswith(DELETED)
    if deleted:
        path = path[: -len(DELETED)]
    return Region(start, end, perms, off, dev, ino, path, deleted)


def read_maps(pid: int | None = None, file: "str | os.PathLike[str] | None" = None) -> tuple[list[Region], str]:
    """Regions and a description of where they came from: a saved file, /proc/PID/maps, or self."""
    if file is not None:
        path = Path(file)
        source = str(path)
    else:
        path = Path(f"/proc/{pid}/maps" if pid is not None else "/proc/self/maps")
        source = f"/proc/{pid if pid is not None else os.getpid()}/maps"
    try:
        if file is not None:  # a FIFO without a writer would block the read forever
            text = read_text_input(path, "log", error=MapsError, errors="replace")
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        what = "no such file" if file is not None else f"no process {pid}"
        raise MapsError(f"cannot read {source}: {what}") from None
    except PermissionError:
        raise MapsError(f"cannot read {source}: permission denied (another user's process needs root)") from None
    except IsADirectoryError:
        raise MapsError(f"cannot read {source}: is a directory") from None
    except OSError as exc:
        raise MapsError(f"cannot read {source}: {exc.strerror or exc}") from None
    regions = parse_maps(text, source)
    if file is not None and not regions:
        raise MapsError(f"{source}: no mappings in it (an empty file is not a saved /proc/PID/maps)")
    return regions, source


def read_mmap_min_addr(path: str = "/proc/sys/vm/mmap_min_addr") -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def size_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
