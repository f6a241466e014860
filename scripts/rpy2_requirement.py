#!/usr/bin/env python3
"""Print the pip requirement of the rpy2 that fits the R on PATH.

Runs before anything is installed, so it imports only the stdlib-only parts of rcompat from this
checkout. The pairing is the [[rpy2]] table of rcompat/data/r_rules.toml (the same rows the R engine's
R-RPY2 check uses), so a new R release means a new table row, not new code.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rcompat.data import data_path, load_toml  # noqa: E402
from rcompat.versions import matches  # noqa: E402


def r_version() -> str:
    out = subprocess.run(["Rscript", "-e", "cat(R.version$major, R.version$minor, sep='.')"],
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


def requirement(version: str) -> str:
    for row in load_toml(data_path("r_rules.toml"), "rpy2", required=("id", "R", "pip", "source")):
        if matches(version, row["R"]):
            return row["pip"]
    raise SystemExit(f"no rpy2 known to fit R {version}; add an [[rpy2]] row to rcompat/data/r_rules.toml")


if __name__ == "__main__":
    print(requirement(sys.argv[1] if len(sys.argv) > 1 else r_version()))
