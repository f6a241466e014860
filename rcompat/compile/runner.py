"""Parent side of `rcompat compile`: choose the suite's cases, compile them in one isolated child,
collect what it saw per case."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from rcompat.errors import RcompatError, UsageError
from rcompat.isolate import ChildResult

CHILD_MODULE = "rcompat.compile.child"
DEVICES = ("cpu", "cuda")
DOCTOR_CASES = ("mlp_forward_f32",)  # the doctor's one model: seconds, not minutes


def default_cases(device: str = "cpu") -> list[str]:
    """Every case of the parity suite in float32 (the precision models train in)."""
    from rcompat.parity.suite import planned_cases

    return [cid for cid, precision, _ in planned_cases() if precision == "float32"]


@dataclass
class CompileOptions:
    cases: list[str] | None = None   # suite case ids; None: default_cases()
    device: str = "cpu"
    python: str | None = None
    repeat: int = 20                 # timed calls per side, after the warm-ups
    warmup: int = 3
    seed: int = 0
    timeout: float = 600.0


@dataclass
class CompileResult:
    options: CompileOptions
    cases: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    child: ChildResult | None = None


def validate(options: CompileOptions) -> list[str]:
    from rcompat.parity.suite import planned_cases

    if options.device not in DEVICES:
        raise UsageError(f"--device: choose from {', '.join(DEVICES)}")
    if not (1 <= options.repeat <= 10_000 and 0 <= options.warmup <= 1000):
        raise UsageError("--repeat must be from 1 to 10000")
    known = [cid for cid, _, _ in planned_cases()]
    cases = list(options.cases) if options.cases else default_cases(options.device)
    unknown = [c for c in cases if c not in known]
    if unknown:
        raise UsageError(f"--cases: unknown case(s) {', '.join(unknown)}; the suite's: {', '.join(known)}")
    if options.python and not os.access(options.python, os.X_OK):
        raise UsageError(f"--python {options.python}: not an executable file")
    return list(dict.fromkeys(cases))


def tolerances(cases: list[str], device: str) -> dict[str, tuple[float, float]]:
    """(rtol, atol) of each case: the parity table's row for its precision on this device."""
    from rcompat.parity.suite import planned_cases
    from rcompat.parity.tolerances import device_pair, tolerance_for

    precision = {cid: p for cid, p, _ in planned_cases()}
    out = {}
    for cid in cases:
        tol = tolerance_for(precision[cid], device_pair(device, device))
        out[cid] = (tol.rtol, tol.atol)
    return out


def run(options: CompileOptions, progress=None) -> CompileResult:
    """Compile the cases in a child; raises RcompatError when the child cannot even import torch."""
    from rcompat.isolate import run_python_child

    cases = validate(options)
    config = {"cases": cases, "device": options.device, "repeat": options.repeat, "warmup": options.warmup,
              "seed": options.seed, "tolerances": tolerances(cases, options.device)}
    if progress is not None:
        progress.note(f"compiling {len(cases)} case(s) in a child (tens of seconds each on a small machine)")
    child = run_python_child(CHILD_MODULE, [json.dumps(config)], timeout=options.timeout, python=options.python)
    result = CompileResult(options=options, child=child)
    for rec in child.records:
        if "fatal" in rec:
            raise RcompatError(str(rec["fatal"]))
        if isinstance(rec.get("facts"), dict):
            result.facts = rec["facts"]
        elif "case" in rec and "status" in rec:
            result.cases.append(rec)
    if not child.records:
        tail = " ".join(child.tail(3).split())
        raise RcompatError(f"{child.argv[0]} did not run the compile child: it {child.describe_end()}"
                           f"{': ' + tail[:300] if tail else ''}")
    return result
