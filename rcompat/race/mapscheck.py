"""What a process map says about R + torch + CUDA sharing one address space.

Facts first (`analyse`), findings from them (`findings`), and `maps_report` for `rcompat maps`. The
names of the driver's device files and the runtimes that must be loaded once are data
(rcompat/data/maps_runtimes.toml).
"""
from __future__ import annotations

import os
import re
from typing import Any, Iterable

from rcompat.data import cached_toml
from rcompat.model import Finding, Report, Status
from rcompat.race.maps import Region, size_text, read_maps, read_mmap_min_addr

AREA = "race"
TABLE = "maps_runtimes.toml"
DEFAULT_LARGE_BYTES = 64 << 20
DRIVER_DEVICE_IDS = ("nvidia-uvm", "nvidiactl", "nvidia-device")
_AUDITWHEEL_HASH = re.compile(r"-[0-9a-f]{8}$")


def build_id(path: str) -> str | None:
    """GNU build-id of a mapped file, read by the ELF engine; None when it is not a readable ELF."""
    from rcompat.elf.errors import ElfError
    from rcompat.elf.read.reader import open_elf

    try:
        with open_elf(path) as image:
            return image.build_id
    except ElfError:  # deleted since it was mapped, or not an ELF file at all
        return None


def gpu_role(region: Region) -> str | None:
    for row in cached_toml(TABLE, "gpu_mapping"):
        if region.path and re.search(row["pattern"], region.path):
            return row["id"]
    return None


def analyse(regions: list[Region], *, large_bytes: int = DEFAULT_LARGE_BYTES, live: bool = False,
            mmap_min_addr: int | None = None) -> dict[str, Any]:
    gpu = [(r, gpu_role(r)) for r in regions]
    gpu = [(r, role) for r, role in gpu if role]
    heaps = [r for r in regions if r.heap]
    # "---p" reservations (CUDA's VA ranges, guard areas) fault on access: they separate, not expose.
    large_anon = [r for r in regions if r.anonymous and r.size >= large_bytes and r.perms[:3] != "---"]
    r_libs = sorted({r.path for r in regions if re.search(r"/libR\.so$", r.path)})
    driver_regions = [r for r, role in gpu if role in DRIVER_DEVICE_IDS]
    return {
        "regions": len(regions),
        "mapped_bytes": sum(r.size for r in regions),
        "gpu_mappings": [{"role": role, **r.to_dict()} for r, role in gpu],
        "gpu_roles": _count(role for _, role in gpu),
        "heap": [r.to_dict() for r in heaps],
        "large_anonymous": [r.to_dict() for r in large_anon],
        "large_bytes": large_bytes,
        "r_loaded": r_libs,
        "neighbours": _neighbours(driver_regions, heaps + large_anon),
        "overlaps": _overlaps(regions),
        "mmap_min_addr": mmap_min_addr,
        "below_mmap_min_addr": [r.to_dict() for r in regions
                                if mmap_min_addr is not None and r.start < mmap_min_addr],
        "duplicates": duplicate_runtimes(regions, live=live),
    }


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _neighbours(driver: list[Region], memory: list[Region]) -> list[dict[str, Any]]:
    """Driver mappings that overlap or touch (no unmapped gap) the heap or a large anonymous region."""
    found = []
    for d in driver:
        for m in memory:
            if d.start < m.end and m.start < d.end:
                relation = "overlap"
            elif d.end == m.start or m.end == d.start:
                relation = "adjacent"
            else:
                continue
            found.append({"relation": relation, "driver": d.label(), "memory": m.label()})
    return found


def _overlaps(regions: list[Region]) -> list[dict[str, str]]:
    """The kernel never reports overlapping mappings; a saved file that has them was edited or merged."""
    ordered = sorted(regions, key=lambda r: (r.start, r.end))
    return [{"first": a.label(), "second": b.label()}
            for a, b in zip(ordered, ordered[1:]) if b.start < a.end]


def duplicate_runtimes(regions: list[Region], *, live: bool) -> list[dict[str, Any]]:
    """Runtime libraries mapped from more than one file (real path), with their build-ids."""
    paths = sorted({r.path for r in regions if r.file_backed})
    out = []
    for row in cached_toml(TABLE, "runtime"):
        pattern = re.compile(row["pattern"])
        members: dict[str, set[str]] = {}
        for path in paths:
            name = os.path.basename(path)
            if pattern.search(name):
                stem = _AUDITWHEEL_HASH.sub("", name.split(".so", 1)[0]) + ".so"
                members.setdefault(stem, set()).add(os.path.realpath(path) if live else path)
        twice = {stem: sorted(p) for stem, p in members.items() if len(p) > 1}
        conflict = bool(row.get("members_conflict")) and len(members) > 1
        if not twice and not conflict:
            continue
        copies = sorted({p for ps in members.values() for p in ps}) if conflict else \
            sorted({p for ps in twice.values() for p in ps})
        ids = {p: build_id(p) for p in copies}
        known = [b for b in ids.values() if b]
        out.append({"runtime": row["family"], "id": row["id"], "status": row["status"], "copies": copies,
                    "names": sorted(members), "build_ids": ids,
                    "same_build": len(known) == len(copies) and len(set(known)) == 1,
                    "why": row["why"], "source": row["source"], "confidence": row.get("confidence", "")})
    return out


def findings(facts: dict[str, Any], source: str) -> list[Finding]:
    out = [_gpu_finding(facts, source), _memory_finding(facts, source)]
    if facts["gpu_mappings"]:
        out.append(_neighbour_finding(facts, source))
    if facts["overlaps"]:
        out.append(Finding(id="RACE-MAPS-OVERLAP", area=AREA, status=Status.WARN,
                           title=f"{len(facts['overlaps'])} overlapping mapping(s) in {source}",
                           message="The kernel never reports overlaps: this map was edited or merged from "
                                   "several snapshots, so the other answers are about an impossible layout.",
                           evidence={"overlaps": facts["overlaps"][:10]}, source="proc(5): /proc/PID/maps"))
    out.append(_min_addr_finding(facts))
    out.append(_duplicate_finding(facts, source))
    return out


def _gpu_finding(facts: dict[str, Any], source: str) -> Finding:
    roles = facts["gpu_roles"]
    if not roles:
        return Finding(id="RACE-MAPS-GPU", area=AREA, status=Status.SKIP,
                       title="no NVIDIA driver mappings in this process",
                       message=f"{source} maps no /dev/nvidia* device and no libcuda: CUDA was not "
                               "initialised here (or there is no driver).", evidence={"source": source},
                       source="rcompat/data/maps_runtimes.toml [[gpu_mapping]]")
    text = ", ".join(f"{role} x{n}" for role, n in sorted(roles.items()))
    return Finding(id="RACE-MAPS-GPU", area=AREA, status=Status.OK, title=f"NVIDIA driver mapped: {text}",
                   evidence={"source": source, "gpu_mappings": facts["gpu_mappings"][:40]},
                   source="rcompat/data/maps_runtimes.toml [[gpu_mapping]]")


def _memory_finding(facts: dict[str, Any], source: str) -> Finding:
    heap = sum(h["size"] for h in facts["heap"])
    large = facts["large_anonymous"]
    r_text = f"R mapped from {', '.join(facts['r_loaded'])}" if facts["r_loaded"] else "R not mapped"
    return Finding(id="RACE-MAPS-MEMORY", area=AREA, status=Status.OK,
                   title=f"{facts['regions']} regions, heap {size_text(heap)}, {len(large)} anonymous region(s) "
                         f">= {size_text(facts['large_bytes'])}; {r_text}",
                   evidence={"source": source, "heap": facts["heap"], "large_anonymous": large[:20],
                             "mapped_bytes": facts["mapped_bytes"]}, source="proc(5): /proc/PID/maps")


def _neighbour_finding(facts: dict[str, Any], source: str) -> Finding:
    near = facts["neighbours"]
    if not near:
        return Finding(id="RACE-MAPS-NEIGHBOURS", area=AREA, status=Status.OK,
                       title="driver mappings are separated from the heap and large anonymous regions",
                       evidence={"source": source}, source="issue 8")
    overlap = [n for n in near if n["relation"] == "overlap"]
    return Finding(
        id="RACE-MAPS-NEIGHBOURS", area=AREA, status=Status.FAIL if overlap else Status.WARN,
        title=f"{len(near)} driver mapping(s) {'overlap' if overlap else 'touch'} the heap or a large "
              "anonymous region",
        message="No unmapped guard gap between NVIDIA driver memory and R/Python memory: an overrun in "
                "either runtime writes into the other instead of faulting. First: "
                f"{near[0]['driver']} {near[0]['relation']} {near[0]['memory']}.",
        remedy="Reproduce with `rcompat race --trace` and compare; allocate GPU memory from one runtime only.",
        evidence={"source": source, "neighbours": near[:20]}, source="issue 8", confidence="medium")


def _min_addr_finding(facts: dict[str, Any]) -> Finding:
    row = cached_toml(TABLE, "limit")[0]
    value = facts["mmap_min_addr"]
    if value is None:
        return Finding(id="RACE-MAPS-MMAP-MIN-ADDR", area=AREA, status=Status.SKIP,
                       title="vm.mmap_min_addr unreadable", message="/proc/sys/vm/mmap_min_addr could not be read.",
                       source=row["source"])
    low = facts["below_mmap_min_addr"]
    status = Status.WARN if value < int(row["min_safe"]) or low else Status.OK
    return Finding(id="RACE-MAPS-MMAP-MIN-ADDR", area=AREA, status=status,
                   title=f"vm.mmap_min_addr = {value} on this machine"
                         + (f"; {len(low)} region(s) below it" if low else ""),
                   message=row["why"] if status is Status.WARN else "",
                   remedy="sysctl -w vm.mmap_min_addr=65536" if status is Status.WARN else "",
                   evidence={"mmap_min_addr": value, "below": low[:5]}, source=row["source"],
                   confidence=row.get("confidence", ""))


def _duplicate_finding(facts: dict[str, Any], source: str) -> Finding:
    dups = facts["duplicates"]
    if not dups:
        return Finding(id="RACE-MAPS-DUPLICATE", area=AREA, status=Status.OK,
                       title="each runtime (libtorch, libc10, libstdc++, OpenMP, libcudart, libcublas) mapped at most once",
                       evidence={"source": source}, source="rcompat/data/maps_runtimes.toml [[runtime]]")
    worst = Status.FAIL if any(d["status"] == "fail" for d in dups) else Status.WARN
    parts = [f"{d['runtime']}: {' and '.join(d['copies'])}"
             + (" (same build-id)" if d["same_build"] else "") for d in dups]
    return Finding(id="RACE-MAPS-DUPLICATE", area=AREA, status=worst,
                   title=f"{len(dups)} runtime(s) mapped from two files: {', '.join(d['runtime'] for d in dups)}",
                   message="; ".join(parts) + ". " + " ".join(d["why"] for d in dups),
                   remedy="Load one copy: point R torch and Python torch at the same LibTorch (same version), "
                          "or keep them in separate processes; for OpenMP/libstdc++ preload the one copy both need.",
                   evidence={"source": source, "duplicates": dups},
                   source="; ".join(sorted({d["source"] for d in dups})),
                   confidence=min((d["confidence"] for d in dups), key=["high", "medium", "low", ""].index))


def maps_facts(pid: int | None = None, file: str | None = None,
               large_bytes: int = DEFAULT_LARGE_BYTES) -> dict[str, Any]:
    """analyse() of the map read, with "source" naming where it came from."""
    regions, source = read_maps(pid=pid, file=file)
    facts = analyse(regions, large_bytes=large_bytes, live=file is None, mmap_min_addr=read_mmap_min_addr())
    facts["source"] = source
    return facts


def maps_report(pid: int | None = None, file: str | None = None,
                large_bytes: int = DEFAULT_LARGE_BYTES) -> Report:
    facts = maps_facts(pid=pid, file=file, large_bytes=large_bytes)
    report = Report(command="maps")
    report.add(findings(facts, facts["source"]))
    report.facts = {"maps": facts}
    return report
