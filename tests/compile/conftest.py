"""torch.compile runs made once per session by the real CLI: one small model (the suite's
mlp_forward_f32) compiled with this machine's gcc, and the same model with the compiler taken away
in the child's environment (CXX and PATH), once with dynamo's errors raised and once suppressed."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASE = "mlp_forward_f32"
# No compiler anywhere: CXX names none, and PATH holds no directory with g++/c++/clang++ (the child is
# started by absolute path, so it needs no PATH of its own).
NO_COMPILER = {"CXX": "/nonexistent/g++", "PATH": "/nonexistent-bin"}


def run_cli(*args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "TORCHDYNAMO_SUPPRESS_ERRORS"}
    return subprocess.run([sys.executable, "-m", "rcompat", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(REPO), env={**full, **(env or {})})


@pytest.fixture(scope="session")
def needs_torch_and_gcc(gcc):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed in this interpreter (make test installs the CPU wheel)")


@pytest.fixture(scope="session")
def compiled(needs_torch_and_gcc):
    return run_cli("compile", "--cases", CASE, "--repeat", "5", "--format", "json")


@pytest.fixture(scope="session")
def no_compiler_raises(needs_torch_and_gcc):
    return run_cli("compile", "--cases", CASE, "--repeat", "5", "--format", "json", env=NO_COMPILER)


@pytest.fixture(scope="session")
def no_compiler_suppressed(needs_torch_and_gcc):
    return run_cli("compile", "--cases", CASE, "--repeat", "5", "--format", "json",
                   env={**NO_COMPILER, "TORCHDYNAMO_SUPPRESS_ERRORS": "1"})
