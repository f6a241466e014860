#!/usr/bin/env python3
"""Print the pip requirement of the rpy2 that fits the R on PATH (stdlib only: runs before any install).

The pairing lives in rcompat/data/rpy2_r.csv, so a new R release means a new table row, not new code.
"""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "rcompat" / "data" / "rpy2_r.csv"


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def r_version() -> str:
    out = subprocess.run(["Rscript", "-e", "cat(R.version$major, R.version$minor, sep='.')"],
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


def requirement(version: str) -> str:
    rows = csv.DictReader(ln for ln in TABLE.read_text().splitlines() if not ln.startswith("#"))
    for row in rows:
        lo, hi = row["r_min"], row["r_max_exclusive"]
        if _key(version) >= _key(lo) and (not hi or _key(version) < _key(hi)):
            return row["rpy2_requirement"]
    raise SystemExit(f"no rpy2 known to fit R {version}; add a row to {TABLE}")


if __name__ == "__main__":
    print(requirement(sys.argv[1] if len(sys.argv) > 1 else r_version()))
