"""Duplicate runtimes among several roots and in a live process."""
from __future__ import annotations

import os
import shutil

from rcompat.elf.link.runtimes import duplicate_runtimes, duplicate_runtimes_in_process, mapped_objects


def _fake_runtime(src, dest, name):
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest / name)
    return dest / name


def test_two_openmp_runtimes_from_different_files(libs, tmp_path):
    # Two different OpenMP implementations (by name) are a conflict even with different sonames.
    a = _fake_runtime(libs["interpose_a"], tmp_path / "a", "libgomp.so.1")
    b = _fake_runtime(libs["interpose_b"], tmp_path / "b", "libiomp5.so")
    (dup,) = duplicate_runtimes([a, b])
    assert dup.family == "OpenMP" and {c.path for c in dup.copies} == {str(a), str(b)}
    assert all(c.build_id for c in dup.copies) and not dup.same_build


def test_real_torch_wheel_alone_has_no_duplicates(torch_lib):
    assert duplicate_runtimes([torch_lib / "libtorch_python.so"]) == []


def test_two_torch_installs_are_reported(torch_lib, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    for name in ("libc10.so",):
        os.symlink(torch_lib / name, other / name)
    shutil.copy(torch_lib / "libgomp.so.1", other / "libgomp.so.1")
    dups = duplicate_runtimes([torch_lib / "libc10.so", other / "libgomp.so.1"])
    assert dups == []  # a symlink to the same file and one libgomp are single copies
    (tmp_path / "c").mkdir()
    shutil.copy(torch_lib / "libc10.so", tmp_path / "c" / "libc10.so")
    (dup,) = [d for d in duplicate_runtimes([torch_lib / "libc10.so", tmp_path / "c" / "libc10.so"])
              if d.family == "libc10"]
    assert dup.same_build and not dup.all_load


def test_live_process_maps(libs, tmp_path):
    a = _fake_runtime(libs["interpose_a"], tmp_path / "a", "libgomp.so.1")
    b = _fake_runtime(libs["interpose_b"], tmp_path / "b", "libgomp-0123abcd.so.1")
    code = ("import ctypes, os, sys\n"
            f"ctypes.CDLL({str(a)!r}); ctypes.CDLL({str(b)!r})\n"
            "print(os.getpid(), flush=True); sys.stdin.readline()\n")
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(child.stdout.readline())
        assert str(a) in mapped_objects(pid)
        (dup,) = duplicate_runtimes_in_process(pid)
        assert {c.path for c in dup.copies} == {str(a), str(b)} and dup.all_load
    finally:
        child.communicate("\n", timeout=10)
