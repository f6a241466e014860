"""The doctor's `compile` area, run only with `rcompat doctor --deep` (it takes seconds to minutes):
torch.compile of one model of the suite, in a child, as `rcompat compile --cases mlp_forward_f32`."""
from __future__ import annotations

import importlib.util
from typing import Iterable

from rcompat.model import Finding, Status

AREA = "compile"
TITLE = "torch.compile"
TIMEOUT_S = 600.0  # a cold inductor compile on a loaded 2-core machine takes minutes


def check_torch_compile(ctx) -> Iterable[Finding]:
    if importlib.util.find_spec("torch") is None:
        return [Finding("COMPILE-TORCH", AREA, Status.SKIP, "torch.compile: Python torch not installed",
                        message="no torch in this interpreter; rcompat compile --python PATH tests another")]
    from rcompat.compile.findings import findings
    from rcompat.compile.runner import DOCTOR_CASES, CompileOptions, run

    result = run(CompileOptions(cases=list(DOCTOR_CASES), repeat=10, timeout=max(ctx.timeout, TIMEOUT_S)))
    ctx.facts["compile"] = {"facts": result.facts, "cases": result.cases}
    return findings(result, AREA)


check_torch_compile.check_id = "COMPILE-TORCH"
CHECKS = [check_torch_compile]
