"""`rcompat upgrade OLD NEW`: open both inputs, index their ELF objects, and report what the move
from OLD to NEW breaks, without running anything from either.

Phases (each a progress step): opening OLD, opening NEW, indexing the objects of each root, the two
stacks, choosing the carried objects (identical bytes, changed closure; plus --carry), rebinding
them against NEW, NEW's frameworks (newly needed sonames, co-loading), ABI drift of what the carried
objects link.
"""
from __future__ import annotations

import contextlib
import os
import shutil

from rcompat.errors import UsageError
from rcompat.model import Finding, Report, Status
from rcompat.progress import disabled
from rcompat.upgrade_scan.side import SharedIndexes, Side, overlay

AREA = "upgrade"


def upgrade(old: str, new: str, *, driver: str | None = None, carry: "list[str] | tuple" = (),
            extract: str | None = None, models: "list[str] | tuple" = (), progress=None) -> Report:
    """Compare root filesystems / images OLD and NEW (see rcompat.upgrade_scan.image.source for what they may be).
    `models`: saved-model files/directories also checked against NEW's torch (rcompat.models), read from NEW's files."""
    from rcompat.upgrade_scan.image.source import is_image, open_source

    prog = progress if progress is not None else disabled()
    if extract and not (is_image(old) or is_image(new)):
        raise UsageError(f"--extract {extract}: OLD and NEW are both read in place (a root filesystem "
                         "directory or /); --extract applies to images only")
    report = Report(command="upgrade")
    if models:  # a model path that is not there is bad input: exit 2 before the long scan, not after it
        from rcompat.models.reader import find_models

        find_models(list(models))
    with contextlib.ExitStack() as stack:
        # registered first, so it runs last: after the sources closed, a failed run's extraction goes
        extraction = stack.enter_context(_Extraction(extract)) if extract else None
        sides, inputs = [], {}
        for name, spec in (("OLD", old), ("NEW", new)):
            with prog.step(f"opening {name}"):
                target = os.path.join(extract, name.lower()) if extract and is_image(spec) else None
                existed = bool(target) and os.path.lexists(target)
                src = stack.enter_context(open_source(spec, extract=target, progress=prog, stand_ins=True))
                if extraction and target:
                    extraction.filled.append((target, existed))
            with prog.step(f"indexing {name}"):
                same = next((s for s in sides if s.root.path == os.path.realpath(src.root)), None)
                sides.append(_side(name, src, same.inventory if same else None))
            inputs[name] = {"label": src.label, "kind": src.kind, "objects": len(sides[-1].inventory),
                            "notes": list(src.notes), "layers": list(src.layers)}
        report.facts["inputs"] = inputs
        report.add(scan_sides(*sides, driver=driver, carry=carry, progress=prog))
        for finding in report.findings[:1]:  # UPGRADE-ROOTS: what each input was, and what was left out
            finding.evidence["inputs"] = {k: {"kind": v["kind"], "notes": v["notes"]} for k, v in inputs.items()}
        if models:
            from rcompat.models.engine import add_model_verdicts

            with prog.step("saved models against NEW's torch"):
                add_model_verdicts(report, list(models), root=sides[1].root.path, label="NEW", progress=prog)
    return report


class _Extraction:
    """What --extract filled in this run, undone when the run fails: DIR/old kept beside a NEW that
    could not be read is half an answer, and blocks the rerun ("not empty")."""

    def __init__(self, extract: str) -> None:
        from rcompat.upgrade_scan.image.source import outermost_missing

        self.top = outermost_missing(extract)  # made by this run: removed whole on failure
        self.filled: list[tuple[str, bool]] = []  # (target, whether it existed, empty, before)

    def __enter__(self) -> "_Extraction":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            from rcompat.upgrade_scan.image.source import discard_extracted

            if self.top:
                shutil.rmtree(self.top, ignore_errors=True)
            else:
                for target, existed in self.filled:
                    discard_extracted(target, existed)
        return False


def _side(name: str, src, known=None) -> Side:
    """`known`: the inventory of the other side when both are the same root (`/` against `/`)."""
    from rcompat.elf.link.root import Root
    from rcompat.upgrade_scan.inventory import inventory
    from rcompat.upgrade_scan.stack import probe_stack

    root = Root(src.root)
    env = dict(src.env or {})
    ld_path = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
    return Side(name, src.label, root, known if known is not None else inventory(src.root, is_host=root.is_host),
                probe_stack(root, src.label, env), ld_path)


def scan_sides(old: Side, new: Side, *, driver: str | None = None, carry=(), progress=None) -> list[Finding]:
    from rcompat.elf.errors import ElfError
    from rcompat.upgrade_scan import carried as carried_mod
    from rcompat.upgrade_scan import findings, frameworks
    from rcompat.upgrade_scan.interp import interpreter_findings
    from rcompat.upgrade_scan.inventory import identical_objects
    from rcompat.upgrade_scan.rebind import rebind
    from rcompat.upgrade_scan.stack_checks import driver_finding, stack_findings

    prog = progress if progress is not None else disabled()
    out = [Finding("UPGRADE-ROOTS", AREA, Status.OK, f"OLD {old.label} → NEW {new.label}",
                   message=f"{len(old.inventory)} ELF objects in OLD, {len(new.inventory)} in NEW",
                   evidence={"old": old.label, "new": new.label, "old_objects": len(old.inventory),
                             "new_objects": len(new.inventory)},
                   source="rcompat upgrade: the roots as given", confidence="high")]
    empty = [s for s in (old, new) if not len(s.inventory)]
    if empty:
        names = " and ".join(f"{s.name} ({s.label})" for s in empty)
        out[0] = Finding("UPGRADE-ROOTS", AREA, Status.SKIP, f"nothing to compare: {names} holds no ELF object",
                         message="an upgrade scan compares shared objects and executables; a root without any "
                                 "(an empty directory, a data-only image) has nothing to load",
                         evidence=out[0].evidence, source=out[0].source)
        return out
    out += stack_findings(old.stack, new.stack)
    out.append(driver_finding(new.stack, driver))
    with prog.step("NEW's program interpreters"):
        out += interpreter_findings(old, new)
    with prog.step("finding carried objects"):
        identical = identical_objects(old.inventory, new.inventory)
        indexes = SharedIndexes(identical)
        carried = carried_mod.select(old, new, identical, carry, progress=prog)
    rebindings = []
    with prog.step("rebinding carried objects"):
        todo = carried.rebound + sorted(carried.mapped)
        # One NEW with every --carry object laid over it, so they also find each other.
        mapped_new = overlay(new, {p: f.host for p, f in carried.mapped.items()}) if carried.mapped else new
        for k, inside in enumerate(todo, 1):
            prog.note(f"rebinding carried objects {k}/{len(todo)}: {os.path.basename(inside)}")
            how = "--carry" if inside in carried.mapped else "identical"
            rebindings.append(rebind(inside, how, old, mapped_new if how == "--carry" else new, indexes))
    out += findings.carried_findings(carried, rebindings)
    out += findings.cxx_abi_findings(rebindings)
    with prog.step("NEW's frameworks"):
        out += findings.needed_findings(frameworks.newly_needed(old, new))
        try:
            coload = findings.coload_finding(frameworks.coload_problems(old), frameworks.coload_problems(new))
        except ElfError as exc:  # an unreadable Lantern or libtorch: say so, and keep the rest of the scan
            coload = Finding("UPGRADE-COLOAD", AREA, Status.ERROR, "co-loading R torch and Python torch: not predicted",
                             message=str(exc), remedy="check the file named above (a truncated or corrupt library)",
                             source=findings.SOURCE_COLOAD)
        if coload is not None:
            out.append(coload)
    with prog.step("ABI drift"):
        out += findings.drift_findings(frameworks.abi_drift(rebindings, old, new, indexes, progress=prog))
    return out

