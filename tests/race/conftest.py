"""Fixtures of the race tests: the gcc-built crash library and a guard that no trial child survives."""
from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SPIED = ("rcompat.cuda.torch_probe", "rcompat.race.runner", "rcompat.r.facts")  # they import run_python_child by name


@pytest.fixture(scope="session")
def r_and_torch() -> None:
    for module in ("rpy2", "torch"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (make test installs it into .venv)")


@pytest.fixture(scope="session")
def null_deref_lib(gcc, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("race") / "libnullderef.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O0", "-Wl,--build-id", "-o", str(out),
                    str(FIXTURES / "race" / "null_deref.c")], check=True)
    return str(out)


def processes_mentioning(token: str) -> list[int]:
    """Live processes whose command line contains `token` (each trial child carries its run id)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append(int(entry))
    return found


@pytest.fixture(scope="session")
def survivors():
    return processes_mentioning


@pytest.fixture
def started(monkeypatch) -> list[str]:
    """The modules of the Python children a run starts (a spy that calls the real helper)."""
    from rcompat import isolate

    modules: list[str] = []
    real = isolate.run_python_child

    def spy(module, *args, **kwargs):
        modules.append(module)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(isolate, "run_python_child", spy)
    for name in SPIED:
        monkeypatch.setattr(importlib.import_module(name), "run_python_child", spy)
    return modules
