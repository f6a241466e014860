"""torch.compile for real: `rcompat compile` (and `rcompat doctor --deep`).

    result = rcompat.compile.run(rcompat.compile.CompileOptions(cases=["mlp_forward_f32"]))
    rcompat.compile.to_report(result) -> Report

child.py compiles the parity suite's cases in an isolated child and reports dynamo's counters, the
error or the suppressed warning, the outputs against eager and the times; causes.py names the cause
from rcompat/data/compile_causes.toml; findings.py says it. See docs/compile.md.
"""
from __future__ import annotations

from rcompat.exports import lazy_exports

_EXPORTS = {
    "run": "rcompat.compile.runner:run",
    "CompileOptions": "rcompat.compile.runner:CompileOptions",
    "to_report": "rcompat.compile.findings:to_report",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
