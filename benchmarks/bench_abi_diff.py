"""abi-diff vs `abidiff --no-show-locs` on libtorch_cpu.so from the torch 2.13.0 and 2.14.1 wheels.

Prints both times and whether the removed/added symbol sets are equal; reports the ratio (goal: ≤ 0.10)
through _common.record.
Run: .venv/bin/python benchmarks/bench_abi_diff.py [OLD NEW]  (default: extract from the wheels)
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from _common import record  # benchmarks/ is sys.path[0] when a benchmark runs

WHEEL_OLD = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
WHEEL_NEW = Path("/opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl")
MEMBER = "torch/lib/libtorch_cpu.so"


def extract(wheel: Path, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf, zf.open(MEMBER) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 4 << 20)  # stream: the member is ~434 MB
    return dest


def abidiff_sets(text: str) -> dict[str, set[str]]:
    sets, current = {}, None
    for line in text.splitlines():
        m = re.match(r"\d+ (Removed|Added) (function|variable) symbols? not referenced by debug info", line)
        if m:
            current = f"{m[1].lower()}_{m[2]}s"
            sets.setdefault(current, set())
            continue
        m = re.match(r"  \[[AD]\] ([^\s,]+)", line)
        if m and current:
            sets[current].add(m[1])
    return sets


def main(argv: list[str]) -> int:
    from rcompat.elf.abi.diff import abi_diff

    with tempfile.TemporaryDirectory() as tmp:
        if len(argv) == 2:
            old, new = Path(argv[0]), Path(argv[1])
        else:
            old, new = extract(WHEEL_OLD, Path(tmp) / "old" / "libtorch_cpu.so"), extract(WHEEL_NEW, Path(tmp) / "new" / "libtorch_cpu.so")
        for p in (old, new):  # warm the page cache for both tools alike
            with open(p, "rb") as fh:
                while fh.read(16 << 20):
                    pass
        t = time.perf_counter()
        diff = abi_diff(old, new)
        ours = time.perf_counter() - t
        t = time.perf_counter()
        done = subprocess.run(["abidiff", "--no-show-locs", str(old), str(new)], capture_output=True, text=True)
        theirs = time.perf_counter() - t
        mine = {f"{ch}_{k}s": {c.symbol.label for c in getattr(diff, ch) if c.kind == k}
                for ch in ("removed", "added") for k in ("function", "variable")}
        ref = abidiff_sets(done.stdout)
        counts = {k: len(v) for k, v in mine.items()}
        print(f"rcompat abi_diff: {ours:.3f} s  {counts}  exit {diff.exit_code}")
        print(f"abidiff --no-show-locs: {theirs:.3f} s  {({k: len(v) for k, v in ref.items()})}  exit {done.returncode}")
        print(f"same removed/added function and variable sets as abidiff: {mine == ref}")
        versions = " -> ".join(w.name.split("-")[1] for w in (WHEEL_OLD, WHEEL_NEW))
        what = f"abi-diff {old.name} {versions}" if len(argv) != 2 else f"abi-diff {old} {new}"
        ok = record("bench_abi_diff", f"{what}, in process", ours, "abidiff --no-show-locs", theirs, goal=0.10,
                    note="same removed/added sets" if mine == ref else "SETS DIFFER")
        return 0 if mine == ref and ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
