"""Where the R scripts rcompat runs live: a module of its own, light, so that the doctor's race trial
names r_facts.R to its child without importing the R probe's modules (rcompat.r.facts) first, ~5 ms
before the run's longest child starts."""
from __future__ import annotations

import os
from pathlib import Path


def scripts_dir() -> Path:
    """rcompat/r_scripts/, package data beside this package in a checkout and an installed wheel alike;
    RCOMPAT_R_SCRIPTS overrides (a copy elsewhere)."""
    override = os.environ.get("RCOMPAT_R_SCRIPTS")
    return Path(override) if override else Path(__file__).resolve().parents[1] / "r_scripts"
