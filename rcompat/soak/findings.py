"""A soak run's samples judged (rcompat.soak.classify) and said as findings, one per question:

SOAK-HOST (the process's RSS, with Python's memory blocks or R's heap beside it), SOAK-R-HEAP (R
objects still referenced after gc()), SOAK-CUDA (allocator and driver, combined as PyTorch's own leak
check does), SOAK-LAZY-GC (memory only a forced collection returns), SOAK-RUN (the child itself).
The report's facts hold the verdicts and the series as columns (`docs/soak.md`: stable for the R
interface and other JSON readers).
"""
from __future__ import annotations

from typing import Any

from rcompat.model import Finding, Report, Status
from rcompat.soak.classify import (LEAK, PLATEAU, SETTLING, TOO_SHORT, SeriesVerdict, combine_cuda,
                                   iterations_to_exhaustion, judge, metric_rows)
from rcompat.soak.runner import SoakResult

AREA = "soak"
TABLE_SOURCE = "rcompat/data/soak_rules.toml"
REFLEAK = "python/cpython Lib/test/libregrtest/refleak.py (warm-ups, then deltas that must settle)"
CUDA_CHECK = "pytorch/pytorch torch/testing/_internal/common_utils.py CudaMemoryLeakCheck"
# Metrics measured before the collection as well (the others are only meaningful after it).
WITH_BEFORE = ("rss", "cuda_allocated")


def judge_all(result: SoakResult) -> dict[str, SeriesVerdict]:
    known = metric_rows()
    return {m: judge(m, result.column(m), result.returned(m) if m in WITH_BEFORE else None)
            for m in result.metrics() if m in known}


def to_report(result: SoakResult) -> Report:
    verdicts = judge_all(result)
    report = Report(command="soak")
    report.add(_run_finding(result))
    if "rss" in verdicts:
        report.add(_host_finding(result, verdicts))
    if "r_heap" in verdicts:
        report.add(_r_heap_finding(verdicts["r_heap"]))
    if result.options.device == "cuda":
        report.add(_cuda_finding(result, verdicts))
    report.add(_lazy_finding(result, verdicts))
    report.facts["soak"] = facts(result, verdicts)
    return report


def _run_finding(result: SoakResult) -> Finding:
    o, child = result.options, result.child
    what = f"{len(result.samples)} measured iterations after {result.warmups} warm-ups ({o.side} side, {o.device})"
    timing = result.end.get("timing", {})
    cost = _cost(timing)
    evidence = {"iterations": len(result.samples), "warmups": result.warmups, "timing": timing,
                "sampling_cost": cost}
    if result.failure:
        return Finding("SOAK-RUN", AREA, Status.ERROR, "the workload raised an error",
                       message=f"{result.failure} (after {what})", evidence=evidence,
                       remedy="Fix the workload (--cases) so that every iteration runs.")
    if child is not None and not child.ok:
        from rcompat.isolate import child_failure

        return child_failure(child, id="SOAK-RUN", area=AREA, what="the soak child",
                             remedy="The workload crashed or hung: run it alone to see why; the samples "
                                    "taken before are judged below.")
    return Finding("SOAK-RUN", AREA, Status.OK, f"ran {what}",
                   message=f"sampling took {cost:.1%} of the workload's own CPU time" if cost is not None else "",
                   evidence=evidence)


def _cost(timing: dict[str, Any]) -> float | None:
    work, sample = timing.get("work_s"), timing.get("sample_s")
    return sample / work if work and sample is not None else None


def _mib(n: float) -> str:
    return f"{n / 1048576:.2f} MiB"


def _amount(v: SeriesVerdict, n: float) -> str:
    return _mib(n) if v.unit == "bytes" else f"{n:.0f} {v.unit}"


def _host_finding(result: SoakResult, verdicts: dict[str, SeriesVerdict]) -> Finding:
    v = verdicts["rss"]
    beside = verdicts.get("py_blocks")
    evidence = {"rss": v.to_dict(), **({"py_blocks": beside.to_dict()} if beside else {})}
    rule = f"{REFLEAK}; {TABLE_SOURCE}"
    if v.verdict == LEAK:
        headroom = result.end.get("limits", {}).get("host_available")
        left = iterations_to_exhaustion(v.tail_slope, headroom)
        evidence["projected_iterations"] = left
        objects = (f"; Python objects grow too ({beside.tail_slope:.0f} blocks per iteration): a container "
                   "keeps them" if beside is not None and beside.verdict == LEAK else "")
        return Finding("SOAK-HOST", AREA, Status.FAIL, f"leak: host memory grows {_mib(v.tail_slope)} per iteration",
                       message=f"RSS after a forced collection grew from {_mib(v.first)} to {_mib(v.last)} over "
                               f"{v.measured} iterations, steadily (t = {v.tail_t:.0f}, noise {_mib(v.noise)})"
                               f"{objects}." + (f" At this rate the {_mib(headroom)} still available last "
                                                f"{left} more iterations." if left is not None else ""),
                       remedy="Find what the workload keeps between iterations (a list of tensors or outputs, "
                              "a history with grad attached): tracemalloc or torch's memory snapshot name it.",
                       evidence=evidence, source=rule)
    return _growth_finding("SOAK-HOST", "host memory (RSS)", v, evidence, rule)


def _r_heap_finding(v: SeriesVerdict) -> Finding:
    evidence = {"r_heap": v.to_dict()}
    rule = f"{REFLEAK}; R documentation ?Memory; {TABLE_SOURCE}"
    if v.verdict == LEAK:
        return Finding("SOAK-R-HEAP", AREA, Status.FAIL, f"leak: R's heap grows {_mib(v.tail_slope)} per iteration",
                       message=f"R objects still referenced after gc() grew from {_mib(v.first)} to {_mib(v.last)}: "
                               "the workload keeps them (a list or environment that grows).",
                       remedy="Drop what each iteration stores in a global list or environment; gc() cannot "
                              "free what is still referenced.", evidence=evidence, source=rule)
    return _growth_finding("SOAK-R-HEAP", "R's heap after gc()", v, evidence, rule)


def _growth_finding(fid: str, what: str, v: SeriesVerdict, evidence: dict, rule: str) -> Finding:
    """The verdicts other than a leak, said the same way for every series."""
    if v.verdict == TOO_SHORT:
        return Finding(fid, AREA, Status.SKIP, f"{what}: too few iterations to judge",
                       message=f"{v.measured} measured iterations", evidence=evidence, source=rule,
                       remedy="Run at least 12 iterations after the warm-ups (--iterations).")
    if v.verdict == SETTLING:
        return Finding(fid, AREA, Status.WARN, f"{what} still grows, ever more slowly",
                       message=f"{what} grew {_amount(v, v.tail_growth)} in the second half (t = {v.tail_t:.1f}), "
                               f"slower than over the whole run ({_amount(v, v.slope)} per iteration): a cache "
                               "still filling, or a leak that only shows later.",
                       remedy="Run more iterations (--iterations) to see whether it levels off.",
                       evidence=evidence, source=rule)
    if v.verdict == PLATEAU:
        return Finding(fid, AREA, Status.OK, f"{what}: cache growth to a plateau",
                       message=f"grew {_amount(v, v.head_growth)} in the first half, then levelled off at "
                               f"{_amount(v, v.last)} (second half: {_amount(v, v.tail_growth)}, t = {v.tail_t:.1f}).",
                       evidence=evidence, source=rule)
    return Finding(fid, AREA, Status.OK, f"{what}: no growth",
                   message=f"{_amount(v, v.last)} at the end; second half {_amount(v, v.tail_growth)} "
                           f"(t = {v.tail_t:.1f}, noise {_amount(v, v.noise)}).", evidence=evidence, source=rule)


def _cuda_finding(result: SoakResult, verdicts: dict[str, SeriesVerdict]) -> Finding:
    allocated = verdicts.get("cuda_allocated")
    if allocated is None:
        return Finding("SOAK-CUDA", AREA, Status.SKIP, "no CUDA memory samples",
                       message="the workload ran without CUDA memory statistics (R torch without "
                               "cuda_memory_stats(), or no sample was taken)", source=CUDA_CHECK)
    reserved, driver = verdicts.get("cuda_reserved"), verdicts.get("cuda_driver_used")
    evidence = {k: v.to_dict() for k, v in (("cuda_allocated", allocated), ("cuda_reserved", reserved),
                                             ("cuda_driver_used", driver)) if v is not None}
    row = combine_cuda(allocated, reserved, driver)
    if row is None:
        if reserved is not None and reserved.verdict == PLATEAU:
            return _growth_finding("SOAK-CUDA", "CUDA caching allocator (reserved)", reserved, evidence, CUDA_CHECK)
        return _growth_finding("SOAK-CUDA", "CUDA memory in tensors", allocated, evidence, CUDA_CHECK)
    limits = result.end.get("limits", {})
    grows = driver if row["verdict"] == "grows outside torch" else \
        reserved if row["verdict"] == "allocator cache grows" else allocated
    headroom = None
    if limits.get("cuda_free") is not None:
        slack = (reserved.last - allocated.last) if reserved is not None and grows is allocated else 0.0
        headroom = limits["cuda_free"] + slack
    left = iterations_to_exhaustion(grows.tail_slope, headroom)
    evidence.update(rule=row["id"], projected_iterations=left)
    series = ", ".join(f"{name} {_mib(v.tail_slope)}/iteration ({v.verdict})" for name, v in
                       (("allocated", allocated), ("reserved", reserved), ("driver", driver)) if v is not None)
    remedy = {"leak": "Find the tensors kept between iterations (torch.cuda.memory._record_memory_history and "
                      "_dump_snapshot name the allocating stack); detach what is stored for logging (.item()).",
              "leak (allocator only)": "Live tensors grow inside the cache; they will take the device once it "
                                       "is used up: find what keeps them (torch.cuda.memory._record_memory_history).",
              "allocator cache grows": "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fragmentation from "
                                       "changing sizes), or keep tensor shapes fixed.",
              "grows outside torch": "Memory no torch tensor holds: cuDNN/cuBLAS workspaces (benchmark mode with "
                                     "changing shapes), NCCL, another framework in the process (TensorFlow, JAX, "
                                     "CuPy): run the workload without each to find it."}[row["verdict"]]
    return Finding("SOAK-CUDA", AREA, Status(row["status"]), f"{row['verdict']}: CUDA memory grows "
                   f"{_mib(grows.tail_slope)} per iteration",
                   message=f"{series}." + (f" At this rate the device's free memory lasts {left} more iterations."
                                           if left is not None else ""),
                   remedy=remedy, evidence=evidence, source=row["source"], confidence=row.get("confidence", ""))


def _lazy_finding(result: SoakResult, verdicts: dict[str, SeriesVerdict]) -> Finding:
    lazy = {m: v for m, v in verdicts.items() if v.lazy and v.verdict != LEAK}
    r_side = result.options.side == "r"
    name = "R's lazy GC" if r_side else "memory freed only by a collection"
    source = ("R documentation ?gc, ?Memory; R torch vignette memory-management (torch.threshold_call_gc); "
              "mlverse/torch tests/testthat/test-allocator.R (the allocator calls gc()); "
              if r_side else "Python gc module (reference cycles are freed only by the cyclic collector); ")
    evidence = {m: {"returned_per_iteration": v.returned} for m, v in verdicts.items() if v.returned is not None}
    if not lazy:
        return Finding("SOAK-LAZY-GC", AREA, Status.OK, "a forced collection returns no memory of note",
                       message="memory before and after each forced collection is the same within noise.",
                       evidence=evidence, source=source + TABLE_SOURCE)
    parts = "; ".join(f"{m} {_mib(v.returned)}" for m, v in lazy.items())
    remedy = ("Call gc() in the training loop (every few iterations), or let R torch collect sooner: "
              "options(torch.threshold_call_gc = MB) makes it call gc() once torch holds that much; on CUDA "
              "its allocator also calls gc() when an allocation fails (R torch vignette 'Memory management')." if r_side else
              "Break the reference cycles that hold tensors (closures, exceptions kept with their "
              "traceback, self-references), or call gc.collect() every few iterations.")
    return Finding("SOAK-LAZY-GC", AREA, Status.WARN, f"{name}: a forced collection returns memory each iteration",
                   message=f"each iteration leaves memory that only a collection frees ({parts} per iteration); "
                           "after the collection it does not grow, so this is not a leak, but without "
                           "collections it piles up until the collector runs, or the device runs out.",
                   remedy=remedy, evidence=evidence, source=source + TABLE_SOURCE)


def facts(result: SoakResult, verdicts: dict[str, SeriesVerdict]) -> dict[str, Any]:
    """`facts.soak` of the JSON report (docs/soak.md)."""
    from dataclasses import asdict

    from rcompat.soak.series import columns

    return {"options": asdict(result.options), "warmups": result.warmups, "child": result.facts,
            "limits": result.end.get("limits", {}), "timing": result.end.get("timing", {}),
            "verdicts": {m: v.to_dict() for m, v in verdicts.items()}, "series": columns(result)}



