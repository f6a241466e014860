"""Which real libraries the doctor's ELF checks look at: Python torch's and R torch's, found on disk.

Python torch is located with importlib.util.find_spec (torch is never imported). R torch's
libraries come from the R engine's facts (["torch_runtime"]["places"]: the package's lib/ and deps/,
TORCH_HOME, TORCH_INSTALL), which the elf area gets through rcompat.r.checks.shared_r_facts.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, field


@dataclass
class Framework:
    name: str  # "Python torch" | "R torch"
    lib_dir: str
    libraries: dict[str, str] = field(default_factory=dict)  # role -> path
    host: list[str] = field(default_factory=list)  # the process that loads it (python, libR.so)
    version: str | None = None


def python_torch() -> Framework | None:
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    lib_dir = os.path.join(list(spec.submodule_search_locations)[0], "lib")
    libs = {role: os.path.join(lib_dir, name) for role, name in
            (("libtorch_cpu", "libtorch_cpu.so"), ("libtorch_python", "libtorch_python.so"),
             ("libtorch_cuda", "libtorch_cuda.so"), ("libc10", "libc10.so"))}
    libs = {k: v for k, v in libs.items() if os.path.exists(v)}
    if not libs:
        return None
    version = None
    try:
        from importlib import metadata

        version = metadata.version("torch")
    except Exception:  # noqa: BLE001 - the version is a nicety
        pass
    from rcompat.elf.link.hostproc import python_for

    # the interpreter that would import torch: the one whose site-packages holds it (this one, found by find_spec)
    python = python_for(next(iter(libs.values()))) or os.path.realpath(sys.executable)
    return Framework("Python torch", lib_dir, libs, [python], version)


def r_torch(r_facts: dict | None) -> Framework | None:
    """R torch's libraries where the R engine found them (its torch_runtime places: the package's
    lib/ and deps/, TORCH_HOME, TORCH_INSTALL); None when R torch ships none."""
    dirs = []
    runtime = (r_facts or {}).get("torch_runtime") or {}
    for place in runtime.get("places", []):
        if any(n.startswith("liblantern") or n.startswith("libtorch") for n in place.get("libraries", [])):
            dirs.append(place["dir"])
    libs: dict[str, str] = {}
    for d in dirs:
        for role, name in (("liblantern", "liblantern.so"), ("libtorch", "libtorch.so"),
                           ("libtorch_cpu", "libtorch_cpu.so"), ("libc10", "libc10.so")):
            path = os.path.join(d, name)
            if role not in libs and os.path.exists(path):
                libs[role] = path
    if not libs:
        return None
    host = []
    r_home = (r_facts or {}).get("r_home") or "/usr/lib/R"
    if os.path.exists(os.path.join(r_home, "lib", "libR.so")):
        host.append(os.path.join(r_home, "lib", "libR.so"))
    pkg = ((r_facts or {}).get("packages") or {}).get("torch") or {}
    return Framework("R torch", os.path.dirname(next(iter(libs.values()))), libs, host, pkg.get("version"))
