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

LEAK_PY = '''
import torch
KEPT = []
def keep(x):
    KEPT.append(torch.ones(1 << 18))  # 1 MiB of float32 kept for ever: the classic training-loop leak
CASES = {"keep": keep}
'''

CACHE_PY = '''
import torch
CACHE = {}
STATE = {"i": 0}
def cached(x):
    # a cache of 8 entries of 1 MiB: it fills over the first 8 iterations, then entries are replaced
    STATE["i"] += 1
    CACHE[STATE["i"] % 8] = torch.ones(1 << 18)
CASES = {"cached": cached}
'''

LAZY_R = '''
# Each iteration drops 8 MB held in an environment with a finalizer: R frees it only at its next gc().
soak_iteration <- function(i) {
  e <- new.env()
  e$x <- numeric(1e6) + i
  reg.finalizer(e, function(env) NULL)
  invisible(NULL)
}
'''

LEAK_R = '''
kept <- new.env()
soak_iteration <- function(i) assign(paste0("x", i), numeric(131072) + i, envir = kept)  # 1 MiB kept
'''


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
def workloads(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("soak-workloads")
    files = {"leak.py": LEAK_PY, "cache.py": CACHE_PY, "lazy.R": LAZY_R, "leak.R": LEAK_R}
    for name, text in files.items():
        (root / name).write_text(text)
    return {name: root / name for name in files}


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
