"""Memory growth while a workload runs: `rcompat soak`.

    result = rcompat.soak.run(rcompat.soak.SoakOptions(cases="step.py", iterations=200))
    rcompat.soak.to_report(result) -> Report

A child runs the workload and streams samples (child.py, or r_scripts/soak.R); runner.py collects
them; classify.py judges each series with the rules of rcompat/data/soak_rules.toml; findings.py says
the verdicts. See docs/soak.md. Nothing here imports torch until a function runs.
"""
from __future__ import annotations

from rcompat.exports import lazy_exports

_EXPORTS = {
    "run": "rcompat.soak.runner:run",
    "SoakOptions": "rcompat.soak.runner:SoakOptions",
    "to_report": "rcompat.soak.findings:to_report",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
