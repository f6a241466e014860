"""Child side of `rcompat soak` (Python): `python -m rcompat.soak.child CONFIG_JSON`.

Runs the workload `warmups + iterations` times in this process (its own, since torch can crash or
hang), and after every iteration samples memory around a forced collection (gc.collect(), as
CPython's -R refleak runs do between repetitions). Each sample is one JSON line, written 8 at a time
to the config's "samples" file (stdout without one), so the parent keeps the samples taken before a
crash but the last few; the other records go to stdout:

    {"facts": {...}}                                   who ran what, where
    {"sample": i, "warmup": bool, "before": {...}, "after": {...}, "collected": n}
                                      ("before" and py_blocks on every k-th iteration: FULL_SAMPLES)
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
# A full sample (before the collection too, and sys.getallocatedblocks(), which walks every pool of
# every arena: ~25-80 us with torch loaded) on every k-th iteration only, k = iterations // 24, so a
# long run stays within 5% of the suite's ~1.3 ms CPU per iteration and every series keeps at least
# 24 points; RSS and the CUDA counters after the collection are sampled every iteration.
FULL_SAMPLES = 24
# Samples are written 8 at a time, and before each full sample (so that their objects never count as
# Python's blocks): a crash loses at most the last 7 (the crash itself is the finding).
WRITE_EVERY = 8


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
        out = os.open(config["samples"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if config.get("samples") else 1
        timing = run_loop(iteration, sampler, int(config["warmups"]), int(config["iterations"]),
                          bool(config.get("sample", True)), config.get("progress"), out)
    except Exception as exc:  # noqa: BLE001 - the workload raised: the samples so far stay
        emit({"fatal": f"the workload raised: {type(exc).__name__}: {exc}"[:2000]})
        return FATAL_EXIT
    finally:
        sampler.close()
    emit({"end": {"limits": limits(torch, device), "timing": timing}, "done": True})
    return 0


def run_loop(iteration: Callable[[], None], sampler: "Sampler", warmups: int, iterations: int,
             sample: bool, progress: str | None, out: int = 1) -> dict[str, float]:
    """The loop itself; returns the CPU seconds spent in the workload and in sampling (the cost: CPU
    time, since on a busy machine a wall-clock split charges whichever part was preempted)."""
    totals = [0.0, 0.0]  # workload, sampling
    every = max(1, iterations // FULL_SAMPLES)
    pending: list[tuple] = []
    gc.collect()
    # Objects alive now (torch's modules, the inputs) move to the permanent generation, so each forced
    # collection scans only what the workload made since (~60 ms a collection with torch loaded, 1 ms after).
    gc.freeze()
    try:
        _loop(iteration, sampler, warmups, iterations, sample, progress, out, every, pending, totals)
    finally:  # the workload raised: what it sampled before still counts (a crash loses the last few)
        _flush(out, pending)
    return {"work_s": round(totals[0], 6), "sample_s": round(totals[1], 6), "iterations": iterations,
            "full_sample_every": every, "clock": "process CPU time"}


def _loop(iteration, sampler: "Sampler", warmups: int, iterations: int, sample: bool, progress: str | None,
          out: int, every: int, pending: list, totals: list[float]) -> None:
    total = warmups + iterations
    for i in range(total):
        t0 = time.process_time()
        iteration()
        t1 = time.process_time()
        if sample:
            measured = i - warmups
            full = measured % every == 0  # every iteration of a short run; every k-th of a long one
            if full and pending:  # none of the pending samples' objects may count as Python's blocks
                _flush(out, pending)
            before = sampler.sample(full=False) if full else None
            collected = gc.collect()
            after = sampler.sample(blocks=full)
            pending.append((measured, i < warmups, before, after, collected))
            if len(pending) >= WRITE_EVERY or i == total - 1:
                _flush(out, pending)
            if i == warmups - 1:  # and what the warm-ups left (compiled kernels, caches)
                gc.freeze()
        if i >= warmups:  # the cost is measured where the verdict is
            totals[0] += t1 - t0
            totals[1] += time.process_time() - t1
        if progress and (i % 10 == 9 or i == total - 1):
            _write_progress(Path(progress), f"iteration {i + 1}/{total}" + (" (warm-up)" if i < warmups else ""))


def _flush(out: int, pending: list) -> None:
    """Write the pending samples: to a file, since a write to a pipe also wakes its reader, and in
    batches, since after the workload has thrashed the caches formatting and writing one line take ~25 us."""
    if pending:
        os.write(out, b"".join(_line(*p) for p in pending))
        pending.clear()


def _line(measured: int, warmup: bool, before: dict[str, int] | None, after: dict[str, int], collected: int) -> bytes:
    """The sample's JSON line (integers only), formatted directly: json.dumps costs more than the rest."""
    def obj(d: dict[str, int]) -> str:
        return "{" + ",".join('"%s":%d' % kv for kv in d.items()) + "}"

    return ('{"sample":%d,"warmup":%s,%s"after":%s,"collected":%d}\n' % (
        measured, "true" if warmup else "false", f'"before":{obj(before)},' if before is not None else "",
        obj(after), collected)).encode()


class Sampler:
    """The cheap counters of one process: a pread of /proc/self/statm, a counter of the interpreter,
    three calls into the CUDA allocator and driver; before the collection only RSS and the allocator's
    live bytes, the two a collection can lower."""

    def __init__(self, torch, device: str) -> None:
        self.torch, self.cuda = torch, device == "cuda"
        self.statm = os.open("/proc/self/statm", os.O_RDONLY)

    def sample(self, full: bool = True, blocks: bool = True) -> dict[str, int]:
        """Every metric (after the collection), or only those a collection can lower (before it)."""
        out = {"rss": int(os.pread(self.statm, 128, 0).split()[1]) * PAGE}
        if full and blocks:
            out["py_blocks"] = sys.getallocatedblocks()
        if self.cuda:
            cuda = self.torch.cuda
            out["cuda_allocated"] = int(cuda.memory_allocated())
            if full:
                free, total = cuda.mem_get_info()
                out.update(cuda_reserved=int(cuda.memory_reserved()), cuda_driver_used=int(total - free))
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
