"""What the benchmarks share: the torch wheel's libraries (found the way the doctor finds them), a
best-of-N timer, a whole-process timer and what collect_env says of torch."""
from __future__ import annotations

import re
import subprocess
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


def timed(argv: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> tuple[float, str]:
    """Seconds the whole process `argv` took, and its stdout; exits when it fails (1 is allowed: a
    failing finding is still a report)."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout


def collect_env_torch(text: str) -> tuple[str, str | None]:
    """(torch version, CUDA build) from `python -m torch.utils.collect_env`'s output; the CUDA build is
    None for a CPU-only torch (collect_env writes "None" or "Could not collect")."""
    version = re.search(r"^PyTorch version: (\S+)", text, re.M).group(1)
    cuda = re.search(r"^CUDA used to build PyTorch: (.+)$", text, re.M).group(1).strip()
    return version, None if cuda in ("None", "Could not collect") else cuda


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
