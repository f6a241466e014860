"""Dependency and version-requirement reading against `readelf -d -V`, the manual way.

A user checking "why does this library not load" runs `readelf -d` (NEEDED, RUNPATH) and `readelf -V`
(version needs/definitions) on the library and on every library it pulls in. rcompat does the same
reading for the whole closure plus the resolution itself (`rcompat.elf.deps` + `versions`). This
benchmark times both on the closure of the torch wheel's libtorch_python.so, asserts that every
file's NEEDED list equals readelf's, and prints the ratio (rcompat / readelf over the same files).

    .venv/bin/python benchmarks/bench_elf_readelf.py [LIB] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

from _common import record, torch_library  # benchmarks/ is sys.path[0] when a benchmark runs

CHILD = """
import json, sys, time
t = time.perf_counter()
from rcompat.elf.link.resolve import deps
from rcompat.elf.link.verreq import check_versions
res = deps(sys.argv[1])
report = check_versions(res, find_alternatives=False)
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "needed": {n.path: list(n.info.needed) for n in res.nodes},
                  "ok": report.ok}))
"""
_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")


def readelf_needed(path: str) -> list[str]:
    out = subprocess.run(["readelf", "-d", "-V", "-W", path], capture_output=True, text=True, check=True).stdout
    return _NEEDED.findall(out)


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat elf deps+versions vs readelf -d -V on a closure")
    ap.add_argument("lib", nargs="?")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    lib = args.lib or torch_library("libtorch_python.so")

    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, lib], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(args.repeat)]
    ours = min(r["seconds"] for r in runs)
    closure = runs[0]["needed"]
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        theirs = {path: readelf_needed(path) for path in closure}
        times.append(time.perf_counter() - t)
    readelf_s = min(times)
    mismatched = [p for p in closure if closure[p] != theirs[p]]
    print(f"{os.path.basename(lib)}: closure of {len(closure)} files, versions ok: {runs[0]['ok']}")
    print(f"readelf -d -V on each file        {readelf_s * 1000:7.1f} ms")
    print(f"rcompat deps + versions (library) {ours * 1000:7.1f} ms   ratio {ours / readelf_s:.2f}x "
          f"(also resolves every DT_NEEDED and checks every version node)")
    print(f"NEEDED lists equal to readelf's: {not mismatched}" + (f" (differ: {mismatched})" if mismatched else ""))
    record("bench_elf_readelf", f"deps + versions of {os.path.basename(lib)}'s closure ({len(closure)} files), "
           "library", ours, "readelf -d -V on each file", readelf_s,
           note="NEEDED lists equal readelf's" if not mismatched else "NEEDED LISTS DIFFER")
    return 1 if mismatched else 0


if __name__ == "__main__":
    raise SystemExit(main())
