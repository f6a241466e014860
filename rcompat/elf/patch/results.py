"""What patch_diff reports: changed byte runs, section rows, symbol moves, and the whole diff.

Plain data shared by the comparison (patch.py, patch_align.py) and the renderer (patch_render.py); it
imports neither, so the dependencies run one way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rcompat.elf.read.format import Section


# Runs kept as objects, whatever the input: a sparse change to every page of libtorch_cpu.so gives
# ~10^8 runs, and keeping each took more than 12 GB. Past the budget runs are counted, not kept, so
# memory stays bounded by the budget and one CHUNK, not by the files' sizes.
MAX_RUNS = 100_000


class RunBudget:
    """How many more runs may be kept; `dropped` counts those past the budget."""

    def __init__(self, limit: int = MAX_RUNS) -> None:
        self.left = limit
        self.limit = limit
        self.dropped = 0

    def keep(self) -> bool:
        if self.left > 0:
            self.left -= 1
            return True
        self.dropped += 1
        return False


@dataclass
class ByteRun:
    old_offset: int
    new_offset: int
    old_length: int
    new_length: int
    section: str = ""
    old_vaddr: int | None = None
    new_vaddr: int | None = None
    symbol: str = ""  # name+0xoffset of the symbol containing the run's first byte (original file)
    note: str = ""  # for symbol-aligned runs: "resized", "only in original", "only in patched"
    old_bytes: bytes = b""  # the run plus context, for the hexdump of the first runs only
    new_bytes: bytes = b""
    dump_old_start: int = 0
    dump_new_start: int = 0

    @property
    def length(self) -> int:
        return max(self.old_length, self.new_length)

    def to_dict(self) -> dict:
        return {"old_offset": self.old_offset, "new_offset": self.new_offset, "old_length": self.old_length,
                "new_length": self.new_length, "section": self.section, "old_vaddr": self.old_vaddr,
                "new_vaddr": self.new_vaddr, "symbol": self.symbol, "note": self.note,
                "hexdump": ({"old_start": self.dump_old_start, "old": self.old_bytes.hex(),
                             "new_start": self.dump_new_start, "new": self.new_bytes.hex()}
                            if self.old_bytes or self.new_bytes else None)}


@dataclass
class SectionRow:
    name: str
    old: Section | None
    new: Section | None
    changed_bytes: int = 0
    runs: int = 0

    @property
    def header_changes(self) -> list[str]:
        if self.old is None or self.new is None:
            return []
        return [f for f in ("type", "addr", "offset", "size", "flags") if getattr(self.old, f) != getattr(self.new, f)]

    @property
    def status(self) -> str:
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        if self.runs:
            return "contents"
        return "moved" if self.header_changes else "same"

    def to_dict(self) -> dict:
        def side(s):
            return None if s is None else {"index": s.index, "type": s.type, "addr": s.addr, "offset": s.offset,
                                           "size": s.size, "flags": s.flags}

        return {"name": self.name, "status": self.status, "header_changes": self.header_changes,
                "changed_bytes": self.changed_bytes, "runs": self.runs, "old": side(self.old), "new": side(self.new)}


@dataclass
class SymbolMove:
    name: str
    old_value: int
    new_value: int

    @property
    def delta(self) -> int:
        return self.new_value - self.old_value


@dataclass
class PatchDiff:
    original: str
    patched: str
    old_size: int
    new_size: int
    mode: str  # "bytes" (same layout), "sections" (layout changed), "raw" (not both valid ELF)
    runs: list[ByteRun] = field(default_factory=list)
    sections: list[SectionRow] = field(default_factory=list)
    symbol_moves: list[SymbolMove] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changed_bytes: int = 0
    hexdump_runs: int = 0
    context: int = 16
    budget: RunBudget = field(default_factory=RunBudget, repr=False, compare=False)

    @property
    def identical(self) -> bool:
        return not self.runs and self.old_size == self.new_size

    def totals(self) -> dict:
        symbols = {r.symbol.rsplit("+", 1)[0] for r in self.runs if r.symbol}
        return {"runs": len(self.runs) + self.budget.dropped, "runs_not_listed": self.budget.dropped,
                "changed_bytes": self.changed_bytes,
                "sections_changed": sum(1 for s in self.sections if s.status != "same"),
                "symbols_touched": len(symbols), "symbols_moved": len(self.symbol_moves),
                "old_size": self.old_size, "new_size": self.new_size}

    def to_dict(self) -> dict:
        return {"original": self.original, "patched": self.patched, "mode": self.mode, "identical": self.identical,
                "warnings": self.warnings, "totals": self.totals(),
                "sections": [s.to_dict() for s in self.sections], "runs": [r.to_dict() for r in self.runs],
                "symbol_moves": [{"name": m.name, "old": m.old_value, "new": m.new_value, "delta": m.delta}
                                 for m in self.symbol_moves]}

    def to_frame(self):
        import pandas as pd

        rows = [{k: v for k, v in r.to_dict().items() if k != "hexdump"} for r in self.runs]
        return pd.DataFrame(rows, columns=["old_offset", "new_offset", "old_length", "new_length", "section",
                                           "old_vaddr", "new_vaddr", "symbol", "note"])
