"""One side of an upgrade (OLD or NEW): its root, how its loader searches, its ELF objects, its stack;
and the symbol indexes both sides share.

Paths: `inside` is an in-root path ("/usr/lib/x86_64-linux-gnu/libc.so.6"), what findings show;
`host` is where the bytes are on this machine, what the ELF reader opens.
"""
from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field

from rcompat.upgrade_scan.inventory import ElfFile, Inventory
from rcompat.upgrade_scan.stack import Stack, driver_libraries


@dataclass
class Side:
    name: str  # "OLD" | "NEW"
    label: str  # what the user gave (the image's tags, the directory)
    root: object  # rcompat.elf.link.root.Root
    inventory: Inventory
    stack: Stack
    ld_library_path: list[str] = field(default_factory=list)  # the image's Env, in-root directories
    _resolver: object = None
    _resolutions: dict = field(default_factory=dict)

    @property
    def resolver(self):
        if self._resolver is None:
            from rcompat.elf.link.resolve import Resolver

            self._resolver = Resolver(ld_library_path=list(self.ld_library_path), root=self.root)
        return self._resolver

    def resolve(self, inside: str):
        """The object at `inside` loaded into a fresh process of this root (memoised)."""
        if inside not in self._resolutions:
            self._resolutions[inside] = self.resolver.resolve(inside)
        return self._resolutions[inside]

    def show(self, host: str) -> str:
        """The in-root path of a host path (what a finding names)."""
        return self.root.inside(host)


def lacking(res) -> list:
    """The libraries resolution `res` cannot find, less those the NVIDIA driver brings at run time
    (rcompat/data/upgrade_stack.toml): a root never holds them, so they are not missing from it."""
    driver = driver_libraries()
    return [m for m in res.missing if m.name not in driver]


def overlay(side: Side, files: "dict[str, str]") -> Side:
    """`side` with OLD's files laid over its root at their in-root paths (in-root path -> host path),
    copying nothing: what --carry means (see rcompat.upgrade_scan.carried)."""
    from rcompat.elf.link.root import Root

    class OverlayRoot(Root):
        def __init__(self, base: Root) -> None:
            super().__init__(base.path)
            self.files = dict(files)
            self.reverse = {host: inside for inside, host in files.items()}

        def host(self, inside: str) -> str:
            return self.files.get(posixpath.normpath("/" + inside.lstrip("/")), None) or super().host(inside)

        def inside(self, host_path: str) -> str:
            return self.reverse.get(host_path) or super().inside(host_path)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OverlayRoot) and other.path == self.path and other.files == self.files

        def __hash__(self) -> int:
            return hash((self.path, tuple(sorted(self.files.items()))))

    return Side(side.name, side.label, OverlayRoot(side.root), side.inventory, side.stack, side.ld_library_path)


class SharedIndexes:
    """Symbol indexes keyed so that a file both roots hold with the same bytes is indexed once: NEW's
    copy of an identical object is read through OLD's path (libtorch_cpu.so's index takes ~0.5 s)."""

    def __init__(self, identical: "dict[str, tuple[ElfFile, ElfFile]]") -> None:
        self._alias = {new.host: old.host for old, new in identical.values()}  # inventory hosts are real paths

    def canonical(self, host: str) -> str:
        return self._alias.get(os.path.realpath(host), host)

    def index(self, host: str):
        from rcompat.elf.read.symindex import readable_index

        return readable_index(self.canonical(host))
