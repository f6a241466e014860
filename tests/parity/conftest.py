"""Parity records made once per session by the real CLI on this machine's CPU torch, and the
torch-parity stand-in R package installed with the real `R CMD INSTALL` into a temp library."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ph(load_helper):
    """tests/parity/_helpers.py"""
    return load_helper("parity_test_helpers", Path(__file__).with_name("_helpers.py"))


@pytest.fixture(scope="session")
def records(tmp_path_factory, ph) -> dict[str, Path]:
    """Two records of the built-in suite, with 1 and with 2 torch threads."""
    ph.needs_torch()
    root = tmp_path_factory.mktemp("parity")
    out = {}
    for threads in (1, 2):
        path = root / f"threads{threads}.npz"
        proc = ph.run_cli("parity", "record", "--output", str(path), "--threads", str(threads))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out[f"threads{threads}"] = path
    return out


@pytest.fixture(scope="session")
def stand_in_lib(tmp_path_factory, r_install, ph) -> Path:
    """A library holding the torch-parity stand-in as package `torch`."""
    root = tmp_path_factory.mktemp("parity-rlib")
    stage = root / "stage" / "torch"
    shutil.copytree(ph.STAND_IN, stage)
    return r_install(root / "lib", stage)
