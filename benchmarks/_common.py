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
