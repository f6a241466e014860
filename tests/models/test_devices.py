"""MODEL-DEVICE on a file saved on a real GPU (gpu-marked: skips without one) and MODEL-SIZE against the
GPU memory the machine reports, on checkpoints written by the real torch."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from rcompat.models.checks import Machine, check_model
from rcompat.models.engine import check_models
from rcompat.models.reader import read_model
from rcompat.models.target import find_target

from .conftest import real_load


def _one(findings, fid):
    (finding,) = [f for f in findings if f.id == fid]
    return finding


def test_model_size_against_gpu_memory(model_dir):
    info = read_model(model_dir / "saved_on_cuda0.pt")  # Linear(3, 4): 12 weights + 4 biases, float32: 64 bytes
    assert info.tensor_bytes == 64
    target = find_target()
    fits = _one(check_model(info, target, Machine([0], {0: 1.0}, "one GPU of 1 MiB"), {}), "MODEL-SIZE")
    assert fits.status.value == "ok" and fits.evidence["tensor_bytes"] == 64
    tiny = 50 / (1 << 20)  # a GPU of 50 bytes, in MiB: the 64 bytes of tensors do not fit
    too_big = _one(check_model(info, target, Machine([0], {0: tiny}, "one GPU of 50 B"), {}), "MODEL-SIZE")
    assert too_big.status.value == "warn" and "map_location='cpu'" in too_big.remedy
    # unknown memory (a --device list) and CPU-only files say nothing about size
    assert not [f for f in check_model(info, target, Machine([0], {}, "--device cuda:0"), {}) if f.id == "MODEL-SIZE"]
    cpu_file = read_model(model_dir / "state_dict.pt")
    assert not [f for f in check_model(cpu_file, target, Machine([0], {0: tiny}, "x"), {}) if f.id == "MODEL-SIZE"]


@pytest.mark.gpu
def test_saved_on_cuda0_for_real_and_checked_against_this_machine(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and driver (none here): the file must be saved from a real cuda:0 tensor")
    path = tmp_path / "on_gpu.pt"
    code = ("import sys, torch; torch.save({'w': torch.ones(256, 256, device='cuda:0'), "
            "'b': torch.zeros(3, device='cuda:0')}, sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=300)
    info = read_model(path)
    assert info.devices == ["cuda:0"] and {t.device for t in info.tensors} == {"cuda:0"}
    nvml = importlib.util.find_spec("pynvml") is not None  # nvidia-ml-py: this machine's GPUs and their memory
    spec = "auto" if nvml else ",".join(f"cuda:{i}" for i in range(torch.cuda.device_count()))
    report = check_models([str(path)], device=spec)
    assert "cuda:0" in report.facts["models"]["devices"]
    assert _one(report.findings, "MODEL-DEVICE").status.value == "ok"
    if nvml:  # GPU memory is known only through NVML
        size = _one(report.findings, "MODEL-SIZE")
        assert size.status.value == "ok" and size.evidence["tensor_bytes"] == 256 * 256 * 4 + 3 * 4
    loaded = real_load(path, "import torch; assert torch.load(path, weights_only=True)['w'].is_cuda", tmp_path)
    assert loaded["ok"], loaded
    # the same file on a machine whose only GPU is cuda:1: fails, and the remedy's map_location loads it
    moved = _one(check_model(info, find_target(), Machine([1], {}, "cuda:1 only"), {}), "MODEL-DEVICE")
    assert moved.status.value == "fail" and '{"cuda:0": "cuda:1"}' in moved.remedy
    cpu_only = _one(check_model(info, find_target(), Machine([], {}, "cpu"), {}), "MODEL-DEVICE")
    remedy_call = cpu_only.remedy.replace(repr(str(path)), "path")
    loaded = real_load(path, f"import torch; t = {remedy_call}; assert not t['w'].is_cuda", tmp_path)
    assert loaded["ok"], (cpu_only.remedy, loaded)
    out = subprocess.run([sys.executable, "-m", "rcompat", "model", "check", str(path), "--device", spec, "--format", "json", "-q"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["facts"]["models"]["devices"][0] == "cuda:0"
