"""Findings about carried objects, NEW's frameworks and ABI drift. Only what the upgrade introduces
fails; what was already broken in OLD is one `warn` marked pre-existing."""
from __future__ import annotations

import os

from rcompat.model import Finding, Status
from rcompat.upgrade_scan.stack_checks import slug

AREA = "upgrade"
SOURCE_REBIND = "rcompat upgrade: static rebinding (ld.so rules: glibc elf/dl-load.c, dl-lookup.c, dl-version.c)"
SOURCE_NEEDED = "rcompat upgrade: NEW's framework libraries resolved inside NEW (ld.so search rules)"
SOURCE_COLOAD = "rcompat upgrade: co-loading prediction (rcompat.elf.coload) inside NEW"
SOURCE_ABI = "rcompat upgrade: exported-ABI diff (rcompat.elf.abi, counted like abidiff) with the carried objects as users"
SHOWN = 8  # names listed in a message; the evidence holds them all


def _listed(items: list[str], shown: int = SHOWN) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return "; ".join(items[:shown]) + more


def cxx_abi_findings(rebindings: list) -> list[Finding]:
    """UPGRADE-CXX-ABI: a carried object that, in NEW, links to a library built for the other
    std::string ABI (the mismatch its missing symbols, if any, come from)."""
    from rcompat.elf.link.cxx_abi import SOURCE

    pairs = [m for rb in rebindings for m in rb.cxx_abi]
    if not pairs:
        return []
    return [Finding("UPGRADE-CXX-ABI", AREA, Status.FAIL,
                    f"{len(pairs)} carried object(s) would load a library built for another C++ std::string ABI",
                    message=pairs[0].message(),
                    remedy="Rebuild the carried object against NEW with NEW's ABI (-D_GLIBCXX_USE_CXX11_ABI=1 for "
                           "the C++11 std::string, =0 for the old one), or keep the library it was built with.",
                    evidence={"mismatches": [m.to_dict() for m in pairs]}, source=SOURCE, confidence="high")]


def carried_findings(carried, rebindings: list) -> list[Finding]:
    out = []
    broken = [rb for rb in rebindings if rb.breaks]
    names = object_ids([rb.inside for rb in broken])
    for rb in broken:
        parts = []
        if rb.missing:
            parts.append("cannot find " + ", ".join(f"{m.name} (needed by {m.needed_by})" for m in rb.missing))
        if rb.unmet:
            parts.append("version nodes missing: " + ", ".join(f"{u.version} (not in {u.provider})" for u in rb.unmet))
        if rb.unbound:
            parts.append(f"{len(rb.unbound)} undefined symbol(s): " + _listed([
                f"{u.label()}" + (f" (provided in OLD by {os.path.basename(u.old_provider)})" if u.old_provider else "")
                for u in rb.unbound]))
        out.append(Finding(  # one per object, its path in the id: ids are unique within a report
            f"UPGRADE-CARRIED-BREAKS-{names[rb.inside]}", AREA, Status.FAIL, f"{rb.inside} fails to load in NEW",
            message="; ".join(parts) + ". ld.so would say: " + _first_loader_error(rb),
            # said once, by the first object that breaks: the same sentence under each would repeat it
            remedy="" if rb is not broken[0] else (
                "Rebuild it, and every other object below that fails, against NEW's libraries (reinstall the "
                "extension / R package inside NEW, e.g. pip install --no-binary / torch::install_torch()), or "
                "keep OLD's versions of the libraries each names"),
            evidence=rb.to_dict(), source=SOURCE_REBIND, confidence="high"))
    pre = {rb.inside: _pre_existing(rb.inside, [m.name for m in rb.pre_missing], [u.label() for u in rb.pre_unbound],
                                    [u.version for u in rb.pre_unmet]) for rb in rebindings if rb.pre_existing}
    pre.update({inside: _pre_existing(inside, names, [], []) for inside, names in carried.unchanged_missing.items()})
    if pre:
        lines = [f"{inside}: {text}" for inside, text in sorted(pre.items())]
        out.append(Finding(
            "UPGRADE-CARRIED-PREEXISTING", AREA, Status.WARN,
            f"{len(pre)} carried object{'s' if len(pre) > 1 else ''} broken in OLD too: pre-existing, not caused "
            "by the upgrade", message=_listed(lines, 5) + " — the same in OLD, so they load in neither root",
            remedy="Fix them independently of the upgrade (install the missing library or remove the object)",
            evidence={"objects": dict(sorted(pre.items()))}, source=SOURCE_REBIND, confidence="high"))
    ok_count = len(rebindings) - len(broken)
    summary = (f"{len(carried.identical)} identical objects in both roots; {len(carried.rebound)} with a changed "
               f"dependency closure rebound against NEW" + (f", {len(carried.mapped)} mapped by --carry" if carried.mapped else ""))
    status = Status.FAIL if broken else Status.OK
    title = (f"{len(broken)} of {len(rebindings)} carried objects fail to load in NEW" if broken
             else f"{ok_count} carried objects bind in NEW" if rebindings else "no carried object needs rebinding")
    out.insert(0, Finding("UPGRADE-CARRIED", AREA, status, title, message=summary,
                          remedy="see the UPGRADE-CARRIED-BREAKS-… findings" if broken else "",
                          evidence=carried.to_dict(), source=SOURCE_REBIND, confidence="high"))
    return out


def _first_loader_error(rb) -> str:
    if rb.missing:
        return f"{rb.missing[0].name}: cannot open shared object file: No such file or directory"
    if rb.unmet:
        return f"{rb.unmet[0].provider}: version `{rb.unmet[0].version}' not found (required by {rb.inside})"
    u = rb.unbound[0]
    return f"{rb.inside}: undefined symbol: {u.name}" + (f", version {u.version}" if u.version else "")


def _pre_existing(inside: str, libs: list[str], symbols: list[str], versions: list[str]) -> str:
    parts = ([f"cannot find {', '.join(libs)}"] if libs else []) + \
            ([f"{len(symbols)} undefined symbol(s): {_listed(symbols, 3)}"] if symbols else []) + \
            ([f"version nodes missing: {', '.join(versions)}"] if versions else [])
    return "; ".join(parts)


def object_ids(paths: list[str]) -> dict[str, str]:
    """Each path's id part: its last two components (`demo_ext/old_api.so` -> DEMO-EXT-OLD-API-SO), more
    where two paths would otherwise give the same one, so ids stay short, unique and stable."""
    out: dict[str, str] = {}
    for path in paths:
        parts = path.strip("/").split("/")
        for n in range(min(2, len(parts)), len(parts) + 1):
            ident = slug("/".join(parts[-n:]))
            clash = [p for p in paths if p != path and slug("/".join(p.strip("/").split("/")[-n:])) == ident]
            if not clash:
                break
        out[path] = ident
    return out


def needed_findings(result) -> list[Finding]:
    out = []
    if result.introduced:
        gaps = [f"{g.soname} (needed by {', '.join(g.needed_by)})" for g in result.introduced]
        out.append(Finding(
            "UPGRADE-NEWLY-NEEDED", AREA, Status.FAIL,
            f"NEW's frameworks need {len(gaps)} librar{'y' if len(gaps) == 1 else 'ies'} NEW does not provide",
            message=_listed(gaps),
            remedy=("Install what provides them in NEW (for a CUDA build of torch: the matching nvidia-* wheels or "
                    "the CUDA toolkit's libraries, e.g. libcudart.so.13 from CUDA 13.0), or use a build of the "
                    "framework that does not need them (the CPU build)"),
            evidence={"introduced": [g.__dict__ for g in result.introduced], "checked": result.checked},
            source=SOURCE_NEEDED, confidence="high"))
    elif result.checked:
        out.append(Finding("UPGRADE-NEWLY-NEEDED", AREA, Status.OK,
                           f"NEW's {len(result.checked)} framework objects find every library they need",
                           evidence={"checked": result.checked}, source=SOURCE_NEEDED, confidence="high"))
    if result.from_driver:
        names = [f"{g.soname} (needed by {', '.join(g.needed_by)})" for g in result.from_driver]
        out.append(Finding("UPGRADE-NEEDS-DRIVER", AREA, Status.OK,
                           f"NEW's frameworks load {len(names)} NVIDIA driver librar{'y' if len(names) == 1 else 'ies'}",
                           message=_listed(names) + ": not part of an image; the driver (through the NVIDIA Container "
                                   "Toolkit in a container) provides them at run time",
                           evidence={"from_driver": [g.__dict__ for g in result.from_driver]},
                           source="rcompat/data/upgrade_stack.toml [[driver_library]]", confidence="high"))
    if result.pre_existing:
        gaps = [f"{g.soname} (needed by {', '.join(g.needed_by)})" for g in result.pre_existing]
        out.append(Finding("UPGRADE-NEEDED-PREEXISTING", AREA, Status.WARN,
                           f"{len(gaps)} librar{'y' if len(gaps) == 1 else 'ies'} missing in OLD too (pre-existing)",
                           message=_listed(gaps), remedy="Not caused by the upgrade; install them if that code is used",
                           evidence={"pre_existing": [g.__dict__ for g in result.pre_existing]},
                           source=SOURCE_NEEDED, confidence="high"))
    return out


def coload_finding(old_problems, new_problems) -> Finding | None:
    if new_problems is None:
        return None
    texts, evidence = new_problems
    before = set(old_problems[0]) if old_problems else set()
    introduced = [t for t in texts if t not in before]
    if not texts:
        return Finding("UPGRADE-COLOAD", AREA, Status.OK, "R torch and Python torch load together in NEW",
                       evidence=evidence, source=SOURCE_COLOAD, confidence="medium")
    status = Status.FAIL if introduced else Status.WARN
    return Finding("UPGRADE-COLOAD", AREA, status,
                   f"R torch and Python torch in one process in NEW: {len(texts)} problem(s)"
                   + ("" if introduced else " (pre-existing)"),
                   message=_listed(introduced or texts, 3),
                   remedy="Use one LibTorch for both (R torch built against the same LibTorch as Python torch), "
                          "or keep them in separate processes",
                   evidence={**evidence, "problems": texts, "introduced": introduced}, source=SOURCE_COLOAD,
                   confidence="medium")


def drift_findings(drifts: list) -> list[Finding]:
    out = []
    for d in drifts:
        c = d.counts
        summary = (f"{c['removed_functions']} functions and {c['removed_variables']} variables removed, "
                   f"{c['added_functions']} functions and {c['added_variables']} variables added, {c['changed']} changed")
        hits = [f"{dep['object']}: {_listed(dep['broken'] + dep['missing_versions'])}"
                for dep in d.dependents if dep["broken"] or dep["missing_versions"]]
        status = Status.FAIL if hits else Status.OK
        message = summary + (f"; {d.hits} of them hit carried objects — " + " | ".join(hits) if hits
                             else f"; none hits the {len(d.dependents)} carried object(s) that link it")
        out.append(Finding(f"UPGRADE-ABI-{slug(d.soname.split('.so')[0])}", AREA, status,
                           f"ABI drift of {d.soname}: {d.verdict}", message=message,
                           remedy=(f"Rebuild the carried objects named above against NEW's {d.soname}" if hits
                                   else ""),
                           evidence={"old": d.old, "new": d.new, "counts": c, "dependents": d.dependents},
                           source=SOURCE_ABI, confidence="high"))
    return out
