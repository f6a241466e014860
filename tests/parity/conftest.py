"""Parity records made once per session by the real CLI on this machine's CPU torch, and the
torch-parity stand-in R package installed with the real `R CMD INSTALL` into a temp library."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ph(load_helper):
    """tests/parity/_helpers.py"""
    return load_helper("parity_test_helpers", Path(__file__).with_name("_helpers.py"))


@pytest.fixture(scope="session")
def records(build_once, ph) -> dict[str, Path]:
    """Two records of the built-in suite, with 1 and with 2 torch threads (once for all xdist workers)."""
    ph.needs_torch()

    def record(root: Path) -> dict[str, Path]:
        out = {}
        for threads in (1, 2):
            path = root / f"threads{threads}.npz"
            proc = ph.run_cli("parity", "record", "--output", str(path), "--threads", str(threads))
            assert proc.returncode == 0, proc.stdout + proc.stderr
            out[f"threads{threads}"] = path
        return out

    return build_once("parity-records", record)


@pytest.fixture(scope="session")
def stand_in_lib(torch_parity_lib) -> Path:
    """A library holding the torch-parity stand-in as package `torch` (tests/conftest.py)."""
    return torch_parity_lib
