"""patch-diff vs `cmp -l` on libtorch_cpu.so against a copy with a few patched bytes.

Prints both times; reports the ratios (goal in process: ≤ 2.0) through _common.record. Run: .venv/bin/python benchmarks/bench_patch_diff.py [LIB]
(default: the libtorch_cpu.so of the installed torch).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import best_of, record, torch_library  # benchmarks/ is sys.path[0] when a benchmark runs

PATCHES = (0x1000, 0x1001, 0x2000000, 0x8000000)  # offsets whose byte is flipped


def main(argv: list[str]) -> int:
    from rcompat.elf.patch.diff import patch_diff

    lib = Path(argv[0] if argv else torch_library("libtorch_cpu.so"))
    with tempfile.TemporaryDirectory() as tmp:
        original, patched = Path(tmp) / "orig.so", Path(tmp) / "patched.so"
        shutil.copyfile(lib, original)
        shutil.copyfile(lib, patched)
        with open(patched, "r+b") as fh:
            for off in PATCHES:
                fh.seek(off)
                b = fh.read(1)[0]
                fh.seek(off)
                fh.write(bytes([b ^ 0xFF]))
        result = {}
        ours = best_of(3, lambda: result.setdefault("d", patch_diff(original, patched)))
        theirs = best_of(3, lambda: subprocess.run(["cmp", "-l", str(original), str(patched)], capture_output=True))
        cli = best_of(3, lambda: subprocess.run([sys.executable, "-m", "rcompat", "elf", "patch-diff", str(original),
                                                 str(patched)], capture_output=True))
        d = result["d"]
        print(f"{lib} ({original.stat().st_size} bytes), {len(PATCHES)} bytes patched")
        print(f"rcompat patch_diff (in process): {ours:.3f} s  runs={len(d.runs)} changed_bytes={d.changed_bytes}")
        print(f"rcompat elf patch-diff (CLI, with interpreter start): {cli:.3f} s")
        print(f"cmp -l: {theirs:.3f} s")
        found = d.changed_bytes == len(PATCHES)
        note = f"the {len(PATCHES)} patched bytes found" if found else "PATCHED BYTES NOT FOUND"
        ok = record("bench_patch_diff", f"patch-diff {lib.name} vs a copy with {len(PATCHES)} bytes patched, in process",
                    ours, "cmp -l", theirs, goal=2.0, note=note)
        record("bench_patch_diff", "the same, `rcompat elf patch-diff` CLI", cli, "cmp -l", theirs, note=note)
        return 0 if found and ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
