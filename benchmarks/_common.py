"""What the benchmarks share: the torch wheel's libraries (found the way the doctor finds them) and a
best-of-N timer."""
from __future__ import annotations

import time
from typing import Callable


def torch_library(name: str) -> str:
    """Path of `name` (e.g. "libtorch_cpu.so") in the installed Python torch; exits when it is absent."""
    from rcompat.elf.targets import python_torch

    torch = python_torch()
    if torch is None:
        raise SystemExit("torch is not installed; pass a library path")
    return f"{torch.lib_dir}/{name}"


def best_of(n: int, fn: Callable[[], object]) -> float:
    """The fastest of `n` runs of `fn`, in seconds (the least disturbed by the rest of the machine)."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def record(benchmark: str, what: str, rcompat_s: float, tool: str, tool_s: float,
           goal: float | None = None, note: str = "") -> bool:
    """Print one measured ratio and, when RCOMPAT_BENCH_OUT names a file, append it there as a JSON
    line (scripts/perf_table.py turns those lines into docs/performance.md). Returns whether the
    ratio meets `goal` (always True without one)."""
    import json
    import os

    ratio = rcompat_s / tool_s if tool_s > 0 else float("inf")
    ok = goal is None or ratio <= goal
    goal_text = f" (goal <= {goal:g}x{'' if ok else ', MISSED'})" if goal is not None else ""
    print(f"{what}: rcompat {rcompat_s:.3f} s vs {tool} {tool_s:.3f} s -> ratio {ratio:.2f}x{goal_text}")
    out = os.environ.get("RCOMPAT_BENCH_OUT")
    if out:
        row = {"benchmark": benchmark, "what": what, "rcompat_s": round(rcompat_s, 4), "tool": tool,
               "tool_s": round(tool_s, 4), "ratio": round(ratio, 3), "goal": goal, "ok": ok, "note": note}
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
    return ok
