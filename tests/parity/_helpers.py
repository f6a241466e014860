"""Helpers of tests/parity, loaded by conftest.py's `ph` fixture (tests are not a package here)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STAND_IN = REPO / "fixtures" / "rpkgs" / "torch-parity"


def run_cli(*args: str, env: dict | None = None, timeout: float = 300,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real `rcompat` in a fresh interpreter (as tests/conftest.py's `cli`, usable session-wide)."""
    return subprocess.run([sys.executable, "-m", "rcompat", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(cwd or REPO), env={**os.environ, **(env or {})})


def needs_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed in this interpreter (make test installs the CPU wheel)")


def manifest(path: Path) -> dict:
    import numpy as np

    with np.load(path, allow_pickle=False) as npz:
        return json.loads(str(npz["manifest"][()]))


def findings(proc: subprocess.CompletedProcess) -> dict[str, dict]:
    """id -> finding of a `--format json` report (ids repeat only for PARITY-SKIPPED: the last wins)."""
    return {f["id"]: f for f in json.loads(proc.stdout)["findings"]}


def rewrite(src: Path, dst: Path, edit) -> Path:
    """Copy a record through numpy, letting `edit(arrays, manifest)` change it (a hand-made record)."""
    import numpy as np

    with np.load(src, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    meta = json.loads(str(arrays.pop("manifest")[()]))
    edit(arrays, meta)
    with open(dst, "wb") as fh:
        np.savez(fh, manifest=np.array(json.dumps(meta)), **arrays)
    return dst


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rcompat: error:") and "Traceback" not in proc.stderr, lines
    for needle in needles:
        assert needle in lines[0], lines[0]
