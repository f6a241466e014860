"""rcompat: diagnose why R + deep learning + GPU breaks on a machine.

Public API (stable names); heavy engines are imported only when called:

    rcompat.doctor(areas=None) -> Report
    rcompat.r.probe() -> RFacts
    rcompat.cuda.probe() -> CudaFacts;  rcompat.device() -> DeviceChoice
    rcompat.elf.symbols(path), .deps(path), .missing(path), .abi_diff(old, new), .patch_diff(a, b)
    rcompat.race.run(...)
    rcompat.upgrade(old, new, driver=None, carry=()) -> Report
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "doctor", "device", "render", "Finding", "Report", "Status"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rcompat.model import Finding, Report, Status


def __getattr__(name: str):
    """Finding, Report and Status load with first use: `rcompat elf symbols` never needs the model."""
    if name in ("Finding", "Report", "Status"):
        from rcompat import model

        return getattr(model, name)
    if name == "upgrade":  # the package, callable: rcompat.upgrade(old, new)
        import importlib

        return importlib.import_module("rcompat.upgrade")
    raise AttributeError(f"module 'rcompat' has no attribute {name!r}")


def doctor(areas=None, *, timeout: float | None = None, use_cache: bool = True) -> Report:
    """Run every available probe (or only `areas`) and return one Report; `use_cache=False` neither
    reads nor writes the caches in $XDG_CACHE_HOME/rcompat."""
    from rcompat.doctor import run_doctor

    return run_doctor(areas=areas, timeout=timeout, use_cache=use_cache)


def render(report: Report, fmt: str = "text", **options) -> str:
    """The report as text, json, markdown or junit (see rcompat.render)."""
    from rcompat.render import render as render_report

    return render_report(report, fmt, **options)


def device(**kwargs):
    """Choose "cuda" or "cpu" with the reason (see rcompat.cuda.device)."""
    from rcompat.cuda.device import choose_device

    return choose_device(**kwargs)
