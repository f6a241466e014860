"""Child side of `rcompat compile`: `python -m rcompat.compile.child CONFIG_JSON`.

Compiles each chosen case of the parity suite with torch.compile's default backend (inductor), in
its own process: a compiler that crashes, or one missing, must not take rcompat down, and a fresh
process (with the fresh TMPDIR rcompat.isolate gives it, so inductor's on-disk cache starts empty)
compiles for real instead of loading kernels built on another day. Per case, one JSON line:

    {"case": id, "status": "compiled" | "fell back" | "error", "frames": {...}, "graph_breaks": {...},
     "error": "...", "suppressed": ["..."], "max_abs_err": x, "max_rel_err": y, "within": bool,
     "eager_s": t, "compiled_s": t, "compile_s": t}

"fell back": dynamo caught its own failure (suppress_errors) and ran the frame eagerly; "error": the
compiled call raised, as it would in the user's program. Times are medians per call after warm-ups.
"""
from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import sys
import sysconfig
import time
from typing import Any

from rcompat.isolate import emit

FATAL_EXIT = 3


class _Collect(logging.Handler):
    """Dynamo's warnings: with suppress_errors it logs the error it swallowed, and nothing is raised."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.errors: list[str] = []  # what convert_frame logged when it swallowed a compile error

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()[-4000:]
            self.messages.append(text)
            if record.name.startswith("torch._dynamo.convert_frame") and record.levelno >= logging.WARNING:
                self.errors.append(text)
        except Exception:  # noqa: BLE001 - a log record that cannot be formatted is not our failure
            pass


def main(argv: list[str] | None = None) -> int:
    config = json.loads((argv if argv is not None else sys.argv[1:])[0])
    emit({"step": "import torch"})
    try:
        import torch
        import torch._dynamo
        from torch._dynamo.utils import counters
    except Exception as exc:  # noqa: BLE001
        emit({"fatal": f"{sys.executable} cannot import torch and torch._dynamo: {type(exc).__name__}: {exc}"})
        return FATAL_EXIT
    device = config.get("device", "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        emit({"fatal": f"--device cuda: CUDA is not available to torch {torch.__version__}"})
        return FATAL_EXIT
    emit({"facts": facts(torch, device)})
    handler = _Collect()
    logging.getLogger("torch._dynamo").addHandler(handler)
    logging.getLogger("torch._inductor").addHandler(handler)
    from rcompat.parity.suite import generate_inputs, planned_cases

    inputs = generate_inputs(int(config.get("seed", 0)))
    chosen = {cid: (p, case) for cid, p, case in planned_cases() if cid in set(config["cases"])}
    for cid in config["cases"]:
        precision, case = chosen[cid]
        emit({"step": cid})
        handler.messages.clear()
        handler.errors.clear()
        emit(run_case(torch, counters, handler, cid, precision, case, inputs, device, config))
    emit({"done": True})
    return 0


def run_case(torch, counters, handler: _Collect, cid: str, precision: str, case, inputs: dict, device: str,
             config: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    dtype = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
             "bfloat16": torch.bfloat16}[precision]
    x = {k: torch.from_numpy(np.asarray(v)).to(device=device, dtype=dtype) for k, v in inputs.items()}

    def step(xx):
        return case.fn(torch, xx)

    torch._dynamo.reset()
    counters.clear()
    eager = step(x)
    compiled_fn = torch.compile(step)
    out: dict[str, Any] = {"case": cid, "precision": precision}
    t0 = time.perf_counter()
    try:
        result = compiled_fn(x)
        _sync(torch, device)
    except Exception as exc:  # noqa: BLE001 - the user's program would see this: it is the finding
        out.update(status="error", error=f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:4000],
                   **_counted(counters), suppressed=list(handler.messages))
        return out
    out["compile_s"] = round(time.perf_counter() - t0, 3)
    counted = _counted(counters)
    frames = counted["frames"]
    # Nothing compiled, or an error swallowed (suppress_errors): eager ran where a graph should have.
    # A graph break alone (frames total > ok: the frame around .backward()) is partial compilation.
    fell_back = counted["unique_graphs"] == 0 or bool(handler.errors)
    out.update(status="fell back" if fell_back else "compiled", **counted, suppressed=list(handler.messages))
    rtol, atol = config.get("tolerances", {}).get(cid, (1e-5, 1e-5))
    out.update(_compare(torch, eager, result, rtol, atol))
    repeat, warmup = int(config.get("repeat", 20)), int(config.get("warmup", 3))
    out["eager_s"] = _median_call(torch, device, lambda: step(x), warmup, repeat)
    out["compiled_s"] = _median_call(torch, device, lambda: compiled_fn(x), warmup, repeat)
    return out


def _counted(counters) -> dict[str, Any]:
    return {"frames": dict(counters["frames"]), "graph_breaks": dict(counters["graph_break"]),
            "unique_graphs": int(counters["stats"].get("unique_graphs", 0))}


def _compare(torch, eager, compiled, rtol: float, atol: float) -> dict[str, Any]:
    """Largest absolute and relative difference of every output part (eager is the reference), and
    whether every element is within |compiled - eager| <= atol + rtol * |eager| (numpy.isclose's rule)."""
    a = eager if isinstance(eager, dict) else {"": eager}
    b = compiled if isinstance(compiled, dict) else {"": compiled}
    if set(a) != set(b):
        return {"max_abs_err": None, "max_rel_err": None, "outputs_differ": sorted(set(a) ^ set(b))}
    worst_abs = worst_rel = 0.0
    within = True
    for key in a:
        ea, eb = a[key].detach().double().cpu(), b[key].detach().double().cpu()
        diff = (eb - ea).abs()
        worst_abs = max(worst_abs, float(diff.max()) if diff.numel() else 0.0)
        rel = diff / ea.abs().clamp_min(1e-300)
        worst_rel = max(worst_rel, float(rel.max()) if rel.numel() else 0.0)
        within = within and bool((diff <= atol + rtol * ea.abs()).all())
    return {"max_abs_err": worst_abs, "max_rel_err": worst_rel, "within": within}


def _median_call(torch, device: str, call, warmup: int, repeat: int) -> float:
    for _ in range(warmup):
        call()
    _sync(torch, device)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        _sync(torch, device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _sync(torch, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def facts(torch, device: str) -> dict[str, Any]:
    """What decides whether inductor can work here: the compiler it will call, Python's headers,
    Triton (for GPUs), the Python version, and whether dynamo swallows errors."""
    import importlib.util
    import shutil

    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    cxx = [c for c in inductor_config.cpp.cxx if c]
    include = sysconfig.get_path("include")
    return {"torch_version": str(torch.__version__), "python_version": platform.python_version(),
            "interpreter": sys.executable, "device": device,
            "device_name": torch.cuda.get_device_name(0) if device == "cuda" else None,
            "cxx": cxx, "cxx_found": {c: shutil.which(c) for c in cxx},
            "python_h": os.path.join(include, "Python.h"), "python_h_exists": os.path.isfile(os.path.join(include, "Python.h")),
            "triton": importlib.util.find_spec("triton") is not None,
            "suppress_errors": bool(dynamo_config.suppress_errors)}


if __name__ == "__main__":
    sys.exit(main())
