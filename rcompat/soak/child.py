"""Child side of `rcompat soak` (Python): `python -m rcompat.soak.child CONFIG_JSON`.

Runs the workload `warmups + iterations` times in this process (its own, since torch can crash or
hang), and after every iteration samples memory twice: before and after a forced collection
(gc.collect(), as CPython's -R refleak runs do between repetitions). Each sample is one JSON line,
flushed at once, so the parent keeps every sample taken before a crash:

    {"facts": {...}}                                   who ran what, where
    {"sample": i, "warmup": bool, "before": {...}, "after": {...}, "collected": n}
    {"end": {"limits": {...}, "timing": {...}}, "done": true}
    {"fatal": "..."}                                   torch does not import, a bad --cases file

Metrics are bytes except py_blocks: rss (/proc/self/statm), py_blocks (sys.getallocatedblocks), and on
CUDA cuda_allocated, cuda_reserved (the caching allocator) and cuda_driver_used (total - free of
mem_get_info: every context on the device). Nothing is emptied: the cache must be seen to plateau.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from rcompat.isolate import emit

FATAL_EXIT = 3
PAGE = os.sysconf("SC_PAGE_SIZE")


def main(argv: list[str] | None = None) -> int:
    config = json.loads((argv if argv is not None else sys.argv[1:])[0])
    emit({"step": "import torch"})
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - the interpreter lacks torch: say so
        emit({"fatal": f"{sys.executable} cannot import torch: {type(exc).__name__}: {exc}"})
        return FATAL_EXIT
    if config.get("threads"):
        torch.set_num_threads(int(config["threads"]))
    device = config.get("device", "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        emit({"fatal": f"--device cuda: CUDA is not available to torch {torch.__version__} "
                       f"(CUDA build {torch.version.cuda or 'none'})"})
        return FATAL_EXIT
    try:
        from rcompat.soak.workload import build_iteration

        iteration, names = build_iteration(torch, config)
    except Exception as exc:  # noqa: BLE001 - the user's file, or the suite's inputs: a fatal setup error
        emit({"fatal": f"cannot build the workload: {type(exc).__name__}: {exc}"[:2000]})
        return FATAL_EXIT
    emit({"facts": {"side": "python", "interpreter": sys.executable, "torch_version": str(torch.__version__),
                    "device": device, "threads": torch.get_num_threads(), "cases": names,
                    "device_name": torch.cuda.get_device_name(0) if device == "cuda" else None}})
    sampler = Sampler(torch, device)
    try:
        timing = run_loop(iteration, sampler, int(config["warmups"]), int(config["iterations"]),
                          bool(config.get("sample", True)), config.get("progress"))
    except Exception as exc:  # noqa: BLE001 - the workload raised: the samples so far stay
        emit({"fatal": f"the workload raised: {type(exc).__name__}: {exc}"[:2000]})
        return FATAL_EXIT
    finally:
        sampler.close()
    emit({"end": {"limits": limits(torch, device), "timing": timing}, "done": True})
    return 0


def run_loop(iteration: Callable[[], None], sampler: "Sampler", warmups: int, iterations: int,
             sample: bool, progress: str | None) -> dict[str, float]:
    """The loop itself; returns the seconds spent in the workload and in sampling (the cost)."""
    work_s = sample_s = 0.0
    total = warmups + iterations
    gc.collect()
    # Objects alive now (torch's modules, the inputs) move to the permanent generation, so each forced
    # collection scans only what the workload made since (~60 ms a collection with torch loaded, 1 ms after).
    gc.freeze()
    for i in range(total):
        t0 = time.perf_counter()
        iteration()
        t1 = time.perf_counter()
        if sample:
            before = sampler.sample()
            collected = gc.collect()
            after = sampler.sample()
            emit({"sample": i - warmups, "warmup": i < warmups, "before": before, "after": after,
                  "collected": collected})
            if i == warmups - 1:  # and what the warm-ups left (compiled kernels, caches)
                gc.freeze()
        if i >= warmups:  # the cost is measured where the verdict is
            work_s += t1 - t0
            sample_s += time.perf_counter() - t1
        if progress and (i % 10 == 9 or i == total - 1):
            _write_progress(Path(progress), f"iteration {i + 1}/{total}" + (" (warm-up)" if i < warmups else ""))
    return {"work_s": round(work_s, 6), "sample_s": round(sample_s, 6), "iterations": iterations}


class Sampler:
    """The cheap counters of one process: a pread of /proc/self/statm, a counter of the interpreter,
    three calls into the CUDA allocator and driver."""

    def __init__(self, torch, device: str) -> None:
        self.torch, self.cuda = torch, device == "cuda"
        self.statm = os.open("/proc/self/statm", os.O_RDONLY)

    def sample(self) -> dict[str, int]:
        out = {"rss": int(os.pread(self.statm, 128, 0).split()[1]) * PAGE, "py_blocks": sys.getallocatedblocks()}
        if self.cuda:
            cuda = self.torch.cuda
            free, total = cuda.mem_get_info()
            out.update(cuda_allocated=int(cuda.memory_allocated()), cuda_reserved=int(cuda.memory_reserved()),
                       cuda_driver_used=int(total - free))
        return out

    def close(self) -> None:
        os.close(self.statm)


def limits(torch, device: str) -> dict[str, Any]:
    """What the projection to exhaustion divides by: host memory still available (the cgroup's limit
    when it is lower) and, on CUDA, the device's free and total memory."""
    out: dict[str, Any] = {"host_available": host_available()}
    if device == "cuda":
        free, total = torch.cuda.mem_get_info()
        out.update(cuda_free=int(free), cuda_total=int(total))
    return out


def host_available() -> int | None:
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:  # cgroup v2: the container's limit, when there is one
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        if limit != "max":
            left = int(limit) - used
            available = left if available is None else min(available, left)
    except (OSError, ValueError):
        pass
    return available


def _write_progress(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
