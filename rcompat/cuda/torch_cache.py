"""The torch child's facts, kept between runs: importing torch is most of a warm doctor run's work.

An entry is reused only while everything that could change the child's answer is the same: the
interpreter, torch's own files (version.py, the torch/lib directory, the native extension), the
versions of torch/TensorFlow/JAX and the nvidia-* wheels (rcompat.cuda.device.cache_key), the driver
and the GPUs NVML sees, and the environment variables CUDA and the loader read. Only a probe that
succeeded is kept: a crash or a hang is asked again next time. The file is
$XDG_CACHE_HOME/rcompat/torch/facts.json behind rcompat.cache's checked header.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Mapping

from rcompat import cache
from rcompat.cuda.nvml import NvmlFacts
from rcompat.cuda.torch_probe import facts_of_record, probe_torch, torch_distribution

FACTS_FORMAT = 1
ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "CUDA_ENABLE", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD",
            "PYTHONPATH", "PYTORCH_NVML_BASED_CUDA_CHECK", "CUDA_MODULE_LOADING")


def cached_probe_torch(nv: NvmlFacts, timeout: float = 60.0, env: Mapping[str, str] | None = None,
                       shared: Callable[[], Mapping[str, Any] | None] | None = None) -> dict[str, Any]:
    """probe_torch(), answered from the cache when its key still holds; `from_cache` says which.
    `shared()`, asked before a torch child is started, may hand over what another child that imported
    torch reported ({"record": torch_child.torch_facts(), "duration_s": …}; the doctor's race trial)."""
    env = dict(os.environ if env is None else env)
    dist = torch_distribution()
    if dist is None:
        return probe_torch(timeout=timeout, env=env)
    if not cache.enabled(env):
        return _from_shared(shared, dist, env) or probe_torch(timeout=timeout, env=env)
    key = facts_key(nv, dist, env)
    entry = cache.entry_path("torch", "facts.json")
    stored = _read(entry, key)
    if stored is not None:
        return {**stored, "from_cache": True}
    facts = _from_shared(shared, dist, env) or probe_torch(timeout=timeout, env=env)
    if facts.get("status") == "ok":
        cache.write_json(entry, FACTS_FORMAT, key, {"facts": facts})
    return facts


def _from_shared(shared, dist: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any] | None:
    given = shared() if shared is not None else None
    if not given or not isinstance(given.get("record"), dict) or not given["record"].get("imported"):
        return None
    return facts_of_record(given["record"], dist, float(given.get("duration_s") or 0.0), env)


def facts_key(nv: NvmlFacts, dist: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    from rcompat.cuda.device import cache_key

    location = dist.get("location") or ""
    files = {}
    for rel in ("version.py", "lib", *_native_extensions(location)):
        files[rel] = cache.file_stamp(os.path.join(location, rel))
    return {**cache_key(nv), "python_version": sys.version, "nvml": nv.status, "cuda_driver": nv.cuda_driver_version,
            "location": location, "files": files, "env": {k: env.get(k) for k in ENV_KEYS}}


def _native_extensions(location: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(location) if n.startswith("_C.") and n.endswith(".so"))
    except OSError:
        return []


def _read(entry, key: dict[str, Any]) -> dict[str, Any] | None:
    data = cache.read_json(entry, FACTS_FORMAT, key)
    facts = None if data is None else data.get("facts")
    return dict(facts) if isinstance(facts, dict) and facts.get("status") == "ok" else None
