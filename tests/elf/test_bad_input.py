"""Bad input never escapes as anything but ElfError (library) or exit 2 with one line (CLI)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rcompat.elf import ElfError, NotElfError, deps, missing, symbols
from rcompat.elf.read.reader import ElfImage

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bad_paths(tmp_path, libs):
    text = tmp_path / "script.so"
    text.write_text("#!/bin/sh\necho hi\n")
    dangling = tmp_path / "dangling.so"
    os.symlink(tmp_path / "gone.so", dangling)
    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(libs["versioned"].read_bytes()[:200])
    header_only = tmp_path / "header.so"
    header_only.write_bytes(libs["versioned"].read_bytes()[:40])
    return {"text": (text, "not an ELF file"), "dir": (tmp_path, "is a directory"),
            "missing": (tmp_path / "nope.so", "no such file"), "dangling": (dangling, "dangling symbolic link"),
            "truncated": (truncated, "beyond the end of the file"), "header": (header_only, "ELF header"),
            "empty": (_empty(tmp_path), "too short")}


def _empty(tmp_path):
    p = tmp_path / "empty.so"
    p.write_bytes(b"")
    return p


@pytest.mark.parametrize("kind", ["text", "dir", "missing", "dangling", "truncated", "header", "empty"])
def test_bad_input_is_an_elf_error_with_the_path(bad_paths, kind):
    path, words = bad_paths[kind]
    for call in (symbols, deps, missing):
        with pytest.raises(ElfError) as info:
            call(path)
        assert str(path) in str(info.value) and words in str(info.value)
    if kind == "text":
        with pytest.raises(NotElfError):
            ElfImage(path)


def test_truncation_error_names_the_offset(bad_paths):
    path, _ = bad_paths["truncated"]
    with pytest.raises(ElfError) as info:
        symbols(path)
    assert info.value.offset is not None and f"{info.value.offset:#x}" in str(info.value)


@pytest.mark.parametrize("kind", ["text", "dir", "missing", "truncated"])
def test_cli_says_one_line_and_exits_2(cli, bad_paths, kind):
    path, words = bad_paths[kind]
    for sub in ("symbols", "deps", "missing", "versions"):
        proc = cli("elf", sub, str(path))
        assert proc.returncode == 2, (sub, proc.stderr)
        assert proc.stderr.count("\n") == 1 and words in proc.stderr and "Traceback" not in proc.stderr


def test_fuzzed_fixtures_only_raise_elf_error(libs, tmp_path, load_helper):
    fuzz = load_helper("fuzz_elf", REPO / "benchmarks/fuzz_elf.py")
    sources = [libs[k] for k in ("versioned", "needs_version", "rpath_runpath", "user")]
    result = fuzz.run(sources, cases=400, seed=7, workdir=tmp_path)
    assert result["failures"] == []
    assert result["outcomes"]["ElfError"] > 50 and result["outcomes"]["ok"] > 50  # both paths exercised


def test_runtimes_pid_must_be_a_number(cli):
    out = cli("elf", "runtimes", "--pid", "abc")
    assert out.returncode == 2 and "invalid int value" in out.stderr


def _with_name_offset(libs, tmp_path, offset_of, dynstr_ends_without_nul=False):
    """libversioned.so with its first named dynamic symbol's st_name set to offset_of(.dynstr's size)
    (and the last byte of .dynstr made a letter when asked): the file and the patched symbol's number."""
    data = bytearray(libs["versioned"].read_bytes())
    with ElfImage(libs["versioned"]) as img:
        dynsym = img.section_by_type("SHT_DYNSYM")
        dynstr = img.sections[dynsym.link]
    row = 1  # symbol 0 is the null symbol
    data[dynsym.offset + row * 24:dynsym.offset + row * 24 + 4] = offset_of(dynstr.size).to_bytes(4, "little")
    if dynstr_ends_without_nul:
        data[dynstr.offset + dynstr.size - 1] = ord("x")
    patched = tmp_path / "libpatched.so"
    patched.write_bytes(bytes(data))
    return patched, row, dynsym.offset + row * 24


@pytest.mark.parametrize("offset_of", [lambda size: size, lambda size: size + 1000, lambda size: 0xFFFFFFFF],
                         ids=["at-end", "past-end", "max"])
def test_a_name_offset_outside_the_string_table_is_an_elf_error_naming_the_symbol(libs, tmp_path, offset_of):
    patched, row, at = _with_name_offset(libs, tmp_path, offset_of)
    with pytest.raises(ElfError) as info:
        symbols(patched)
    assert f"symbol {row} name offset" in str(info.value) and "outside the string table" in str(info.value)
    assert info.value.offset == at


def test_a_string_table_without_its_last_nul_reads_its_last_name_and_refuses_the_offset_past_it(libs, tmp_path):
    """A .dynstr whose last byte is not NUL: a name reaching the end is read up to it, while an offset
    equal to the table's size (where the reader puts a terminator of its own) is outside, as any other."""
    inside, _row, _at = _with_name_offset(libs, tmp_path, lambda size: size - 1, dynstr_ends_without_nul=True)
    assert "x" in symbols(inside).names()
    at_end, row, at = _with_name_offset(libs, tmp_path, lambda size: size, dynstr_ends_without_nul=True)
    with pytest.raises(ElfError) as info:
        symbols(at_end)
    assert f"symbol {row} name offset" in str(info.value) and info.value.offset == at
