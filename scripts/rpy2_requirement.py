#!/usr/bin/env python3
"""Print the pip requirement of the rpy2 that fits the R on PATH.

Runs before anything is installed, so it imports only the stdlib-only parts of rcompat from this
checkout. The pairing is the [[rpy2]] table of rcompat/data/r_rules.toml (the same rows the R engine's
R-RPY2 check uses), so a new R release means a new table row, not new code.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rcompat.errors import DataError  # noqa: E402
from rcompat.r.rpy2_fit import requirement as _fit  # noqa: E402 - `rcompat r rpy2` prints the same


def r_version() -> str:
    out = subprocess.run(["Rscript", "-e", "cat(R.version$major, R.version$minor, sep='.')"],
                         capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip()


def requirement(version: str) -> str:
    try:
        return _fit(version)
    except DataError as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    if len(sys.argv) == 1 and not shutil.which("Rscript"):  # set-up goes on without rpy2; R's tests skip
        print("rcompat set-up: no Rscript on PATH: rpy2 not installed (it is built against R); "
              "the R tests will skip", file=sys.stderr)
        sys.exit(0)
    print(requirement(sys.argv[1] if len(sys.argv) > 1 else r_version()))
