"""NEW's programs and their program interpreter (PT_INTERP): the dynamic loader the kernel maps before
anything else. A layer that replaces /lib (or /lib64) with a directory on a merged-/usr image leaves
every program without one: `exec` fails with ENOENT before ld.so could report a missing library.

For each interpreter path NEW's programs name: it must exist in NEW (symlinks resolved inside the root)
and be an ELF object; and the libc.so.6 a program of that group loads must take from it only versions it
defines (libc.so.6 needs GLIBC_PRIVATE and GLIBC_2.x from ld-linux: a loader from another glibc release
than its libc fails with "version `GLIBC_PRIVATE' not found").
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from rcompat.upgrade_scan.side import Side

_PT_INTERP = 3
_MAX_PROGRAM_HEADERS = 4096  # a real program has about a dozen
_MAX_INTERP = 4096  # PATH_MAX
_MAX_PROGRAMS_NAMED = 5


@dataclass
class InterpProblem:
    interpreter: str  # in-root path the programs name
    problem: str  # what is wrong, one line
    programs: list[str] = field(default_factory=list)


@dataclass
class InterpCheck:
    interpreters: dict[str, list[str]]  # interpreter -> programs naming it
    problems: list[InterpProblem]


def program_interpreter(host: str) -> "str | None":
    """The PT_INTERP path of the ELF file at `host`, None when it has none (a shared library) or the
    file is not a readable ELF object. Read from the program headers (ELF gABI, "Program Header")."""
    from rcompat.inputs import InputRefused, open_mapped

    try:  # through rcompat.inputs: an image's member left in place is read from the image (rcompat/standins.py)
        with open_mapped(host) as fh:
            ident = fh.read(64)
            if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                return None
            wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
            phoff, phentsize, phnum = (struct.unpack_from(order + "Q", ident, 32)[0], *struct.unpack_from(
                order + "HH", ident, 54)) if wide else (struct.unpack_from(order + "I", ident, 28)[0],
                                                         *struct.unpack_from(order + "HH", ident, 42))
            if not phnum or phentsize < (56 if wide else 32) or phnum > _MAX_PROGRAM_HEADERS:
                return None
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
            for k in range(len(table) // phentsize):
                entry = table[k * phentsize:(k + 1) * phentsize]
                if struct.unpack_from(order + "I", entry, 0)[0] != _PT_INTERP:
                    continue
                offset, size = _offset_size(entry, order, wide)
                if size > _MAX_INTERP:
                    return None
                fh.seek(offset)
                return fh.read(size).split(b"\0", 1)[0].decode("utf-8", "surrogateescape") or None
    except (OSError, struct.error, InputRefused):
        return None
    return None


def _offset_size(entry: bytes, order: str, wide: bool) -> tuple[int, int]:
    """p_offset and p_filesz of a program header."""
    if wide:  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz
        return struct.unpack_from(order + "Q", entry, 8)[0], struct.unpack_from(order + "Q", entry, 32)[0]
    return struct.unpack_from(order + "I", entry, 4)[0], struct.unpack_from(order + "I", entry, 16)[0]


def _programs(side: Side) -> dict[str, list[str]]:
    """interpreter -> in-root programs; a program is an object not named like a shared library."""
    out: dict[str, list[str]] = {}
    for inside, obj in sorted(side.inventory.objects.items()):
        if ".so" in os.path.basename(inside):
            continue
        interp = program_interpreter(obj.host)
        if interp:
            out.setdefault(interp, []).append(inside)
    return out


def check_interpreters(side: Side) -> InterpCheck:
    from rcompat.elf.errors import ElfError
    from rcompat.elf.read.files import is_elf_file
    from rcompat.elf.read.reader import ElfImage

    groups = _programs(side)
    problems = []
    for interp, programs in groups.items():
        try:
            host = side.root.host(interp)
        except ElfError as exc:
            problems.append(InterpProblem(interp, str(exc), programs))
            continue
        if not os.path.isfile(host):
            problems.append(InterpProblem(interp, "not in the root: the kernel cannot start these programs "
                                                  "(exec fails with 'No such file or directory')", programs))
            continue
        if not is_elf_file(host):
            problems.append(InterpProblem(interp, "not an ELF object", programs))
            continue
        mismatch = _libc_mismatch(side, programs[0], host, ElfImage)
        if mismatch:
            problems.append(InterpProblem(interp, mismatch, programs))
    return InterpCheck(groups, problems)


def _libc_mismatch(side: Side, program: str, interp_host: str, image_class) -> str:
    """Versions the libc.so.6 `program` loads needs from the interpreter but the interpreter lacks."""
    from rcompat.elf.errors import ElfError

    try:
        res = side.resolve(program)
        libc = next((n for n in res.nodes if os.path.basename(n.info.path).startswith("libc.so")), None)
        if libc is None:
            return ""
        with image_class(interp_host) as loader:
            soname = loader.soname or os.path.basename(interp_host)
            defined = {d.name for d in loader.version_definitions.values()}
        with image_class(libc.info.path) as lib:
            needs = {n.name for n in lib.version_needs.values() if n.file == soname}
    except (ElfError, OSError):
        return ""
    lacking = sorted(needs - defined)
    if not lacking:
        return ""
    return (f"{side.show(libc.info.path)} needs {', '.join(lacking)} from {soname}, which this interpreter does "
            "not define: libc and its loader come from different glibc releases")


def introduced(old: InterpCheck, new: InterpCheck) -> tuple[list[InterpProblem], list[InterpProblem]]:
    """NEW's problems split into (introduced, pre-existing): pre-existing when OLD had the same problem
    for the same interpreter."""
    before = {(p.interpreter, p.problem.split(":")[0]) for p in old.problems}
    fresh, old_too = [], []
    for p in new.problems:
        (old_too if (p.interpreter, p.problem.split(":")[0]) in before else fresh).append(p)
    return fresh, old_too


def named(programs: list[str]) -> str:
    shown = ", ".join(programs[:_MAX_PROGRAMS_NAMED])
    more = len(programs) - _MAX_PROGRAMS_NAMED
    return shown + (f" and {more} more" if more > 0 else "")


SOURCE = ("rcompat upgrade: PT_INTERP of NEW's programs (Linux fs/binfmt_elf.c maps it before the program; "
          "glibc's libc.so.6 needs GLIBC_PRIVATE from the ld.so of its own release)")


def interpreter_findings(old: Side, new: Side) -> list:
    """UPGRADE-INTERP: fail for a program interpreter NEW breaks, warn for one OLD had broken too, ok
    (with the interpreters checked) otherwise; nothing when NEW has no dynamically linked program."""
    from rcompat.model import Finding, Status

    new_check = check_interpreters(new)
    if not new_check.interpreters:
        return []
    fresh, old_too = introduced(check_interpreters(old), new_check)
    evidence = {"interpreters": {k: len(v) for k, v in new_check.interpreters.items()},
                "problems": [p.__dict__ for p in fresh + old_too]}
    out = []
    if fresh:
        programs = sum(len(p.programs) for p in fresh)
        out.append(Finding(
            "UPGRADE-INTERP", "upgrade", Status.FAIL,
            f"{programs} program(s) in NEW cannot start: their program interpreter is broken",
            message="; ".join(f"{p.interpreter}: {p.problem} (used by {named(p.programs)})" for p in fresh),
            remedy="Keep /lib and /lib64 the symlinks a merged-/usr image ships (a layer that puts a directory "
                   "there hides the loader), or install the loader (libc6) of the same glibc release as libc.so.6",
            evidence=evidence, source=SOURCE, confidence="high"))
    if old_too:
        out.append(Finding(
            "UPGRADE-INTERP-PREEXISTING", "upgrade", Status.WARN,
            f"{len(old_too)} program interpreter(s) broken in OLD too (pre-existing)",
            message="; ".join(f"{p.interpreter}: {p.problem}" for p in old_too),
            remedy="Not caused by the upgrade", evidence=evidence, source=SOURCE, confidence="high"))
    if not out:
        out.append(Finding("UPGRADE-INTERP", "upgrade", Status.OK,
                           f"NEW's programs find their interpreter ({', '.join(sorted(new_check.interpreters))}) "
                           "and it matches their libc", evidence=evidence, source=SOURCE, confidence="high"))
    return out
