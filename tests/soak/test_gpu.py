"""The CUDA paths for real (skipped without a GPU): kept tensors on the device are a leak confirmed by
allocator and driver (PyTorch's rule), a caching workload's reserved memory is a plateau."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.gpu

LEAK_CUDA = '''
import torch
KEPT = []
def keep(x):
    KEPT.append(torch.ones(8 << 20, device="cuda"))  # 32 MiB kept per iteration
CASES = {"keep": keep}
'''

CACHE_CUDA = '''
import torch
STATE = {"i": 0}
def churn(x):
    # tensors of growing sizes, all freed: the caching allocator keeps their segments, up to a plateau
    STATE["i"] += 1
    for n in range(1, 1 + min(STATE["i"], 8)):
        torch.ones(n << 20, device="cuda").sum().item()
CASES = {"churn": churn}
'''


@pytest.fixture(scope="module")
def cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: torch.cuda.is_available() is False")


def _run(cli, tmp_path, text: str) -> tuple[int, dict]:
    cases = tmp_path / "cases.py"
    cases.write_text(text)
    proc = cli("soak", "--device", "cuda", "--cases", str(cases), "--iterations", "24", "--warmups", "2",
               "--format", "json", timeout=600)
    assert proc.stdout.startswith("{"), proc.stderr
    return proc.returncode, {f["id"]: f for f in json.loads(proc.stdout)["findings"]}


def test_tensors_kept_on_the_device_are_a_leak_seen_by_allocator_and_driver(cuda, cli, tmp_path):
    code, found = _run(cli, tmp_path, LEAK_CUDA)
    f = found["SOAK-CUDA"]
    assert code == 1 and f["status"] == "fail" and f["evidence"]["rule"] == "SOAK-CUDA-LEAK", f
    assert 31 << 20 <= f["evidence"]["cuda_allocated"]["tail_slope"] <= 33 << 20
    assert f["evidence"]["projected_iterations"] > 0


def test_the_caching_allocator_filling_up_is_a_plateau(cuda, cli, tmp_path):
    code, found = _run(cli, tmp_path, CACHE_CUDA)
    f = found["SOAK-CUDA"]
    assert f["status"] == "ok", f
    assert f["evidence"]["cuda_allocated"]["verdict"] == "flat"
    assert f["evidence"]["cuda_reserved"]["verdict"] in ("plateau", "flat")


def test_compile_on_the_gpu_compiles_or_names_triton(cuda, cli):
    proc = cli("compile", "--device", "cuda", "--cases", "mlp_forward_f32", "--repeat", "5", "--format", "json",
               timeout=900)
    f = {x["id"]: x for x in json.loads(proc.stdout)["findings"]}["COMPILE-MLP_FORWARD_F32"]
    if f["evidence"]["environment"]["triton"]:
        assert f["evidence"]["status"] == "compiled" and f["evidence"]["within"] is True, f
    else:
        assert f["status"] == "fail" and "Triton" in f["title"], f
