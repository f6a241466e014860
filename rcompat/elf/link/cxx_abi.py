"""Libraries loaded together that were built for different C++ std::string ABIs.

A library and a dependency it links to (a DT_NEEDED edge of the resolution) pass C++ objects to each
other; when one was built for libstdc++'s C++11 std::string (std::__cxx11::basic_string, `B5cxx11`)
and the other for the old one (`Ss`), the names one needs are not the names the other exports, and the
loader stops with `undefined symbol: ...B5cxx11...` or, the other way round, a std::string function
without it. Only libraries whose interface uses one ABI alone are judged: "both" (libstdc++ itself,
libraries that also carry old-ABI code) and "none" (no std::string in the interface) cannot disagree.
"""
from __future__ import annotations

from dataclasses import dataclass

from rcompat.elf.errors import ElfError
from rcompat.elf.read.build import CXX11, OLD, BuildFacts, build_facts

SOURCE = ("GCC libstdc++ manual, 'Dual ABI' (_GLIBCXX_USE_CXX11_ABI; the abi_tag attribute behind B5cxx11); "
          "names read with pyelftools")


@dataclass(frozen=True)
class AbiMismatch:
    library: str
    library_abi: str
    dependency: str
    dependency_abi: str

    def message(self) -> str:
        return (f"{self.library} was built for the {self.library_abi} std::string ABI, but its dependency "
                f"{self.dependency} for the {self.dependency_abi} one: the C++ functions that pass a "
                f"std::string between them do not bind (undefined symbol: ...B5cxx11... or its old-ABI twin)")

    def to_dict(self) -> dict:
        return {"library": self.library, "library_abi": self.library_abi, "dependency": self.dependency,
                "dependency_abi": self.dependency_abi}


def resolution_build_facts(resolution) -> list[BuildFacts | None]:
    """The build facts of each node of `resolution`, in its load order (None: unreadable)."""
    out: list[BuildFacts | None] = []
    for node in resolution.nodes:
        try:
            out.append(build_facts(node.path))
        except ElfError:
            out.append(None)
    return out


def string_abi_mismatches(resolution, facts: "list[BuildFacts | None] | None" = None) -> list[AbiMismatch]:
    """Each DT_NEEDED edge of `resolution` whose two ends were built for different std::string ABIs."""
    facts = resolution_build_facts(resolution) if facts is None else facts
    found: dict[tuple[int, int], AbiMismatch] = {}
    for source, edges in sorted(resolution.edges.items()):
        for edge in edges:
            if edge.target is None or facts[source] is None or facts[edge.target] is None:
                continue
            ours, theirs = facts[source].cxx_abi, facts[edge.target].cxx_abi
            if {ours, theirs} == {CXX11, OLD}:
                found.setdefault((source, edge.target), AbiMismatch(
                    resolution.display(resolution.nodes[source].path), ours,
                    resolution.display(resolution.nodes[edge.target].path), theirs))
    return list(found.values())
