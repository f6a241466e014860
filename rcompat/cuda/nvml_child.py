"""NVML asked in a child process: the parent's `probe_in_child`, and the child's `main`.

Run as `python -m rcompat.cuda.nvml_child`: the child loads libnvidia-ml.so.1 through pynvml, asks it
everything rcompat.cuda.nvml asks, and prints the answer as one JSON line. The parent turns whatever
else happens into an NVML error: a time-out (a wedged driver: nvmlInit never returns) is "timed out",
a signal (a library that crashes when loaded) names the signal and the step, and neither is ever
"no driver". pynvml reports any failure to load the library as LIBRARY_NOT_FOUND; the child asks the
loader itself why, so a truncated or foreign libnvidia-ml.so.1 is an error, not absence.
"""
from __future__ import annotations

import importlib.util
from typing import Any

from rcompat.cuda.nvml import (NO_DRIVER_REASON, NO_PYNVML_REASON, Gpu, GpuProcess, NvmlFacts,
                               probe_in_process)

LIBRARY = "libnvidia-ml.so.1"
REMEDY_HINT = "check the driver with `nvidia-smi`"


def probe_in_child(timeout: float) -> NvmlFacts:
    if importlib.util.find_spec("pynvml") is None:
        return NvmlFacts(status="no-pynvml", reason=NO_PYNVML_REASON)
    from rcompat.isolate import run_python_child

    result = run_python_child("rcompat.cuda.nvml_child", timeout=timeout)
    for record in result.records:
        if isinstance(record.get("nvml_facts"), dict):
            try:
                return facts_from_dict(record["nvml_facts"])
            except (TypeError, ValueError, KeyError) as exc:
                return NvmlFacts(status="error", error="unreadable answer",
                                 reason=f"the NVML probe child's answer could not be read: {exc}")
    step = result.last_step or "start"
    if result.timed_out:
        error = f"timed out after {timeout:g} s in {step}"
        reason = (f"NVML did not answer: {step} timed out after {timeout:g} s (a wedged driver or a hung "
                  f"GPU); the probe was killed, {REMEDY_HINT}")
    elif result.signal_name:
        error = f"crashed with {result.signal_name} in {step}"
        reason = (f"NVML crashed the probe child with {result.signal_name} during step '{step}' "
                  f"({LIBRARY} is damaged or does not fit the kernel module); {REMEDY_HINT}")
    else:
        error = f"probe child {result.describe_end()}"
        reason = f"the NVML probe child {result.describe_end()} during step '{step}': {result.tail(3)}"
    facts = NvmlFacts(status="error", reason=reason, error=error)
    facts.errors["child"] = result.describe_end()
    return facts


def facts_from_dict(data: dict[str, Any]) -> NvmlFacts:
    gpus = []
    for raw in data.get("gpus") or []:
        procs = [GpuProcess(int(p["pid"]), p.get("used_memory_mib"), _text(p.get("name")))
                 for p in raw.get("processes") or []]
        gpus.append(Gpu(index=int(raw["index"]), name=_text(raw.get("name")), uuid=_text(raw.get("uuid")),
                        compute_capability=_text(raw.get("compute_capability")),
                        memory_total_mib=_number(raw.get("memory_total_mib")),
                        memory_used_mib=_number(raw.get("memory_used_mib")), processes=procs,
                        errors={str(k): str(v) for k, v in (raw.get("errors") or {}).items()}))
    return NvmlFacts(status=str(data["status"]), reason=str(data.get("reason") or ""),
                     error=str(data.get("error") or ""), driver_version=_text(data.get("driver_version")),
                     cuda_driver_version=_text(data.get("cuda_driver_version")), gpus=gpus,
                     errors={str(k): str(v) for k, v in (data.get("errors") or {}).items()})


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def load_error() -> str | None:
    """Why the loader cannot load libnvidia-ml.so.1 when it exists but is unusable; None when it is
    simply not there (or loads after all)."""
    import ctypes

    try:
        ctypes.CDLL(LIBRARY)
    except OSError as exc:
        text = str(exc)
        if text.startswith(f"{LIBRARY}: cannot open shared object file"):
            return None
        return text
    return None


def main() -> None:
    from rcompat.isolate import emit

    emit({"step": f"load {LIBRARY}"})
    import pynvml

    facts = probe_in_process(pynvml, step=lambda what: emit({"step": what}))
    if facts.status == "no-driver":
        problem = load_error()
        if problem:
            facts = NvmlFacts(status="error", error=problem,
                              reason=f"{LIBRARY} is there but cannot be loaded: {problem}")
        else:
            facts.reason = facts.reason or NO_DRIVER_REASON
    emit({"nvml_facts": facts.to_dict()})


if __name__ == "__main__":
    main()
