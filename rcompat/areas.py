"""`rcompat doctor`: run every area's checks, each behind its own error boundary.

An area is a module that exposes `AREA` (its name), `TITLE` and `CHECKS`, a list of functions
`check(ctx) -> Iterable[Finding]`, and may expose `START`, functions `fact(ctx)` computing (through
ctx.memo) the slow facts its checks will ask for, started before any area runs (start_early).
Modules are named here as strings and imported only when their area runs, so `--only elf` never
imports rpy2 or torch. A check that raises becomes an `error` finding and the other checks still run.

Areas run concurrently in threads (their expensive parts are child processes: the R facts and
verification children, the torch child, the race trial); facts several areas need are computed once
through the run's Context, by whichever thread asks first, while the others wait for it.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable, Iterable

from rcompat import cache
from rcompat.errors import UsageError
from rcompat.isolate import allow_children, children_started, children_stopped_on_interrupt, wait_for_next_child
from rcompat.model import Finding, Report, Status, share_duration
from rcompat.progress import Progress, disabled
from rcompat.termination import despite_interrupts, signals_held

# Order is the order of the report: the stack from the bottom (the system, R, Python) up to the GPU and the
# combinations that break in one process.
AREA_MODULES: dict[str, str] = {
    "system": "rcompat.system",
    "r": "rcompat.r.checks",
    "python": "rcompat.pyenv",
    "cuda": "rcompat.cuda.checks",
    "elf": "rcompat.elf.checks",
    "race": "rcompat.race.checks",
}

# Areas that take seconds to minutes (a real torch.compile): run only with `rcompat doctor --deep`, or
# when named in --only.
DEEP_AREAS: dict[str, str] = {
    "compile": "rcompat.compile.checks",
}

DEFAULT_TIMEOUT_S = 60.0
# Areas start in this order (the report keeps AREA_MODULES' order): the race trial and the torch and R
# children take longest, so with fewer workers than areas they must not wait behind the quick ones.
# cuda before r: without the race area, the torch child (1.4 s of CPU) is the run's longest child and
# the first START fact's (start_early); with it, cuda's START only starts NVML's child and waits.
START_ORDER = ("compile", "race", "cuda", "r", "elf", "python", "system")


class Context:
    """Shared state of one doctor run: facts computed once and reused by several checks, from
    whichever area thread asks first (the others wait for that one answer)."""

    def __init__(self, timeout: float | None = None, options: dict[str, Any] | None = None) -> None:
        self.timeout = timeout or DEFAULT_TIMEOUT_S
        self.options = dict(options or {})
        self.areas: tuple[str, ...] = ()  # the areas of this run (run_doctor): who may share a fact
        self.facts: dict[str, Any] = {}
        self._memo: dict[str, _Memo] = {}
        self._lock = threading.Condition()  # notified when a thread claims a fact (wait_for_claim)

    def put(self, key: str, value: Any) -> None:
        """Give the run a fact computed elsewhere (facts R passes in, a test's fixture)."""
        entry = _Memo(threading.get_ident())
        entry.ok, entry.value = True, value
        entry.done.set()
        with self._lock:
            self._memo[key] = entry

    def memo(self, key: str, producer: Callable[[], Any]) -> Any:
        """Compute `producer()` once per run; an exception is cached too, so each check sees it."""
        with self._lock:
            entry = self._memo.get(key)
            owner = entry is None
            if owner:
                entry = self._memo[key] = _Memo(threading.get_ident())
                self._lock.notify_all()
        if owner:
            try:
                entry.value = producer()
                entry.ok = True
            except Exception as exc:  # noqa: BLE001 - re-raised to every caller
                entry.value = exc
            finally:
                entry.done.set()
        elif entry.owner == threading.get_ident() and not entry.done.is_set():
            raise RuntimeError(f"fact {key!r} asked for while it is being computed (a circular probe)")
        entry.done.wait()
        if not entry.ok:
            raise entry.value if isinstance(entry.value, Exception) else RuntimeError(
                f"fact {key!r} was not computed: its probe was interrupted")
        return entry.value

    def wait_for_claim(self, thread: threading.Thread, timeout: float) -> None:
        """Until `thread` computes a fact through memo (or has ended), at most `timeout` seconds: a
        START thread then owns its fact, whichever area thread asks for it next."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while thread.is_alive() and not any(e.owner == thread.ident for e in self._memo.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._lock.wait(min(left, 0.01))  # a thread ending does not notify: look again soon


class _Memo:
    def __init__(self, owner: int) -> None:
        self.owner = owner
        self.done = threading.Event()
        self.ok = False
        self.value: Any = None


def resolve_areas(areas: Iterable[str] | None, deep: bool = False) -> list[str]:
    if not areas:
        return list(AREA_MODULES) + (list(DEEP_AREAS) if deep else [])
    chosen = []
    for a in areas:
        for name in str(a).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in AREA_MODULES and name not in DEEP_AREAS:
                raise UsageError(f"unknown area '{name}'; choose from: {', '.join([*AREA_MODULES, *DEEP_AREAS])}")
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise UsageError("no area given")
    return chosen


def default_jobs(areas: int) -> int:
    """Areas run at once. An area thread mostly waits for a child process, so the bound is the one
    concurrent.futures uses for I/O-bound threads, min(32, CPUs + 4): on 2 CPUs all five areas start
    together (measured cold: 4.5 s, against 5.3-6.7 s with one area per CPU; warm: the same)."""
    return max(1, min(areas, 32, (os.cpu_count() or 1) + 4))


def run_doctor(areas: Iterable[str] | None = None, timeout: float | None = None,
               options: dict[str, Any] | None = None, progress: Progress | None = None,
               jobs: int | None = None, use_cache: bool = True, deep: bool = False) -> Report:
    """Run the chosen areas, up to `jobs` at once (1: one after the other), each area's checks in
    order; the findings come out in AREA_MODULES order whatever finishes first. `use_cache=False`
    bypasses every cache (rcompat.cache) for the run. `deep` adds the slow areas (DEEP_AREAS). Stopped
    (Ctrl-C, SIGTERM), it raises DoctorInterrupted holding the report of the areas that had finished."""
    chosen = resolve_areas(areas, deep)
    ctx = Context(timeout=timeout, options=options)
    ctx.areas = tuple(chosen)
    progress = progress or disabled()
    jobs = default_jobs(len(chosen)) if jobs is None else max(1, int(jobs))
    timings: dict[str, float] = {}
    results: dict[str, list[Finding]] = {}
    stopping = threading.Event()

    def run_one(area: str) -> None:
        start = time.monotonic()
        findings = run_area(area, ctx, progress)
        if not stopping.is_set():  # an area ending after Ctrl-C reports killed children: not an answer
            results[area] = findings
            timings[area] = round(time.monotonic() - start, 3)

    order = sorted(chosen, key=lambda a: START_ORDER.index(a) if a in START_ORDER else len(START_ORDER))
    try:
        _run_areas(chosen, order, jobs, run_one, stopping, use_cache, ctx)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: the report of what finished, then the interrupt
        stopping.set()
        raise DoctorInterrupted(_report(chosen, ctx, results, timings, exc), exc) from None
    return _report(chosen, ctx, results, timings)


class DoctorInterrupted(KeyboardInterrupt):
    """The doctor was stopped; `report` holds the areas that finished, the others as INTERRUPTED."""

    def __init__(self, report: Report, cause: KeyboardInterrupt) -> None:
        super().__init__(str(cause) or "interrupted")
        self.report, self.cause = report, cause
        self.signum = getattr(cause, "signum", signal.SIGINT)


def start_early(order: list[str], ctx: Context, started: list[threading.Thread]) -> None:
    """Each area's START facts, in `order` (the slowest first), each in a thread of its own that
    computes it through ctx.memo, before any area thread starts: the run's long children (the race
    trial, reticulate's discovery) start at once, one after the other, rather than after the area
    threads' imports and the elf area's work in this process have had their turn. The checks that
    ask for these facts wait for the same memo, so every fact is still computed once.

    The first of them (the race trial when it is in the run; never one marked `in_process`, work in
    this process) is the run's critical path when it starts a child (not when its trial comes from
    the cache); every later one then runs at BACKGROUND_NICE,
    its children too (Linux keeps a nice value per thread, and threads and processes inherit it from
    the thread that starts them), so where CPUs are fewer than the run's children (2 CPUs: the trial,
    discovery, this process's ELF reading) the trial is not the one kept waiting. Where CPUs are free
    the nice value changes nothing. Each thread is appended to `started` as it starts, so a caller
    interrupted meanwhile still knows every thread to wait for."""
    nice = 0
    for area in order:
        try:
            facts = getattr(importlib.import_module(AREA_MODULES.get(area) or DEEP_AREAS[area]), "START", ())
        except Exception:  # noqa: BLE001 - the area's own thread reports <AREA>-LOAD
            continue
        for produce in facts:
            first = not started and not getattr(produce, "in_process", False)
            thread = threading.Thread(target=_quietly, args=(produce, ctx, nice), daemon=True,
                                      name=f"rcompat-start-{area}")
            count = children_started()
            with signals_held():  # an interrupt in start()'s own wait must still find it in `started`
                thread.start()
                started.append(thread)
            if first:  # its child starts first (its imports take a few ms); the others yield to it,
                # if it has one (a trial read from the cache has none)
                nice = BACKGROUND_NICE if wait_for_next_child(count, thread, START_WAIT_S) else 0
            else:  # the others own their facts before any area thread can ask for them
                ctx.wait_for_claim(thread, START_WAIT_S)


START_WAIT_S = 2.0  # a bound only: the trial's child starts some 40 ms after its thread, a claim at once


# CFS weighs a nice-10 task (or autogroup: rcompat.isolate gives each child's group this value too) at
# about a tenth of a nice-0 one (kernel/sched/core.c, sched_prio_to_weight: 110 against 1024). Measured
# on 2 CPUs with the children's groups niced: the cold doctor at 0.90-0.91x of collect_env + sessionInfo
# with 10, 0.94x with 5 (best of 6, two rounds each, alternated).
BACKGROUND_NICE = 10


def _quietly(produce: Callable[[Context], Any], ctx: Context, nice: int) -> None:
    if nice and sys.platform.startswith("linux"):  # elsewhere a thread id is no process id
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # this thread only
        except (OSError, AttributeError):  # not Linux, or not allowed: the same work at the same priority
            pass
    try:
        produce(ctx)
    except Exception:  # noqa: BLE001 - kept in the memo: the check that asks reports it
        pass


def _run_areas(chosen: list[str], order: list[str], jobs: int, run_one: Callable[[str], None],
               stopping: threading.Event, use_cache: bool, ctx: Context) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with cache.bypassed(not use_cache):
        if jobs == 1:
            for area in chosen:
                run_one(area)
        else:
            early: list[threading.Thread] = []
            try:
                # the pool's threads start in submit(), which records them only once started: held
                # signals, so an interrupt cannot leave one out of what shutdown waits for
                with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="rcompat-area") as pool:
                    futures = []
                    try:
                        with children_stopped_on_interrupt():  # Ctrl-C: the area threads' children too
                            start_early(order, ctx, early)
                            with signals_held():
                                futures += [pool.submit(run_one, area) for area in order]
                            for future in futures:
                                future.result()
                    except BaseException:
                        stopping.set()
                        for future in futures:
                            future.cancel()  # areas not started yet never start
                        raise
            finally:  # a START thread removes its child's directory once the child is gone (killed on an
                # interrupt): the process must not exit first, which left rcompat-child-* behind
                for thread in early:
                    despite_interrupts(thread.join)
                allow_children()


def _report(chosen: list[str], ctx: Context, results: dict[str, list[Finding]], timings: dict[str, float],
            interrupt: KeyboardInterrupt | None = None) -> Report:
    report = Report(command="doctor")
    for area in chosen:
        if area in results:
            report.add(results[area])
        else:
            report.add(Finding(id=f"{area.upper()}-INTERRUPTED", area=area, status=Status.ERROR,
                               title=f"{area} not finished: {interrupt or 'interrupted'}",
                               message="rcompat was stopped before this area finished; its children were killed.",
                               remedy="Rerun the doctor (with --only to run just this area)."))
    known = [k for k in [*AREA_MODULES, *DEEP_AREAS] if k in ctx.facts]
    report.facts = {k: ctx.facts[k] for k in known + sorted(set(ctx.facts) - set(known))}
    report.facts["timings_s"] = {area: timings[area] for area in chosen if area in timings}
    return report


def run_area(area: str, ctx: Context, progress: Progress | None = None) -> list[Finding]:
    progress = progress or disabled()
    try:
        module = importlib.import_module(AREA_MODULES.get(area) or DEEP_AREAS[area])
    except Exception as exc:  # noqa: BLE001 - a broken engine must not take the others down
        return [_boundary_error(area, f"{area.upper()}-LOAD", f"cannot load the {area} checks", exc)]
    findings: list[Finding] = []
    for check in getattr(module, "CHECKS", []):
        with progress.step(f"{area} {check.__name__.removeprefix('check_')}"):
            findings.extend(run_check(area, check, ctx))
    return findings


def run_check(area: str, check: Callable[[Context], Iterable[Finding]], ctx: Context) -> list[Finding]:
    """The findings of one check, each with its share of the check's time (JUnit's `time`)."""
    start = time.monotonic()
    try:
        findings = list(check(ctx) or [])
    except Exception as exc:  # noqa: BLE001 - the error boundary of one check
        check_id = getattr(check, "check_id", None) or f"{area.upper()}-{check.__name__.upper()}"
        findings = [_boundary_error(area, check_id, f"check {check.__name__} raised", exc)]
    share_duration(findings, time.monotonic() - start)
    return findings


def _boundary_error(area: str, check_id: str, title: str, exc: BaseException) -> Finding:
    return Finding(
        id=check_id, area=area, status=Status.ERROR, title=title,
        message=f"{type(exc).__name__}: {exc}",
        remedy="This is a bug in rcompat or an environment it does not understand; rerun with --debug "
               "and report the traceback.",
        evidence={"exception": type(exc).__name__,
                  "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]})
