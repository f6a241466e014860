"""race engine: reproduce concurrent R + Python (torch) allocations in one process, and map it.

    rcompat.race.run(device="auto", iterations=20, workers=4, mode="both", timeout=30, trace=None,
                     trials=3, seed=None) -> RaceResult
    rcompat.race.maps.read_maps(pid=None) / analyse(...)   (the process-map check)

Heavy parts (rpy2, torch, pandas) load only inside trial children or when a frame is asked for.
"""
from __future__ import annotations

__all__ = ["run"]


def run(*args, **kwargs):
    from rcompat.race.runner import run as _run

    return _run(*args, **kwargs)
