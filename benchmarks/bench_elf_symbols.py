"""`rcompat elf symbols --defined` against `nm -D --defined-only` on the torch wheel's libtorch_cpu.so.

Whole processes on both sides, interpreter start-up included, best of --repeat runs each, the three
commands taking turns so that a busy machine slows them alike:
- nm: `nm -D --defined-only LIB`;
- text: `rcompat elf symbols --defined LIB` (goal: <= 1.5x nm, issue 31);
- json: `rcompat elf symbols --defined --format json LIB` (goal: <= 3x nm).
rcompat runs as installed, from byte-compiled modules (PYTHONDONTWRITEBYTECODE is dropped for its
runs; the first, untimed run writes them). Asserts that the text equals nm's output and that the JSON
parses to as many rows with the same symbols. Reports through _common.record; exit 1 if a goal is missed.

Measured (issue 31, second round; 2 cores, load average 1.8-2.1, same runs): text 1.39x (0.120 s vs
nm's 0.086 s; the code before the round: 1.48x there, 1.64x on the quiet machine of the round
before), JSON 1.94x. In CPU time, best of 15 alternated runs: nm 87 ms, rcompat 122 ms (before the
round 140 ms), JSON 174 ms. Where the time goes and what was tried: docs/elf.md, "Listing".

    .venv/bin/python benchmarks/bench_elf_symbols.py [LIB] [--repeat 15]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import record, torch_library  # benchmarks/ is sys.path[0] when a benchmark runs

REPO = Path(__file__).resolve().parent.parent


def rcompat_command() -> list[str]:
    """The `rcompat` a user runs: the venv's console script, else `python -m rcompat`."""
    script = Path(sys.executable).with_name("rcompat")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rcompat"]


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat elf symbols (text, JSON) vs nm -D --defined-only")
    ap.add_argument("lib", nargs="?")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    lib = args.lib or torch_library("libtorch_cpu.so")
    if shutil.which("nm") is None:
        raise SystemExit("nm (binutils) is not installed")
    # The C locale: nm sorts names with strcoll, rcompat in byte order (the C locale's, and C.UTF-8's);
    # under en_US.UTF-8 nm would order case and underscores otherwise.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"LC_ALL": "C"}
    commands = {"nm": ["nm", "-D", "--defined-only", lib],
                "text": [*rcompat_command(), "elf", "symbols", "--defined", lib],
                "json": [*rcompat_command(), "elf", "symbols", "--defined", "--format", "json", lib]}

    outputs = {k: subprocess.run(argv, capture_output=True, text=True, check=True, env=env, cwd=str(REPO)).stdout
               for k, argv in commands.items()}
    reference = [line for line in outputs["nm"].splitlines() if line]
    assert outputs["text"] == outputs["nm"], "rcompat's text differs from nm's"
    rows = json.loads(outputs["json"])
    assert len(rows) == len(reference), f"JSON has {len(rows)} rows, nm {len(reference)} lines"
    assert {r["decorated"] for r in rows} == {line.split(" ", 2)[2] for line in reference}, "JSON symbols differ"

    best = dict.fromkeys(commands, float("inf"))
    for _ in range(args.repeat):
        for key, argv in commands.items():
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=env, cwd=str(REPO))
            best[key] = min(best[key], time.perf_counter() - t)
    name = os.path.basename(lib)
    print(f"{name}: {len(reference)} defined dynamic symbols; text equal to nm's, JSON the same symbols")
    ok = record("bench_elf_symbols", f"elf symbols --defined, {name} ({len(reference)} symbols), nm text",
                best["text"], "nm -D --defined-only", best["nm"], goal=1.5, note="same text as nm")
    ok &= record("bench_elf_symbols", f"elf symbols --defined --format json, {name}", best["json"],
                 "nm -D --defined-only", best["nm"], goal=3, note="JSON parses, same symbols")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
