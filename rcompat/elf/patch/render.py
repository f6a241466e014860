"""Text, markdown and json output of a PatchDiff: `readelf -S` side by side, runs, moves, `xxd` dumps."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rcompat.elf.patch.results import ByteRun, PatchDiff

MOVES_SHOWN = 20
_MARK = {"same": " ", "moved": "~", "contents": "*", "added": "+", "removed": "-"}


def _hex(v: int | None) -> str:
    return "-" if v is None else f"{v:#x}"


def _xxd_line(start: int, chunk: bytes) -> str:
    groups = " ".join(chunk[i:i + 2].hex() for i in range(0, 16, 2) if chunk[i:i + 2])
    text = "".join(chr(c) if 32 <= c < 127 else "." for c in chunk)
    return f"{start:08x}: {groups:<39}  {text}"


def hexdump(run: "ByteRun") -> list[str]:
    """Old and new bytes as xxd prints them, old line then new line, 16 bytes each."""
    lines = []
    n = max(len(run.old_bytes), len(run.new_bytes))
    for i in range(0, n, 16):
        a, b = run.old_bytes[i:i + 16], run.new_bytes[i:i + 16]
        if a:
            lines.append("- " + _xxd_line(run.dump_old_start + i, a))
        if b:
            lines.append("+ " + _xxd_line(run.dump_new_start + i, b))
        if a and b and a != b:
            marks = "".join("^^" if (j < len(a) and j < len(b) and a[j] != b[j]) else "  " for j in range(16))
            lines.append("  " + " " * 10 + " ".join(marks[k:k + 4] for k in range(0, 32, 4)).rstrip())
    return lines


def _section_table(diff: "PatchDiff") -> list[str]:
    head = f"  {'':1} {'Name':<20} {'Type':<14} {'Address':>10} {'Off':>9} {'Size':>9}   {'Address':>10} {'Off':>9} {'Size':>9}  changed"
    lines = ["Sections (original | patched; * contents differ, ~ moved or resized, +/- only in one):", head]
    for row in diff.sections:
        o, n = row.old, row.new
        typ = (o or n).type.replace("SHT_", "")
        left = f"{_hex(o.addr):>10} {_hex(o.offset):>9} {_hex(o.size):>9}" if o else f"{'':>30}"
        right = f"{_hex(n.addr):>10} {_hex(n.offset):>9} {_hex(n.size):>9}" if n else f"{'':>30}"
        extra = f"{row.changed_bytes} B in {row.runs} run(s)" if row.runs else ", ".join(row.header_changes)
        lines.append(f"  {_MARK[row.status]} {row.name[:20]:<20} {typ[:14]:<14} {left}   {right}  {extra}")
    return lines


def _run_line(i: int, r: "ByteRun") -> str:
    where = f"offset {r.old_offset:#x}" if r.old_offset == r.new_offset else f"offset {r.old_offset:#x} → {r.new_offset:#x}"
    vaddr = ""
    if r.old_vaddr is not None or r.new_vaddr is not None:
        vaddr = (f", vaddr {_hex(r.old_vaddr)}" if r.old_vaddr == r.new_vaddr
                 else f", vaddr {_hex(r.old_vaddr)} → {_hex(r.new_vaddr)}")
    size = f"{r.old_length} bytes" if r.old_length == r.new_length else f"{r.old_length} → {r.new_length} bytes"
    where_in = ", ".join(x for x in (r.section or "(no section)", r.symbol) if x)
    note = f"  [{r.note}]" if r.note else ""
    return f"  #{i:<4} {where}{vaddr}, {size}, in {where_in}{note}"


def render_text(diff: "PatchDiff") -> str:
    t = diff.totals()
    lines = [f"rcompat elf patch-diff: {diff.original} → {diff.patched}"]
    lines += [f"warning: {w}" for w in diff.warnings]
    if diff.identical:
        lines.append("identical: no byte differs")
        return "\n".join(lines) + "\n"
    lines.append(f"compared: {dict(bytes='at equal offsets (same layout)', sections='section by section, code aligned by symbol', raw='byte by byte (not both valid ELF)')[diff.mode]}")
    if diff.sections:
        lines += [""] + _section_table(diff)
    lines += ["", f"Changed runs ({len(diff.runs)}):"]
    lines += [_run_line(i, r) for i, r in enumerate(diff.runs, 1)]
    if diff.symbol_moves:
        lines += ["", f"Symbol value deltas ({len(diff.symbol_moves)}):"]
        for m in diff.symbol_moves[:MOVES_SHOWN]:
            lines.append(f"  {m.name} {m.old_value:#x} → {m.new_value:#x}, {m.delta:+#x}")
        if len(diff.symbol_moves) > MOVES_SHOWN:
            lines.append(f"  … and {len(diff.symbol_moves) - MOVES_SHOWN} more (--format json lists all)")
    dumped = [r for r in diff.runs[:diff.hexdump_runs] if r.old_bytes or r.new_bytes]
    for i, r in enumerate(dumped, 1):
        lines += ["", f"Hexdump of run #{i} (- original, + patched, ^^ differs):"] + hexdump(r)
    lines += ["", f"totals: {t['runs']} runs, {t['changed_bytes']} bytes differ, {t['sections_changed']} sections "
                  f"changed, {t['symbols_touched']} symbols touched, {t['symbols_moved']} symbols moved; "
                  f"size {t['old_size']} → {t['new_size']} bytes"]
    return "\n".join(lines) + "\n"


def render_markdown(diff: "PatchDiff") -> str:
    t = diff.totals()
    out = [f"### Patch diff: `{diff.original}` → `{diff.patched}`", ""]
    out += [f"> ⚠️ {w}" for w in diff.warnings]
    out += [f"{t['runs']} runs, {t['changed_bytes']} bytes differ, {t['symbols_touched']} symbols touched, "
            f"{t['symbols_moved']} symbols moved.", ""]
    changed = [s for s in diff.sections if s.status != "same"]
    if changed:
        out += ["| section | status | original off/size | patched off/size | changed |", "|---|---|---|---|---|"]
        for s in changed:
            o = f"{_hex(s.old.offset)}/{_hex(s.old.size)}" if s.old else ""
            n = f"{_hex(s.new.offset)}/{_hex(s.new.size)}" if s.new else ""
            out.append(f"| `{s.name}` | {s.status} | {o} | {n} | {s.changed_bytes} B |")
        out.append("")
    if diff.runs:
        out += ["| # | offset | vaddr | bytes | section | symbol |", "|---|---|---|---|---|---|"]
        for i, r in enumerate(diff.runs, 1):
            out.append(f"| {i} | {_hex(r.old_offset)} | {_hex(r.old_vaddr)} | {r.old_length}→{r.new_length} "
                       f"| `{r.section}` | `{r.symbol}` |")
        out.append("")
    dumped = [r for r in diff.runs[:diff.hexdump_runs] if r.old_bytes or r.new_bytes]
    for i, r in enumerate(dumped, 1):
        out += [f"Run #{i}:", "", "```diff"] + hexdump(r) + ["```", ""]
    return "\n".join(out)


def render_patch(diff: "PatchDiff", fmt: str = "text", **_: object) -> str:
    if fmt == "json":
        return json.dumps(diff.to_dict(), indent=2) + "\n"
    if fmt in ("markdown", "md"):
        return render_markdown(diff)
    if fmt == "text":
        return render_text(diff)
    from rcompat.errors import UsageError

    raise UsageError(f"unknown format '{fmt}'; choose from: text, json, markdown")
