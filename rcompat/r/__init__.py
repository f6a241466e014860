"""R engine: R, its deep-learning packages, the Python reticulate binds, and whether torch runs.

    rcompat.r.probe(timeout=None, lib_paths=None, ...) -> RFacts   (children only; never crashes)
    rcompat.r.host_is_r() -> bool                                   (reticulate called us)
    rcompat.r.rules.load_rules() / evaluate(stack)                  (breakage rules as data)
    rcompat.r.verify.verify(package, facts)                         (isolated verification scripts)

Imports here stay light: rpy2 is only ever imported in the worker child.
"""
from __future__ import annotations

import os
from pathlib import Path

from rcompat.r.host import host_is_r, locate_r, r_host

__all__ = ["probe", "RFacts", "host_is_r", "locate_r", "r_host", "scripts_dir"]


def scripts_dir() -> Path:
    """rcompat/r_scripts/, package data beside this package in a checkout and an installed wheel alike;
    RCOMPAT_R_SCRIPTS overrides (a copy elsewhere). Here, not in rcompat.r.facts, so that the doctor's
    race trial names r_facts.R to its child without importing the R probe's modules first (~5 ms
    before the run's longest child starts)."""
    override = os.environ.get("RCOMPAT_R_SCRIPTS")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "r_scripts"


def probe(*args, **kwargs):
    from rcompat.r.facts import probe as _probe

    return _probe(*args, **kwargs)


def __getattr__(name: str):
    if name in ("RFacts", "PackageFact"):
        from rcompat.r import facts

        return getattr(facts, name)
    raise AttributeError(name)
