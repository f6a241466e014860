"""Static resolution against readelf -d, ldconfig -p and ldd (ldd only on our own fixtures)."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from rcompat.elf import deps
from rcompat.elf.errors import ElfError
from rcompat.elf.link.ldcache import load_cache, parse_cache
from rcompat.elf.read.reader import ElfImage


def ldd(path, env=None) -> dict[str, str | None]:
    full = dict(os.environ)
    full.pop("LD_LIBRARY_PATH", None)
    full.update(env or {})
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=full).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (not found|\S+)", line)
        if m and m.group(1) != "linux-vdso.so.1":
            found[m.group(1)] = None if m.group(2) == "not found" else os.path.realpath(m.group(2))
    return found


def ours(path, ld_library_path="") -> dict[str, str | None]:
    res = deps(path, ld_library_path=ld_library_path)
    found = {n.requested: os.path.realpath(n.path) for n in res.nodes[1:]}
    found.update({m.name: None for m in res.missing})
    return found


def readelf_needed(path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)


FIXTURES = ["needs_version", "needs_b", "uses_ghost", "runpath_only", "rpath_only", "rpath_runpath", "top_rpath",
            "top_runpath", "user"]


@pytest.mark.parametrize("name", FIXTURES)
def test_needed_equals_readelf(libs, name):
    with ElfImage(libs[name]) as img:
        assert img.needed == readelf_needed(libs[name])


@pytest.mark.parametrize("name", FIXTURES)
def test_resolution_equals_ldd(libs, name):
    theirs = ldd(libs[name])
    mine = ours(libs[name])
    assert {k: mine.get(k) for k in theirs} == theirs
    assert set(mine) <= set(theirs) | {"ld-linux-x86-64.so.2"}


@pytest.mark.parametrize("name,expected_dir", [("runpath_only", "llp"), ("rpath_only", "rp"), ("rpath_runpath", "llp")])
def test_ld_library_path_sits_between_rpath_and_runpath(libs, name, expected_dir):
    llp = str(libs["which_llp"].parent)
    theirs = ldd(libs[name], env={"LD_LIBRARY_PATH": llp})
    mine = ours(libs[name], ld_library_path=llp)
    assert theirs["libwhich.so"] == mine["libwhich.so"] == os.path.realpath(libs[f"which_{expected_dir}"])


def test_rpath_is_ignored_when_runpath_exists(libs):
    res = deps(libs["rpath_runpath"], ld_library_path="")
    node = res.by_soname()["libwhich.so"]
    assert node.path.endswith("/ru/libwhich.so") and node.via.startswith("RUNPATH of libboth.so")


def test_runpath_is_not_inherited_but_rpath_is(libs):
    lost = deps(libs["top_runpath"], ld_library_path="").missing
    assert [(m.name, m.needed_by) for m in lost] == [("libleaf.so", "libmid.so")]
    assert any("ld.so.cache" in d for d in lost[0].searched_dirs)
    leaf = deps(libs["top_rpath"], ld_library_path="").by_soname()["libleaf.so"]
    assert leaf.via == "RPATH of libtop_rpath.so: $ORIGIN/d"


def test_missing_needed_names_the_directories_searched(libs):
    (lost,) = deps(libs["uses_ghost"], ld_library_path="").missing
    assert lost.name == "libghost.so"
    assert lost.searched_dirs[0] == f"{libs['uses_ghost'].parent}/nowhere (RUNPATH of libusesghost.so: $ORIGIN/nowhere)"
    assert "/lib/x86_64-linux-gnu (default directory)" in lost.searched_dirs


def test_wrong_class_candidate_is_skipped_like_ld_so(libs, lib32):
    path = f"{lib32.parent}:{libs['which_llp'].parent}"
    res = deps(libs["runpath_only"], ld_library_path=path)
    assert res.by_soname()["libwhich.so"].path == str(libs["which_llp"])
    skipped = [a for a in res.attempts[res.by_soname()["libwhich.so"].index] if a.outcome.startswith("skipped")]
    assert skipped and "ELF32" in skipped[0].outcome
    assert ldd(libs["runpath_only"], env={"LD_LIBRARY_PATH": path})["libwhich.so"] == os.path.realpath(libs["which_llp"])


def test_cycles_terminate_and_reuse_loaded_objects(libs, tmp_path, gcc):
    a, b = tmp_path / "liba.so", tmp_path / "libb.so"
    (tmp_path / "a.c").write_text("int b(void); int a(void){return b();}\n")
    (tmp_path / "b.c").write_text("int a(void); int b(void){return 2;} int c(void){return a();}\n")
    (tmp_path / "b0.c").write_text("int b(void){return 2;}\n")
    subprocess.run([gcc, "-shared", "-fPIC", "-o", b, tmp_path / "b0.c", "-Wl,-soname,libb.so"], check=True)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", a, tmp_path / "a.c", "-Wl,-soname,liba.so", f"-L{tmp_path}", "-lb",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN"], check=True)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", b, tmp_path / "b.c", "-Wl,-soname,libb.so", f"-L{tmp_path}", "-la",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN"], check=True)
    res = deps(a, ld_library_path="")
    assert [n.info.name for n in res.nodes][:2] == ["liba.so", "libb.so"]
    assert any(e.reused and e.name == "liba.so" for e in res.edges[1])


def test_ld_so_cache_equals_ldconfig_p():
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines()
    theirs = [(l.split(" (")[0].strip(), l.split(" => ")[1]) for l in out[1:] if " => " in l]
    cache = load_cache()
    assert [(e.soname, e.path) for e in cache.entries] == theirs
    assert cache.lookup("libc.so.6", 62, 64) and not cache.lookup("libc.so.6", 3, 32)


def test_old_format_cache_and_corrupt_cache():
    import struct

    strings = b"libx.so.1\0/opt/libx.so.1\0"
    old = b"ld.so-1.7.0\0" + struct.pack("<I", 1) + struct.pack("<iII", 0x0303, 0, 10) + strings
    cache = parse_cache(old, "old-cache")
    assert cache.layout == "old" and cache.lookup("libx.so.1", 62, 64)[0].path == "/opt/libx.so.1"
    with pytest.raises(ElfError, match="truncated loader cache"):
        parse_cache(b"glibc-ld.so.cache1.1" + struct.pack("<II", 1000, 0) + b"\0" * 24, "bad-cache")
    with pytest.raises(ElfError, match="not a glibc loader cache"):
        parse_cache(b"garbage" * 10, "bad-cache")


def test_real_libtorch_dependencies_resolve(torch_lib):
    for name in ("libtorch_cpu.so", "libtorch_python.so"):
        path = torch_lib / name
        res = deps(path, ld_library_path="")
        assert not res.missing
        assert res.by_soname()["libc10.so"].path == str(torch_lib / "libc10.so")
