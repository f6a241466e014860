"""Parity records made once per session by the real CLI on this machine's CPU torch, and the
torch-parity stand-in R package installed with the real `R CMD INSTALL` into a temp library."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest


def _load_helpers():
    spec = importlib.util.spec_from_file_location("parity_test_helpers", Path(__file__).with_name("_helpers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HELPERS = _load_helpers()


@pytest.fixture(scope="session")
def ph():
    """tests/parity/_helpers.py"""
    return HELPERS


@pytest.fixture(scope="session")
def records(tmp_path_factory) -> dict[str, Path]:
    """Two records of the built-in suite, with 1 and with 2 torch threads."""
    HELPERS.needs_torch()
    root = tmp_path_factory.mktemp("parity")
    out = {}
    for threads in (1, 2):
        path = root / f"threads{threads}.npz"
        proc = HELPERS.run_cli("parity", "record", "--output", str(path), "--threads", str(threads))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out[f"threads{threads}"] = path
    return out


@pytest.fixture(scope="session")
def stand_in_lib(tmp_path_factory, r_install) -> Path:
    """A library holding the torch-parity stand-in as package `torch`."""
    root = tmp_path_factory.mktemp("parity-rlib")
    stage = root / "stage" / "torch"
    shutil.copytree(HELPERS.STAND_IN, stage)
    return r_install(root / "lib", stage)
