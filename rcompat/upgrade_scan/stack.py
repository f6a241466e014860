"""The stack one root holds, read from its files only (nothing from an image is ever run).

glibc and libstdc++: the newest GLIBC_/GLIBCXX_ version node the file the root's loader would pick
defines. Python: interpreters and libpython by file name, site-packages directories by name. torch:
its dist-info METADATA and torch/version.py (read as text, never imported). CUDA runtime, cuDNN,
cuBLAS, NCCL: the CUDA engine's identification of CUDA libraries (rcompat.cuda.libs) run on the
root's directories. R: the version of R's base package (its DESCRIPTION), else the R_LIBS_USER
version in Renviron; R packages from their DESCRIPTION files; R torch's Lantern from its lib/deps dirs.
Where each is looked for is data (rcompat/data/upgrade_stack.toml).
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field

from rcompat.elf.errors import ElfError

R_PACKAGES = ("torch", "keras3", "keras", "tensorflow", "reticulate")
CUDA_FAMILIES = {"libcudart": "CUDA runtime", "libcudnn": "cuDNN", "libcublas": "cuBLAS", "libnccl": "NCCL"}
_PY_NAME = re.compile(r"python(3\.\d+)$")
_LIBPY = re.compile(r"libpython(3\.\d+)")
_SITE = re.compile(r"python(3\.\d+)/")


@dataclass
class Component:
    name: str  # "torch", "CUDA runtime", "R package torch", …
    version: str
    where: list[str] = field(default_factory=list)  # in-root paths the version was read from
    detail: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"version": self.version, "where": self.where, **self.detail}


@dataclass
class Stack:
    label: str
    components: dict[str, Component] = field(default_factory=dict)
    torch_lib_dirs: list[str] = field(default_factory=list)  # in-root torch/lib directories
    lantern_dirs: list[str] = field(default_factory=list)  # in-root R torch lib/deps dirs holding liblantern

    def add(self, comp: Component | None) -> None:
        if comp is not None and comp.version:
            self.components[comp.name] = comp

    def version(self, name: str) -> str | None:
        comp = self.components.get(name)
        return comp.version if comp else None


@functools.lru_cache(maxsize=1)
def places() -> dict[str, tuple[str, ...]]:
    from rcompat.data import load_toml

    out: dict[str, tuple[str, ...]] = {}
    for row in load_toml("upgrade_stack.toml", "place", required=("component", "globs", "source")):
        out[row["component"]] = out.get(row["component"], ()) + tuple(row["globs"])
    return out


@functools.lru_cache(maxsize=1)
def driver_libraries() -> dict[str, str]:
    """soname -> source of the libraries the NVIDIA driver brings at run time (never in an image)."""
    from rcompat.data import cached_toml

    return {row["soname"]: row["source"]
            for row in cached_toml("upgrade_stack.toml", "driver_library", required=("soname", "source"))}


class _Finder:
    """Globs and reads inside one root; results are in-root paths."""

    def __init__(self, root) -> None:
        self.root = root

    def glob(self, component: str) -> list[str]:
        """In-root paths matching the data table's patterns for `component` (never leaving the root)."""
        hits: dict[str, None] = {}
        for pattern in places().get(component, ()):
            for inside in self.root.glob("/" + pattern):
                hits.setdefault(inside, None)
        return list(hits)

    def glob_under(self, inside_dir: str, pattern: str) -> list[str]:
        return self.root.glob(f"{inside_dir.rstrip('/')}/{pattern}")

    def inside(self, host: str) -> str:
        return self.root.inside(host)

    def host(self, inside: str) -> str:
        return self.root.host(inside)

    def read(self, inside: str, limit: int = 1 << 20) -> str | None:
        from rcompat.errors import RcompatError
        from rcompat.inputs import open_input

        try:  # "image": only the limit of what a root may hold; the read itself stops at `limit`
            with open_input(self.host(inside), "image") as fh:
                return fh.read(limit).decode("utf-8", "replace")
        except (OSError, RcompatError):  # absent, or a FIFO or device: never read
            return None


def probe_stack(root, label: str = "", env: "dict[str, str] | None" = None) -> Stack:
    """Every component found in `root` (an rcompat.elf.link.root.Root)."""
    find = _Finder(root)
    stack = Stack(label)
    stack.add(_newest_node(find, "libc.so.6", "GLIBC", "glibc"))
    stack.add(_newest_node(find, "libstdc++.so.6", "GLIBCXX", "libstdc++"))
    stack.add(_python(find))
    sites = find.glob("python_site")
    stack.add(_torch(find, sites, stack))
    for comp in _cuda(find, sites, stack, env or {}):
        stack.add(comp)
    _r(find, stack)
    return stack


def loader_pick(find: _Finder, soname: str) -> str | None:
    """The in-root path of `soname` that the root's loader finds first without RPATH help: its
    ld.so.cache (or the equivalent derived from ld.so.conf), then the default directories."""
    try:
        cached = find.root.ld_cache().lookup(soname, 62, 64)
    except ElfError:  # a corrupt cache: fall back to the default directories (never MemoryError: that ends the run)
        cached = []
    for entry in cached:
        if os.path.isfile(find.host(entry.path)):
            return entry.path
    for directory in find.glob("system_lib_dir"):
        candidate = f"{directory}/{soname}"
        if os.path.isfile(find.host(candidate)):
            return candidate
    return None


def _newest_node(find: _Finder, soname: str, family: str, name: str) -> Component | None:
    from rcompat.elf.errors import ElfError
    from rcompat.elf.link.verreq import version_key
    from rcompat.elf.read.objinfo import read_object

    inside = loader_pick(find, soname)
    if inside is None:
        return None
    try:
        defs = read_object(find.host(inside)).version_defs
    except ElfError:
        return None
    nodes = [d for d in defs if version_key(d)[0] == family and version_key(d)[1]]
    if not nodes:
        return None
    newest = max(nodes, key=lambda d: version_key(d)[1])
    return Component(name, newest.split("_", 1)[1], [inside], {"node": newest})


def _python(find: _Finder) -> Component | None:
    versions: dict[str, list[str]] = {}
    for inside in find.glob("python_interpreter"):
        m = _PY_NAME.search(inside)
        if m:
            versions.setdefault(m.group(1), []).append(inside)
    for inside in find.glob("python_library"):
        m = _LIBPY.search(os.path.basename(inside))
        if m:
            versions.setdefault(m.group(1), []).append(inside)
    for inside in find.glob("python_site"):
        m = _SITE.search(inside + "/")
        if m and os.listdir(find.host(inside)):
            versions.setdefault(m.group(1), []).append(inside)
    if not versions:
        return None
    ordered = sorted(versions, key=lambda v: tuple(int(x) for x in v.split(".")))
    return Component("Python", ", ".join(ordered), [p for v in ordered for p in versions[v]])


def _torch(find: _Finder, sites: list[str], stack: Stack) -> Component | None:
    for site in sites:
        version_py = f"{site}/torch/version.py"
        text = find.read(version_py)
        metas = find.glob_under(site, "torch-*.dist-info/METADATA")
        meta_version = None
        if metas:
            m = re.search(r"^Version:\s*(\S+)", find.read(metas[0]) or "", re.M)
            meta_version = m.group(1) if m else None
        if text is None and meta_version is None:
            continue
        fields = {k: _assigned(text or "", k) for k in ("__version__", "cuda", "git_version")}
        version = fields["__version__"] or meta_version
        lib_dir = f"{site}/torch/lib"
        if os.path.isdir(find.host(lib_dir)):
            stack.torch_lib_dirs.append(lib_dir)
        where = [p for p in (version_py if text else None, metas[0] if metas else None) if p]
        comp = Component("torch", version, where, {"cuda": fields["cuda"], "git": fields["git_version"],
                                                   "lib_dir": lib_dir})
        if fields["cuda"]:
            stack.add(Component("torch CUDA build", fields["cuda"], [version_py]))
        return comp
    return None


def _assigned(text: str, name: str) -> str | None:
    """The string literal assigned to `name` in torch/version.py (`cuda: Optional[str] = '13.0'`)."""
    m = re.search(rf"^{re.escape(name)}\s*(?::[^=\n]*)?=\s*['\"]([^'\"]*)['\"]", text, re.M)
    return m.group(1) if m else None


def _cuda(find: _Finder, sites: list[str], stack: Stack, env: dict[str, str]) -> list[Component]:
    from rcompat.cuda.libs import scan

    dirs = [("torch-wheel", d) for d in stack.torch_lib_dirs]
    for site in sites:
        dirs += [("pip-wheel", d) for d in find.glob_under(site, "nvidia/*/lib")]
    dirs += [("LD_LIBRARY_PATH", d) for d in env.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")]
    if env.get("CUDA_HOME", "").startswith("/"):
        dirs.append(("CUDA_HOME", env["CUDA_HOME"].rstrip("/") + "/lib64"))
    dirs += [("cuda-toolkit", d) for d in find.glob("cuda_lib_dir")]
    dirs += [("system", d) for d in find.glob("system_lib_dir")]
    locations, seen = [], set()
    for origin, inside in dirs:
        host = find.host(inside)
        if host not in seen and os.path.isdir(host):
            seen.add(host)
            locations.append({"origin": origin, "dir": host})
    found: dict[str, Component] = {}
    for lib in scan(locations).libraries:
        name = CUDA_FAMILIES.get(lib.family)
        if name is None or not lib.version:
            continue
        comp = found.setdefault(name, Component(name, "", [], {"sonames": []}))
        versions = [v for v in comp.version.split(", ") if v]
        if lib.version not in versions:
            versions.append(lib.version)
        comp.version = ", ".join(versions)
        comp.where.append(find.inside(lib.names[0]))
        if lib.soname and lib.soname not in comp.detail["sonames"]:
            comp.detail["sonames"].append(lib.soname)
    return list(found.values())


def _description_version(find: _Finder, description: str) -> str | None:
    m = re.search(r"^Version:\s*(\S+)", find.read(description, 1 << 16) or "", re.M)
    return m.group(1) if m else None


def _r(find: _Finder, stack: Stack) -> None:
    for home in find.glob("r_home"):
        base = f"{home}/library/base/DESCRIPTION"
        version = _description_version(find, base)
        where = base
        if version is None:
            where = f"{home}/etc/Renviron"
            m = re.search(r"R_LIBS_USER=.*?-library/(\d+\.\d+)", find.read(where, 1 << 16) or "")
            version = m.group(1) if m else None
        if version:
            stack.add(Component("R", version, [where]))
            break
    for package in R_PACKAGES:
        for library in find.glob("r_library"):
            description = f"{library}/{package}/DESCRIPTION"
            version = _description_version(find, description)
            if version:
                stack.add(Component(f"R package {package}", version, [description]))
                if package == "torch":
                    _lantern(find, f"{library}/torch", stack)
                break


def _lantern(find: _Finder, package_dir: str, stack: Stack) -> None:
    """R torch's lib/ and deps/ holding liblantern, and the LibTorch files next to it."""
    libraries = []
    for sub in ("lib", "deps"):
        directory = f"{package_dir}/{sub}"
        try:
            names = sorted(os.listdir(find.host(directory)))
        except OSError:
            continue
        if any(n.startswith("liblantern") for n in names):
            stack.lantern_dirs.append(directory)
            libraries += [f"{directory}/{n}" for n in names if n.startswith(("liblantern", "libtorch", "libc10"))]
    if stack.lantern_dirs:
        stack.add(Component("R torch Lantern", "installed", list(stack.lantern_dirs), {"libraries": libraries}))
