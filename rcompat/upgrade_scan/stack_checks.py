"""Findings about the two stacks: what changed between OLD and NEW, and whether the driver that will
run NEW is new enough for NEW's CUDA (the CUDA engine's driver table decides, never a version here)."""
from __future__ import annotations

import re

from rcompat.model import Finding, Status
from rcompat.upgrade_scan.stack import Stack

AREA = "upgrade"
SOURCE_STACK = "rcompat upgrade: stack read from files (version nodes, dist-info, DESCRIPTION)"
# Components whose newer version keeps old binaries working (symbol versioning keeps the old nodes).
BACKWARD_COMPATIBLE = ("glibc", "libstdc++")


def slug(name: str) -> str:
    """The part of a finding id a name gives (upper case, runs of other characters as one dash)."""
    return re.sub(r"[^A-Z0-9]+", "-", name.upper()).strip("-")


def stack_findings(old: Stack, new: Stack) -> list[Finding]:
    from rcompat.versions import Version

    out, same = [], []
    generic_said = ""
    for name in list(dict.fromkeys(list(old.components) + list(new.components))):
        a, b = old.components.get(name), new.components.get(name)
        before, after = (a.version if a else None), (b.version if b else None)
        if before == after:
            same.append(f"{name} {after}")
            continue
        evidence = {"old": a.to_dict() if a else None, "new": b.to_dict() if b else None}
        # The general remedy is said once, by the first component that needs it; the others point there.
        status, remedy = Status.WARN, ("" if generic_said else
                                       "objects built against the old versions are rebound against the new "
                                       "ones below (this and every other changed component); rebuild any "
                                       "that fail")
        generic = True
        if a and b and name in BACKWARD_COMPATIBLE:
            try:
                newer = Version.parse(after) > Version.parse(before)
            except ValueError:
                newer = False
            if newer:
                status, remedy, generic = Status.OK, "", False
            else:
                generic = False
                remedy = (f"NEW's {name} is older: objects built on OLD that need its newer version nodes fail "
                          "to load (see the carried objects below)")
        if a is None:
            message = f"{name}: added in NEW ({after})"
        elif b is None:
            message = f"{name}: removed in NEW (OLD had {before})"
        else:
            message = f"{name}: {before} → {after}"
        if generic and not generic_said:
            generic_said = f"UPGRADE-STACK-{slug(name)}"
        out.append(Finding(f"UPGRADE-STACK-{slug(name)}", AREA, status, message, message=_where(a, b),
                           remedy=remedy if status is not Status.OK else "", evidence=evidence,
                           source=SOURCE_STACK, confidence="high"))
    if same:
        out.append(Finding("UPGRADE-STACK", AREA, Status.OK, f"{len(same)} stack components unchanged",
                           message=", ".join(same), evidence={"unchanged": same}, source=SOURCE_STACK,
                           confidence="high"))
    return out


def _where(a, b) -> str:
    parts = []
    if a and a.where:
        parts.append(f"OLD: {a.where[0]}")
    if b and b.where:
        parts.append(f"NEW: {b.where[0]}")
    return "; ".join(parts)


def new_cuda(stack: Stack) -> tuple[str | None, str]:
    """(CUDA version NEW's code runs, where it comes from): the CUDA runtime library on disk, else the
    CUDA version torch was built for (a pip torch may rely on nvidia-* wheels the image lacks)."""
    runtime = stack.version("CUDA runtime")
    if runtime:
        return runtime.split(", ")[0], "CUDA runtime library"
    build = stack.version("torch CUDA build")
    if build:
        return build, "torch's CUDA build (torch/version.py)"
    return None, ""


def driver_finding(new: Stack, driver: str | None) -> Finding:
    """Minimum driver of NEW's CUDA against `driver` (--driver), else this machine's (NVML)."""
    from rcompat.cuda.matrix import driver_verdict
    from rcompat.cuda.tables import load_tables, public_row

    cuda, origin = new_cuda(new)
    source = "rcompat/data/cuda_driver.csv (NVIDIA CUDA Toolkit Release Notes; CUDA Compatibility guide)"
    if cuda is None:
        return Finding("UPGRADE-DRIVER", AREA, Status.SKIP, "NEW holds no CUDA code: no driver requirement",
                       message="no CUDA runtime library and no CUDA build of torch found in NEW", source=source)
    tables = load_tables()
    minimum = tables.min_driver(cuda)
    given = driver
    if given is None:
        from rcompat.cuda.nvml import probe_nvml

        facts = probe_nvml()
        if facts.status != "ok" or not facts.driver_version:
            return Finding("UPGRADE-DRIVER", AREA, Status.SKIP,
                           f"NEW needs CUDA {cuda} (driver ≥ {minimum or '?'}); no driver to compare",
                           message=f"{facts.reason or facts.error}. Pass --driver VERSION (the production "
                                   "machine's `nvidia-smi` driver version) to check it.",
                           evidence={"cuda": cuda, "from": origin, "min_driver": minimum, "nvml": facts.status},
                           source=source)
        given = facts.driver_version
    status, message, remedy, rows = driver_verdict(given, cuda, tables)
    return Finding("UPGRADE-DRIVER", AREA, status, f"driver {given} for NEW's CUDA {cuda}", message=message,
                   remedy=remedy, evidence={"cuda": cuda, "from": origin, "driver": given,
                                            "given_by": "--driver" if driver else "NVML (this machine)",
                                            "min_driver": minimum, "rows": [public_row(r) for r in rows if r]},
                   source=source, confidence="medium")
