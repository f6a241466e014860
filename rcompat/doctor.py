"""`rcompat doctor`: run every area's checks, each behind its own error boundary.

An area is a module that exposes `AREA` (its name), `TITLE` and `CHECKS`, a list of functions
`check(ctx) -> Iterable[Finding]`. Modules are named here as strings and imported only when their area
runs, so `--only elf` never imports rpy2 or torch. A check that raises becomes an `error` finding and
the other checks still run.
"""
from __future__ import annotations

import importlib
import time
import traceback
from typing import Any, Callable, Iterable

from rcompat.errors import UsageError
from rcompat.model import Finding, Report, Status

# Order is the order of the report: the stack from the bottom (R, Python) up to the GPU and the
# combinations that break in one process.
AREA_MODULES: dict[str, str] = {
    "r": "rcompat.r.checks",
    "python": "rcompat.pyenv",
    "cuda": "rcompat.cuda.checks",
    "elf": "rcompat.elf.checks",
    "race": "rcompat.race.checks",
}

DEFAULT_TIMEOUT_S = 60.0


class Context:
    """Shared state of one doctor run: facts computed once and reused by several checks."""

    def __init__(self, timeout: float | None = None, options: dict[str, Any] | None = None) -> None:
        self.timeout = timeout or DEFAULT_TIMEOUT_S
        self.options = dict(options or {})
        self.facts: dict[str, Any] = {}
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, producer: Callable[[], Any]) -> Any:
        """Compute `producer()` once per run; an exception is cached too, so each check sees it."""
        if key not in self._memo:
            try:
                self._memo[key] = (True, producer())
            except Exception as exc:  # noqa: BLE001 - re-raised to every caller
                self._memo[key] = (False, exc)
        ok, value = self._memo[key]
        if not ok:
            raise value
        return value


def resolve_areas(areas: Iterable[str] | None) -> list[str]:
    if not areas:
        return list(AREA_MODULES)
    chosen = []
    for a in areas:
        for name in str(a).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in AREA_MODULES:
                raise UsageError(f"unknown area '{name}'; choose from: {', '.join(AREA_MODULES)}")
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise UsageError("no area given")
    return chosen


def run_doctor(areas: Iterable[str] | None = None, timeout: float | None = None,
               options: dict[str, Any] | None = None,
               progress: Callable[[str], None] | None = None) -> Report:
    chosen = resolve_areas(areas)
    ctx = Context(timeout=timeout, options=options)
    report = Report(command="doctor")
    timings: dict[str, float] = {}
    for area in chosen:
        if progress:
            progress(area)
        start = time.monotonic()
        report.add(run_area(area, ctx))
        timings[area] = round(time.monotonic() - start, 3)
    report.facts = dict(ctx.facts)
    report.facts["timings_s"] = timings
    return report


def run_area(area: str, ctx: Context) -> list[Finding]:
    try:
        module = importlib.import_module(AREA_MODULES[area])
    except Exception as exc:  # noqa: BLE001 - a broken engine must not take the others down
        return [_boundary_error(area, f"{area.upper()}-LOAD", f"cannot load the {area} checks", exc)]
    findings: list[Finding] = []
    for check in getattr(module, "CHECKS", []):
        findings.extend(run_check(area, check, ctx))
    return findings


def run_check(area: str, check: Callable[[Context], Iterable[Finding]], ctx: Context) -> list[Finding]:
    try:
        return list(check(ctx) or [])
    except Exception as exc:  # noqa: BLE001 - the error boundary of one check
        check_id = getattr(check, "check_id", None) or f"{area.upper()}-{check.__name__.upper()}"
        return [_boundary_error(area, check_id, f"check {check.__name__} raised", exc)]


def _boundary_error(area: str, check_id: str, title: str, exc: BaseException) -> Finding:
    return Finding(
        id=check_id, area=area, status=Status.ERROR, title=title,
        message=f"{type(exc).__name__}: {exc}",
        remedy="This is a bug in rcompat or an environment it does not understand; rerun with --debug "
               "and report the traceback.",
        evidence={"exception": type(exc).__name__,
                  "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]})
