"""Byte-level comparison of two files: read-only numpy views of the mappings, and the differing runs.

Both files are memory-mapped and compared in 4 MiB numpy slices (np.array_equal runs at memory speed);
only differing slices are narrowed to byte indices.
"""
from __future__ import annotations

import mmap
import os

import numpy as np

from rcompat.elf.patch.results import RunBudget
from rcompat.elf.read.files import check_regular_file, open_elf_file

CHUNK = 4 << 20


class MappedFile:
    """A read-only mapping plus a uint8 view; an empty file maps to an empty array."""

    def __init__(self, path: str) -> None:
        check_regular_file(path)
        self._fh = open_elf_file(path)
        self.size = os.fstat(self._fh.fileno()).st_size
        self._map = mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        if self._map is not None and hasattr(self._map, "madvise") and hasattr(mmap, "MADV_SEQUENTIAL"):
            self._map.madvise(mmap.MADV_SEQUENTIAL)
        self.array = np.frombuffer(self._map, dtype=np.uint8) if self._map is not None else np.zeros(0, np.uint8)
        self.buf = self._map if self._map is not None else b""

    def close(self) -> None:
        self.array = self.buf = None
        if self._map is not None:
            self._map.close()
        self._fh.close()


def diff_ranges(a: np.ndarray, b: np.ndarray, gap: int,
                budget: "RunBudget | None" = None) -> tuple[list[tuple[int, int]], int]:
    """Differing [start, end) ranges of two equal-length arrays (merged across gaps of ≤ gap equal
    bytes) and the exact number of differing bytes; past `budget`, ranges are counted, not kept."""
    budget = budget if budget is not None else RunBudget()
    runs: list[tuple[int, int]] = []
    last_end: int | None = None
    count = 0
    for o in range(0, len(a), CHUNK):
        x, y = a[o:o + CHUNK], b[o:o + CHUNK]
        if np.array_equal(x, y):
            continue
        idx = np.flatnonzero(x != y)
        count += len(idx)
        breaks = np.flatnonzero(np.diff(idx) > gap + 1)
        starts = np.concatenate(([idx[0]], idx[breaks + 1])) + o
        ends = np.concatenate((idx[breaks], [idx[-1]])) + o + 1
        for s, e in zip(starts.tolist(), ends.tolist()):
            if last_end is not None and s - last_end <= gap:  # joins the run before (kept or not)
                if runs and runs[-1][1] == last_end:
                    runs[-1] = (runs[-1][0], e)
            elif budget.keep():
                runs.append((s, e))
            last_end = e
    return runs, count


def region_runs(a: np.ndarray, b: np.ndarray, gap: int,
                budget: "RunBudget | None" = None) -> tuple[list[tuple[int, int, int, int]], int]:
    """Relative (old_start, old_len, new_start, new_len) runs of two regions of possibly different
    length: equal lengths compare position by position; otherwise one run between the common prefix
    and the common suffix (each found a CHUNK at a time, never a whole-region comparison array)."""
    budget = budget if budget is not None else RunBudget()
    if len(a) == len(b):
        ranges, count = diff_ranges(a, b, gap, budget)
        return [(s, e - s, s, e - s) for s, e in ranges], count
    prefix = _common_length(a, b)
    suffix = _common_length(a[prefix:][::-1], b[prefix:][::-1])
    old_len, new_len = len(a) - prefix - suffix, len(b) - prefix - suffix
    return ([(prefix, old_len, prefix, new_len)] if budget.keep() else []), max(old_len, new_len)


def _common_length(a: np.ndarray, b: np.ndarray) -> int:
    """The length of the common start of `a` and `b`."""
    n = min(len(a), len(b))
    for o in range(0, n, CHUNK):
        x, y = a[o:min(o + CHUNK, n)], b[o:min(o + CHUNK, n)]
        if not np.array_equal(x, y):
            return o + int(np.flatnonzero(x != y)[0])
    return n
