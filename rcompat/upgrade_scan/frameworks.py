"""NEW's own frameworks: sonames they newly need that NEW lacks, what co-loading R torch and Python
torch would do in NEW, and the ABI drift of the libraries carried objects link.

Framework objects are the ELF objects in torch's lib directory, in R torch's Lantern directories and
the CUDA libraries the stack found. A soname they cannot find in NEW is introduced by the upgrade
unless OLD's frameworks could not find it either. ABI drift is computed only for libraries a carried
object links whose bytes changed (libtorch_cpu.so's diff reads 74,000 symbols a side; diffing what no
carried object uses would only cost time), with the carried objects as `used_by`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from rcompat.upgrade_scan.side import SharedIndexes, Side
from rcompat.upgrade_scan.stack import driver_libraries


@dataclass
class NeededGap:
    soname: str
    needed_by: list[str]  # sonames/file names of NEW's objects that need it
    searched: list[str] = field(default_factory=list)


@dataclass
class NewlyNeeded:
    checked: list[str]  # in-root paths of NEW's framework objects
    introduced: list[NeededGap] = field(default_factory=list)
    pre_existing: list[NeededGap] = field(default_factory=list)
    from_driver: list[NeededGap] = field(default_factory=list)  # the driver provides them at run time


def framework_library_names() -> set[str]:
    """Core libraries that mark a framework's library directory (rcompat/data/upgrade_stack.toml)."""
    from rcompat.data import cached_toml

    return {row["name"] for row in cached_toml("upgrade_stack.toml", "framework_library",
                                               required=("name", "framework", "source"))}


def framework_dirs(side: Side) -> list[str]:
    """torch/lib and Lantern directories the stack found, and any directory holding a framework's core
    library (libtorch_cpu.so under /opt/torch/lib, without torch/version.py beside it)."""
    names = framework_library_names()
    found = {os.path.dirname(p) for p in side.inventory.objects if os.path.basename(p) in names}
    return sorted(set(side.stack.torch_lib_dirs + side.stack.lantern_dirs) | found)


def framework_objects(side: Side) -> list[str]:
    dirs = tuple(d.rstrip("/") + "/" for d in framework_dirs(side))
    cuda = {p for name in ("CUDA runtime", "cuDNN", "cuBLAS", "NCCL")
            for p in (side.stack.components[name].where if name in side.stack.components else [])}
    return sorted(p for p in side.inventory.objects if p.startswith(dirs) or p in cuda)


def _missing(side: Side, objects: list[str]) -> dict[str, NeededGap]:
    from rcompat.elf.errors import ElfError

    gaps: dict[str, NeededGap] = {}
    for inside in objects:
        try:
            res = side.resolve(inside)
        except ElfError:
            continue
        for m in res.missing:
            gap = gaps.setdefault(m.name, NeededGap(m.name, [], m.searched_dirs))
            if m.needed_by not in gap.needed_by:
                gap.needed_by.append(m.needed_by)
    return gaps


def newly_needed(old: Side, new: Side) -> NewlyNeeded:
    objects = framework_objects(new)
    out = NewlyNeeded(objects)
    before = _missing(old, framework_objects(old))
    driver = driver_libraries()
    for name, gap in sorted(_missing(new, objects).items()):
        (out.from_driver if name in driver else out.pre_existing if name in before else out.introduced).append(gap)
    return out


# -- co-loading R torch and Python torch -------------------------------------------------------------

def _coload_roots(side: Side) -> tuple[str, str] | None:
    lantern = next((p for p in framework_objects(side) if os.path.basename(p).startswith("liblantern")), None)
    torch_dirs = tuple(d.rstrip("/") + "/" for d in side.stack.torch_lib_dirs)
    python = [p for p in side.inventory.objects if p.startswith(torch_dirs)]
    first = next((p for p in python if os.path.basename(p) == "libtorch_python.so"), None) or \
        next((p for p in python if os.path.basename(p) == "libtorch_cpu.so"), None)
    return (lantern, first) if lantern and first else None


def coload_problems(side: Side) -> "tuple[list[str], dict] | None":
    """Problems loading R torch's Lantern after Python torch in `side` (None: not both installed)."""
    from rcompat.elf.link.coload import coload

    pair = _coload_roots(side)
    if pair is None:
        return None
    lantern, python = pair
    prediction = coload([python], [lantern], ld_library_path=list(side.ld_library_path), root=side.root,
                        global_loaded=False)
    texts = [f.message for f in prediction.failures] + [h.message for h in prediction.hazards]
    if prediction.reverse is not None:
        texts += [f.message for f in prediction.reverse.failures] + [h.message for h in prediction.reverse.hazards]
    return list(dict.fromkeys(texts)), {"python": python, "lantern": lantern, "first_error": prediction.first_error}


# -- ABI drift of libraries carried objects link -------------------------------------------------------

@dataclass
class Drift:
    soname: str
    old: str  # in-root paths
    new: str
    counts: dict
    dependents: list[dict]  # per carried object: object, broken imports, missing versions
    verdict: str

    @property
    def hits(self) -> int:
        return sum(len(d["broken"]) + len(d["missing_versions"]) for d in self.dependents)


def abi_drift(rebindings: list, old: Side, new: Side, indexes: SharedIndexes, progress=None) -> list[Drift]:
    from rcompat.elf.abi.diff import abi_diff
    from rcompat.elf.errors import ElfError

    pairs: dict[tuple[str, str], dict[str, str]] = {}  # (old host, new host) -> {carried in-root: its host}
    for rb in rebindings:
        for soname, new_host in rb.new_links.items():
            old_host = rb.old_links.get(soname)
            if old_host is None:
                continue  # new to the closure: reported by rebinding
            # one file reached under two names (/lib/libR.so, /usr/lib/R/lib/libR.so) is one pair, one verdict
            old_host, new_host = os.path.realpath(old_host), os.path.realpath(new_host)
            if indexes.canonical(new_host) == old_host:
                continue  # byte-identical
            pairs.setdefault((old_host, new_host), {})[rb.inside] = rb.object_host
    out = []
    for k, ((old_host, new_host), users) in enumerate(sorted(pairs.items()), 1):
        if progress is not None:
            progress.note(f"ABI drift {k}/{len(pairs)}: {os.path.basename(new_host)}")
        try:
            diff = abi_diff(old_host, new_host, used_by=list(users.values()))
        except ElfError:
            continue
        by_host = {host: inside for inside, host in users.items()}
        pretty = _demangled([p.name for d in diff.dependents for p in d.broken_imports])
        dependents = [{"object": by_host.get(d.path, d.path), "imports_checked": d.imports_checked,
                       "broken": [f"{pretty.get(p.name, p.name)} ({p.change}: {p.detail})" for p in d.broken_imports],
                       "missing_versions": list(d.missing_versions)} for d in diff.dependents]
        out.append(Drift(diff.new_soname or os.path.basename(new_host), old.show(old_host), new.show(new_host),
                         diff.counts(), dependents, diff.verdict))
    return out


def _demangled(names: list[str]) -> dict[str, str]:
    from rcompat.elf.read.demangle import demangle_all

    return dict(zip(names, demangle_all(names))) if names else {}
