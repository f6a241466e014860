"""Numerical parity: the same seeded computations in two environments, compared with tolerances.

    rcompat.parity.record(RecordOptions(output="new.npz", python="/opt/new/bin/python")) -> ParityRecord
    rcompat.parity.compare("baseline.npz", "new.npz") -> Report

See docs/parity.md. Nothing here imports numpy or torch until a function runs.
"""
from __future__ import annotations

from rcompat.exports import lazy_exports

_EXPORTS = {
    "record": "rcompat.parity.recording:record",
    "RecordOptions": "rcompat.parity.recording:RecordOptions",
    "compare": "rcompat.parity.comparison:compare",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rcompat.parity.comparison import compare  # noqa: F401
    from rcompat.parity.recording import RecordOptions, record  # noqa: F401
