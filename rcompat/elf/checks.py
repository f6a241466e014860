"""The elf area of `rcompat doctor`: the real torch libraries on this machine, read statically.

Targets are Python torch's libtorch_cpu.so / libtorch_python.so (found with find_spec, never
imported) and R torch's liblantern.so / libtorch.so (from the R engine's facts when present).
Every check shares one resolution per library through ctx.memo, and the symbol indexes behind it
come from the on-disk cache (rcompat.elf.read.symindex) after the first run; `--only elf` also pays for
the R probe, since R torch's libraries come from R's facts (Python torch's are resolved meanwhile).
"""
from __future__ import annotations

import os
from typing import Iterable

from rcompat.model import Finding, Status

AREA = "elf"
TITLE = "Shared libraries (static ELF analysis)"
TARGET_ROLES = ("libtorch_python", "libtorch_cpu", "liblantern", "libtorch")
SOURCE_LD = "glibc elf/dl-load.c, elf/dl-lookup.c, elf/dl-version.c (ld.so search and binding rules)"


def _f(id: str, status: Status, title: str, **kw) -> Finding:
    return Finding(id=id, area=AREA, status=status, title=title, **kw)


def frameworks(ctx) -> list:
    from rcompat.elf.targets import python_torch, r_torch
    from rcompat.r.checks import shared_r_facts

    def produce():
        found = [fw for fw in (python_torch(), r_torch(shared_r_facts(ctx))) if fw is not None]
        ctx.facts.setdefault("elf", {})["targets"] = [
            {"framework": fw.name, "version": fw.version, "libraries": fw.libraries, "host": fw.host}
            for fw in found]
        return found

    return ctx.memo("elf.frameworks", produce)


def _targets(ctx) -> list[tuple[object, str, str]]:
    """(framework, role, path) for the libraries each check looks at."""
    out = []
    for fw in frameworks(ctx):
        for role in TARGET_ROLES:
            if role in fw.libraries:
                out.append((fw, role, fw.libraries[role]))
    return out


def _missing_report(ctx, fw, path: str):
    from rcompat.elf.link.missing import missing

    return ctx.memo(f"elf.missing:{path}", lambda: missing(path, host=fw.host))


def _no_targets() -> Finding:
    return _f("ELF-TARGETS", Status.SKIP, "no torch libraries found to inspect",
              message="Neither Python torch (importlib.util.find_spec('torch')) nor R torch's Lantern/LibTorch "
                      "was found, so there are no real libraries to check.",
              remedy="Install torch (pip install torch, or install.packages('torch'); torch::install_torch()).")


def _resolve_python_torch(ctx) -> None:
    """Python torch's libraries need no R facts: resolve them, and read how each library of their
    closures was built (check_cxx_abi's facts, kept by rcompat.elf.read.build), while the r area is
    still probing R (frameworks() waits for R, for R torch's libraries), so little is left for after."""
    def produce() -> None:
        from rcompat.elf.link.cxx_abi import resolution_build_facts
        from rcompat.elf.targets import python_torch

        fw = python_torch()
        for role in TARGET_ROLES if fw is not None else ():
            if role in fw.libraries:
                resolution_build_facts(_missing_report(ctx, fw, fw.libraries[role]).resolution)

    ctx.memo("elf.python_torch", produce)


# Each check gives one finding per framework, its id carrying the framework (ELF-DEPS-PYTORCH,
# ELF-DEPS-RTORCH): ids are unique within a report and the same on every run (docs/report-schema.md).
FRAMEWORK_IDS = {"Python torch": "PYTORCH", "R torch": "RTORCH"}


def framework_id(check_id: str, fw) -> str:
    return f"{check_id}-{FRAMEWORK_IDS.get(fw.name) or fw.name.upper().replace(' ', '')}"


def _by_framework(targets) -> list[tuple[object, list[tuple[str, str]]]]:
    """(framework, [(role, path), …]) in target order."""
    grouped: dict[int, tuple[object, list]] = {}
    for fw, role, path in targets:
        grouped.setdefault(id(fw), (fw, []))[1].append((role, path))
    return list(grouped.values())


def _names(paths) -> str:
    return ", ".join(os.path.basename(p) for p in paths)


def check_deps(ctx) -> Iterable[Finding]:
    _resolve_python_torch(ctx)
    targets = _targets(ctx)
    if not targets:
        yield _no_targets()
        return
    for fw, libs in _by_framework(targets):
        results = [(path, _missing_report(ctx, fw, path).resolution) for _, path in libs]
        failing = [(path, res) for path, res in results if res.missing]
        if failing:
            path, res = failing[0]
            lost = list(dict.fromkeys(m.name for _, r in failing for m in r.missing))
            yield _f(framework_id("ELF-DEPS", fw), Status.FAIL,
                     f"{fw.name}: {os.path.basename(path)} needs {lost[0]}, not found",
                     message="; ".join(f"{m.name} (needed by {m.needed_by}) not found; searched "
                                       + ", ".join(m.searched_dirs) for _, r in failing for m in r.missing),
                     remedy="Install the missing library or put its directory on LD_LIBRARY_PATH; "
                            f"`rcompat elf deps {path}` shows the tree.",
                     evidence={os.path.basename(p): r.to_dict() for p, r in failing}, source=SOURCE_LD,
                     confidence="high")
            continue
        counts = ", ".join(f"{os.path.basename(p)} {len(r.nodes) - r.preloaded - 1}" for p, r in results)
        yield _f(framework_id("ELF-DEPS", fw), Status.OK, f"{fw.name}: every dependency resolves ({counts})",
                 evidence={os.path.basename(p): {"path": p, "load_order": [n.path for n in r.nodes[r.preloaded:]]}
                           for p, r in results}, source=SOURCE_LD)


def check_undefined(ctx) -> Iterable[Finding]:
    for fw, libs in _by_framework(_targets(ctx)):
        reports = [(path, _missing_report(ctx, fw, path)) for _, path in libs]
        failing = [(path, rep) for path, rep in reports if rep.missing]
        if failing:
            path, rep = failing[0]
            first = rep.missing[0]
            total = sum(len(r.missing) for _, r in failing)
            yield _f(framework_id("ELF-UNDEFINED", fw), Status.FAIL,
                     f"{fw.name}: {total} undefined symbol(s) nobody provides in {_names(p for p, _ in failing)}",
                     message=f"{first.loader_message()} — {first.explanation()}",
                     remedy="Put the library that provides them on the search path, or reinstall the framework "
                            "so its own copies match; `rcompat elf missing` lists them all.",
                     evidence={os.path.basename(p): r.to_dict() for p, r in failing}, source=SOURCE_LD,
                     confidence="high")
            continue
        counts = ", ".join(f"{os.path.basename(p)} {len(r.bindings)}" for p, r in reports)
        yield _f(framework_id("ELF-UNDEFINED", fw), Status.OK,
                 f"{fw.name}: every undefined symbol binds ({counts}, with their dependencies)",
                 evidence={os.path.basename(p): {"path": p, "host": fw.host, "bindings": len(r.bindings),
                                                 "weak_unresolved": len(r.weak_unresolved)} for p, r in reports},
                 source=SOURCE_LD)


def check_cxx_abi(ctx) -> Iterable[Finding]:
    """One finding for all targets: how each library and its dependencies were built, and any
    dependency edge whose two ends use different std::string ABIs."""
    from rcompat.elf.link.cxx_abi import SOURCE, resolution_build_facts, string_abi_mismatches

    built, mismatches = {}, []
    for fw, role, path in _targets(ctx):
        resolution = _missing_report(ctx, fw, path).resolution
        facts = resolution_build_facts(resolution)
        built.update((node.path, f.to_dict()) for node, f in zip(resolution.nodes, facts) if f is not None)
        mismatches += [m for m in string_abi_mismatches(resolution, facts) if m not in mismatches]
    if not built:
        return
    evidence = {"libraries": built, "mismatches": [m.to_dict() for m in mismatches]}
    if mismatches:
        yield _f("ELF-CXX-ABI", Status.FAIL, f"{len(mismatches)} library pair(s) built for different C++ "
                 "std::string ABIs", message=mismatches[0].message(),
                 remedy="Rebuild the one that differs with the ABI of the other (-D_GLIBCXX_USE_CXX11_ABI=1 "
                        "for the C++11 std::string that current torch builds use, =0 for the old one); "
                        "`rcompat elf deps LIB` shows each library's ABI and toolchain.",
                 evidence=evidence, source=SOURCE, confidence="high")
        return
    abis = sorted({d["cxx_abi"] for d in built.values()} & {"cxx11", "old"})
    yield _f("ELF-CXX-ABI", Status.OK, f"{len(built)} libraries: none depends on one built for another C++ "
             f"std::string ABI" + (f" (all {abis[0]})" if len(abis) == 1 else ""), evidence=evidence, source=SOURCE)


def check_glibcxx(ctx) -> Iterable[Finding]:
    from rcompat.elf.link.verreq import check_versions

    for fw, libs in _by_framework(_targets(ctx)):
        checked = []
        for _, path in libs:
            rep = check_versions(_missing_report(ctx, fw, path).resolution)
            cxx = [f for f in rep.families if f.family in ("GLIBCXX", "CXXABI", "GLIBC")]
            checked.append((path, rep, cxx, [u for u in rep.unmet if not u.weak]))
        evidence = {os.path.basename(p): {"path": p, "families": [f.__dict__ for f in cxx],
                                          "unmet": [u.loader_message() for u in rep.unmet]}
                    for p, rep, cxx, _ in checked}
        failing = [c for c in checked if c[3]]
        if failing:
            path, rep, _, hard = failing[0]
            fams = [f for f in rep.families if not f.satisfied]
            alt = next((f.alternatives for f in fams if f.alternatives), [])
            yield _f(framework_id("ELF-GLIBCXX", fw), Status.FAIL,
                     f"{fw.name}: {hard[0].version} not found for {os.path.basename(path)}",
                     message=hard[0].loader_message(),
                     remedy=("A library that has it: " + ", ".join(alt) + " — put its directory first "
                             "(LD_LIBRARY_PATH) or start from an environment that ships it.") if alt else
                            "Install a newer libstdc++/glibc (e.g. conda's libstdcxx-ng) and put it first.",
                     evidence=evidence, source="rstudio/reticulate issue 841; " + SOURCE_LD, confidence="high")
            continue
        tops = [next((f for f in cxx if f.family == "GLIBCXX"), None) for _, _, cxx, _ in checked]
        newest = max((t for t in tops if t), key=lambda t: _version_key(t.newest_needed), default=None)
        detail = (f"newest GLIBCXX needed {newest.newest_needed}, provided {newest.newest_provided} by "
                  f"{newest.provider}" if newest else "no GLIBCXX requirement")
        yield _f(framework_id("ELF-GLIBCXX", fw), Status.OK,
                 f"{fw.name}: version requirements of {_names(p for p, *_ in checked)} met",
                 message=detail, evidence=evidence, source=SOURCE_LD)


def _version_key(text: str | None) -> tuple:
    import re

    return tuple(int(n) for n in re.findall(r"\d+", text or ""))


def check_duplicate_runtime(ctx) -> Iterable[Finding]:
    from rcompat.elf.link.runtimes import duplicate_runtimes

    fws = frameworks(ctx)
    roots = [fw.libraries.get("libtorch_python") or fw.libraries.get("liblantern") or next(iter(fw.libraries.values()))
             for fw in fws]
    if not roots:
        return
    dups = ctx.memo("elf.duplicates", lambda: duplicate_runtimes(roots))
    names = ", ".join(os.path.basename(r) for r in roots)
    if not dups:
        yield _f("ELF-DUPLICATE-RUNTIME", Status.OK, f"one copy of each runtime among {names}",
                 evidence={"roots": roots}, source="rcompat/data/maps_runtimes.toml [[runtime]]")
        return
    for d in dups:
        status = Status(d.status) if d.all_load else Status.WARN
        note = ("every copy gets mapped (different sonames): two copies of its global state in one process"
                if d.all_load else "same soname: in one process ld.so keeps only the first, and the second "
                                   "framework binds to it (see ELF-COLOAD)")
        yield _f(f"ELF-DUPLICATE-RUNTIME-{d.family.upper()}", status, f"{len(d.copies)} copies of {d.family} among {names}",
                 message=f"{d.describe()}; {note}. {d.why}",
                 remedy="Use one framework per process (callr/a separate Python process), or builds that share "
                        "the same runtime (exactly the same LibTorch version).",
                 evidence=d.to_dict(), source=d.source, confidence=d.confidence)


def check_coload(ctx) -> Iterable[Finding]:
    """R torch and Python torch in one R session (reticulate), in both orders."""
    from rcompat.elf.link.coload import coload

    fws = {fw.name: fw for fw in frameworks(ctx)}
    r_fw, py_fw = fws.get("R torch"), fws.get("Python torch")
    if r_fw is None or py_fw is None:
        have = ", ".join(fws) or "neither"
        yield _f("ELF-COLOAD", Status.SKIP, "co-loading R torch and Python torch: not both installed",
                 message=f"Found: {have}. The prediction needs R torch's Lantern/LibTorch and Python torch's "
                         "libraries on disk.", source=SOURCE_LD)
        return
    r_lib = r_fw.libraries.get("liblantern") or next(iter(r_fw.libraries.values()))
    py_lib = py_fw.libraries.get("libtorch_python") or next(iter(py_fw.libraries.values()))
    versions = {"R torch": r_fw.version or "", "Python torch": py_fw.version or ""}
    pred = ctx.memo("elf.coload", lambda: coload([r_lib], [py_lib], host=r_fw.host + py_fw.host, versions=versions))
    ctx.facts.setdefault("elf", {})["coload"] = pred.to_dict()
    reverse_ok = pred.reverse is not None and pred.reverse.ok
    evidence = pred.to_dict()
    if pred.ok and reverse_ok and not pred.hazards:
        yield _f("ELF-COLOAD", Status.OK, "R torch and Python torch can share one process in either order",
                 evidence=evidence, source="mlverse/torch issue 815; " + SOURCE_LD)
        return
    status = Status.FAIL if not pred.ok or not reverse_ok else Status.WARN
    first = pred.first_error or (pred.reverse.first_error if pred.reverse else None) or pred.hazards[0].message
    order = ("only Python torch first, then R torch, works" if reverse_ok and not pred.ok else
             "only R torch first, then Python torch, works" if pred.ok and not reverse_ok else
             "neither order works" if not pred.ok else "both orders load, with hazards")
    yield _f("ELF-COLOAD", status, f"R torch + Python torch in one process: {order}",
             message=f"{first}" + ("; " + "; ".join(pred.matching) if pred.matching else ""),
             remedy="Use exactly the same LibTorch on both sides (see the matching versions), or keep the "
                    "frameworks in separate processes (callr, a Python subprocess) instead of reticulate.",
             evidence=evidence, source="mlverse/torch issue 815; rstudio/reticulate issue 1895", confidence="high")


for _fn, _id in ((check_coload, "ELF-COLOAD"), (check_deps, "ELF-DEPS"), (check_undefined, "ELF-UNDEFINED"), (check_glibcxx, "ELF-GLIBCXX"),
                 (check_duplicate_runtime, "ELF-DUPLICATE-RUNTIME")):
    _fn.check_id = _id  # type: ignore[attr-defined]

CHECKS = [check_deps, check_undefined, check_cxx_abi, check_glibcxx, check_duplicate_runtime, check_coload]
_resolve_python_torch.in_process = True  # type: ignore[attr-defined]  # no child: never the critical path
START = (_resolve_python_torch,)  # reading in this process: it yields to the trial (rcompat.areas.start_early)
