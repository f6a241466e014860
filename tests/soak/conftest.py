"""Soak runs made once per session by the real CLI: workloads that really leak, really cache, and R
workloads whose memory a forced gc() returns. Sizes are chosen so that the verdict is unambiguous from
the bytes counted: 1 MiB kept per iteration is 256 pages, against an RSS noise of a few pages."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

FIXTURES = REPO / "fixtures" / "soak"  # leak.py, cache.py (Python); lazy.R, leak.R (R): see each file


def run_cli(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcompat", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(REPO), env={**os.environ, **(env or {})})


def needs_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed in this interpreter (make test installs the CPU wheel)")


def needs_rscript() -> None:
    if not shutil.which("Rscript"):
        pytest.skip("Rscript not installed (make test installs r-base-core)")


@pytest.fixture(scope="session")
def workloads() -> dict[str, Path]:
    return {name: FIXTURES / name for name in ("leak.py", "cache.py", "lazy.R", "leak.R")}


@pytest.fixture(scope="session")
def python_leak(workloads, tmp_path_factory):
    needs_torch()
    series = tmp_path_factory.mktemp("soak-leak") / "leak.csv"
    proc = run_cli("soak", "--cases", str(workloads["leak.py"]), "--iterations", "24", "--warmups", "2",
                   "--series", str(series), "--format", "json")
    return proc, series


@pytest.fixture(scope="session")
def python_cache(workloads):
    needs_torch()
    return run_cli("soak", "--cases", str(workloads["cache.py"]), "--iterations", "30", "--warmups", "0",
                   "--format", "json")


@pytest.fixture(scope="session")
def r_lazy(workloads):
    needs_rscript()
    return run_cli("soak", "--side", "r", "--cases", str(workloads["lazy.R"]), "--iterations", "16",
                   "--warmups", "2", "--format", "json")


@pytest.fixture(scope="session")
def r_leak(workloads):
    needs_rscript()
    return run_cli("soak", "--side", "r", "--cases", str(workloads["leak.R"]), "--iterations", "16",
                   "--warmups", "2", "--format", "json")


@pytest.fixture(scope="session")
def stand_in_torch(torch_parity_lib) -> Path:
    """A library holding rcompat's plain-R stand-in for R torch (fixtures/rpkgs/torch-parity) as `torch`."""
    return torch_parity_lib
