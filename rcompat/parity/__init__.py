"""Numerical parity: the same seeded computations in two environments, compared with tolerances.

    rcompat.parity.record(RecordOptions(output="new.npz", python="/opt/new/bin/python")) -> ParityRecord
    rcompat.parity.compare("baseline.npz", "new.npz") -> Report

See docs/parity.md. Nothing here imports numpy or torch until a function runs.
"""
from __future__ import annotations


def record(options, progress=None):
    """Run the suite in an isolated child and write the record (rcompat.parity.record.record)."""
    from rcompat.parity.record import record as run_record

    return run_record(options, progress)


def compare(path_a: str, path_b: str, rtol: float | None = None, atol: float | None = None):
    """One finding per output of B against the reference A (rcompat.parity.compare.compare)."""
    from rcompat.parity.compare import compare as run_compare

    return run_compare(path_a, path_b, rtol=rtol, atol=atol)
