"""CUDA user-space libraries on disk: where they are, which version each is, and which clash.

Nothing is loaded (no dlopen): each file's SONAME and ELF version definitions are read statically
(rcompat.elf.read.reader), and the version comes from the most specific
source available, in this order: the pip wheel's dist-info RECORD, a toolkit's version.json, the
file name (libcudnn.so.8.9.2), the SONAME (libcudart.so.12 -> 12). Hard links and symlinks to one
file count once. Library families and their file-name patterns are data (cuda_libraries.csv).
"""
from __future__ import annotations

import glob
import json
import os
import re
import site
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from rcompat.data import load_csv

SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
               "/usr/lib64", "/usr/lib")
TOOLKIT_GLOBS = ("/usr/local/cuda*/lib64", "/usr/local/cuda*/lib", "/usr/local/cuda*/targets/*/lib",
                 "/opt/cuda*/lib64")


@dataclass
class CudaLibrary:
    family: str
    path: str                      # the real file
    names: list[str]               # every name it was found under (symlinks, hard links)
    origin: str                    # LD_LIBRARY_PATH | cuda-toolkit | pip-wheel | torch-wheel | r-torch | …
    soname: str | None = None
    version: str | None = None
    version_source: str | None = None
    version_nodes: list[str] = field(default_factory=list)
    size: int = 0
    build_id: str | None = None
    error: str | None = None

    def identity(self) -> tuple:
        """Two files with this identity are copies of one build."""
        return (self.soname, self.size, self.build_id)


@dataclass
class LibraryScan:
    searched: list[dict[str, str]]
    libraries: list[CudaLibrary]

    def by_family(self) -> dict[str, list[CudaLibrary]]:
        out: dict[str, list[CudaLibrary]] = {}
        for lib in self.libraries:
            out.setdefault(lib.family, []).append(lib)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"searched": self.searched, "libraries": [asdict(lib) for lib in self.libraries]}


def families() -> list[tuple[str, re.Pattern, str]]:
    return [(row["family"], re.compile(row["name_regex"]), row.get("version_json_key", ""))
            for row in load_csv("cuda_libraries.csv", required=("family", "name_regex", "source"))]


def site_packages_dirs() -> list[str]:
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # virtualenv's old site.py
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs += [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def search_locations(env: Mapping[str, str] | None = None, torch_location: str | None = None,
                     rtorch_dirs: Iterable[str] = (), extra_dirs: Iterable[str] = ()) -> list[dict[str, str]]:
    """Directories to scan, each with the origin that explains why a loader could reach it."""
    env = os.environ if env is None else env
    places: list[tuple[str, str]] = [("given", d) for d in extra_dirs]
    places += [("LD_LIBRARY_PATH", d) for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            places += [(var, os.path.join(env[var], sub)) for sub in ("lib64", "lib")]
    if env.get("CONDA_PREFIX"):
        places.append(("conda", os.path.join(env["CONDA_PREFIX"], "lib")))
    for pattern in TOOLKIT_GLOBS:
        places += [("cuda-toolkit", d) for d in sorted(glob.glob(pattern))]
    for sp in site_packages_dirs():
        places += [("pip-wheel", d) for d in sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))]
    if torch_location:
        places.append(("torch-wheel", os.path.join(torch_location, "lib")))
    places += [("r-torch", d) for d in rtorch_dirs]
    places += [("system", d) for d in SYSTEM_DIRS]
    seen: set[str] = set()
    out = []
    for origin, directory in places:
        real = os.path.realpath(directory)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        out.append({"origin": origin, "dir": directory})
    return out


def scan(locations: list[dict[str, str]] | None = None, **kwargs: Any) -> LibraryScan:
    """Every CUDA library file in `locations` (default: search_locations(**kwargs))."""
    locations = search_locations(**kwargs) if locations is None else locations
    fams = families()
    by_inode: dict[tuple[int, int], CudaLibrary] = {}
    for place in locations:
        try:
            names = sorted(os.listdir(place["dir"]))
        except OSError:
            continue
        for name in names:
            match = next(((fam, m, key) for fam, rx, key in fams if (m := rx.match(name))), None)
            if match is None:
                continue
            family, m, json_key = match
            if family.endswith("*"):  # one row for a set of libraries (cuDNN 9's engines): each is its own
                family = name.split(".so", 1)[0]
            path = os.path.join(place["dir"], name)
            try:
                st = os.stat(path)
            except OSError:
                continue  # a dangling symlink names nothing loadable
            if not os.path.isfile(path):
                continue
            key = (st.st_dev, st.st_ino)
            if key in by_inode:
                by_inode[key].names.append(path)
                _prefer_file_name_version(by_inode[key], m.group(1))
                continue
            lib = CudaLibrary(family=family, path=os.path.realpath(path), names=[path], origin=place["origin"],
                              size=st.st_size)
            _read_elf(lib)
            _assign_version(lib, m.group(1), json_key)
            by_inode[key] = lib
    return LibraryScan(searched=locations, libraries=list(by_inode.values()))


def _read_elf(lib: CudaLibrary) -> None:
    try:
        lib.soname, lib.version_nodes, lib.build_id = elf_identity(lib.path)
    except Exception as exc:  # noqa: BLE001 - a linker script or a truncated file is a fact, not a crash
        lib.error = str(exc)


def elf_identity(path: str) -> tuple[str | None, list[str], str | None]:
    """(SONAME, version definition names, build id), read by the ELF engine without loading the file."""
    from rcompat.elf.read.reader import open_elf

    with open_elf(path) as image:
        nodes = [v.name for _, v in sorted(image.version_definitions.items())]
        return image.soname, list(dict.fromkeys(nodes)), image.build_id


def _assign_version(lib: CudaLibrary, name_version: str | None, json_key: str) -> None:
    for source, value in (("dist-info", _dist_info_version(lib)), ("version.json", _version_json(lib, json_key)),
                          ("file name", name_version if name_version and "." in name_version else None),
                          ("SONAME", _soname_version(lib.soname) or name_version)):
        if value:
            lib.version, lib.version_source = value, source
            return


def _prefer_file_name_version(lib: CudaLibrary, name_version: str | None) -> None:
    """A second name of the same file may be the one that carries the full version."""
    if lib.version_source == "SONAME" and name_version and "." in name_version:
        lib.version, lib.version_source = name_version, "file name"


def _soname_version(soname: str | None) -> str | None:
    m = re.search(r"\.so\.(\d+(?:\.\d+)*)$", soname or "")
    return m.group(1) if m else None


def _dist_info_version(lib: CudaLibrary) -> str | None:
    """The version of the wheel (nvidia-cuda-runtime-cu12, torch, …) whose RECORD lists this file."""
    bases = dict.fromkeys([os.path.basename(lib.path)] + [os.path.basename(n) for n in lib.names])
    for root in _dist_info_roots(lib.path):
        index = _record_index(root)
        version = next((index[b] for b in bases if b in index), None)
        if version:
            return version
    return None


def _dist_info_roots(path: str) -> list[str]:
    """site-packages above a pip wheel's lib dir, or a toolkit root holding a dist-info/ folder."""
    roots = []
    for parent in list(Path(path).parents)[:5]:
        if parent.name in ("site-packages", "dist-packages"):
            roots.append(str(parent))
        if (parent / "dist-info").is_dir():
            roots.append(str(parent / "dist-info"))
    return roots


_RECORD_CACHE: dict[str, dict[str, str]] = {}


def _record_index(root: str) -> dict[str, str]:
    """File basename -> distribution version, over the NVIDIA and torch wheels installed in `root`."""
    if root not in _RECORD_CACHE:
        import importlib.metadata as md

        index: dict[str, str] = {}
        for dist in md.distributions(path=[root]):
            name = (dist.metadata.get("Name") or "").lower()
            if not (name.startswith("nvidia") or name == "torch"):
                continue
            for f in dist.files or []:
                if ".so" in f.name and "/lib/" in f"/{f}":
                    index.setdefault(f.name, dist.version)
        _RECORD_CACHE[root] = index
    return _RECORD_CACHE[root]


def _version_json(lib: CudaLibrary, key: str) -> str | None:
    if not key:
        return None
    for parent in list(Path(lib.path).parents)[:4]:
        candidate = parent / "version.json"
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None
            entry = data.get(key)
            return entry.get("version") if isinstance(entry, dict) else None
    return None


def cudnn_split(scan_result: LibraryScan) -> list[dict[str, Any]]:
    """cuDNN 9 sets whose sub-libraries a loader would take from two places.

    libcudnn.so.9 loads its sub-libraries by name the first time an operation needs them, looking
    first beside itself (NVIDIA's wheels give it RPATH $ORIGIN) and then along the usual search path.
    A sub-library missing beside it but present in another directory scanned is taken from there: a
    copy of another cuDNN build, CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH at the first convolution
    (pytorch/pytorch issue 187824: the nvidia-cudnn-cu13 9.20.0.48 wheel lacks
    libcudnn_engines_tensor_ir.so.9). Only sub-libraries some other cuDNN 9 directory has are named:
    which ones a given cuDNN asks for is in its binaries, not in a table."""
    subs: dict[str, dict[str, CudaLibrary]] = {}  # directory -> soname -> library
    mains: list[tuple[str, CudaLibrary]] = []
    for lib in scan_result.libraries:
        if not (lib.family.startswith("libcudnn") and (lib.soname or "").endswith(".so.9")):
            continue
        for path in lib.names:
            if lib.family == "libcudnn":
                mains.append((os.path.dirname(os.path.abspath(path)), lib))
            else:
                subs.setdefault(os.path.dirname(os.path.abspath(path)), {})[lib.soname] = lib
    out = []
    for where, main in mains:
        beside = subs.get(where, {})
        elsewhere: dict[str, CudaLibrary] = {}
        for other, libs in subs.items():  # in search order: the first copy is the one loaded
            for soname, lib in libs.items():
                if other != where and soname not in beside:
                    elsewhere.setdefault(soname, lib)
        if elsewhere:
            out.append({"directory": where, "version": main.version, "origin": main.origin,
                        "beside": sorted(beside),
                        "taken_from_elsewhere": [{"soname": s, "path": lib.path, "version": lib.version,
                                                  "origin": lib.origin} for s, lib in sorted(elsewhere.items())]})
    return out


def clashes(scan_result: LibraryScan) -> list[dict[str, Any]]:
    """Families with more than one distinct build reachable; each entry names the versions and paths."""
    out = []
    for family, libs in scan_result.by_family().items():
        builds: dict[tuple, list[CudaLibrary]] = {}
        for lib in libs:
            builds.setdefault(lib.identity(), []).append(lib)
        if len(builds) < 2:
            continue
        sonames = sorted({lib.soname or os.path.basename(lib.path) for lib in libs})
        out.append({"family": family, "same_soname": len(sonames) == 1, "sonames": sonames,
                    "builds": [{"version": group[0].version, "soname": group[0].soname,
                                "paths": [lib.path for lib in group], "origins": sorted({lib.origin for lib in group})}
                               for group in builds.values()]})
    return out
