"""`explain --check`: the confirming look-ups that apply on this machine, folded into the findings.

Only reads: where the loader would find a library the text names (LD_LIBRARY_PATH, /etc/ld.so.cache,
the running Python's nvidia-*/torch wheels), which version its file name carries, and whether it defines
or needs a symbol the text names (its ELF tables, through rcompat's reader; nothing is loaded or run).
A Windows or macOS text is not checked: these probes read Linux's ELF libraries. Without --check none
of this runs.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from rcompat.explain.matching import Match

_VERSION_FILE = re.compile(r"version (?P<file>lib[\w+.-]{1,200}?\.so(?:\.\d+){0,4})")
_SONAME_IN = re.compile(r"lib[\w+-]{1,200}\.so(?:\.\d+){0,2}")
WHEEL_LIB_DIRS = ("nvidia/*/lib", "torch/lib", "tensorflow", "jaxlib")


def confirm_all(matches: list[Match]) -> None:
    for match in matches:
        match.notes.extend(confirm(match))


def confirm(match: Match) -> list[str]:
    """What this machine says about the library and symbol the match names."""
    g = match.groups
    if g.get("platform_note") or g.get("dll"):
        return ["Not checked here: the text comes from Windows or macOS, and rcompat's probes read Linux "
                "(ELF) libraries."]
    notes: list[str] = []
    lib = g.get("lib")
    if lib and "/" not in lib:
        notes.append(_library_note(lib))
    symbol = g.get("symbol")
    if symbol:
        notes.extend(_symbol_notes(match, symbol))
    return notes


def find_library(soname: str) -> list[str]:
    """Where the loader (or a Python wheel's preload) would find `soname` on this machine, first first."""
    found: list[str] = []
    for directory in filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":")):
        candidate = Path(directory) / soname
        if candidate.is_file():
            found.append(str(candidate))
    try:
        from rcompat.elf.link.ldcache import load_cache

        found.extend(e.path for e in load_cache().lookup(soname) if os.path.isfile(e.path))
    except Exception:  # noqa: BLE001 - an unreadable cache leaves the other places to look
        pass
    for site in (p for p in sys.path if p.endswith("-packages")):
        for pattern in WHEEL_LIB_DIRS:
            found.extend(str(p) for p in Path(site).glob(f"{pattern}/{soname}") if p.is_file())
    return list(dict.fromkeys(found))


def file_version(path: str) -> str:
    """The version the real file name carries: libnvJitLink.so.12 -> libnvJitLink.so.12.1.105 -> 12.1.105."""
    real = os.path.basename(os.path.realpath(path))
    m = re.search(r"\.so\.(\d[\d.]*)$", real)
    return m.group(1) if m else ""


def _library_note(soname: str) -> str:
    places = find_library(soname)
    if not places:
        return (f"Checked here: {soname} is not found on this machine either (LD_LIBRARY_PATH, "
                f"/etc/ld.so.cache, this Python's nvidia-*/torch wheels).")
    version = file_version(places[0])
    return (f"Checked here: {soname} is at {places[0]}" + (f" (version {version})" if version else "")
            + (f"; also at {', '.join(places[1:3])}" if len(places) > 1 else "")
            + ": on this machine it can be found, so the failing process had another search path.")


def _symbol_notes(match: Match, symbol: str) -> list[str]:
    notes: list[str] = []
    library = match.groups.get("library", "")
    if library.startswith("/") and os.path.isfile(library):
        needs = _references(library, symbol)
        if needs is not None:
            notes.append(f"Checked here: {library} " + ("needs " if needs else "does not reference ") + f"{symbol}.")
    provider = _provider(match)
    if not provider:
        return notes
    places = find_library(provider)
    if not places:
        notes.append(f"Checked here: {provider}, which should define {symbol}, is not found on this machine.")
        return notes
    defines = _defines(places[0], symbol)
    if defines is None:
        return notes
    version = file_version(places[0])
    where = f"{provider} here is {places[0]}" + (f" (version {version})" if version else "")
    notes.append(f"Confirmed: {where} and does not define {symbol}." if not defines else
                 f"Checked here: {where} and defines {symbol}: on this machine the loader would bind it; "
                 f"the failing process loaded another copy first.")
    return notes


def _provider(match: Match) -> str:
    """The soname that should define the symbol: the text's `version libX.so.N`, else its family's owner."""
    m = _VERSION_FILE.search(match.excerpt)
    if m:
        return m.group("file")
    from rcompat.explain import vocabulary

    row = vocabulary.symbol_family(match.groups.get("symbol", ""), match.groups.get("symbol_demangled", ""))
    owner = _SONAME_IN.search(row["owner"]) if row else None
    return owner.group(0) if owner else ""


def _defines(path: str, symbol: str) -> "bool | None":
    index = _index(path)
    return None if index is None else index.lookup(symbol) is not None


def _references(path: str, symbol: str) -> "bool | None":
    index = _index(path)
    return None if index is None else any(r.name == symbol for r in index.references)


def _index(path: str):
    from rcompat.elf.read.symindex import readable_index

    try:
        return readable_index(path)
    except Exception:  # noqa: BLE001 - not ELF, unreadable: nothing to confirm from it
        return None
