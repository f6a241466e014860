"""The `python` area: the interpreter rcompat runs in and the deep-learning packages installed in it.

Versions come from package metadata (importlib.metadata), never from importing the packages: importing
torch costs a second and initialises native code, which is the CUDA engine's job in an isolated child.
"""
from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Iterable

from rcompat.model import Finding, Status

AREA = "python"
TITLE = "Python interpreter and packages"

# Distributions whose versions matter to an R + deep-learning stack. nvidia-* CUDA wheels are found by
# prefix because each CUDA library ships as its own wheel (nvidia-cublas-cu12, nvidia-cudnn-cu12, …).
PACKAGES = ("torch", "torchvision", "tensorflow", "keras", "jax", "jaxlib", "numpy", "pandas", "rpy2",
            "nvidia-ml-py", "pyelftools")
NVIDIA_PREFIX = "nvidia-"


def python_facts() -> dict:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "in_virtualenv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "packages": installed_versions(PACKAGES),
        "nvidia_wheels": nvidia_wheels(),
    }


def installed_versions(names: Iterable[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def nvidia_wheels() -> dict[str, str]:
    found = {}
    for dist in metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()
        if name.startswith(NVIDIA_PREFIX) and name != "nvidia-ml-py":
            found[name] = dist.version
    return dict(sorted(found.items()))


def _facts(ctx) -> dict:
    facts = ctx.memo("python.facts", python_facts)
    ctx.facts["python"] = facts
    return facts


def check_interpreter(ctx) -> Iterable[Finding]:
    f = _facts(ctx)
    yield Finding(id="PY-VERSION", area=AREA, status=Status.OK,
                  title=f"Python {f['version']} ({f['implementation']}) at {f['executable']}",
                  message=f"{f['platform']}; " + ("in a virtualenv" if f["in_virtualenv"] else "system interpreter"),
                  evidence={k: f[k] for k in ("version", "executable", "prefix", "in_virtualenv", "machine")})


def check_packages(ctx) -> Iterable[Finding]:
    f = _facts(ctx)
    present = {k: v for k, v in f["packages"].items() if v}
    absent = sorted(k for k, v in f["packages"].items() if not v)
    title = ", ".join(f"{k} {v}" for k, v in present.items()) or "none of the tracked packages"
    yield Finding(id="PY-PACKAGES", area=AREA, status=Status.OK, title=title,
                  message=("not installed: " + ", ".join(absent)) if absent else "",
                  evidence={"installed": present, "not_installed": absent, "nvidia_wheels": f["nvidia_wheels"]})


def check_torch(ctx) -> Iterable[Finding]:
    version = _facts(ctx)["packages"].get("torch")
    if not version:
        yield Finding(id="PY-TORCH", area=AREA, status=Status.SKIP, title="Python torch not installed",
                      message="Python torch is not installed in this interpreter; its probes are skipped.",
                      remedy="pip install torch (the build that matches your CUDA: see `rcompat matrix check`)")
        return
    local = version.partition("+")[2]
    build = f"local build tag '+{local}'" if local else "no local build tag (a CUDA build from PyPI on Linux)"
    yield Finding(id="PY-TORCH", area=AREA, status=Status.OK, title=f"Python torch {version} installed",
                  message=f"{build}; CUDA support is checked by the cuda area in an isolated child.",
                  evidence={"version": version, "local_tag": local})


CHECKS = [check_interpreter, check_packages, check_torch]
