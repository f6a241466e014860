"""The cuda area of the doctor, through run_doctor; the driver is the fake at the NVML seam."""
from __future__ import annotations

import importlib.util

import pytest

from rcompat.areas import run_doctor

HAS_TORCH = importlib.util.find_spec("torch") is not None


def _doctor(nvml=None):
    options = {"r_verify": False}
    if nvml is not None:
        options["nvml"] = nvml
    report = run_doctor(["cuda"], timeout=120, options=options)
    return report, {f.id: f for f in report.findings}


def test_doctor_on_this_machine_skips_the_driver_with_the_exact_reason():
    report, found = _doctor()
    if found["CUDA-DRIVER"].status.value != "skip":
        pytest.skip("an NVIDIA driver is present")
    assert found["CUDA-DRIVER"].title == "no NVIDIA driver (libnvidia-ml.so.1 not found)"
    assert not [f for f in report.findings if f.status.value == "error"]
    assert report.facts["cuda"]["nvml"]["status"] == "no-driver"
    assert found["CUDA-DEVICE"].title.startswith("rcompat.device() would choose cpu")
    assert "CUDA-MATRIX" in found


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed (make test installs the CPU wheel)")
def test_gpus_with_a_cpu_torch_fail_and_r_python_sharing_warns(nvml_fake, r_and_python_processes):
    r_proc, py_proc = r_and_python_processes
    gpus = [nvml_fake.Gpu(uuid="GPU-a", pids=[(r_proc.pid, 2**30), (py_proc.pid, 2**30)]),
            nvml_fake.Gpu(name="NVIDIA L4", uuid="GPU-b", cc=(8, 9))]
    report, found = _doctor(nvml_fake.Nvml(driver="535.104.05", cuda=12020, gpus=gpus))
    assert found["CUDA-DRIVER"].status.value == "ok"
    assert found["CUDA-DRIVER"].title == "NVIDIA driver 535.104.05 (CUDA driver API 12.2), 2 GPU(s)"
    assert found["CUDA-GPU-0"].status.value == "warn" and "An R and a Python process" in found["CUDA-GPU-0"].message
    assert found["CUDA-GPU-1"].status.value == "ok" and "NVIDIA L4" in found["CUDA-GPU-1"].title
    torch = found["CUDA-TORCH"]
    if report.facts["cuda"]["torch"].get("cuda") is None:
        assert torch.status.value == "fail"
        assert torch.title.startswith("torch.cuda.is_available() is False: CPU-only build of torch ")
        assert found["CUDA-DEVICE"].title.startswith("rcompat.device() would choose cpu: CPU-only build")
    assert report.facts["cuda"]["stack"]["driver"] == "535.104.05"


def test_nvml_error_is_an_error_finding_with_the_nvml_text(nvml_fake):
    import pynvml

    report, found = _doctor(nvml_fake.Nvml(fail={"nvmlInit": pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH}))
    f = found["CUDA-DRIVER"]
    assert f.status.value == "error"
    assert f.title == "NVML error: RM has detected an NVML/RM version mismatch."
    assert report.exit_code() == 1
