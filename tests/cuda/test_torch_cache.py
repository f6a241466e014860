"""The torch child's facts, cached between runs: the real torch 2.13.0 of this venv in a real child;
the entry is used only while its key holds, a failed probe is never kept."""
from __future__ import annotations

import importlib.util
import os

import pytest

from rcompat import cache
from rcompat.cuda import torch_cache
from rcompat.cuda.nvml import probe_nvml

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "rcompat" / "torch" / "facts.json"


@pytest.fixture
def nv():
    return probe_nvml()


def test_second_probe_comes_from_the_cache_with_the_same_facts(cache_home, nv):
    first = torch_cache.cached_probe_torch(nv, timeout=120)
    assert first["status"] == "ok" and "from_cache" not in first and cache_home.is_file()
    second = torch_cache.cached_probe_torch(nv, timeout=120)
    assert second.pop("from_cache") is True
    assert second == first


def test_a_changed_key_probes_again(cache_home, nv, monkeypatch):
    torch_cache.cached_probe_torch(nv, timeout=120)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    again = torch_cache.cached_probe_torch(nv, timeout=120)
    assert "from_cache" not in again and again["cuda_visible_devices"] == ""
    key = torch_cache.facts_key(nv, again["distribution"], dict(os.environ))
    assert torch_cache._read(cache_home, key) is not None  # the new answer replaced the old one


def test_a_corrupt_entry_is_probed_again(cache_home, nv):
    torch_cache.cached_probe_torch(nv, timeout=120)
    cache_home.write_bytes(cache_home.read_bytes()[:40])
    again = torch_cache.cached_probe_torch(nv, timeout=120)
    assert again["status"] == "ok" and "from_cache" not in again


def test_a_failed_probe_is_not_kept(cache_home, nv):
    failed = torch_cache.cached_probe_torch(nv, timeout=0.05)  # killed long before torch imports
    assert failed["status"] == "failed" and not cache_home.exists()


def test_no_cache_bypasses_it(cache_home, nv):
    with cache.bypassed():
        torch_cache.cached_probe_torch(nv, timeout=120)
    assert not cache_home.exists()


def test_one_torch_child_answers_every_torch_question_of_a_doctor_run(cache_home, monkeypatch):
    from rcompat.cuda import torch_probe
    from rcompat.areas import run_doctor

    started = []
    real = torch_probe.run_python_child

    def counting(module, *args, **kwargs):
        started.append(module)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(torch_probe, "run_python_child", counting)
    options = {"r_verify": False}
    first = run_doctor(["python", "cuda"], options=options)
    assert started == [torch_probe.CHILD_MODULE]  # CUDA-TORCH, the matrix and CUDA-DEVICE share it
    ids = [f.id for f in first.findings]
    assert {"PY-TORCH", "CUDA-TORCH", "CUDA-MATRIX", "CUDA-DEVICE"} <= set(ids)
    second = run_doctor(["python", "cuda"], options=options)
    assert started == [torch_probe.CHILD_MODULE]  # the next run reads the cache
    assert second.facts["cuda"]["torch"]["from_cache"] is True
    assert [f.id for f in second.findings] == ids
    run_doctor(["cuda"], options=options, use_cache=False)
    assert len(started) == 2
