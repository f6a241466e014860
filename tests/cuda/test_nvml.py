"""NVML probe: the real library here (no driver), a fake at the pynvml seam for what needs a GPU."""
from __future__ import annotations

import subprocess
import sys

import pynvml
import pytest

from rcompat.cuda.nvml import NO_DRIVER_REASON, decode_cuda_driver_version, probe_nvml, processes_by_kind


def _driver_present() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


def test_real_nvml_without_driver_is_a_skip_reason_not_an_exception():
    if _driver_present():
        pytest.skip("an NVIDIA driver is present; the no-driver path needs a machine without one")
    facts = probe_nvml()
    assert facts.status == "no-driver"
    assert facts.reason == "no NVIDIA driver (libnvidia-ml.so.1 not found)" == NO_DRIVER_REASON
    assert facts.error == "NVML Shared Library Not Found"
    assert facts.gpus == []


@pytest.mark.gpu
def test_real_nvml_reports_driver_and_gpus():
    if not _driver_present():
        pytest.skip("no NVIDIA driver on this machine (libnvidia-ml.so.1 not found)")
    facts = probe_nvml()
    assert facts.status == "ok"
    assert facts.driver_version and facts.driver_version[0].isdigit()
    assert facts.cuda_driver_version and "." in facts.cuda_driver_version
    assert facts.gpus and all(g.uuid and g.uuid.startswith(("GPU-", "MIG-")) for g in facts.gpus)
    assert all(g.compute_capability and g.memory_total_mib for g in facts.gpus)


def test_missing_pynvml_says_how_to_install_it():
    code = ("import sys; sys.modules['pynvml'] = None\n"
            "from rcompat.cuda.nvml import probe_nvml\nf = probe_nvml()\nprint(f.status, '|', f.reason)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "no-pynvml | pynvml is not installed: pip install nvidia-ml-py"


def test_two_gpus_with_memory_capability_and_decoded_cuda_version(nvml_fake):
    fake = nvml_fake.Nvml(driver="535.104.05", cuda=12020, gpus=[
        nvml_fake.Gpu(name="NVIDIA A100-SXM4-40GB", uuid="GPU-aaaa", cc=(8, 0), used=3 * 2**30),
        nvml_fake.Gpu(name="Tesla K80", uuid="GPU-bbbb", cc=(3, 7), total=12 * 2**30, used=0)])
    facts = probe_nvml(fake)
    assert facts.status == "ok" and fake.shutdowns == 1
    assert facts.driver_version == "535.104.05" and facts.cuda_driver_version == "12.2"
    assert [(g.index, g.name, g.uuid, g.compute_capability) for g in facts.gpus] == [
        (0, "NVIDIA A100-SXM4-40GB", "GPU-aaaa", "8.0"), (1, "Tesla K80", "GPU-bbbb", "3.7")]
    assert facts.gpus[0].memory_total_mib == 40960.0 and facts.gpus[0].memory_used_mib == 3072.0
    assert facts.uuids == ["GPU-aaaa", "GPU-bbbb"]


def test_processes_named_from_proc_show_r_and_python_sharing_a_gpu(nvml_fake, r_and_python_processes):
    r_proc, py_proc = r_and_python_processes
    fake = nvml_fake.Nvml(gpus=[nvml_fake.Gpu(pids=[(r_proc.pid, 512 * 2**20), (py_proc.pid, 2**64 - 1)])])
    facts = probe_nvml(fake)
    procs = facts.gpus[0].processes
    assert [(p.pid, p.name) for p in procs][0] == (r_proc.pid, "R")
    assert procs[1].name.startswith("python")
    assert procs[0].used_memory_mib == 512.0 and procs[1].used_memory_mib is None  # NVML "not available"
    assert processes_by_kind(facts) == {"R": [r_proc.pid], "python": [py_proc.pid]}


def test_init_error_is_an_error_status_with_nvml_text(nvml_fake):
    fake = nvml_fake.Nvml(fail={"nvmlInit": pynvml.NVML_ERROR_DRIVER_NOT_LOADED})
    facts = probe_nvml(fake)
    assert facts.status == "error"
    assert facts.error == "Driver Not Loaded"
    assert "Driver Not Loaded" in facts.reason


def test_library_not_found_from_the_seam_is_the_no_driver_skip(nvml_fake):
    facts = probe_nvml(nvml_fake.Nvml(fail={"nvmlInit": pynvml.NVML_ERROR_LIBRARY_NOT_FOUND}))
    assert (facts.status, facts.reason) == ("no-driver", NO_DRIVER_REASON)


def test_v2_cuda_version_missing_libcuda_and_per_gpu_errors_are_recorded(nvml_fake):
    gpu = nvml_fake.Gpu(fail={"nvmlDeviceGetComputeRunningProcesses": pynvml.NVML_ERROR_NOT_SUPPORTED})
    fake = nvml_fake.Nvml(gpus=[gpu], fail={"nvmlSystemGetCudaDriverVersion_v2": pynvml.NVML_ERROR_LIBRARY_NOT_FOUND})
    facts = probe_nvml(fake)
    assert facts.status == "ok" and facts.cuda_driver_version is None
    assert facts.errors == {"cuda_driver_version": "NVML Shared Library Not Found"}
    assert facts.gpus[0].errors == {"processes": "Not Supported"}
    assert facts.gpus[0].compute_capability == "8.0"


def test_device_count_error_makes_the_probe_an_error(nvml_fake):
    facts = probe_nvml(nvml_fake.Nvml(fail={"nvmlDeviceGetCount": pynvml.NVML_ERROR_UNKNOWN}))
    assert facts.status == "error" and facts.error == "Unknown Error"


def test_decode_cuda_driver_version():
    assert decode_cuda_driver_version(12040) == "12.4"
    assert decode_cuda_driver_version(11080) == "11.8"
    assert decode_cuda_driver_version(13000) == "13.0"
