"""Child side of one race trial: embedded R and Python torch allocating in one process, from threads.

Run as `python -m rcompat.race.worker '<json config>'` (the parent, rcompat.race.runner, does this
through rcompat.isolate so a crash or hang ends this process, not rcompat). Every allocation and
release is written as a JSON line the moment it happens (`begin` before, `op` after), flushed, so the
events that led to a crash survive it.

Modes:
  unsafe      worker threads call R directly, as code does that lets a Python thread pool (or a
              torch DataLoader callback) reach into R. R is not thread-safe.
  serialized  every R call is handed to the one thread that started R (the main thread) through a
              queue; Python allocations stay on the worker threads; on CUDA each thread's context is
              pinned to the one the main thread holds. This is the pattern rcompat recommends.

R keeps its C stack check (`r_stack_check`, default on), as in an R process hosting Python through
reticulate; rpy2 alone switches it off. With it on, R called from another thread's stack fails with
"C stack usage … is too close to the limit" instead of corrupting memory silently.
"""
from __future__ import annotations

import concurrent.futures
import gc
import itertools
import json
import os
import queue
import random
import sys
import threading
import time
from typing import Any, Callable

from rcompat.isolate import emit

SETUP_FAILED = 3
# Element counts (doubles) of one allocation: small ones land in the malloc heap, the largest in
# their own anonymous mmap regions, so both kinds of address-space neighbour are exercised.
SIZES = (1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18)
R_OPS = ("r_matrix", "numpy2r", "r2numpy")
MAX_ERRORS_PER_WORKER = 5


class Timeline:
    """Numbered, flushed event lines; also the test hooks that crash or hang after N events."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._ops = 0
        self.crash_after = int(config.get("crash_after_events") or 0)
        self.crash_lib = config.get("crash_lib")
        self.hang_after = int(config.get("hang_after_events") or 0)
        self.cuda = None
        self.pinned_context: str | None = None

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            emit(record)

    def record(self, phase: str, side: str, op: str, nbytes: int, device: str, fn: Callable[[], Any],
               worker: int, iteration: int, requested_by: str | None = None) -> tuple[bool, Any]:
        thread = threading.current_thread()
        base = {"phase": phase, "side": side, "op": op, "size_bytes": nbytes, "device": device,
                "thread": thread.name, "tid": threading.get_native_id(), "worker": worker,
                "iter": iteration, "seq": next(self._seq)}
        if requested_by:
            base["requested_by"] = requested_by
        before = self.cuda.current() if self.cuda else None
        t0 = time.monotonic_ns()
        self.write({"ev": "begin", **base, "t0_ns": t0})
        ok, value, error = True, None, None
        try:
            value = fn()
        except BaseException as exc:  # noqa: BLE001 - any failure of the call is the finding
            ok, error = False, exc
        t1 = time.monotonic_ns()
        rec = {"ev": "op", **base, "t0_ns": t0, "t1_ns": t1, "outcome": "ok" if ok else "error"}
        if error is not None:
            rec["error_type"] = type(error).__name__
            rec["error"] = " ".join(str(error).split())[:400]
        if self.cuda:
            after = self.cuda.current()
            rec["ctx_before"], rec["ctx_after"] = before, after
            rec["ctx_switch"] = before != after or (self.pinned_context is not None
                                                    and after is not None and after != self.pinned_context)
        self.write(rec)
        self._after_op()
        return ok, value

    def _after_op(self) -> None:
        with self._lock:
            self._ops += 1
            n = self._ops
        if self.crash_after and n == self.crash_after:
            self.write({"ev": "hook", "what": "crash", "after_events": n})
            _crash(self.crash_lib)
        if self.hang_after and n == self.hang_after:
            self.write({"ev": "hook", "what": "hang", "after_events": n})
            threading.Event().wait()  # never set: the parent's timeout must end this process


def _crash(lib_path: str | None) -> None:
    """Die by SIGSEGV: through the gcc-built fixture's NULL dereference when given, else by signal."""
    if lib_path:
        import ctypes

        ctypes.CDLL(lib_path).rcompat_race_null_deref()
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


class RSide:
    """Embedded R through rpy2, with R's console captured into the timeline."""

    def __init__(self, timeline: Timeline, stack_check: bool, front_end: Any = None) -> None:
        if front_end is not None:  # rcompat.r.front_end_env: R's environment, asked for already
            front_end.install()
        import rpy2.rinterface as ri
        from rpy2.rinterface_lib import callbacks

        def console(stream: str) -> Callable[[str], None]:
            return lambda text: timeline.write({"ev": "r_console", "stream": stream, "text": text,
                                                "thread": threading.current_thread().name,
                                                "t_ns": time.monotonic_ns()})

        callbacks.consolewrite_print = console("stdout")
        callbacks.consolewrite_warnerror = console("stderr")
        # 0 leaves R's own limit (computed from the main thread's stack) in place; None is rpy2's -1 (off).
        ri.initr(_c_stack_limit=0 if stack_check else None)
        import rpy2.robjects as ro
        from rpy2.robjects import numpy2ri

        self.ri = ri
        self.converter = ro.default_converter + numpy2ri.converter
        self.version = str(ri.baseenv["R.version.string"][0])
        # Looked up once on the main thread; rnorm lives in stats, found through the search path.
        self.rnorm = ri.globalenv.find("rnorm")
        self.matrix = ri.baseenv["matrix"]
        self.collect = ri.baseenv["gc"]

    def alloc(self, op: str, n: int, rng: random.Random) -> Any:
        if op == "r_matrix":
            return self.matrix(self.rnorm(self.ri.IntSexpVector([n])), nrow=self.ri.IntSexpVector([64]))
        from rpy2.robjects.conversion import get_conversion, localconverter

        with localconverter(self.converter):  # converters live in a ContextVar: set them in this thread
            if op == "numpy2r":
                import numpy as np

                return get_conversion().py2rpy(np.random.default_rng(rng.randrange(1 << 30)).random(n))
            return get_conversion().rpy2py(self.rnorm(self.ri.IntSexpVector([n])))

    def gc(self) -> Any:
        return self.collect()


class MainThreadR:
    """The serialized pattern: R calls from any thread run on the thread that started R, one at a time."""

    def __init__(self) -> None:
        # a job, or None: a worker has ended
        self._jobs: "queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future] | None]" = queue.Queue()

    def call(self, fn: Callable[[], Any]) -> Any:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return future.result()

    def worker_finished(self) -> None:
        """Said by each worker as it ends, so serve() stops at once rather than at its next poll."""
        self._jobs.put(None)

    def serve(self, workers: list[threading.Thread]) -> None:
        running = len(workers)
        while (running and any(t.is_alive() for t in workers)) or not self._jobs.empty():
            try:
                job = self._jobs.get(timeout=0.02)
            except queue.Empty:
                continue
            if job is None:
                running -= 1
                continue
            fn, future = job
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed back to the requesting thread
                future.set_exception(exc)


def run_worker(index: int, config: dict[str, Any], timeline: Timeline, r: RSide, torch_mod: Any,
               device: str, executor: MainThreadR | None) -> None:
    name = threading.current_thread().name
    if timeline.cuda and timeline.pinned_context and executor is not None:
        torch_mod.cuda.set_device(torch_mod.device(device))
        timeline.cuda.pin(timeline.pinned_context)
    rng = random.Random(f"{config['seed']}:{index}")
    jitter = float(config.get("jitter_s", 0.0005))
    errors = 0
    for it in range(int(config["iterations"])):
        n = rng.choice(SIZES)
        r_op = rng.choice(R_OPS)
        steps = ["R", "Python"]
        rng.shuffle(steps)
        held: dict[str, Any] = {}
        for side in steps + ["release-" + s for s in steps]:
            if side == "R":
                def job(op=r_op, n=n):
                    return timeline.record("alloc", "R", op, n * 8, "cpu", lambda: r.alloc(op, n, rng),
                                           index, it, requested_by=name if executor else None)
            elif side == "Python":
                def job(n=n):
                    return timeline.record("alloc", "Python", "torch.randn", n * 8, device,
                                           lambda: torch_mod.randn(n, dtype=torch_mod.float64, device=device),
                                           index, it)
            elif side == "release-R":
                def job(n=n):
                    collect = it % 4 == 3

                    def release():  # dropping the last reference calls into R (R_ReleaseObject)
                        held.pop("R", None)
                        return r.gc() if collect else None
                    return timeline.record("release", "R", "gc" if collect else "drop", n * 8, "cpu",
                                           release, index, it, requested_by=name if executor else None)
            else:
                def job(n=n):
                    return timeline.record("release", "Python", "del", n * 8, device,
                                           lambda: _discard(held, "Python"), index, it)
            is_r = side in ("R", "release-R")
            ok, value = executor.call(job) if (is_r and executor) else job()
            if ok and side in ("R", "Python"):
                held[side] = value
            if not ok:
                errors += 1
            if jitter:
                time.sleep(rng.random() * jitter)
        if errors >= MAX_ERRORS_PER_WORKER:
            timeline.write({"ev": "worker_gave_up", "worker": index, "thread": name, "errors": errors})
            return


def _discard(held: dict[str, Any], key: str) -> None:
    held.pop(key, None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config = json.loads(argv[0])
    timeline = Timeline(config)
    mode = config["mode"]
    timeline.write({"ev": "start", "pid": os.getpid(), "mode": mode, "seed": config["seed"],
                    "workers": config["workers"], "iterations": config["iterations"],
                    "run_id": config.get("run_id"), "t_ns": time.monotonic_ns()})
    overlapped = bool(config.get("overlap_setup"))
    if overlapped:  # no cyclic collection while torch and rpy2 import (~7% of torch's import CPU);
        gc.disable()  # enabled again before the trial, whose allocations meet Python's collector as usual
    torch_import = TorchImport(overlapped)  # first: overlapped, torch's import is this child's critical path
    front_end = _front_end_environment() if overlapped else None
    api_failure = _api_mode_watch() if config.get("r_facts") else None
    try:
        r = RSide(timeline, bool(config.get("r_stack_check", True)), front_end)
        if overlapped and config.get("r_facts"):  # R's facts while torch still imports on its thread
            timeline.write(_r_facts(config["r_facts"], api_failure))
        torch = torch_import.result()
    except Exception as exc:  # noqa: BLE001 - no R or no torch: the trial cannot run at all
        timeline.write({"ev": "setup_error", "reason": f"{type(exc).__name__}: {exc}"})
        return SETUP_FAILED
    finally:
        if api_failure is not None:
            api_failure.close()
    if overlapped:  # the modules' objects are frozen (kept out of every later collection), not swept
        gc.freeze()  # once in the trial: that first full pass over torch's objects took ~30 ms
        gc.enable()
    device = resolve_device(config.get("device", "auto"), torch)
    if device is None:
        timeline.write({"ev": "setup_error", "reason": "CUDA was asked for but torch.cuda.is_available() "
                                                        f"is False (torch {torch.__version__})"})
        return SETUP_FAILED
    if device.startswith("cuda"):
        from rcompat.race import cudactx

        torch.zeros(1, device=device)  # creates the primary context on this (the R) thread
        timeline.cuda = cudactx.load()
        if timeline.cuda and mode == "serialized":
            timeline.pinned_context = timeline.cuda.current()
    timeline.write({"ev": "ready", "device": device, "r_version": r.version, "torch": torch.__version__,
                    "context": timeline.pinned_context or (timeline.cuda.current() if timeline.cuda else None),
                    "t_ns": time.monotonic_ns()})
    executor = MainThreadR() if mode == "serialized" else None

    def thread_main(i: int) -> None:
        try:
            run_worker(i, config, timeline, r, torch, device, executor)
        except BaseException as exc:  # noqa: BLE001 - reported, the other workers go on
            timeline.write({"ev": "thread_error", "worker": i, "error_type": type(exc).__name__,
                            "error": " ".join(str(exc).split())[:400]})
        finally:
            if executor:
                executor.worker_finished()

    threads = [threading.Thread(target=thread_main, args=(i,), name=f"worker-{i}", daemon=True)
               for i in range(int(config["workers"]))]
    for t in threads:
        t.start()
    if executor:
        executor.serve(threads)
    for t in threads:
        t.join()
    timeline.write({"ev": "end", "t_ns": time.monotonic_ns()})
    if config.get("torch_facts"):  # after the trial, so CUDA's start-up cannot change it
        from rcompat.cuda.torch_child import torch_facts

        try:
            timeline.write({"torch_facts": torch_facts(torch, lambda step: None)})
        except Exception as exc:  # noqa: BLE001 - the doctor then asks its own torch child
            timeline.write({"torch_facts_error": f"{type(exc).__name__}: {exc}"})
    if config.get("r_facts") and not overlapped:  # after the trial too, on R's own (the main) thread
        timeline.write(_r_facts(config["r_facts"], api_failure))
    return 0


class TorchImport:
    """`import torch`, on the main thread after R's start (R first, then torch, as in an R session that
    imports torch through reticulate), or `overlapped`: on a thread started before R's, so torch's
    Python-level import runs while R's start-up (C code: cffi releases the GIL, and rpy2's R
    subprocess, started early by rcompat.r.front_end_env) runs beside it. The doctor's trial asks for
    the overlap: its child is the doctor's critical path, and the overlap takes ~0.25 s off its
    1.45 s set-up (measured on 2 CPUs). R itself always starts on the main thread, whose stack R's C
    stack check measures."""

    def __init__(self, overlapped: bool) -> None:
        self._module: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="torch-import", daemon=True) if overlapped else None
        if self._thread is not None:
            self._thread.start()

    def _run(self) -> None:
        try:
            import torch

            self._module = torch
        except BaseException as exc:  # noqa: BLE001 - raised again on the main thread by result()
            self._error = exc

    def result(self) -> Any:
        if self._thread is None:
            import torch

            return torch
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._module


def _front_end_environment():
    from rcompat.r.front_end_env import FrontEndEnvironment

    return FrontEndEnvironment()


def _api_mode_watch():
    from rcompat.r.worker import ApiModeFailure

    return ApiModeFailure()


def _r_facts(script: str, api_failure) -> dict[str, Any]:
    """What the r area's rpy2 worker would report (rcompat.r.worker): rpy2's mode and r_facts.R's core
    facts, from the R this trial embedded, so the doctor starts rpy2 and R once for both areas."""
    from rcompat.r.worker import core_facts_json, rpy2_mode

    try:
        import rpy2.robjects as robjects

        return {"rpy2_mode": rpy2_mode(api_failure), "r_facts": json.loads(core_facts_json(robjects, script))}
    except Exception as exc:  # noqa: BLE001 - the doctor then starts its own rpy2 worker
        return {"r_facts_error": f"{type(exc).__name__}: {exc}"}


def resolve_device(requested: str, torch_mod: Any) -> str | None:
    if requested == "cpu":
        return "cpu"
    if torch_mod.cuda.is_available():
        return "cuda:0"
    return None if requested == "cuda" else "cpu"


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: R finalizers running after an unsafe trial would crash at exit and
    # blame the workload for a teardown fault (a separate, known problem: rstudio/reticulate 1663).
    os._exit(code)
