"""How a library was built, read with pyelftools (rcompat.elf.read.build), and the C++ string ABI
mismatch it shows in `elf deps`, the doctor and the upgrade scan. The libraries are compiled here with
g++ from fixtures/elf/greet*.cpp, once per libstdc++ string ABI (-D_GLIBCXX_USE_CXX11_ABI=0 / 1)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.elf.read.build import build_facts, string_abi
from rcompat.elf.read.reader import ElfImage

LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBSTDCXX = "/lib/x86_64-linux-gnu/libstdc++.so.6"


@pytest.fixture(scope="module")
def greet(elf_build, tmp_path_factory) -> dict[str, Path]:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not installed (make test installs it with build-essential)")
    return elf_build.build_cxx_abi(tmp_path_factory.mktemp("cxxabi"), gxx)


def test_each_build_reads_as_the_string_abi_it_was_compiled_for(greet):
    old, new, user = (build_facts(greet[k]) for k in ("greet_old", "greet_cxx11", "user"))
    assert (old.cxx_abi, new.cxx_abi, user.cxx_abi) == ("old", "cxx11", "cxx11")
    assert "_Z8greetingRKSs" in old.cxx_abi_evidence["old"]  # greeting(std::string const&), old mangling
    assert any("B5cxx11" in n for n in user.cxx_abi_evidence["cxx11"])  # greet_world[abi:cxx11]()
    assert "old" not in new.cxx_abi_evidence and "cxx11" not in old.cxx_abi_evidence


def test_toolchain_producer_and_build_id_match_what_built_them(greet):
    gxx_version = subprocess.run(["g++", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    facts = build_facts(greet["greet_old"])
    assert facts.compiler.startswith("GCC:") and gxx_version in facts.compiler
    assert facts.producers and all(p.startswith("GNU C++") and " -g" in p for p in facts.producers)
    assert build_facts(greet["user"]).producers == ()  # built without -g: no DWARF, no producer
    with ElfImage(greet["greet_old"]) as image:  # the hand-written reader, an independent oracle
        assert facts.build_id == image.build_id and re.fullmatch(r"[0-9a-f]{40}", facts.build_id)


def test_the_c_library_carries_its_abi_tag_and_libstdcxx_both_abis():
    notes = subprocess.run(["readelf", "-n", LIBC], capture_output=True, text=True).stdout
    tag = re.search(r"OS: Linux, ABI: (\d+\.\d+\.\d+)", notes)
    assert tag, "readelf shows no NT_GNU_ABI_TAG in libc"
    assert build_facts(LIBC).abi_tag == f"Linux {tag.group(1)}"
    assert build_facts(LIBC).cxx_abi == "none"
    assert build_facts(LIBSTDCXX).cxx_abi == "both"


def test_old_abi_is_decided_by_demangling_not_by_the_letters_ss():
    # `GetSsid` holds "Ss" inside an identifier: no std::string there
    assert string_abi(b"\0_ZN3Foo7GetSsidEv\0_Z3barv\0") == ("none", {})
    assert string_abi(b"\0_Z3fooRKSs\0")[0] == "old"


def test_elf_deps_shows_the_mismatch_and_fails(greet, cli):
    r = cli("elf", "deps", str(greet["user"]), "--format", "json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["cxx_abi_mismatches"] == [{"library": str(greet["user"]), "library_abi": "cxx11",
                                          "dependency": str(greet["greet_old"]), "dependency_abi": "old"}]
    by_name = {e["name"]: e["build"] for e in out["load_order"]}
    assert by_name["libgreet.so"]["cxx_abi"] == "old" and by_name["libstdc++.so.6"]["cxx_abi"] == "both"
    text = cli("elf", "deps", str(greet["user"]))
    assert text.returncode == 1 and "C++ ABI MISMATCH" in text.stdout and "built with:" in text.stdout


def test_elf_deps_is_clean_when_the_matching_build_is_found_first(greet, cli):
    r = cli("elf", "deps", str(greet["user"]), "--ld-library-path", str(greet["greet_cxx11"].parent), "--format", "json")
    assert r.returncode == 0, r.stdout
    assert json.loads(r.stdout)["cxx_abi_mismatches"] == []


def test_the_doctor_reports_the_string_abi_of_the_real_torch(cli, torch_lib):
    r = cli("doctor", "--only", "elf", "--format", "json")
    found = [f for f in json.loads(r.stdout)["findings"] if f["id"] == "ELF-CXX-ABI"]
    assert len(found) == 1 and found[0]["status"] == "ok", found
    libs = found[0]["evidence"]["libraries"]
    assert libs[str(torch_lib / "libtorch_cpu.so")]["cxx_abi"] == "cxx11"  # torch >= 2.x wheels: C++11 ABI
    assert libs[str(torch_lib / "libtorch_cpu.so")]["toolchain"]


def _root(base: Path, greet_lib: Path, user: Path) -> Path:
    (base / "usr/lib/dep").mkdir(parents=True)
    shutil.copy(greet_lib, base / "usr/lib/dep/libgreet.so")
    shutil.copy(user, base / "usr/lib/libgreetuser.so")
    return base


def test_the_upgrade_scan_names_an_object_that_would_meet_the_other_abi(greet, tmp_path, elf_build, gcc):
    import rcompat

    # libgreetuser.so's RUNPATH is $ORIGIN/old: lay the roots out so that it finds dep/ the same way
    user = tmp_path / "user/libgreetuser.so"
    user.parent.mkdir()
    subprocess.run(["g++", "-shared", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1", "-o", str(user),
                    str(Path(elf_build.SRC) / "greet_user.cpp"), f"-L{greet['greet_cxx11'].parent}", "-lgreet",
                    "-Wl,--enable-new-dtags,-rpath,$ORIGIN/dep"], check=True)
    old = _root(tmp_path / "old", greet["greet_cxx11"], user)
    new = _root(tmp_path / "new", greet["greet_old"], user)
    same = _root(tmp_path / "same", greet["greet_cxx11"], user)
    report = rcompat.upgrade(str(old), str(new))
    found = [f for f in report.findings if f.id == "UPGRADE-CXX-ABI"]
    assert len(found) == 1 and found[0].status.value == "fail"
    assert found[0].evidence["mismatches"] == [{"library": "/usr/lib/libgreetuser.so", "library_abi": "cxx11",
                                                "dependency": "/usr/lib/dep/libgreet.so", "dependency_abi": "old"}]
    assert not [f for f in rcompat.upgrade(str(old), str(same)).findings if f.id == "UPGRADE-CXX-ABI"]
