"""Symbol-version requirements: what each object needs (verneed) against what the resolved
provider defines (verdef). This is the classic `GLIBCXX_3.4.30' not found` when R or conda puts an
older libstdc++ first.

ld.so checks these at load time (glibc elf/dl-version.c): a non-weak requirement on a loaded file
that lacks the version node is a hard error, printed as
`PROVIDER: version `VER' not found (required by OBJECT)`.

With a root filesystem (the resolution's `root_fs`), the copies that would satisfy a requirement are
looked for inside that root, and messages name in-root paths; the paths kept in the data stay host paths.
"""
from __future__ import annotations

import glob
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Callable

from rcompat.elf.errors import ElfError
from rcompat.elf.link.resolve import Resolution, Resolver
from rcompat.elf.link.root import Root, as_root
from rcompat.elf.read.objinfo import ObjectInfo, read_object

# Version-node families that users meet in error messages; anything else is still checked.
FAMILY = re.compile(r"^(GLIBCXX|CXXABI|GLIBC|GCC|OMP|GOMP|libcudart\.so|libcublas(?:Lt)?\.so|CUDA|libnvrtc\.so)"
                    r"[_.]?([0-9][0-9.]*)?$")


def version_key(node: str) -> tuple:
    m = FAMILY.match(node)
    if not m or not m.group(2):
        return (node, ())
    return (m.group(1), tuple(int(x) for x in m.group(2).strip(".").split(".") if x.isdigit()))


@dataclass
class UnmetVersion:
    version: str
    provider: str  # path of the loaded file that lacks it
    required_by: str
    weak: bool
    display: Callable[[str], str] = field(default=str, repr=False, compare=False)  # host path -> shown path

    def loader_message(self) -> str:
        # glibc 2.36's wording (Debian 12); verified against the real loader in tests/elf.
        return (f"{self.display(self.provider)}: version `{self.version}' not found "
                f"(required by {self.display(self.required_by)})")


@dataclass
class FamilyStatus:
    file: str  # the needed soname (libstdc++.so.6)
    family: str  # GLIBCXX
    newest_needed: str
    needed_by: str
    provider: str | None
    newest_provided: str | None
    satisfied: bool
    alternatives: list[str] = field(default_factory=list)  # files on this machine that would satisfy it


@dataclass
class VersionReport:
    resolution: Resolution
    unmet: list[UnmetVersion]
    families: list[FamilyStatus]
    no_version_info: list[tuple[str, str]]  # (provider, required_by): ld.so only warns

    @property
    def ok(self) -> bool:
        return not [u for u in self.unmet if not u.weak]

    def to_dict(self) -> dict:
        show = self.resolution.display
        return {"unmet": [u.loader_message() for u in self.unmet],
                "families": [{**f.__dict__, "needed_by": show(f.needed_by),
                              "provider": show(f.provider) if f.provider else None,
                              "alternatives": [show(a) for a in f.alternatives]} for f in self.families]}


def check_versions(resolution: Resolution, find_alternatives: bool = True) -> VersionReport:
    by_name = {}
    for n in resolution.nodes:
        for name in n.names | {n.info.name}:
            by_name.setdefault(name, n.info)
    unmet, no_info = [], []
    newest: dict[tuple[str, str], tuple[tuple, str, str]] = {}
    for node in resolution.nodes[resolution.preloaded:]:
        for file, version, weak in node.info.version_needs:
            provider = by_name.get(file)
            if provider is None:
                continue  # a missing library is reported by the resolver
            if not provider.version_defs:
                no_info.append((provider.path, node.path))
            elif version not in provider.version_defs:
                unmet.append(UnmetVersion(version, provider.path, node.path, weak, display=resolution.display))
            fam, key = version_key(version)
            if key:
                current = newest.get((file, fam))
                if current is None or key > current[0]:
                    newest[(file, fam)] = (key, version, node.path)
    families = []
    for (file, fam), (key, version, needed_by) in sorted(newest.items()):
        provider = by_name.get(file)
        provided = [v for v in (provider.version_defs if provider else ()) if version_key(v)[0] == fam]
        top = max(provided, key=lambda v: version_key(v)[1], default=None)
        ok = provider is not None and all(
            v in provider.version_defs for n in resolution.nodes for f, v, _w in n.info.version_needs
            if f == file and version_key(v)[0] == fam)
        status = FamilyStatus(file, fam, version, needed_by, provider.path if provider else None, top, ok)
        if not ok and find_alternatives:
            status.alternatives = satisfying_copies(file, _needed_versions(resolution, file), provider,
                                                    root=resolution.root_fs)
        families.append(status)
    return VersionReport(resolution, unmet, families, no_info)


def _needed_versions(resolution: Resolution, file: str) -> set[str]:
    return {v for n in resolution.nodes for f, v, w in n.info.version_needs if f == file and not w}


# The same places inside another root: its system, R and conda directories (not this machine's
# environment, home or interpreter).
ROOT_CANDIDATE_DIRS = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                       "/usr/local/lib", "/usr/lib/R/lib", "/usr/local/lib/R/lib", "/opt/conda/lib",
                       "/opt/conda/envs/*/lib", "/root/miniconda3/lib", "/root/miniconda3/envs/*/lib",
                       "/root/.local/share/r-miniconda/envs/*/lib")


def candidate_dirs(root: "Root | str | None" = None) -> list[str]:
    """Where another copy of a runtime library (libstdc++, libgomp) commonly lives; with a non-host
    root, in-root directories of that root."""
    fs = as_root(root)
    if not fs.is_host:
        seen_in_root: dict[str, str] = {}
        for pattern in ROOT_CANDIDATE_DIRS:
            for d in fs.glob(pattern):
                try:
                    host = fs.host(d)  # once: Root.isdir would resolve the path a second time
                except ElfError:
                    continue
                if os.path.isdir(host):
                    seen_in_root.setdefault(host, d)
        return list(seen_in_root.values())
    dirs = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
            "/usr/lib/R/lib", os.path.join(sys.prefix, "lib"), os.path.join(sys.base_prefix, "lib")]
    for var in ("CONDA_PREFIX", "R_HOME", "VIRTUAL_ENV"):
        if os.environ.get(var):
            dirs.append(os.path.join(os.environ[var], "lib"))
    home = os.path.expanduser("~")
    for pattern in ("miniconda3/lib", "anaconda3/lib", "miniforge3/lib", "mambaforge/lib", "miniconda3/envs/*/lib",
                    ".local/share/r-miniconda/envs/*/lib"):
        dirs += glob.glob(os.path.join(home, pattern))
    dirs += glob.glob("/opt/conda/lib") + glob.glob("/opt/conda/envs/*/lib")
    seen: dict[str, None] = {}
    for d in dirs:
        if os.path.isdir(d):
            seen.setdefault(os.path.realpath(d), None)
    return list(seen)


def satisfying_copies(soname: str, needed: set[str], current: ObjectInfo | None,
                      dirs: list[str] | None = None, root: "Root | str | None" = None) -> list[str]:
    """Host paths of copies of `soname` in `dirs` (in-root with a root) that define every version in
    `needed`."""
    fs = as_root(root)
    out = []
    for d in dirs if dirs is not None else candidate_dirs(fs):
        try:
            path = fs.host(os.path.join(d, soname))
        except ElfError:
            continue
        if not os.path.exists(path):
            continue
        try:
            info = read_object(path)
        except ElfError:
            continue
        if current is not None and (info.file_id == current.file_id or not info.same_kind(current)):
            continue
        if needed <= set(info.version_defs):
            out.append(path)
    return out


def versions(path: "str | os.PathLike[str]", ld_library_path: "str | list[str] | None" = None,
             root: "Root | str | None" = None) -> VersionReport:
    """Version requirements of `path` and its closure; with `root`, resolved inside that root."""
    return check_versions(Resolver(ld_library_path, root=root).resolve(path))
