"""patch-diff on copies of a gcc-built fixture library patched at offsets found with pyelftools."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rcompat.elf import ElfError, patch_diff
from rcompat.elf.patch.render import render_patch


def symbol_file_offset(path: Path, name: str) -> tuple[int, int, str]:
    """(file offset, st_value, section name) of a symbol, from pyelftools: an oracle independent of rcompat."""
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        sym = elf.get_section_by_name(".symtab").get_symbol_by_name(name)[0]
        sec = elf.get_section(sym["st_shndx"])
        return sec["sh_offset"] + sym["st_value"] - sec["sh_addr"], sym["st_value"], sec.name


def patched_copy(src: Path, dest: Path, offset: int, data: bytes) -> Path:
    shutil.copyfile(src, dest)
    with open(dest, "r+b") as fh:
        fh.seek(offset)
        original = fh.read(len(data))
        assert all(a != b for a, b in zip(original, data)), "choose bytes that differ from the original"
        fh.seek(offset)
        fh.write(data)
    return dest


def dumped_bytes(lines: list[str], sign: str, start: int, length: int) -> bytes:
    """The bytes at [start, start+length) as the xxd-style lines with prefix `sign` show them."""
    found = {}
    for line in lines:
        if not line.startswith(sign + " "):
            continue
        addr, rest = line[2:].split(": ", 1)
        hexpart = rest[:39].replace(" ", "")
        for i in range(0, len(hexpart), 2):
            found[int(addr, 16) + i // 2] = int(hexpart[i:i + 2], 16)
    return bytes(found[a] for a in range(start, start + length))


def test_patched_function_bytes_are_reported_exactly(demo, tmp_path):
    offset, value, section = symbol_file_offset(demo["v1"], "demo_stable")
    written = b"\xcc\x90\xcc"
    copy = patched_copy(demo["v1"], tmp_path / "libdemo.so.1", offset + 1, written)
    diff = patch_diff(demo["v1"], copy)
    assert diff.mode == "bytes" and len(diff.runs) == 1 and diff.changed_bytes == 3
    run = diff.runs[0]
    assert (run.old_offset, run.old_length, run.new_length) == (offset + 1, 3, 3)
    assert run.section == section == ".text" and run.old_vaddr == value + 1
    assert run.symbol == "demo_stable+0x1"
    from rcompat.elf.patch.render import hexdump

    lines = hexdump(run)
    assert dumped_bytes(lines, "+", offset + 1, 3) == written
    with open(demo["v1"], "rb") as fh:
        fh.seek(offset + 1)
        assert dumped_bytes(lines, "-", offset + 1, 3) == fh.read(3)
    text = render_patch(diff, "text")
    assert f"offset {offset + 1:#x}, vaddr {value + 1:#x}, 3 bytes, in .text, demo_stable+0x1" in text
    rows = {r.name: r for r in diff.sections}
    assert rows[".text"].status == "contents" and rows[".data"].status == "same"


def test_patched_object_is_attributed_to_its_symbol(demo, tmp_path):
    offset, _, section = symbol_file_offset(demo["v1"], "demo_config")
    copy = patched_copy(demo["v1"], tmp_path / "lib.so", offset + 4, b"\x7f")
    run, = patch_diff(demo["v1"], copy).runs
    assert (run.section, run.symbol, run.old_offset) == (section, "demo_config+0x4", offset + 4)


def test_identical_copy(demo, tmp_path):
    copy = shutil.copyfile(demo["v1"], tmp_path / "same.so")
    diff = patch_diff(demo["v1"], copy)
    assert diff.identical and diff.runs == [] and diff.changed_bytes == 0


def test_insertion_is_aligned_by_symbols_not_reported_to_the_end(demo):
    diff = patch_diff(demo["v1"], demo["inserted"])
    assert diff.mode == "sections"
    text_runs = [r for r in diff.runs if r.section == ".text"]
    assert [r.symbol.split("+")[0] for r in text_runs] == ["demo_old_api"]  # demo_hook shifted, unchanged
    assert text_runs[0].new_length > text_runs[0].old_length and "resized" in text_runs[0].note
    moves = {m.name: m for m in diff.symbol_moves}
    old_hook, new_hook = symbol_file_offset(demo["v1"], "demo_hook")[1], symbol_file_offset(demo["inserted"], "demo_hook")[1]
    assert moves["demo_hook"].old_value == old_hook and moves["demo_hook"].new_value == new_hook
    assert moves["demo_hook"].delta > 0 and "demo_stable" not in moves
    assert f"demo_hook {old_hook:#x} → {new_hook:#x}, +{new_hook - old_hook:#x}" in render_patch(diff, "text")
    rows = {r.name: r for r in diff.sections}
    assert rows[".text"].old.size < rows[".text"].new.size and rows[".fini"].status == "moved"


def test_patched_file_that_is_no_longer_elf_is_diffed_bytewise_with_a_warning(demo, tmp_path):
    copy = patched_copy(demo["v1"], tmp_path / "broken.so", 0, b"XXXX")
    diff = patch_diff(demo["v1"], copy)
    assert diff.mode == "raw" and any("PATCHED is not a valid ELF" in w for w in diff.warnings)
    assert [(r.old_offset, r.old_length) for r in diff.runs] == [(0, 4)]


def test_appended_bytes_of_a_non_elf_make_one_tail_run(demo, tmp_path):
    copy = tmp_path / "grown.so"
    copy.write_bytes(b"MZ" + demo["v1"].read_bytes()[2:] + b"\0" * 100)
    diff = patch_diff(demo["v1"], copy)
    assert [(r.old_offset, r.old_length, r.new_length) for r in diff.runs][-1] == (demo["v1"].stat().st_size, 0, 100)


def test_cli_formats_and_exit_codes(cli, demo, tmp_path):
    offset, _, _ = symbol_file_offset(demo["v1"], "demo_stable")
    copy = patched_copy(demo["v1"], tmp_path / "p.so", offset, b"\xc3")
    done = cli("elf", "patch-diff", str(demo["v1"]), str(copy))
    assert done.returncode == 1 and "demo_stable+0x0" in done.stdout and "+ " in done.stdout
    data = json.loads(cli("elf", "patch-diff", str(demo["v1"]), str(copy), "--format", "json").stdout)
    assert data["totals"]["runs"] == 1 and data["runs"][0]["symbol"] == "demo_stable+0x0"
    no_dump = cli("elf", "patch-diff", str(demo["v1"]), str(copy), "--hexdump", "0")
    assert "Hexdump" not in no_dump.stdout
    md = cli("elf", "patch-diff", str(demo["v1"]), str(copy), "--format", "markdown")
    assert "```diff" in md.stdout and "`demo_stable+0x0`" in md.stdout
    assert cli("elf", "patch-diff", str(demo["v1"]), str(demo["v1"])).returncode == 0


@pytest.mark.parametrize("bad", ["missing", "directory"])
def test_bad_input_is_one_line_exit_2(cli, demo, tmp_path, bad):
    path = tmp_path / "nope.so" if bad == "missing" else tmp_path
    with pytest.raises(ElfError):
        patch_diff(demo["v1"], path)
    done = cli("elf", "patch-diff", str(path), str(demo["v1"]))
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert str(path) in done.stderr and "Traceback" not in done.stderr
    assert cli("elf", "patch-diff", str(demo["v1"]), str(demo["v1"]), "--hexdump", "-1").returncode == 2
