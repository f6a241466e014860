"""How one library was built: the toolchain, its build-id and ABI-tag notes, and the C++ string ABI.

Read with pyelftools: these are a few sections and notes per file, where its cost (importing it,
~40 ms, and its per-record objects) does not bind, unlike the bulk symbol path (rcompat.elf.read.reader,
which `rcompat elf symbols` keeps to its ratio against `nm -D`). pyelftools is imported here, on first
use, and nowhere else at run time.

- toolchain: the `.comment` strings compilers and linkers leave ("GCC: (Debian 12.2.0-14) 12.2.0",
  "clang version 17.0.6", "Linker: LLD 17.0.6"); producers: DWARF DW_AT_producer of the first compile
  units, with the flags, where debug info is present (most shipped libraries are stripped of it);
- build_id: the NT_GNU_BUILD_ID note in hex; abi_tag: NT_GNU_ABI_TAG ("Linux 3.2.0", the oldest kernel
  the C library was built to run on);
- cxx_abi: which std::string the library's dynamic interface uses. libstdc++'s dual ABI (GCC >= 5)
  mangles the C++11 std::string as std::__cxx11::basic_string (the `B5cxx11` tag on functions returning
  one), and the old copy-on-write one as `Ss`, demangled "std::string". "cxx11" or "old" when only one
  appears, "both" when both do (libstdc++ itself exports both), "none" when the interface names no
  std::string at all (nothing can be told then). Two libraries loaded together and passing strings must
  agree, or the loader stops with `undefined symbol: ...B5cxx11...` (or its old-ABI twin).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from rcompat.cache import file_identity
from rcompat.elf.errors import ElfError

CXX11, OLD, BOTH, NONE = "cxx11", "old", "both", "none"
MAX_PRODUCERS = 8  # distinct DW_AT_producer values kept: a library has one per compile unit
MAX_UNITS = 8  # compile units read for them: each costs a parse of its header and abbreviations, and
# the first few of a library name its compiler and flags (a libpython built with -g has ~400)
EVIDENCE = 3  # symbol names kept as the evidence of each ABI found
_OLD_CANDIDATE = re.compile(rb"_Z[^\0]*Ss[^\0]*")  # `Ss` may also sit inside a name: demangling decides
_CXX11_NAME = re.compile(rb"_Z[^\0]*cxx11[^\0]*")
_OLD_STRING = re.compile(r"std::(?:string|basic_string<)")


@dataclass(frozen=True)
class BuildFacts:
    path: str
    toolchain: tuple[str, ...] = ()
    producers: tuple[str, ...] = ()
    build_id: str | None = None
    abi_tag: str | None = None
    cxx_abi: str = NONE
    cxx_abi_evidence: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def compiler(self) -> str:
        """The compiler's line of .comment (GCC or clang), else the first line, else ""."""
        for line in self.toolchain:
            if line.startswith(("GCC:", "clang version", "Ubuntu clang", "Debian clang")) or " clang version " in line:
                return line
        return self.toolchain[0] if self.toolchain else ""

    def summary(self) -> str:
        parts = [self.compiler or "toolchain not recorded"]
        if self.cxx_abi != NONE:
            parts.append(f"C++ string ABI {self.cxx_abi}")
        if self.build_id:
            parts.append(f"build-id {self.build_id[:12]}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"toolchain": list(self.toolchain), "producers": list(self.producers), "build_id": self.build_id,
                "abi_tag": self.abi_tag, "cxx_abi": self.cxx_abi,
                "cxx_abi_evidence": {k: list(v) for k, v in self.cxx_abi_evidence.items()}}


def build_facts(path: "str | os.PathLike[str]") -> BuildFacts:
    """The build facts of `path`, cached by the file's identity (path, inode, size, mtime)."""
    return _cached(file_identity(os.fspath(path)))


@lru_cache(maxsize=4096)
def _cached(identity) -> BuildFacts:
    path = identity[0]
    from elftools.common.exceptions import ELFError as PyElfError
    from elftools.elf.elffile import ELFFile

    from rcompat.inputs import InputRefused, open_mapped

    from rcompat.elf.read.reader import open_elf

    try:
        # Which sections are where, from the section table alone: pyelftools finds a section by name
        # by making an object of every section first, and its .gnu.hash object parses the whole
        # table (3/4 of this function's time on libpython and libtorch_cpu.so).
        with open_elf(path) as image:
            index = {s.name: s.index for s in reversed(image.sections)}  # the first of a name, as pyelftools
            notes = [s.index for s in image.sections if s.type == "SHT_NOTE"]
        with open_mapped(path, "an ELF file") as stream:
            elf = ELFFile(stream)
            comment = elf.get_section(index[".comment"]) if ".comment" in index else None
            toolchain = _strings(comment.data()) if comment is not None else ()
            build_id, abi_tag = _notes(elf, notes)
            dynstr = elf.get_section(index[".dynstr"]) if ".dynstr" in index else None
            cxx_abi, evidence = string_abi(dynstr.data() if dynstr is not None else b"")
            producers = _producers(elf) if ".debug_info" in index else ()
    except (PyElfError, ValueError, KeyError, OSError, InputRefused, AttributeError) as exc:
        raise ElfError(path, f"cannot read its build notes: {exc}") from exc
    return BuildFacts(path, toolchain, producers, build_id, abi_tag, cxx_abi, evidence)


def _strings(data: bytes) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for raw in data.split(b"\0"):
        text = raw.decode("utf-8", "replace").strip()
        if text:
            seen.setdefault(text)
    return tuple(seen)


def _notes(elf, indexes: list[int]) -> tuple[str | None, str | None]:
    build_id = abi_tag = None
    for section in map(elf.get_section, indexes):
        for note in section.iter_notes():
            if note["n_name"] != "GNU":  # other owners reuse the type numbers (stapsdt, go, ...)
                continue
            if note["n_type"] == "NT_GNU_BUILD_ID" and isinstance(note["n_desc"], str) and build_id is None:
                build_id = note["n_desc"]
            elif note["n_type"] == "NT_GNU_ABI_TAG" and not isinstance(note["n_desc"], (bytes, str)):
                desc = note["n_desc"]
                abi_tag = f"{desc['abi_os'].replace('ELF_NOTE_OS_', '').title()} " \
                          f"{desc['abi_major']}.{desc['abi_minor']}.{desc['abi_tiny']}"
    return build_id, abi_tag


def _producers(elf) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    # Only a relocatable object (.o) carries relocations for its DWARF sections; pyelftools otherwise
    # searches every section for them (half the time on libpython's debug info) to apply none.
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=elf["e_type"] == "ET_REL")
    for number, unit in enumerate(dwarf.iter_CUs()):
        if number >= MAX_UNITS or len(seen) >= MAX_PRODUCERS:
            break
        producer = unit.get_top_DIE().attributes.get("DW_AT_producer")
        if producer is not None:
            value = producer.value
            seen.setdefault(value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value))
    return tuple(seen)


def string_abi(dynstr: bytes) -> tuple[str, dict[str, tuple[str, ...]]]:
    """(cxx11 | old | both | none, {abi: a few mangled names showing it}) for a .dynstr's names."""
    from rcompat.elf.read.demangle import demangle_all

    cxx11 = [m.decode("latin-1") for m in _CXX11_NAME.findall(dynstr)]
    candidates = [m.decode("latin-1") for m in _OLD_CANDIDATE.findall(dynstr) if b"cxx11" not in m]
    old = [name for name, text in zip(candidates, demangle_all(candidates)) if _OLD_STRING.search(text)]
    evidence = {abi: tuple(sorted(names)[:EVIDENCE]) for abi, names in ((CXX11, cxx11), (OLD, old)) if names}
    if cxx11 and old:
        return BOTH, evidence
    return (CXX11 if cxx11 else OLD if old else NONE), evidence
