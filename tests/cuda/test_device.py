"""rcompat.device(): the decision, its reasons, and the cache keyed by driver, GPUs and packages."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os

import pytest

import rcompat
from rcompat.cuda.device import CACHE_FILE, choose_device, default_cache_dir, package_versions
from rcompat.cuda.nvml import NO_DRIVER_REASON

HAS_TORCH = importlib.util.find_spec("torch") is not None
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_ENABLE")}


def _choose(nvml, cache_dir, **kw):
    return choose_device(nvml=nvml, cache_dir=cache_dir, env=CLEAN_ENV, timeout=120, **kw)


def test_no_driver_here_means_cpu_with_the_nvml_reason(tmp_path):
    choice = rcompat.device(cache_dir=tmp_path, env=CLEAN_ENV)
    if choice.facts.get("nvml_status") != "no-driver":
        pytest.skip("an NVIDIA driver is present")
    assert (choice.device, choice.reason) == ("cpu", NO_DRIVER_REASON)
    assert str(choice) == "cpu"
    assert not (tmp_path / CACHE_FILE).exists()  # NVML answers fast: nothing to cache


@pytest.mark.parametrize("env,reason", [
    ({"CUDA_ENABLE": "0"}, "CUDA_ENABLE=0 disables CUDA"),
    ({"CUDA_VISIBLE_DEVICES": ""}, "CUDA_VISIBLE_DEVICES='' hides every GPU"),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, "CUDA_VISIBLE_DEVICES='-1' hides every GPU"),
])
def test_environment_overrides_come_first(nvml_fake, tmp_path, env, reason):
    choice = choose_device(nvml=nvml_fake.Nvml(), cache_dir=tmp_path, env={**CLEAN_ENV, **env})
    assert (choice.device, choice.reason) == ("cpu", reason)


def test_nvml_error_and_no_gpu_mean_cpu(nvml_fake, tmp_path):
    import pynvml

    err = _choose(nvml_fake.Nvml(fail={"nvmlInit": pynvml.NVML_ERROR_DRIVER_NOT_LOADED}), tmp_path)
    assert (err.device, err.reason) == ("cpu", "NVML error: Driver Not Loaded")
    none = _choose(nvml_fake.Nvml(driver="550.54.14", gpus=[]), tmp_path)
    assert (none.device, none.reason) == ("cpu", "driver 550.54.14 reports no GPU")


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed (make test installs the CPU wheel)")
def test_gpu_with_cpu_torch_is_cpu_and_the_cache_is_keyed(nvml_fake, tmp_path, monkeypatch):
    choice = _choose(nvml_fake.Nvml(), tmp_path)
    assert choice.device == "cpu" and choice.reason.startswith("CPU-only build of torch")
    assert choice.facts["cache"] == "miss"
    written = json.loads((tmp_path / CACHE_FILE).read_text())
    assert written["key"]["driver"] == "550.54.14"
    assert written["key"]["gpus"] == ["GPU-11111111-2222-3333-4444-555555555555"]
    assert written["key"]["packages"]["torch"] == importlib.metadata.version("torch")

    again = _choose(nvml_fake.Nvml(), tmp_path)
    assert again.facts["cache"] == "hit" and again.reason == choice.reason

    # each key invalidates: the driver …
    assert _choose(nvml_fake.Nvml(driver="555.42.02"), tmp_path).facts["cache"] == "stale"
    assert _choose(nvml_fake.Nvml(driver="555.42.02"), tmp_path).facts["cache"] == "hit"
    # … the GPU UUIDs …
    other_gpu = nvml_fake.Gpu(uuid="GPU-99999999-0000-0000-0000-000000000000")
    assert _choose(nvml_fake.Nvml(driver="555.42.02", gpus=[other_gpu]), tmp_path).facts["cache"] == "stale"
    # … and the package versions (a real distribution put first on sys.path, read by importlib.metadata)
    site = tmp_path / "site"
    dist = site / "torch-99.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 99.0.0\n")
    monkeypatch.syspath_prepend(str(site))
    assert package_versions()["torch"] == "99.0.0"
    changed = _choose(nvml_fake.Nvml(driver="555.42.02", gpus=[other_gpu]), tmp_path)
    assert changed.facts["cache"] == "stale"
    assert json.loads((tmp_path / CACHE_FILE).read_text())["key"]["packages"]["torch"] == "99.0.0"


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed (make test installs the CPU wheel)")
@pytest.mark.parametrize("garbage", ["{not json", '{"schema": 1, "key": {}, "choice": {"device": "tpu"}}',
                                     '{"schema": 7}', "[]", ""])
def test_corrupt_cache_is_ignored_and_rewritten(nvml_fake, tmp_path, garbage):
    (tmp_path / CACHE_FILE).write_text(garbage)
    choice = _choose(nvml_fake.Nvml(), tmp_path)
    assert choice.device == "cpu"
    assert choice.facts["cache"] in ("corrupt", "stale")
    rewritten = json.loads((tmp_path / CACHE_FILE).read_text())
    assert rewritten["schema"] == 1 and rewritten["choice"]["device"] == "cpu"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # atomic: no temp file left
    assert _choose(nvml_fake.Nvml(), tmp_path).facts["cache"] == "hit"


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed (make test installs the CPU wheel)")
def test_unwritable_cache_still_answers(nvml_fake, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    choice = _choose(nvml_fake.Nvml(), blocker / "sub")
    assert choice.device == "cpu" and "cannot write the cache" in choice.facts["cache_error"]


def test_default_cache_dir_honours_xdg(tmp_path):
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "rcompat"
    assert default_cache_dir({"HOME": "/x"}).name == "rcompat"
