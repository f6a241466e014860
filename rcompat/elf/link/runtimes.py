"""Two copies of one runtime in one process: R torch's libtorch next to Python's, two libgomps.

Given several roots (each resolved with its own closure, as two frameworks would load them) or a
live process (/proc/PID/maps), group the objects by runtime family and report families present
from more than one file, with paths, sonames and build-ids. The families are the same table
`rcompat maps` uses (rcompat/data/maps_runtimes.toml [[runtime]]), so both commands agree.

Two copies with the same SONAME do not both load: ld.so reuses the first for the second's
DT_NEEDED, which is what `rcompat elf coload` predicts in detail. Copies with different sonames
(auditwheel's libgomp-a34b3233.so.1 next to libgomp.so.1) really are both mapped.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rcompat.elf.errors import ElfError
from rcompat.elf.link.resolve import Resolver
from rcompat.elf.read.objinfo import ObjectInfo, read_object

TABLE = "maps_runtimes.toml"
_AUDITWHEEL_HASH = re.compile(r"-[0-9a-f]{8}$")


@dataclass
class RuntimeCopy:
    path: str
    soname: str | None
    build_id: str | None
    roots: list[str] = field(default_factory=list)  # which inputs brought it in


@dataclass
class DuplicateRuntime:
    family: str
    id: str
    status: str
    copies: list[RuntimeCopy]
    why: str
    source: str
    confidence: str

    @property
    def same_build(self) -> bool:
        ids = [c.build_id for c in self.copies]
        return all(ids) and len(set(ids)) == 1

    @property
    def all_load(self) -> bool:
        """Different sonames: every copy is mapped; the same soname: ld.so keeps only the first."""
        names = [c.soname or os.path.basename(c.path) for c in self.copies]
        return len(set(names)) == len(names)

    def describe(self) -> str:
        parts = [f"{c.soname or os.path.basename(c.path)} at {c.path} (build-id {c.build_id or 'none'}"
                 + (f"; via {', '.join(os.path.basename(r) for r in c.roots)})" if c.roots else ")")
                 for c in self.copies]
        return f"{len(self.copies)} copies of {self.family}: " + "; ".join(parts)

    def to_dict(self) -> dict:
        return {"family": self.family, "id": self.id, "status": self.status, "same_build": self.same_build,
                "all_load": self.all_load, "copies": [c.__dict__ for c in self.copies], "why": self.why,
                "source": self.source}


def runtime_families() -> list[dict]:
    from rcompat.data import cached_toml

    return list(cached_toml(TABLE, "runtime"))


def group_duplicates(objects: list[tuple[ObjectInfo, str]]) -> list[DuplicateRuntime]:
    """`objects`: (object, root that brought it in). Same file reached twice counts once."""
    out = []
    for row in runtime_families():
        pattern = re.compile(row["pattern"])
        copies: dict[str, RuntimeCopy] = {}
        stems: set[str] = set()
        for info, root in objects:
            name = os.path.basename(info.realpath)
            label = info.soname or os.path.basename(info.path)
            if not (pattern.search(label) or pattern.search(name)):
                continue
            stems.add(_AUDITWHEEL_HASH.sub("", label.split(".so", 1)[0]))
            copy = copies.setdefault(info.realpath, RuntimeCopy(info.realpath, info.soname, info.build_id))
            if root and root not in copy.roots:
                copy.roots.append(root)
        distinct = list(copies.values())
        conflicting_members = bool(row.get("members_conflict")) and len(stems) > 1
        if len(distinct) > 1 and (conflicting_members or not _same_family_member_only(distinct, row)):
            out.append(DuplicateRuntime(row["family"], row["id"], row.get("status", "warn"), distinct,
                                        row.get("why", ""), row.get("source", ""), row.get("confidence", "")))
    return out


def _same_family_member_only(copies: list[RuntimeCopy], row: dict) -> bool:
    """libtorch.so + libtorch_cpu.so of ONE install are members, not copies: a family counts as
    duplicated only when some member name occurs from two different files."""
    names = [_AUDITWHEEL_HASH.sub("", (c.soname or os.path.basename(c.path)).split(".so", 1)[0]) for c in copies]
    return len(set(names)) == len(names)


def duplicate_runtimes(paths: "list[str] | tuple[str, ...]", ld_library_path: "str | list[str] | None" = None,
                       together: bool = False) -> list[DuplicateRuntime]:
    """Duplicate runtimes among the closures of `paths`.

    Each root is resolved on its own (as each framework is found from its own RUNPATH); with
    `together`, the roots are loaded into one modelled process, so a soname loaded first is reused.
    """
    resolver = Resolver(ld_library_path)
    objects: list[tuple[ObjectInfo, str]] = []
    loaded: list[ObjectInfo] = []
    for root in paths:
        res = resolver.resolve(root, preloaded=loaded if together else None)
        objects += [(n.info, os.fspath(root)) for n in res.nodes[res.preloaded:]]
        if together:
            loaded = [n.info for n in res.nodes]
    return group_duplicates(objects)


def mapped_objects(pid: "int | str") -> list[str]:
    """Paths of the ELF files mapped into process `pid` (from /proc/PID/maps), in map order."""
    maps = f"/proc/{pid}/maps"
    try:
        text = open(maps, encoding="utf-8", errors="replace").read()
    except OSError as exc:
        raise ElfError(maps, f"cannot read the process map: {exc.strerror or exc}") from None
    seen: dict[str, None] = {}
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in os.path.basename(parts[5]):
            seen.setdefault(parts[5].replace(" (deleted)", ""), None)
    return list(seen)


def duplicate_runtimes_in_process(pid: "int | str") -> list[DuplicateRuntime]:
    objects = []
    for path in mapped_objects(pid):
        try:
            objects.append((read_object(path), f"pid {pid}"))
        except ElfError:
            continue
    return group_duplicates(objects)
