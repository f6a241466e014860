"""What one soak iteration runs (child side): the parity suite's seeded cases, or the user's.

The default is every case of rcompat/parity/suite.py on its seeded inputs (float32 and float64; on CUDA
also float16 and bfloat16), the inputs converted to tensors once, before the loop, so an iteration is
the computation alone. `--cases FILE.py` replaces the suite with the file's `CASES = {"name": fn}`,
the contract of `rcompat parity record --cases` (fn takes the inputs dict: float64 tensors on the
device); a workload that keeps state between iterations (a cache, a list) keeps it in its module.
"""
from __future__ import annotations

import importlib.util
import re
from typing import Any, Callable

_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def build_iteration(torch, config: dict[str, Any]) -> tuple[Callable[[], None], list[str]]:
    """(a function running every case once, the case ids)."""
    import numpy as np

    from rcompat.parity.suite import CPU_PRECISIONS, DEFAULT_SEED, generate_inputs, planned_cases

    device = config.get("device", "cpu")
    inputs = generate_inputs(int(config.get("seed", DEFAULT_SEED)))
    if config.get("cases"):
        x = {k: torch.from_numpy(np.asarray(v)).to(device=device, dtype=torch.float64) for k, v in inputs.items()}
        cases = load_user_cases(config["cases"])
        calls = [(name, (lambda fn=fn: fn(x))) for name, fn in cases.items()]
    else:
        wanted = CPU_PRECISIONS + (("float16", "bfloat16") if device == "cuda" else ())
        dtypes = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                  "bfloat16": torch.bfloat16}
        by_precision = {p: {k: torch.from_numpy(np.asarray(v)).to(device=device, dtype=dtypes[p])
                            for k, v in inputs.items()} for p in wanted}
        calls = [(cid, (lambda case=case, x=by_precision[p]: case.fn(torch, x)))
                 for cid, p, case in planned_cases() if p in wanted]

    def iteration() -> None:
        for _, call in calls:
            call()

    return iteration, [name for name, _ in calls]


def load_user_cases(path: str) -> dict[str, Callable[[dict], Any]]:
    """`CASES = {"name": function(inputs) -> anything}` of a user's file."""
    spec = importlib.util.spec_from_file_location("rcompat_soak_user_cases", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, dict) or not cases or not all(callable(fn) for fn in cases.values()):
        raise TypeError(f"{path} must define CASES = {{'name': function(inputs)}} with at least one case")
    for name in cases:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"case name {name!r} must be letters, digits and _")
    return dict(cases)
