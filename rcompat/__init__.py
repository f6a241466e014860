"""rcompat: diagnose why R + deep learning + GPU breaks on a machine.

Public API (stable names); every engine, and the model, is imported on first use:

    rcompat.doctor(areas=None) -> Report
    rcompat.r.probe() -> RFacts
    rcompat.cuda.probe() -> CudaFacts;  rcompat.device() -> DeviceChoice
    rcompat.elf.symbols(path), .deps(path), .missing(path), .abi_diff(old, new), .patch_diff(a, b)
    rcompat.race.run(...);  rcompat.parity.record(options), .compare(a, b)
    rcompat.upgrade(old, new, driver=None, carry=(), models=()) -> Report
"""
from __future__ import annotations

from rcompat.exports import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "doctor": "rcompat.areas:run_doctor",
    "render": "rcompat.renderers:render",
    "device": "rcompat.cuda.device:choose_device",
    "upgrade": "rcompat.upgrade_scan.scan:upgrade",
    "Finding": "rcompat.model:Finding",
    "Report": "rcompat.model:Report",
    "Status": "rcompat.model:Status",
    # the engines, so that `import rcompat` is enough for rcompat.r.probe() and the rest
    **{engine: f"rcompat.{engine}" for engine in ("r", "cuda", "elf", "race", "parity", "tools", "upgrade_scan")},
}

__all__ = ["__version__", *_EXPORTS]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rcompat import cuda, elf, parity, r, race, tools, upgrade_scan  # noqa: F401
    from rcompat.areas import run_doctor as doctor  # noqa: F401
    from rcompat.cuda.device import choose_device as device  # noqa: F401
    from rcompat.model import Finding, Report, Status  # noqa: F401
    from rcompat.renderers import render  # noqa: F401
    from rcompat.upgrade_scan.scan import upgrade  # noqa: F401
