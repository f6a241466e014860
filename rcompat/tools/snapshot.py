"""`rcompat snapshot save FILE`: record the whole stack before an upgrade, to diff it afterwards.

Sections, each collected behind its own error boundary (a failing one is recorded in `errors`, the
others still land in the file):

- r          R's version and every installed package with its library, from an Rscript child (or
             the facts the R host passed in when rcompat runs inside R through reticulate)
- python     this interpreter's version and every distribution (importlib.metadata; nothing imported)
- frameworks torch's version, CUDA and cuDNN build from the CUDA engine's isolated torch probe
- gpu        driver, CUDA driver version and GPUs from the CUDA engine's NVML probe, when a driver is there
- libraries  CUDA / libtorch / lantern shared objects on disk with soname, size and GNU build-id,
             read with rcompat.elf.read.reader (never loaded)

The file is JSON, written atomically. Which libraries are recorded is data (snapshot_risks.toml,
[[library]] rows), like the risks `snapshot diff` judges.
"""
from __future__ import annotations

import json
import os
import platform
import re
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from rcompat.errors import RcompatError

SNAPSHOT_VERSION = 1
SECTIONS = ("r", "python", "frameworks", "gpu", "libraries")  # `snapshot save --skip` lists them too
RISKS_FILE = "snapshot_risks.toml"
CHILD_TIMEOUT_S = 60.0

_R_PACKAGES = r"""
ip <- installed.packages(fields = "Built")
cat(sprintf('{"r_version": %s, "platform": %s}\n', encodeString(paste(R.version$major, R.version$minor, sep = "."), quote = '"'),
            encodeString(R.version$platform, quote = '"')))
for (i in seq_len(nrow(ip))) cat(sprintf('{"package": %s, "version": %s, "libpath": %s, "built": %s}\n',
  encodeString(ip[i, "Package"], quote = '"'), encodeString(ip[i, "Version"], quote = '"'),
  encodeString(ip[i, "LibPath"], quote = '"'), encodeString(ifelse(is.na(ip[i, "Built"]), "", ip[i, "Built"]), quote = '"')))
"""

class SnapshotError(RcompatError):
    """A snapshot file that cannot be read, or a snapshot that cannot be written."""


def collect(host_r: Mapping[str, Any] | None = None, sections: tuple[str, ...] | None = None,
            timeout: float = CHILD_TIMEOUT_S) -> dict[str, Any]:
    """The stack as a JSON-able dict. `host_r`: R facts passed in from an R host (see from_r)."""
    from rcompat import __version__

    wanted = sections or SECTIONS
    snap: dict[str, Any] = {
        "snapshot_version": SNAPSHOT_VERSION, "tool": {"name": "rcompat", "version": __version__},
        "created_at": _now(), "host": {"hostname": socket.gethostname(), "system": platform.system(),
                                       "machine": platform.machine(), "release": platform.release()},
        "errors": {}}
    producers: dict[str, Callable[[], Any]] = {
        "r": lambda: _r_section(host_r, timeout),
        "python": _python_section,
        "frameworks": lambda: _frameworks_section(timeout),
        "gpu": _gpu_section,
        "libraries": lambda: _libraries_section(snap),
    }
    for name in wanted:
        try:
            snap[name] = producers[name]()
        except Exception as exc:  # noqa: BLE001 - one section's failure must not lose the others
            snap[name] = {"status": "error"}
            snap["errors"][name] = f"{type(exc).__name__}: {exc}"
    return snap


def save(path: "str | Path", snap: Mapping[str, Any]) -> Path:
    from rcompat.atomic import write_text_atomic

    return write_text_atomic(path, json.dumps(snap, indent=2, sort_keys=True) + "\n")


def load(path: "str | Path") -> dict[str, Any]:
    from rcompat.inputs import require_file

    p = require_file(path, error=SnapshotError)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path}: not a snapshot (invalid JSON: {exc})") from exc
    if not isinstance(doc, dict) or doc.get("snapshot_version") != SNAPSHOT_VERSION:
        raise SnapshotError(f"{path}: not an rcompat snapshot (snapshot_version "
                            f"{doc.get('snapshot_version') if isinstance(doc, dict) else None!r}, expected "
                            f"{SNAPSHOT_VERSION})")
    return doc


# -- sections ------------------------------------------------------------------------------------

def _r_section(host_r: Mapping[str, Any] | None, timeout: float) -> dict[str, Any]:
    if host_r:
        return {"status": "ok", "via": "R host", "version": host_r.get("version"),
                "platform": host_r.get("platform"), "packages": dict(host_r.get("packages") or {})}
    from rcompat.isolate import run_child
    from rcompat.r import locate_r

    install = locate_r()
    if install is None:
        return {"status": "absent", "reason": "Rscript not found (R_HOME, PATH)"}
    result = run_child([install.rscript, "--vanilla", "-e", _R_PACKAGES], timeout=timeout)
    if not result.ok:
        raise RcompatError(f"Rscript {result.describe_end()}: {result.tail(3)}")
    head = next((r for r in result.records if "r_version" in r), {})
    packages = {}
    for rec in result.records:
        if "package" in rec and rec["package"] not in packages:  # first on .libPaths() wins, as in R
            packages[rec["package"]] = {"version": rec["version"], "libpath": rec["libpath"],
                                        "built": rec.get("built", "")}
    return {"status": "ok", "via": "Rscript", "rscript": install.rscript, "version": head.get("r_version"),
            "platform": head.get("platform"), "packages": packages}


def _python_section() -> dict[str, Any]:
    from importlib import metadata

    packages: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name:
            packages.setdefault(canonical_name(name), dist.version)
    return {"status": "ok", "version": platform.python_version(), "implementation": platform.python_implementation(),
            "executable": sys.executable, "prefix": sys.prefix, "packages": dict(sorted(packages.items()))}


def canonical_name(name: str) -> str:
    """PEP 503 normalised distribution name, so `Tf_Keras` and `tf-keras` are one key."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _frameworks_section(timeout: float) -> dict[str, Any]:
    """torch's build as the CUDA engine's isolated probe sees it (never imported here)."""
    from rcompat.cuda.torch_probe import probe_torch

    facts = probe_torch(timeout=timeout)
    status = facts.get("status")
    if status == "not-installed":
        return {"torch": {"status": "absent", "error": facts.get("reason", "")}}
    if status != "ok":
        return {"torch": {"status": "error", "error": facts.get("reason", "")}}
    location = (facts.get("distribution") or {}).get("location")
    return {"torch": {"status": "installed", "version": facts.get("version"), "cuda": facts.get("cuda"),
                      "cudnn": facts.get("cudnn_version"),
                      "lib_dir": os.path.join(location, "lib") if location else None}}


def _gpu_section() -> dict[str, Any]:
    """Driver, CUDA driver version and GPUs through the CUDA engine's NVML seam."""
    from rcompat.cuda.nvml import probe_nvml

    nvml = probe_nvml()
    if nvml.status != "ok":
        return {"status": "absent" if nvml.status in ("no-driver", "no-pynvml") else "error",
                "reason": nvml.reason or nvml.error}
    return {"status": "ok", "driver": nvml.driver_version, "cuda_driver": nvml.cuda_driver_version,
            "gpus": [{"name": g.name, "uuid": g.uuid, "compute_capability": g.compute_capability}
                     for g in nvml.gpus]}


def library_patterns() -> list[re.Pattern]:
    from rcompat.data import load_toml

    return [re.compile(row["name_regex"]) for row in load_toml(RISKS_FILE, "library",
                                                               required=("name_regex", "source"))]


def library_dirs(snap: Mapping[str, Any], env: Mapping[str, str] | None = None) -> list[str]:
    """Where CUDA and libtorch copies live: every place the CUDA engine searches (rcompat.cuda.libs.
    search_locations: LD_LIBRARY_PATH, CUDA_HOME/CUDA_PATH, conda, CUDA toolkits, pip nvidia-* wheels,
    R torch's lib dir, the system library dirs), plus the libtorch places only a snapshot records:
    torch's lib dir, torch/lib of every site-packages, TORCH_HOME/TORCH_INSTALL and /usr/local/lib."""
    from rcompat.cuda.libs import search_locations, site_packages_dirs

    env = os.environ if env is None else env
    torch = (snap.get("frameworks") or {}).get("torch") or {}
    extra = [torch["lib_dir"]] if torch.get("lib_dir") else []
    extra += [os.path.join(site, "torch", "lib") for site in site_packages_dirs()]
    extra += [os.path.join(env[var], "lib") for var in ("TORCH_HOME", "TORCH_INSTALL") if env.get(var)]
    extra.append("/usr/local/lib")
    rtorch = ((snap.get("r") or {}).get("packages") or {}).get("torch")
    rtorch_dirs = [os.path.join(rtorch["libpath"], "torch", "lib")] if rtorch and rtorch.get("libpath") else []
    places = search_locations(env=env, rtorch_dirs=rtorch_dirs, extra_dirs=extra)
    return [os.path.realpath(place["dir"]) for place in places]  # search_locations: one per real dir


def _libraries_section(snap: Mapping[str, Any]) -> dict[str, Any]:
    patterns = library_patterns()
    searched = library_dirs(snap)
    found: dict[str, Any] = {}
    for directory in searched:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if os.path.islink(path) or not any(p.match(name) for p in patterns) or not os.path.isfile(path):
                continue  # symlinks resolve to a file recorded under its own name
            found[path] = describe_library(path)
    return {"status": "ok", "searched": searched, "files": found}


def describe_library(path: str) -> dict[str, Any]:
    """soname, size and GNU build-id of one shared object, read by the ELF engine without loading it."""
    from rcompat.elf.errors import ElfError
    from rcompat.elf.read.reader import open_elf

    info: dict[str, Any] = {"size": os.path.getsize(path), "soname": None, "build_id": None}
    try:
        with open_elf(path) as image:
            info["soname"], info["build_id"] = image.soname, image.build_id
    except ElfError as exc:  # a linker script or a truncated file is recorded, not fatal
        info["error"] = exc.reason
    return info


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
