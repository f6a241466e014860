"""All CUDA facts of this machine in one object: rcompat.cuda.probe() -> CudaFacts.

NVML (in-process, see rcompat.cuda.nvml), Python torch (a child, see torch_probe), the CUDA libraries
on disk (static ELF reads, see libs), TensorFlow's version from metadata (never imported), and R
torch's side as the R engine reports it. This module never starts R itself: R facts are passed in
(the doctor's shared `r_facts(ctx)`), or fetched through rcompat.r.probe() when asked to.
"""
from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from rcompat.cuda.libs import LibraryScan, scan, search_locations
from rcompat.cuda.nvml import NvmlFacts, probe_nvml
from rcompat.cuda.tables import load_tables, major_minor, rtorch_cuda_builds
from rcompat.cuda.torch_probe import probe_torch, torch_distribution

TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly")


@dataclass
class CudaFacts:
    nvml: NvmlFacts
    torch: dict[str, Any]
    libraries: LibraryScan
    rtorch: dict[str, Any] = field(default_factory=dict)
    tensorflow: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    def stack(self) -> dict[str, str]:
        """The observed stack for rcompat.cuda.matrix.check_stack.

        `cuda` is the CUDA torch was built for (its wheel brings that runtime); only without torch is
        it the toolkit runtime found on disk, so a CPU build next to a toolkit is not read as a mismatch.
        """
        stack: dict[str, str] = {}
        if self.nvml.driver_version:
            stack["driver"] = self.nvml.driver_version
        if self.nvml.cuda_driver_version:
            stack["driver_cuda"] = self.nvml.cuda_driver_version
        version = self.torch.get("version") or (self.torch.get("distribution") or {}).get("version")
        if version:
            stack["torch"] = version
        if self.torch.get("cuda"):
            stack["cuda"] = self.torch["cuda"]
            if self.torch.get("cudnn_version"):
                stack["cudnn"] = self.torch["cudnn_version"]
        elif not version and self.toolkit_runtime():
            stack["cuda"] = self.toolkit_runtime()
        if self.rtorch.get("version"):
            stack["rtorch"] = self.rtorch["version"]
        if self.tensorflow:
            stack["tensorflow"] = self.tensorflow
        return stack

    def toolkit_runtime(self) -> str | None:
        """major.minor of the newest libcudart found outside framework wheels."""
        versions = [lib.version for lib in self.libraries.libraries
                    if lib.family == "libcudart" and lib.origin not in ("torch-wheel", "r-torch")
                    and lib.version and "." in lib.version]
        return max((major_minor(v) for v in versions), key=lambda v: tuple(map(int, v.split("."))),
                   default=None)

    def to_dict(self) -> dict[str, Any]:
        return {"nvml": self.nvml.to_dict(), "torch": self.torch, "libraries": self.libraries.to_dict(),
                "rtorch": self.rtorch, "tensorflow": self.tensorflow, "env": self.env,
                "stack": self.stack()}


def gather(nvml: Any = None, timeout: float = 60.0, env: Mapping[str, str] | None = None,
           r_facts: Any = None, with_torch: bool = True, nvml_facts: NvmlFacts | None = None,
           scanned: Callable[[list[dict[str, str]]], LibraryScan] = scan) -> CudaFacts:
    """Every CUDA fact; `nvml_facts`, when given, is NVML's answer already asked for (then `nvml` is
    unused); `scanned(locations)`: the CUDA libraries in those places (the doctor's may have them
    already)."""
    env = dict(os.environ if env is None else env)
    nvml_facts = probe_nvml(nvml, timeout=timeout) if nvml_facts is None else nvml_facts
    torch = probe_torch(timeout=timeout, env=env) if with_torch else {"status": "not-probed"}
    rtorch = rtorch_view(r_facts)
    dist = torch_distribution()
    libraries = scanned(search_locations(env=env, torch_location=dist["location"] if dist else None,
                                         rtorch_dirs=rtorch.get("lib_dirs", ())))
    return CudaFacts(nvml=nvml_facts, torch=torch, libraries=libraries, rtorch=rtorch,
                     tensorflow=tensorflow_version(),
                     env={k: env[k] for k in ("CUDA_VISIBLE_DEVICES", "CUDA_ENABLE", "CUDA", "CUDA_HOME",
                                              "LD_LIBRARY_PATH") if k in env})


def tensorflow_version() -> str | None:
    for name in TENSORFLOW_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def rtorch_view(r_facts: Any) -> dict[str, Any]:
    """R torch's side of CUDA from the R engine's facts (an RFacts or its dict); never starts R."""
    if r_facts is None:
        return {"status": "unknown", "reason": "R facts were not gathered"}
    data = r_facts.to_dict() if hasattr(r_facts, "to_dict") else dict(r_facts)
    if not data.get("available", True):
        return {"status": "no-r", "reason": data.get("reason") or "R is not available"}
    pkg = (data.get("packages") or {}).get("torch") or {}
    if pkg.get("status") != "installed":
        return {"status": "not-installed", "reason": "R torch is not installed"}
    runtime = data.get("torch_runtime") or {}
    view: dict[str, Any] = {
        "status": "installed", "version": pkg.get("version"), "path": pkg.get("path"),
        "lib_dirs": [p["dir"] for p in runtime.get("places", []) if p.get("dir")],
        "lantern_installed": bool(runtime.get("lantern")), "cuda_env": (runtime.get("env") or {}).get("CUDA"),
    }
    row = load_tables().rtorch_row(pkg["version"]) if pkg.get("version") else None
    if row:
        view["libtorch"] = row["libtorch"]
        view["cuda_builds"] = rtorch_cuda_builds(row)
    return view


def probe(nvml: Any = None, timeout: float = 60.0, env: Mapping[str, str] | None = None,
          with_r: bool = False, with_torch: bool = True) -> CudaFacts:
    """rcompat.cuda.probe(): gather every fact; `with_r` asks the R engine (a child) for R torch's side."""
    r_facts = None
    if with_r:
        try:
            import rcompat.r as r_engine

            r_facts = r_engine.probe(timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - R's problems are the r area's findings, not ours
            r_facts = {"available": False, "reason": f"R probe failed: {exc}"}
    return gather(nvml=nvml, timeout=timeout, env=env, r_facts=r_facts, with_torch=with_torch)
