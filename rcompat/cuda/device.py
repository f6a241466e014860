"""`rcompat.device()`: "cuda" or "cpu", with the reason, and a cache so the answer costs nothing twice.

Order of the decision (first that applies wins):
1. the environment says no: CUDA_ENABLE=0, or CUDA_VISIBLE_DEVICES empty / "-1"  (never cached: free)
2. NVML: no driver, an NVML error, or no GPU                                       (never cached: fast)
3. torch (a child process, the slow part): a CPU-only build, CUDA unavailable and why, no GPU whose
   compute capability the build was compiled for, or the matrix finding an incompatible layer
4. otherwise "cuda".
Step 3's answer is cached in $XDG_CACHE_HOME/rcompat/device.json (or ~/.cache/rcompat/device.json),
keyed by the driver version, the GPU UUIDs, the interpreter and the versions of torch, TensorFlow, JAX
and the nvidia-* wheels, read from metadata without importing them. A change of any key recomputes;
an unreadable or corrupt file is ignored and rewritten atomically.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rcompat.atomic import write_text_atomic
from rcompat.cache import clear_damaged, default_cache_dir, enabled as cache_enabled
from rcompat.cuda.nvml import NvmlFacts, probe_nvml
from rcompat.cuda.torch_probe import arch_support, devices_hidden, explain_unavailable, probe_torch
from rcompat.inputs import read_if_regular

CACHE_SCHEMA = 1
CACHE_FILE = "device.json"
CACHE_LIMIT = 1 << 20  # bytes: the entry is a few hundred; anything bigger is not one
DISABLED_VALUES = ("0", "false", "no", "off")
KEY_PACKAGE_PREFIXES = ("torch", "tensorflow", "jax", "nvidia-")


@dataclass
class DeviceChoice:
    device: str          # "cuda" | "cpu"
    reason: str
    remedy: str = ""
    facts: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.device

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def choose_device(nvml: Any = None, cache_dir: "str | os.PathLike[str] | None" = None, use_cache: bool = True,
                  env: Mapping[str, str] | None = None, timeout: float = 60.0,
                  tables_dir: "str | os.PathLike[str] | None" = None) -> DeviceChoice:
    env = dict(os.environ if env is None else env)
    if cache_dir is not None and os.path.lexists(cache_dir) and not os.path.isdir(cache_dir):
        from rcompat.errors import UsageError

        raise UsageError(f"cache directory {cache_dir}: not a directory")  # before any answer ignores it
    early = _environment_says_no(env)
    if early:
        return early
    nv = probe_nvml(nvml, timeout=timeout)
    early = _driver_says_no(nv)
    if early:
        return early
    key = cache_key(nv)
    use_cache = use_cache and cache_enabled(env)
    path = Path(cache_dir) if cache_dir is not None else default_cache_dir(env)
    cache_state = "off"
    if use_cache:
        cached, cache_state = _read_cache(path / CACHE_FILE, key)
        if cached is not None:
            cached.facts["cache"] = "hit"
            return cached
    choice = _decide_with_torch(nv, env, timeout, tables_dir)
    choice.facts.update({"key": key, "cache": cache_state})
    if use_cache:
        error = _write_cache(path, key, choice)
        if error:
            choice.facts["cache_error"] = error
    return choice


def _environment_says_no(env: Mapping[str, str]) -> DeviceChoice | None:
    enable = env.get("CUDA_ENABLE")
    if enable is not None and enable.strip().lower() in DISABLED_VALUES:
        return DeviceChoice("cpu", f"CUDA_ENABLE={enable} disables CUDA", "unset CUDA_ENABLE to allow the GPU",
                            {"decided_by": "environment"})
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if devices_hidden(visible):
        return DeviceChoice("cpu", f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU",
                            "unset CUDA_VISIBLE_DEVICES or list the GPUs to use", {"decided_by": "environment"})
    return None


def _driver_says_no(nv: NvmlFacts) -> DeviceChoice | None:
    facts = {"decided_by": "nvml", "nvml_status": nv.status}
    if nv.status == "no-driver":
        return DeviceChoice("cpu", nv.reason, "install the NVIDIA driver to use a GPU", facts)
    if nv.status == "no-pynvml":
        return None  # without NVML torch's child still knows whether CUDA works
    if nv.status != "ok":
        return DeviceChoice("cpu", f"NVML error: {nv.error or nv.reason}", "check the driver with nvidia-smi", facts)
    if not nv.gpus:
        return DeviceChoice("cpu", f"driver {nv.driver_version} reports no GPU", "check the GPU with nvidia-smi",
                            facts)
    return None


def cache_key(nv: NvmlFacts) -> dict[str, Any]:
    return {"driver": nv.driver_version, "gpus": sorted(nv.uuids), "python": sys.executable,
            "packages": package_versions()}


def package_versions() -> dict[str, str]:
    """Versions of the distributions that change the answer, from metadata (nothing is imported)."""
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()
        if name.startswith(KEY_PACKAGE_PREFIXES):
            out.setdefault(name, dist.version)  # first on sys.path wins, as import does
    return dict(sorted(out.items()))


def _read_cache(file: Path, key: dict[str, Any]) -> tuple[DeviceChoice | None, str]:
    if not os.path.lexists(file):
        return None, "miss"
    raw = read_if_regular(file, CACHE_LIMIT)  # a FIFO, a directory or a huge file is no entry
    if raw is None:
        return None, "unreadable"
    try:
        data = json.loads(raw.decode("utf-8"))
        if data.get("schema") != CACHE_SCHEMA:
            return None, "corrupt"
        if data.get("key") != json.loads(json.dumps(key)):
            return None, "stale"
        choice = data["choice"]
        if choice["device"] not in ("cuda", "cpu"):
            return None, "corrupt"
        return DeviceChoice(choice["device"], choice["reason"], choice.get("remedy", ""),
                            dict(choice.get("facts") or {})), "hit"
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, "corrupt"


def _write_cache(directory: Path, key: dict[str, Any], choice: DeviceChoice) -> str | None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        facts = {k: v for k, v in choice.facts.items() if k not in ("key", "cache")}
        payload = {"schema": CACHE_SCHEMA, "key": key,
                   "choice": {"device": choice.device, "reason": choice.reason, "remedy": choice.remedy,
                              "facts": facts}}
        clear_damaged(directory / CACHE_FILE)  # a directory or FIFO there would block every rewrite
        write_text_atomic(directory / CACHE_FILE, json.dumps(payload, indent=1, default=str) + "\n")
    except Exception as exc:  # noqa: BLE001 - a read-only home must not stop the answer
        return f"cannot write the cache in {directory}: {exc}"
    return None


def _decide_with_torch(nv: NvmlFacts, env: Mapping[str, str], timeout: float, tables_dir) -> DeviceChoice:
    return decide(nv, probe_torch(timeout=timeout, env=env), tables_dir)


def decide(nv: NvmlFacts, torch: Mapping[str, Any], tables_dir=None, env: Mapping[str, str] | None = None
           ) -> DeviceChoice:
    """The choice from facts already gathered (the doctor's CUDA-DEVICE check uses this, uncached)."""
    if env is not None:
        early = _environment_says_no(env) or _driver_says_no(nv)
        if early:
            return early
    facts: dict[str, Any] = {"decided_by": "torch", "torch_status": torch.get("status"),
                             "torch": torch.get("version"), "torch_cuda": torch.get("cuda"),
                             "driver": nv.driver_version,
                             "gpus": [{"name": g.name, "uuid": g.uuid, "cc": g.compute_capability} for g in nv.gpus]}
    if torch["status"] == "not-installed":
        if nv.status == "ok":
            return DeviceChoice("cuda", f"driver {nv.driver_version} sees {_gpu_list(nv)}; torch is not installed "
                                "to confirm that a framework can use it", "", facts)
        return DeviceChoice("cpu", "neither NVML nor torch is available to show a usable GPU",
                            "pip install nvidia-ml-py (and a CUDA build of torch)", facts)
    if torch["status"] != "ok":
        return DeviceChoice("cpu", f"torch could not be probed: {torch.get('reason')}",
                            "run `rcompat cuda probe` for details", facts)
    from rcompat.cuda.matrix import check_stack  # noqa: PLC0415 - only on a cache miss
    from rcompat.cuda.tables import load_tables  # noqa: PLC0415

    tables = load_tables(tables_dir)
    why = explain_unavailable(torch, tables.min_driver)
    if why:
        facts["explanation"] = why["id"]
        return DeviceChoice("cpu", why["message"], why["remedy"], facts)
    arch = torch.get("arch_list") or []
    with_cc = [g for g in nv.gpus if g.compute_capability]
    if arch and with_cc:
        verdicts = {g.index: arch_support(arch, g.compute_capability) for g in with_cc}
        facts["arch"] = {str(i): how for i, (_, how) in verdicts.items()}
        if not any(ok for ok, _ in verdicts.values()):
            first = with_cc[0]
            return DeviceChoice("cpu", f"GPU {first.index} ({first.name}, compute capability "
                                f"{first.compute_capability}) is not supported by torch {torch.get('version')}: "
                                f"{verdicts[first.index][1]}", "install a torch build compiled for this GPU "
                                "(older GPUs need older torch releases)", facts)
    stack = {k: v for k, v in (("driver", nv.driver_version), ("torch", torch.get("version")),
                               ("cuda", torch.get("cuda")), ("cudnn", torch.get("cudnn_version"))) if v}
    summary = check_stack(stack, tables)[-1]
    facts["matrix"] = summary.status.value
    if summary.status.value == "fail":
        return DeviceChoice("cpu", f"matrix: {summary.title}: {summary.message}", summary.remedy, facts)
    seen = _gpu_list(nv) if nv.gpus else f"{len(torch.get('devices') or [])} GPU(s) torch sees"
    return DeviceChoice("cuda", f"torch {torch.get('version')} (CUDA {torch.get('cuda')}) can use {seen}", "", facts)


def _gpu_list(nv: NvmlFacts) -> str:
    names = [f"GPU {g.index} {g.name or '?'} (cc {g.compute_capability or '?'})" for g in nv.gpus]
    return f"{len(names)} GPU(s): " + ", ".join(names) if names else "no GPU"
