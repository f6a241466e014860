"""CUDA test fixtures. The one fake is FakeNvml: an object with pynvml's function names, passed through
the seam rcompat.cuda.nvml.probe_nvml(nvml=...) because this machine has no NVIDIA driver. Its errors
are pynvml's own exception classes, so error text and codes are the library's."""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pynvml
import pytest

HERE = Path(__file__).resolve().parent
TABLES = HERE / "tables"
TABLES_BAD = HERE / "tables_contradictory"


@dataclass
class FakeGpu:
    name: str = "NVIDIA A100-SXM4-40GB"
    uuid: str = "GPU-11111111-2222-3333-4444-555555555555"
    cc: tuple = (8, 0)
    total: int = 40 * 2**30
    used: int = 2 * 2**30
    pids: list = field(default_factory=list)   # (pid, used bytes)
    fail: dict = field(default_factory=dict)   # function name -> NVML error code


class FakeNvml:
    """pynvml's surface as rcompat uses it; `fail` maps a function name to an NVML error code."""

    NVMLError = pynvml.NVMLError
    NVML_ERROR_LIBRARY_NOT_FOUND = pynvml.NVML_ERROR_LIBRARY_NOT_FOUND

    def __init__(self, driver="550.54.14", cuda=12040, gpus=None, fail=None):
        self.driver, self.cuda = driver, cuda
        self.gpus = [FakeGpu()] if gpus is None else gpus
        self.fail = dict(fail or {})
        self.shutdowns = 0

    def _maybe_fail(self, name, gpu=None):
        code = (gpu.fail if gpu else {}).get(name) or self.fail.get(name)
        if code:
            raise pynvml.NVMLError(code)

    def nvmlInit(self):
        self._maybe_fail("nvmlInit")

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        self._maybe_fail("nvmlSystemGetDriverVersion")
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self):
        self._maybe_fail("nvmlSystemGetCudaDriverVersion_v2")
        return self.cuda

    def nvmlDeviceGetCount(self):
        self._maybe_fail("nvmlDeviceGetCount")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        return self.gpus[index]

    def nvmlDeviceGetName(self, gpu):
        self._maybe_fail("nvmlDeviceGetName", gpu)
        return gpu.name.encode()  # older pynvml returns bytes

    def nvmlDeviceGetUUID(self, gpu):
        self._maybe_fail("nvmlDeviceGetUUID", gpu)
        return gpu.uuid

    def nvmlDeviceGetCudaComputeCapability(self, gpu):
        self._maybe_fail("nvmlDeviceGetCudaComputeCapability", gpu)
        return gpu.cc

    def nvmlDeviceGetMemoryInfo(self, gpu):
        self._maybe_fail("nvmlDeviceGetMemoryInfo", gpu)
        return SimpleNamespace(total=gpu.total, used=gpu.used, free=gpu.total - gpu.used)

    def nvmlDeviceGetComputeRunningProcesses(self, gpu):
        self._maybe_fail("nvmlDeviceGetComputeRunningProcesses", gpu)
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in gpu.pids]


@pytest.fixture
def nvml_fake():
    """FakeNvml and FakeGpu, for building the driver a test needs."""
    return SimpleNamespace(Nvml=FakeNvml, Gpu=FakeGpu)


@pytest.fixture
def r_and_python_processes():
    """Two real processes, an R and a Python, standing in for the holders of two CUDA contexts."""
    r = shutil.which("R")
    if not r:
        pytest.skip("R not installed (make test installs r-base-core)")
    procs = [subprocess.Popen([r, "--vanilla", "-s", "-e", "Sys.sleep(60)"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL),
             subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])]
    deadline = time.monotonic() + 10
    # Until each child has exec'd, /proc/PID/comm still names the parent (pytest); R's shell wrapper
    # execs the R binary later still. Wait for both names.
    while time.monotonic() < deadline:
        try:
            names = [Path(f"/proc/{p.pid}/comm").read_text().strip() for p in procs]
        except OSError:
            names = []
        if names and names[0] == "R" and names[1].startswith("python"):
            break
        time.sleep(0.05)
    yield procs
    for p in procs:
        p.kill()
        p.wait()
