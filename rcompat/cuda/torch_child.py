"""Child side of the torch probe: `python -m rcompat.cuda.torch_child` prints JSON lines.

Runs in its own process (rcompat.cuda.torch_probe starts it with a timeout) because importing torch
and initialising CUDA can hang or crash on a broken driver. Each stage is announced with a `step`
record first, so a hang names the stage it hung in.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

from rcompat.isolate import emit


def main() -> int:
    emit({"step": "import torch"})
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken install is a fact to report, not a crash
        emit({"result": {"imported": False, "import_error": f"{type(exc).__name__}: {exc}"}})
        return 0
    emit({"result": torch_facts(torch, lambda step: emit({"step": step}))})
    return 0


def torch_facts(torch, step: Callable[[str], None]) -> dict[str, Any]:
    """What this process's `torch` says of itself and of CUDA; `step(name)` announces each stage. Also
    asked by the doctor's race trial child after its trial, which has imported torch already
    (rcompat.race.worker): one torch start serves both."""
    facts = {"imported": True, "version": str(torch.__version__), "cuda": torch.version.cuda,
             "hip": getattr(torch.version, "hip", None), "file": getattr(torch, "__file__", None),
             "messages": []}
    step("cudnn version")
    try:
        facts["cudnn"] = torch.backends.cudnn.version()
    except Exception as exc:  # noqa: BLE001
        facts["messages"].append(f"cudnn.version(): {exc}")
        facts["cudnn"] = None
    facts["arch_list"] = _compiled_arch_list(torch)
    step("cuda is_available")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts["is_available"] = bool(torch.cuda.is_available())
    facts["messages"] += [str(w.message) for w in caught]
    if not facts["is_available"] and torch.version.cuda:
        step("cuda init")
        try:  # is_available() swallows the reason; init() raises it
            torch.cuda.init()
        except Exception as exc:  # noqa: BLE001
            facts["messages"].append(str(exc))
    if facts["is_available"]:
        step("cuda devices")
        facts["devices"] = [{"index": i, "name": torch.cuda.get_device_name(i),
                             "capability": "%d.%d" % torch.cuda.get_device_capability(i)}
                            for i in range(torch.cuda.device_count())]
    return facts


def _compiled_arch_list(torch) -> list[str]:
    """The sm_XY/compute_XY torch was compiled for; get_arch_list() returns [] without a driver."""
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    try:
        text = flags() if flags else None
    except Exception:  # noqa: BLE001
        text = None
    return text.split() if text else []


if __name__ == "__main__":
    sys.exit(main())
