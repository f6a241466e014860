"""Which objects the upgrade carries from OLD into NEW, and which of them need rebinding.

Carried: an ELF object both roots hold at the same in-root path with identical bytes (an extension
wheel, R torch's Lantern, a vendored library the new base image did not touch), plus every
`--carry PATH` (an object of OLD the user will copy into NEW).

Rebound: of the identical objects, only those whose dependency closure changed: the same bytes bound
against the same bytes give the same result, so the unchanged libc-only helpers of a base image are
not rebound needlessly. A closure changed when the object loads a different list of in-root paths in
NEW than in OLD, or one of those paths holds different bytes, or a different set of sonames is missing.
Its missing sonames are still compared, so a problem present in both is reported as pre-existing.

`--carry PATH` is *mapped*, not copied: the object's bytes are OLD's, its dependencies are searched
inside NEW as if the file lay at the same in-root path there. `$ORIGIN` therefore means the in-root
directory the object had in OLD, looked up inside NEW: a library it ships next to itself is found only
if NEW has it there too, which is what happens when the user copies the one file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rcompat.errors import UsageError
from rcompat.upgrade_scan.inventory import ElfFile, object_at
from rcompat.upgrade_scan.side import Side, lacking


@dataclass
class Carried:
    identical: dict[str, tuple[ElfFile, ElfFile]]
    rebound: list[str] = field(default_factory=list)  # identical objects whose closure changed
    mapped: dict[str, ElfFile] = field(default_factory=dict)  # --carry: in-root path -> OLD's file
    unchanged: list[str] = field(default_factory=list)  # identical, same closure: not rebound
    unchanged_missing: dict[str, list[str]] = field(default_factory=dict)  # same missing sonames in both

    def to_dict(self) -> dict:
        return {"identical": len(self.identical), "rebound": self.rebound, "mapped": sorted(self.mapped),
                "unchanged_closure": len(self.unchanged), "unchanged_missing": self.unchanged_missing}


def closure_paths(side: Side, res) -> list[str]:
    """In-root paths of the files the object loads (symlinks resolved, as the inventory names them)."""
    return [side.root.inside(n.info.realpath) for n in res.nodes]


def _outside_inventory(old: Side, inside: str) -> "ElfFile | None":
    """An object of OLD the inventory skipped (this machine's /tmp and caches are not walked)."""
    from rcompat.elf.errors import ElfError

    try:
        return object_at(old.root.host(inside), inside)
    except ElfError:
        return None


def select(old: Side, new: Side, identical: dict[str, tuple[ElfFile, ElfFile]], carry: "list[str] | tuple" = (),
           progress=None) -> Carried:
    from rcompat.elf.errors import ElfError

    out = Carried(identical)
    total = len(identical)
    wanted = []
    for inside in carry:
        inside = "/" + inside.strip("/")
        obj = old.inventory.objects.get(inside) or _outside_inventory(old, inside)
        if obj is None:
            raise UsageError(f"--carry {inside}: no ELF object at that path in OLD ({old.label}); give the "
                             "path inside OLD's root, e.g. /usr/lib/R/site-library/torch/lib/liblantern.so")
        wanted.append(inside)
        old.inventory.objects.setdefault(inside, obj)  # rebinding reads OLD's bytes from there
    for k, inside in enumerate(sorted(identical), 1):
        if progress is not None and k % 50 == 1:
            progress.note(f"comparing closures {k}/{total}")
        try:
            before, after = old.resolve(inside), new.resolve(inside)
        except ElfError:
            continue  # not a loadable object (a core file, a truncated .so): nothing to rebind
        new_paths = closure_paths(new, after)
        same_paths = closure_paths(old, before) == new_paths
        same_bytes = all(p in identical for p in new_paths[1:])
        missing_before = sorted(m.name for m in lacking(before))
        missing_after = sorted(m.name for m in lacking(after))
        if same_paths and same_bytes and missing_before == missing_after:
            out.unchanged.append(inside)
            if missing_after:
                out.unchanged_missing[inside] = missing_after
        else:
            out.rebound.append(inside)
    for inside in wanted:
        if inside not in identical:
            out.mapped[inside] = old.inventory.objects[inside]
        elif inside not in out.rebound:  # the user asked: rebind it even though its closure is unchanged
            out.rebound.append(inside)
            if inside in out.unchanged:
                out.unchanged.remove(inside)
            out.unchanged_missing.pop(inside, None)
    return out
