"""Facts next to R that R itself does not report: where R torch keeps LibTorch/Lantern, and which
Python packages the Python reticulate would bind has installed.

Neither loads anything: R torch's libraries are listed on disk, and the Python is asked for
distribution metadata (importlib.metadata), so TensorFlow is never imported to learn its version.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

from rcompat.isolate import run_child

# Environment variables R torch's install/load code reads (R torch R/install.R, lantern loader).
TORCH_ENV_VARS = ("TORCH_HOME", "TORCH_INSTALL", "TORCH_URL", "LANTERN_URL", "CUDA", "CUDA_HOME",
                  "CUDA_PATH", "PRECXX11ABI", "TORCH_INSTALL_DEBUG", "LD_LIBRARY_PATH")
_NATIVE_LIB = re.compile(r"(lantern|torch|c10|cudart|cudnn|cublas|nvrtc|gomp|iomp)", re.I)

# Distributions whose versions rules may name as "python:<name>"; the first present of each group
# answers for the group (tensorflow-cpu is still "python:tensorflow").
PYTHON_DISTRIBUTIONS = {
    "tensorflow": ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                   "tensorflow-macos"),
    "keras": ("keras",), "tf-keras": ("tf-keras", "tf_keras"), "torch": ("torch",),
    "numpy": ("numpy",), "jax": ("jax",),
}
_PYTHON_PROBE = """
import json, sys
from importlib import metadata
groups = json.loads(sys.argv[1])
out = {}
for key, names in groups.items():
    for name in names:
        try:
            out[key] = metadata.version(name)
            break
        except Exception:
            pass
print(json.dumps({"python_packages": out, "python_version": sys.version.split()[0],
                  "executable": sys.executable}))
"""


def torch_runtime(torch_path: str | None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """R torch's LibTorch/Lantern: TORCH_HOME when set (R torch installs there), else its package dir."""
    env = os.environ if env is None else env
    variables = {name: env[name] for name in TORCH_ENV_VARS if name in env}
    roots = []
    if env.get("TORCH_HOME"):
        roots.append(("TORCH_HOME", env["TORCH_HOME"]))
    if torch_path:
        roots.append(("package", torch_path))
    places = []
    for origin, root in roots:
        for sub in ("lib", "deps"):
            directory = Path(root, sub)
            if not directory.is_dir():
                continue
            try:
                names = sorted(p.name for p in directory.iterdir() if _NATIVE_LIB.search(p.name))
            except OSError as exc:
                places.append({"dir": str(directory), "origin": origin, "error": str(exc)})
                continue
            places.append({"dir": str(directory), "origin": origin, "libraries": names})
    libraries = [n for p in places for n in p.get("libraries", [])]
    return {"env": variables, "searched": [r for _, r in roots], "places": places,
            "lantern": any(n.startswith("liblantern") for n in libraries),
            "libtorch": any(n.startswith(("libtorch", "torch_cpu", "libtorch_cpu")) for n in libraries)}


def python_packages(python: str, timeout: float, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Versions of the Python distributions rules care about, from `python`'s own metadata."""
    result = run_child([python, "-c", _PYTHON_PROBE, json.dumps(PYTHON_DISTRIBUTIONS)],
                       timeout=timeout, env=env)
    for record in result.records:
        if "python_packages" in record:
            return record
    return {"error": f"{python} {result.describe_end()}", "output_tail": result.tail(6)}


def bound_python(reticulate: Mapping[str, Any], timeout: float, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The packages of the Python reticulate names, plus, when the libpython it would load belongs to
    another interpreter (a pyenv shim resolving to one Python while libpython is another's), that
    interpreter's own version and packages under "libpython_python": reticulate embeds libpython, so
    that is the Python the R session really gets."""
    python = reticulate.get("python")
    if not python:
        return {}
    found = python_packages(python, timeout=timeout, env=env)
    other = libpython_interpreter(reticulate.get("libpython"), reticulate.get("pythonhome"))
    if other:
        found["libpython_interpreter"] = other
        if _same_file(other, found.get("executable") or python) is False:
            found["libpython_python"] = python_packages(other, timeout=timeout, env=env)
    return found


def libpython_interpreter(libpython: str | None, pythonhome: str | None = None) -> str | None:
    """The interpreter installed beside `libpython` (PREFIX/lib/libpython3.11.so -> PREFIX/bin/python3.11)."""
    match = re.match(r"libpython(\d+\.\d+)", Path(libpython or "").name)
    if not match:
        return None
    prefix = (pythonhome or "").split(":")[0] or str(Path(libpython).parent.parent)
    candidate = Path(prefix, "bin", f"python{match.group(1)}")
    return str(candidate) if candidate.is_file() else None


def _same_file(a: str, b: str) -> bool | None:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return None
