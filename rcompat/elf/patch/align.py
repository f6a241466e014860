"""The two ways patch_diff walks a pair of files: at equal offsets (same layout, or not ELF), or section
by section with resized code aligned symbol by symbol."""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rcompat.elf.patch.byte_runs import MappedFile, RunBudget, diff_ranges, region_runs
from rcompat.elf.patch.layout import Layout
from rcompat.elf.patch.results import ByteRun, PatchDiff, SectionRow, SymbolMove

if TYPE_CHECKING:
    from rcompat.elf.read.format import Section

_SYMBOL_TABLES = {".dynsym", ".symtab", ".dynstr", ".strtab"}


def _attribute(run: ByteRun, old_lay: Layout | None, new_lay: Layout | None,
               old_sec: "Section | None" = None, new_sec: "Section | None" = None) -> ByteRun:
    if old_lay is not None and old_sec is None and run.old_length:
        old_sec = old_lay.section_at(run.old_offset)
    if new_lay is not None and new_sec is None:
        new_sec = new_lay.section_at(run.new_offset)
    run.old_vaddr = Layout.vaddr(old_sec, run.old_offset) if run.old_length or old_sec else None
    run.new_vaddr = Layout.vaddr(new_sec, run.new_offset)
    sec = old_sec or new_sec
    if not run.section:
        run.section = sec.name if sec is not None else ""
    if not run.symbol:
        hit = old_lay.symbol_at(run.old_vaddr) if old_lay is not None and run.old_length else None
        if hit is None and new_lay is not None and (old_lay is None or not run.old_length):
            hit = new_lay.symbol_at(run.new_vaddr)
            run.symbol = hit.describe(run.new_vaddr) if hit else ""
        else:
            run.symbol = hit.describe(run.old_vaddr) if hit else ""
    return run


def compare_whole(diff: PatchDiff, old: MappedFile, new: MappedFile, lay: Layout | None,
                  new_lay: Layout | None, gap: int) -> None:
    """Same layout (or not both ELF): compare at equal file offsets, in large chunks."""
    n = min(old.size, new.size)
    ranges, count = diff_ranges(old.array[:n], new.array[:n], gap, diff.budget)
    runs = [ByteRun(s, s, e - s, e - s) for s, e in ranges]
    if old.size != new.size:
        runs.append(ByteRun(n, n, old.size - n, new.size - n, note="truncated" if new.size < old.size else "appended"))
        count += abs(old.size - new.size)
    diff.runs = [_attribute(r, lay, new_lay) for r in runs]
    diff.changed_bytes = count
    if diff.mode == "bytes" and lay is not None and new_lay is not None:
        diff.sections = _section_rows(lay, new_lay, diff.runs)


def _pairs(old_lay: Layout, new_lay: Layout):
    """Sections paired by (name, occurrence), in the original's order, then the patched-only ones."""
    def keyed(layout):
        seen: Counter = Counter()
        out = {}
        for s in layout.sections:
            out[(s.name, seen[s.name])] = s
            seen[s.name] += 1
        return out

    a, b = keyed(old_lay), keyed(new_lay)
    for key, sec in a.items():
        yield key[0], sec, b.get(key)
    for key, sec in b.items():
        if key not in a:
            yield key[0], None, sec


def _section_rows(old_lay: Layout, new_lay: Layout, runs: list[ByteRun]) -> list[SectionRow]:
    rows = [SectionRow(name, a, b) for name, a, b in _pairs(old_lay, new_lay)]
    by_name = {r.name: r for r in reversed(rows)}
    for run in runs:
        row = by_name.get(run.section)
        if row is not None:
            row.runs += 1
            row.changed_bytes += run.length
    return rows


def compare_by_sections(diff: PatchDiff, old: MappedFile, new: MappedFile, old_lay: Layout, new_lay: Layout,
                        gap: int) -> None:
    runs: list[ByteRun] = []
    total = 0
    ehsize = 64 if old_lay.image.bits == 64 else 52
    regions = [("(ELF header)", 0, ehsize, 0, ehsize, None, None),
               ("(program headers)", old_lay.image.phoff, old_lay.image.phnum * old_lay.image.phentsize,
                new_lay.image.phoff, new_lay.image.phnum * new_lay.image.phentsize, None, None)]
    for name, a, b in _pairs(old_lay, new_lay):
        if a is not None and b is not None and a.occupies_file and b.occupies_file:
            regions.append((name, a.offset, a.size, b.offset, b.size, a, b))
    for name, ao, asz, bo, bsz, a, b in regions:
        if asz != bsz and a is not None and a.flags & 0x4:  # SHF_EXECINSTR: align code by symbols
            found, count = _align_by_symbols(old, new, old_lay, new_lay, a, b, gap, diff.budget)
            if found is not None:
                runs += [_attribute(r, old_lay, new_lay, a, b) for r in found]
                total += count
                continue
        rel, count = region_runs(old.array[ao:ao + asz], new.array[bo:bo + bsz], gap, diff.budget)
        total += count
        for rs, rl, ns, nl in rel:
            run = ByteRun(ao + rs, bo + ns, rl, nl, section=name)
            runs.append(_attribute(run, old_lay, new_lay, a, b) if a is not None else run)
    runs.sort(key=lambda r: (r.old_offset, r.new_offset))
    diff.runs, diff.changed_bytes = runs, total
    diff.sections = _section_rows(old_lay, new_lay, runs)


def _align_by_symbols(old, new, old_lay: Layout, new_lay: Layout, a: "Section", b: "Section", gap: int,
                      budget: RunBudget):
    """Runs of a resized code section compared symbol by symbol, or None when it has no symbols."""
    olds = {n: v for n, v in old_lay.named_symbols.items() if v[2] == a.index and v[1] > 0}
    news = {n: v for n, v in new_lay.named_symbols.items() if v[2] == b.index and v[1] > 0}
    if not olds or not news:
        return None, 0
    runs: list[ByteRun] = []
    count = 0
    ob, nb = old.buf, new.buf
    for name, (value, size, shndx) in olds.items():
        oa = old_lay.file_offset(value, shndx)
        if oa is None:
            continue
        other = news.get(name)
        if other is None:
            runs.append(ByteRun(oa, b.offset, size, 0, symbol=f"{name}+0x0", note="only in original"))
            count += size
            continue
        na = new_lay.file_offset(other[0], other[2])
        if na is None:
            continue
        if size == other[1] and ob[oa:oa + size] == nb[na:na + size]:
            continue
        rel, n = region_runs(old.array[oa:oa + size], new.array[na:na + other[1]], gap, budget)
        count += n
        note = f"resized {size} → {other[1]} bytes" if size != other[1] else ""
        for rs, rl, ns, nl in rel:
            runs.append(ByteRun(oa + rs, na + ns, rl, nl, symbol=f"{name}+{rs:#x}", note=note))
    for name, (value, size, shndx) in news.items():
        if name not in olds:
            na = new_lay.file_offset(value, shndx)
            if na is not None:
                runs.append(ByteRun(a.offset, na, 0, size, symbol=f"{name}+0x0", note="only in patched"))
                count += size
    return runs, count


def symbol_moves(diff: PatchDiff, old_lay: Layout, new_lay: Layout) -> list[SymbolMove]:
    if diff.mode == "bytes":
        if not any(r.section in _SYMBOL_TABLES for r in diff.runs):
            return []  # identical symbol tables at identical offsets: nothing can have moved
        return _moves_in_place(old_lay, new_lay)
    a, b = old_lay.named_symbols, new_lay.named_symbols
    moves = [SymbolMove(name, v[0], b[name][0]) for name, v in a.items() if name in b and b[name][0] != v[0]]
    moves.sort(key=lambda m: (m.old_value, m.name))
    return moves


def _moves_in_place(old_lay: Layout, new_lay: Layout) -> list[SymbolMove]:
    """Same layout: entry i of each table is the same symbol, so compare st_value column-wise and
    name only the entries that differ (530,000 .symtab entries of libtorch_cpu.so in milliseconds)."""
    import numpy as np

    moves, seen = [], set()
    for t, ((a, _), (b, _)) in enumerate(zip(old_lay.symbol_tables, new_lay.symbol_tables)):
        n = min(len(a), len(b))
        for i in np.flatnonzero((a["value"][:n] != b["value"][:n]) & (a["shndx"][:n] != 0)).tolist():
            name = old_lay.symbol_name(t, i)
            if name and name == new_lay.symbol_name(t, i) and name not in seen:
                seen.add(name)
                moves.append(SymbolMove(name, int(a["value"][i]), int(b["value"][i])))
    moves.sort(key=lambda m: (m.old_value, m.name))
    return moves
