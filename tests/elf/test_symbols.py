"""Symbol tables against binutils' nm on gcc-built fixtures and on the real libtorch."""
from __future__ import annotations

import subprocess

import pytest

from rcompat.elf import symbols


def nm(*args) -> set[str]:
    out = subprocess.run(["nm", *args], capture_output=True, text=True, check=True).stdout
    return {line for line in out.splitlines() if line}


@pytest.mark.parametrize("name", ["versioned", "needs_version", "versioned_old", "needs_b", "user", "interpose_b"])
def test_nm_lines_equal_nm_dynamic(libs, name):
    assert set(symbols(libs[name]).nm_lines()) == nm("-D", str(libs[name]))


def test_every_letter_and_version_decoration(libs):
    by_name = {s.name: s for s in symbols(libs["versioned"])}
    letters = {n: by_name[n].letter for n in ("plain", "vdata", "bss_var", "ro_table", "weak_fn", "weak_obj",
                                               "maybe_there", "maybe_obj", "picked", "VERS_1.0")}
    assert letters == {"plain": "T", "vdata": "D", "bss_var": "B", "ro_table": "R", "weak_fn": "W", "weak_obj": "V",
                       "maybe_there": "w", "maybe_obj": "w", "picked": "i", "VERS_1.0": "A"}
    vfunc = [s.decorated for s in symbols(libs["versioned"]) if s.name == "vfunc"]
    assert vfunc == ["vfunc@@VERS_2.0"]
    assert by_name["VERS_1.0"].decorated == "VERS_1.0"  # a version node's own symbol has no suffix
    undefined = {s.decorated for s in symbols(libs["needs_version"], defined=False)}
    assert "vfunc@VERS_2.0" in undefined  # references print with a single @


def test_hidden_old_version_is_listed_with_single_at(libs, gcc, tmp_path):
    # vfunc@VERS_1.0 is a non-default (hidden) version: nm prints it only when it is in .dynsym.
    names = {s.decorated for s in symbols(libs["versioned"])}
    assert names == {line.split()[-1] for line in nm("-D", str(libs["versioned"]))}


def test_defined_and_undefined_filters_match_nm(libs):
    path = str(libs["versioned"])
    assert set(symbols(path, defined=True).nm_lines()) == nm("-D", "--defined-only", path)
    assert set(symbols(path, defined=False).nm_lines()) == nm("-D", "--undefined-only", path)


def test_demangled_lines_match_nm_C_on_libtorch(torch_lib):
    path = str(torch_lib / "libc10.so")
    assert set(symbols(path, demangle=True).nm_lines(demangle=True)) == nm("-D", "-C", path)


def test_libtorch_cpu_symbol_set_and_count_equal_nm(torch_lib):
    path = str(torch_lib / "libtorch_cpu.so")
    ours = symbols(path, defined=True)
    theirs = nm("-D", "--defined-only", path)
    assert len(ours) == len(theirs) > 70000
    assert set(ours.nm_lines()) == theirs


def test_32_bit_object_reads_like_nm(lib32):
    syms = symbols(lib32)
    assert set(syms.nm_lines()) == nm("-D", str(lib32))
    assert syms.bits == 32 and all(len(line.split()[0]) == 8 for line in syms.nm_lines() if line[0] != " ")


def test_dataframe_has_one_row_per_symbol(libs):
    frame = symbols(libs["versioned"], demangle=True).to_frame(demangle=True)
    assert len(frame) == len(symbols(libs["versioned"]))
    assert {"name", "version", "letter", "size", "demangled"} <= set(frame.columns)
    assert frame.loc[frame.name == "vdata", "size"].item() == 16
