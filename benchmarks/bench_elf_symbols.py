"""Symbol-table speed against `nm -D --defined-only` on the torch wheel's libtorch_cpu.so.

Three timings, best of --repeat runs each:
- nm: `nm -D --defined-only LIB` as a subprocess (its output is the reference symbol set);
- library: a fresh interpreter imports rcompat.elf and reads the defined symbols (the table), then
  formats sorted nm lines (timed inside the child: interpreter start-up not counted, imports are);
- cli: `rcompat elf symbols --defined LIB` end to end, interpreter start-up included.
Asserts the same symbol set as nm, prints the ratios; the goal is table/nm <= 2 (exit 1 otherwise).

    .venv/bin/python benchmarks/bench_elf_symbols.py [LIB] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import best_of, torch_library  # benchmarks/ is sys.path[0] when a benchmark runs

REPO = Path(__file__).resolve().parent.parent
CHILD = """
import json, sys, time
t = time.perf_counter()
from rcompat.elf import symbols
table = symbols(sys.argv[1], defined=True)
read = time.perf_counter() - t
lines = table.nm_lines()
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "read": read, "count": len(lines)}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat elf symbols vs nm -D --defined-only")
    ap.add_argument("lib", nargs="?")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    lib = args.lib or torch_library("libtorch_cpu.so")

    nm_out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    reference = {line for line in nm_out.splitlines() if line}
    sys.path.insert(0, str(REPO))
    from rcompat.elf import symbols

    ours = set(symbols(lib, defined=True).nm_lines())
    assert ours == reference, f"symbol sets differ: {len(ours ^ reference)} lines"

    nm_s = best_of(args.repeat, lambda: subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, check=True))
    lib_times, read_times = [], []
    for _ in range(args.repeat):
        out = json.loads(subprocess.run([sys.executable, "-c", CHILD, lib], capture_output=True, text=True,
                                        check=True).stdout)
        lib_times.append(out["seconds"])
        read_times.append(out["read"])
    lib_s, read_s = min(lib_times), min(read_times)
    cli_s = best_of(args.repeat, lambda: subprocess.run([sys.executable, "-m", "rcompat", "elf", "symbols", "--defined", lib],
                                        capture_output=True, check=True, cwd=str(REPO)))
    print(f"{os.path.basename(lib)}: {len(reference)} defined dynamic symbols, same set as nm")
    print(f"nm -D --defined-only      {nm_s * 1000:7.1f} ms")
    print(f"rcompat.elf.symbols()     {read_s * 1000:7.1f} ms   ratio {read_s / nm_s:.2f}x (goal <= 2x; the table, imports included)")
    print(f"  + nm_lines() (sorted)   {lib_s * 1000:7.1f} ms   ratio {lib_s / nm_s:.2f}x (same text as nm)")
    print(f"rcompat elf symbols (CLI) {cli_s * 1000:7.1f} ms   ratio {cli_s / nm_s:.2f}x (with interpreter start-up)")
    return 0 if read_s / nm_s <= 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
