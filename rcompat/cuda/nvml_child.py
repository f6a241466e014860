"""NVML asked in a child process: the child's side (the parent's is rcompat.cuda.nvml.probe_in_child).

Run as `python -m rcompat.cuda.nvml_child`: the child loads libnvidia-ml.so.1 through pynvml, asks it
everything rcompat.cuda.nvml asks, and prints the answer as one JSON line. The parent turns whatever
else happens into an NVML error: a time-out (a wedged driver: nvmlInit never returns) is "timed out",
a signal (a library that crashes when loaded) names the signal and the step, and neither is ever
"no driver". pynvml reports any failure to load the library as LIBRARY_NOT_FOUND; the child asks the
loader itself why, so a truncated or foreign libnvidia-ml.so.1 is an error, not absence.
"""
from __future__ import annotations

from rcompat.cuda.nvml import LIBRARY, NO_DRIVER_REASON, NvmlFacts, probe_in_process


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


def emit(record: dict) -> None:
    """rcompat.isolate.emit, without importing the child helper: this child's start-up is the cost of
    every NVML probe (its own json line, flushed at once so a crash right after leaves it)."""
    import json
    import sys

    sys.stdout.write(json.dumps(record, default=str) + "\n")
    sys.stdout.flush()


def main() -> None:
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
