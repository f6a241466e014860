"""Undefined symbols and version requirements, checked against the real loader in a child process."""
from __future__ import annotations

import shutil

from rcompat.elf import missing
from rcompat.elf.link.verreq import satisfying_copies, versions


def dlopen_error(path) -> str:
    """What the real ld.so says when Python's ctypes dlopens `path` (RTLD_NOW, in a child)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", f"import ctypes\ntry:\n    ctypes.CDLL({str(path)!r})\nexcept OSError as e:\n    print(e)\n"],
                          capture_output=True, text=True, timeout=60)
    return proc.stdout.strip()


def test_symbol_the_dependency_lacks_is_named_like_ld_so(libs):
    rep = missing(libs["needs_b"], ld_library_path="", search_defaults=False)
    assert [m.name for m in rep.missing] == ["prov_b"]
    assert {b.ref.name for b in rep.bindings} >= {"prov_a"}
    assert rep.missing[0].loader_message() == dlopen_error(libs["needs_b"])


def test_provider_outside_the_search_path_is_named(libs):
    rep = missing(libs["needs_b"], search=[str(libs["provider_full_dir"])], ld_library_path="", search_defaults=False)
    (lost,) = rep.missing
    assert lost.explanation() == (f"prov_b is provided by libprov.so in {libs['provider_full_dir']}, "
                                  "which is not on the search path")


def test_versioned_reference_needs_the_version_node(libs, tmp_path):
    shutil.copy(libs["needs_version"], tmp_path)
    shutil.copy(libs["versioned_old"], tmp_path)  # same soname, only VERS_1.0
    target = tmp_path / "libneedsversion.so"
    rep = versions(target, ld_library_path="")
    (unmet,) = rep.unmet
    assert unmet.version == "VERS_2.0"
    assert unmet.loader_message() == dlopen_error(target)
    good = versions(libs["needs_version"], ld_library_path="")
    assert good.ok and not good.unmet
    assert satisfying_copies("libversioned.so", {"VERS_2.0"}, None, dirs=[str(libs["versioned"].parent)]) == \
        [str(libs["versioned"].parent / "libversioned.so")]


def test_versioned_symbol_does_not_bind_to_other_version(libs, tmp_path):
    shutil.copy(libs["needs_version"], tmp_path)
    shutil.copy(libs["versioned_old"], tmp_path)
    rep = missing(tmp_path / "libneedsversion.so", ld_library_path="", search_defaults=False)
    (lost,) = rep.missing
    assert (lost.name, lost.ref.version) == ("vfunc", "VERS_2.0")
    assert "libversioned.so (VERS_1.0)" in lost.explanation()


def test_fixture_without_problems_is_ok(libs):
    rep = missing(libs["user"], ld_library_path="", search_defaults=False)
    assert rep.ok and {b.ref.name for b in rep.bindings} >= {"core_hello", "core_new_feature"}


def test_glibcxx_family_summary_on_libtorch(torch_lib):
    rep = versions(torch_lib / "libtorch_cpu.so", ld_library_path="")
    fam = {(f.file, f.family): f for f in rep.families}
    cxx = fam[("libstdc++.so.6", "GLIBCXX")]
    assert cxx.newest_needed.startswith("GLIBCXX_3.4.") and cxx.satisfied and cxx.newest_provided
    assert rep.ok


def test_libtorch_undefined_symbols_all_bind(torch_lib):
    import sys
    import os

    rep = missing(torch_lib / "libtorch_python.so", host=[os.path.realpath(sys.executable)], search_defaults=False)
    assert rep.ok and len(rep.bindings) > 5000
    # without --host: the interpreter whose site-packages holds torch (tests/elf/test_host_process.py)
    without_host = missing(torch_lib / "libtorch_python.so", root_only=True, search_defaults=False)
    assert without_host.ok and without_host.hosts and os.path.basename(without_host.hosts[0]).startswith("python")
    # a host that provides none of the C API (libc): every Py* reference is missing, each a host symbol
    libc_only = missing(torch_lib / "libtorch_python.so", host=["libc.so.6"], root_only=True, search_defaults=False)
    assert libc_only.missing and all(m.host_symbol for m in libc_only.missing)
