"""One torch start serves the doctor's cuda and race areas: the race trial's child, after its trial,
reports what the torch child would (rcompat.race.checks.trial_torch_facts), so a cold doctor starts no
torch child of its own; without the race area (or with its trial from the cache) the torch child runs."""
from __future__ import annotations

import importlib

import pytest

doctor = importlib.import_module("rcompat.areas")  # the module, not the rcompat.doctor() function


def test_cuda_and_race_share_the_trial_childs_torch(r_and_torch, started, tmp_path, monkeypatch):
    from rcompat.cuda.torch_probe import probe_torch

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    report = doctor.run_doctor(["cuda", "race"], options={"r_verify": False})
    assert started.count("rcompat.race.worker") == 1 and "rcompat.cuda.torch_child" not in started
    shared = report.facts["cuda"]["torch"]
    own = probe_torch()  # what the torch child says
    different = {k for k in set(own) | set(shared) if own.get(k) != shared.get(k)} - {"duration_s"}
    assert shared["status"] == "ok" and different == set(), different
    statuses = {f.id: f.status.value for f in report.findings}
    assert statuses["CUDA-TORCH"] == "ok" and statuses["RACE-SERIALIZED"] == "ok"

    started.clear()  # the next run reads both from the cache: no child imports torch at all
    again = doctor.run_doctor(["cuda", "race"], options={"r_verify": False})
    assert "rcompat.race.worker" not in started and "rcompat.cuda.torch_child" not in started
    assert [(f.id, f.status) for f in again.findings] == [(f.id, f.status) for f in report.findings]


def test_without_the_race_area_the_torch_child_runs(r_and_torch, started, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    report = doctor.run_doctor(["cuda"], use_cache=False)
    # the NVML child (issue 30) imports no torch: only the torch child's start counts here
    assert started.count("rcompat.cuda.torch_child") == 1, started
    assert report.facts["cuda"]["torch"]["status"] == "ok"


@pytest.mark.gpu
def test_on_a_gpu_the_trials_torch_facts_are_the_torch_childs(r_and_torch, started, tmp_path, monkeypatch):
    """The trial child asks CUDA only after its CPU trial: is_available, the devices and the arch list
    it reports are what the torch child reports on the same machine."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and driver (none here): torch.cuda.is_available() is False")
    from rcompat.cuda.torch_probe import probe_torch

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    report = doctor.run_doctor(["cuda", "race"], options={"r_verify": False}, use_cache=False)
    assert "rcompat.cuda.torch_child" not in started
    shared, own = report.facts["cuda"]["torch"], probe_torch()
    for key in ("is_available", "devices", "arch_list", "cuda", "cudnn_version", "version"):
        assert shared.get(key) == own.get(key), key
    statuses = {f.id: f.status.value for f in report.findings}
    assert statuses["CUDA-TORCH"] == "ok" and statuses["RACE-SERIALIZED"] == "ok"
