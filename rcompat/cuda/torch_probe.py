"""Python torch's view of CUDA, from a child process (rcompat.cuda.torch_child) with a timeout.

Importing torch and initialising CUDA can hang or crash on a broken driver, so the parent never does
either: it finds torch through importlib (spec and distribution metadata), starts the child, and
explains a False `torch.cuda.is_available()` with the rules in rcompat/data/cuda_torch_unavailable.toml.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from typing import Any, Mapping

from rcompat.cuda.nvml import decode_cuda_driver_version
from rcompat.data import cached_toml
from rcompat.isolate import run_python_child

CHILD_MODULE = "rcompat.cuda.torch_child"


def torch_distribution() -> dict[str, Any] | None:
    """torch's version and location from metadata, without importing it; None when not installed."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        version = None
    origin = spec.origin or (list(spec.submodule_search_locations or [None])[0])
    return {"version": version, "location": os.path.dirname(origin) if origin else None}


def probe_torch(timeout: float = 60.0, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """status: not-installed | ok | import-error | failed (the child crashed or hung)."""
    dist = torch_distribution()
    if dist is None:
        return {"status": "not-installed", "reason": "torch is not installed in this Python"}
    result = run_python_child(CHILD_MODULE, timeout=timeout, env=dict(env) if env is not None else None)
    record = next((r["result"] for r in reversed(result.records) if "result" in r), None)
    if record is None:
        return {"status": "failed", "distribution": dist, "reason": f"the torch probe {result.describe_end()}"
                + (f" during step '{result.last_step}'" if result.last_step else ""), "child": result.to_evidence()}
    if not record.get("imported"):
        return {"status": "import-error", "distribution": dist, "reason": record.get("import_error", ""),
                "child": result.to_evidence()}
    return facts_of_record(record, dist, result.duration_s, env)


def facts_of_record(record: Mapping[str, Any], dist: Mapping[str, Any], duration_s: float,
                    env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """probe_torch()'s facts from what a child that imported torch reported (rcompat.cuda.torch_child
    .torch_facts): the torch child's own, or the doctor's race trial child's."""
    facts = {"status": "ok", "distribution": dict(dist), **record,
             "cudnn_version": decode_cudnn_version(record.get("cudnn")),
             "cuda_visible_devices": (env if env is not None else os.environ).get("CUDA_VISIBLE_DEVICES")}
    facts["duration_s"] = round(duration_s, 2)
    return facts


def decode_cudnn_version(value: Any) -> str | None:
    """cuDNN's integer: 8902 -> 8.9.2 (major*1000 + minor*100 + patch, cuDNN ≤ 8);
    90100 -> 9.1.0 (major*10000 + minor*100 + patch, cuDNN ≥ 9)."""
    if value in (None, "", 0):
        return None
    v = int(value)
    if v >= 10000:
        return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
    return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"


def public_version(version: str | None) -> str:
    return (version or "?").split("+")[0]


def devices_hidden(value: str | None) -> bool:
    """CUDA stops at the first invalid entry: "" and "-1" (or a list starting with one) hide every GPU."""
    if value is None:
        return False
    first = value.split(",")[0].strip()
    return first == "" or first.startswith("-")


def explain_unavailable(facts: Mapping[str, Any], min_driver_for=None) -> dict[str, str] | None:
    """The first rule that explains why CUDA is unavailable to torch; None when it is available.

    `min_driver_for(cuda) -> str | None` supplies {min_driver} (rcompat.cuda.tables.Tables.min_driver).
    """
    if facts.get("status") != "ok" or facts.get("is_available"):
        return None
    conditions = {"cpu_build": facts.get("cuda") is None and not facts.get("hip"),
                  "hip_build": bool(facts.get("hip")),
                  "devices_hidden": devices_hidden(facts.get("cuda_visible_devices"))}
    text = "\n".join(facts.get("messages") or [])
    for rule in cached_toml("cuda_torch_unavailable.toml", "reason"):
        found = None
        if "when" in rule:
            if not conditions.get(rule["when"]):
                continue
        else:
            match = re.search(rule["pattern"], text)
            if not match:
                continue
            if match.groups() and (match.group(1) or "").isdigit():
                found = decode_cuda_driver_version(int(match.group(1)))
        torch_cuda = facts.get("cuda") or "?"
        min_driver = (min_driver_for(torch_cuda) if min_driver_for and facts.get("cuda") else None) or "?"
        values = {"torch": public_version(facts.get("version")), "torch_cuda": torch_cuda,
                  "found": found or "?", "min_driver": min_driver,
                  "visible": facts.get("cuda_visible_devices")}
        return {"id": rule["id"], "message": rule["message"].format(**values),
                "remedy": rule.get("remedy", "").format(**values), "source": rule["source"],
                "confidence": rule.get("confidence", ""), "evidence_text": text[-2000:]}
    return {"id": "unknown", "message": "torch reports CUDA unavailable for a reason rcompat does not know",
            "remedy": "Run `python -c 'import torch; torch.cuda.init()'` to see torch's own error.",
            "source": "", "confidence": "", "evidence_text": text[-2000:]}


_ARCH = re.compile(r"^(sm|compute)_(\d+)([a-z]?)$")


def arch_support(arch_list: list[str], capability: str) -> tuple[bool, str]:
    """Can code compiled for `arch_list` run on a GPU of compute capability `capability` ("8.6")?

    NVIDIA's rules (CUDA C Programming Guide, binary and PTX compatibility): a cubin for sm_XY runs on
    X.Z for Z ≥ Y of the same major; PTX (compute_XY) is JIT-compiled for any X.Y or newer; an
    arch-specific target (sm_90a) runs on exactly that capability.
    """
    major, minor = (int(p) for p in capability.split(".")[:2])
    cc = major * 10 + minor
    parsed = [(m.group(1), int(m.group(2)), m.group(3)) for m in map(_ARCH.match, arch_list) if m]
    if any(kind == "sm" and num == cc for kind, num, _ in parsed):
        return True, f"sm_{cc} is compiled in"
    same_major = [num for kind, num, suffix in parsed
                  if kind == "sm" and not suffix and num // 10 == major and num % 10 <= minor]
    if same_major:
        return True, f"sm_{max(same_major)} cubins run on {capability} (same major)"
    ptx = [num for kind, num, _ in parsed if kind == "compute" and num <= cc]
    if ptx:
        return True, f"compute_{max(ptx)} PTX is JIT-compiled for {capability} (slow first start)"
    compiled = sorted({num for kind, num, _ in parsed if kind == "sm"})
    if compiled and cc < compiled[0]:
        return False, f"compute capability {capability} is below the oldest compiled target sm_{compiled[0]}"
    return False, f"no compiled target runs on compute capability {capability} ({' '.join(arch_list)})"
