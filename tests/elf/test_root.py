"""Resolving inside another root filesystem, against the real loader run in a real chroot.

The roots are assembled here from this machine's libc/libm/libstdc++/libgcc_s (hard-linked when on the
same filesystem) and libraries compiled from fixtures/elf; where the test runs as root, the real
ld.so of this machine is copied into the root and run there with os.chroot (LD_TRACE_LOADED_OBJECTS,
as ldd does), and the real /sbin/ldconfig -r writes the root's ld.so.cache.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.elf.errors import ElfError
from rcompat.elf.link.ldconf import derive_cache
from rcompat.elf.link.missing import missing
from rcompat.elf.link.resolve import VIA_CACHE, VIA_DERIVED_CACHE, deps
from rcompat.elf.link.root import Root
from rcompat.elf.link.verreq import versions

REPO = Path(__file__).resolve().parents[2]
SYSDIR = "/usr/lib/x86_64-linux-gnu"
HOST_LIBDIR = "/lib/x86_64-linux-gnu"
LOADER = "/lib64/ld-linux-x86-64.so.2"


@pytest.fixture(scope="session")
def rlibs(gcc, tmp_path_factory, libs, load_helper):
    """The compiled root fixtures, plus `hostside`: an absolute host directory the RPATH fixture names,
    holding libwhich.so #1 on the host (a root holds another copy at the same in-root path), and three
    of the session's fixtures/elf libraries (placed in roots by hard link or copy, never changed)."""
    build = load_helper("elf_root_build", REPO / "fixtures/elf/root/build.py")
    base = tmp_path_factory.mktemp("root-fixtures")
    hostside = base / "hostside"
    built = build.build_root_fixtures(base / "build", str(hostside))
    hostside.mkdir()
    shutil.copy(built["which1"], hostside / "libwhich.so")
    built["hostside"] = hostside
    built.update({k: v for k, v in libs.items() if k in ("core_v1", "core_v2", "user")})
    return built


def place(root: Path, inside: str, source) -> Path:
    dest = root / inside.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(os.path.realpath(source), dest)
    except OSError:
        shutil.copy2(source, dest)
    return dest


def link(root: Path, inside: str, target: str) -> None:
    dest = root / inside.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.symlink_to(target)


def base_root(tmp_path: Path) -> Path:
    """A merged-/usr root: /lib is an ABSOLUTE link to /usr/lib (re-rooted, never the host's /lib);
    this machine's loader in it, so it can run there chrooted."""
    root = tmp_path / "root"
    for name in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"):
        place(root, f"{SYSDIR}/{name}", f"{HOST_LIBDIR}/{name}")
    link(root, "/lib", "/usr/lib")
    place(root, f"{SYSDIR}/ld-linux-x86-64.so.2", LOADER)
    link(root, LOADER, f"{HOST_LIBDIR}/ld-linux-x86-64.so.2")  # as Debian has it: absolute, so re-rooted
    (root / "etc").mkdir()
    return root


def real_loader(root: Path, inside: str, env: dict | None = None) -> tuple[dict[str, str | None], str]:
    """What this machine's ld.so, run chrooted in `root`, loads for `inside`: {needed: in-root path
    or None}, and its stderr (version and symbol errors with LD_BIND_NOW/LD_WARN)."""
    if os.geteuid() != 0:
        pytest.skip("chroot needs root: the comparison with the real loader runs where the tests run as root")
    proc = subprocess.run([LOADER, inside], capture_output=True, text=True, timeout=60,
                          env={"LD_TRACE_LOADED_OBJECTS": "1", **(env or {})},
                          preexec_fn=lambda: (os.chroot(root), os.chdir("/")))
    found = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"\s*(\S+) => (not found|\S+)", line)
        if m:
            found[m.group(1)] = None if m.group(2) == "not found" else m.group(2)
    return found, proc.stderr


def ours(res) -> dict[str, str | None]:
    found = {n.requested: res.display(n.path) for n in res.nodes[res.preloaded + 1:]}
    found.update({m.name: None for m in res.missing})
    return found


def agrees(res, theirs: dict[str, str | None]) -> bool:
    """The same library found at the same in-root path (or not found) for every name ld.so lists;
    ld.so lists itself without `=>`, so our ld-linux-x86-64.so.2 has no partner there."""
    mine = ours(res)
    return set(theirs) <= set(mine) and set(mine) - set(theirs) <= {"ld-linux-x86-64.so.2"} \
        and all(mine[k] == v for k, v in theirs.items())


def test_paths_map_like_chroot(tmp_path):
    root = tmp_path / "r"
    (root / "usr/lib").mkdir(parents=True)
    link(root, "/lib", "/usr/lib")
    link(root, "/opt/up", "../../../../../../../../usr/lib")
    link(root, "/opt/loop/a", "b")
    link(root, "/opt/loop/b", "/opt/loop/a")
    r = Root(root)
    real = os.path.realpath(root)
    assert r.host("/lib/libx.so") == f"{real}/usr/lib/libx.so"  # absolute link re-rooted
    assert r.host("/opt/up/libx.so") == f"{real}/usr/lib/libx.so"  # ".." clamped at the root
    assert r.host("/../../etc/passwd") == f"{real}/etc/passwd"
    assert r.host("/opt/none/libz.so") == f"{real}/opt/none/libz.so"  # not there: where it would be
    assert r.inside(r.host("/lib/libx.so")) == "/usr/lib/libx.so" and r.inside(real) == "/"
    with pytest.raises(ElfError, match="too many levels of symbolic links"):
        r.host("/opt/loop/a/libx.so")
    assert not r.is_host and Root("/").is_host and Root("/").host("/lib/x") == "/lib/x"
    with pytest.raises(ElfError, match="does not exist"):
        Root(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ElfError, match="not a directory"):
        Root(tmp_path / "file")


def test_absolute_rpath_is_read_inside_the_root(tmp_path, rlibs):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/librp.so", rlibs["abs_rpath"])
    inroot = place(root, f"{rlibs['hostside']}/libwhich.so", rlibs["which2"])
    res = deps("/opt/app/lib/librp.so", root=root)
    node = res.by_soname()["libwhich.so"]
    assert os.path.samefile(node.path, inroot) and node.via == f"RPATH of librp.so: {rlibs['hostside']}"
    assert agrees(res, real_loader(root, "/opt/app/lib/librp.so")[0])
    host = deps(root / "opt/app/lib/librp.so", ld_library_path="").by_soname()["libwhich.so"]
    assert os.path.samefile(host.path, rlibs["hostside"] / "libwhich.so")  # without --root: the host's copy


def test_origin_is_the_in_root_directory_the_loader_was_found_in(tmp_path, rlibs):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/libor.so", rlibs["origin"])
    deps_copy = place(root, "/opt/app/deps/libwhich.so", rlibs["which2"])
    link(root, "/opt/current", "/opt/app")  # absolute: only inside the root does it lead anywhere
    res = deps("/opt/current/lib/libor.so", root=root)
    node = res.by_soname()["libwhich.so"]
    assert os.path.samefile(node.path, deps_copy) and node.via == "RUNPATH of libor.so: $ORIGIN/../deps"
    assert res.display(node.path) == "/opt/current/lib/../deps/libwhich.so"
    assert agrees(res, real_loader(root, "/opt/current/lib/libor.so")[0])


def test_absolute_library_symlink_and_escaping_symlink_stay_in_the_root(tmp_path, rlibs):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/libplain.so", rlibs["plain"])
    target = place(root, f"{SYSDIR}/libwhich.so.2", rlibs["which3"])
    link(root, "/opt/links/libwhich.so", f"{SYSDIR}/libwhich.so.2")
    res = deps("/opt/app/lib/libplain.so", ld_library_path="/opt/links", root=root)
    assert os.path.samefile(res.by_soname()["libwhich.so"].path, target)
    theirs, _ = real_loader(root, "/opt/app/lib/libplain.so", {"LD_LIBRARY_PATH": "/opt/links"})
    assert theirs["libwhich.so"] == ours(res)["libwhich.so"] == "/opt/links/libwhich.so"
    # A relative link climbing out: naively followed it reaches the host's hostside copy (#1).
    climb = "../" * (len(Path(os.path.realpath(root / "opt/esc")).parts) + 2)
    link(root, "/opt/esc/lib", climb + str(rlibs["hostside"]).lstrip("/"))
    clamped = place(root, f"{rlibs['hostside']}/libwhich.so", rlibs["which2"])
    res = deps("/opt/app/lib/libplain.so", ld_library_path="/opt/esc/lib", root=root)
    assert os.path.samefile(res.by_soname()["libwhich.so"].path, clamped)
    assert os.path.samefile(os.path.realpath(root / "opt/esc/lib/libwhich.so"), rlibs["hostside"] / "libwhich.so")
    theirs, _ = real_loader(root, "/opt/app/lib/libplain.so", {"LD_LIBRARY_PATH": "/opt/esc/lib"})
    assert theirs["libwhich.so"] == ours(res)["libwhich.so"]


def test_symlink_loop_is_skipped_in_a_search_and_an_error_for_the_library_itself(tmp_path, rlibs, cli):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/libplain.so", rlibs["plain"])
    place(root, f"{SYSDIR}/libwhich.so", rlibs["which3"])
    link(root, "/opt/loop/a", "b")
    link(root, "/opt/loop/b", "a")
    res = deps("/opt/app/lib/libplain.so", ld_library_path="/opt/loop/a", root=root)
    node = res.by_soname()["libwhich.so"]
    assert node.via == VIA_DERIVED_CACHE  # the root has no ld.so.cache: its system directories, derived
    assert "too many levels of symbolic links" in res.attempts[node.index][0].outcome
    proc = cli("elf", "deps", "--root", str(root), "/opt/loop/a/libplain.so")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "too many levels of symbolic links" in proc.stderr and "Traceback" not in proc.stderr


def _conf_root(tmp_path, rlibs) -> Path:
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/libusesvendor.so", rlibs["uses_vendor"])
    place(root, "/opt/vendor/lib/libvendor.so.1.2.3", rlibs["vendor"])
    link(root, "/opt/vendor/lib/libvendor.so.1", "libvendor.so.1.2.3")
    place(root, "/opt/more/lib/libwhich.so", rlibs["which2"])
    place(root, "/opt/vendor/lib/libwhich.so", rlibs["which1"])
    place(root, f"{SYSDIR}/libwhich.so", rlibs["which3"])
    (root / "etc/ld.so.conf").write_text("# comment\ninclude /etc/ld.so.conf.d/*.conf\n")
    conf_d = root / "etc/ld.so.conf.d"
    (conf_d / "extra").mkdir(parents=True)
    (conf_d / "a-more.conf").write_text("include extra/*.conf\n")  # relative: from the including file's dir
    (conf_d / "extra/more.conf").write_text("/opt/more/lib\n")
    (conf_d / "b-vendor.conf").write_text("/opt/vendor/lib  # trailing comment\n")
    return root


def test_derived_cache_equals_real_ldconfig_and_both_resolve_alike(tmp_path, rlibs):
    root = _conf_root(tmp_path, rlibs)
    derived = Root(root).ld_cache()
    assert derived.layout == "derived"
    res = deps("/opt/app/lib/libusesvendor.so", root=root)
    assert res.ld_cache == "derived from /etc/ld.so.conf"
    found = ours(res)
    assert found["libwhich.so"] == "/opt/more/lib/libwhich.so"
    assert found["libvendor.so.1"] == "/opt/vendor/lib/libvendor.so.1"
    assert res.by_soname()["libvendor.so.1"].via == VIA_DERIVED_CACHE
    if os.geteuid() != 0:
        pytest.skip("ldconfig -r chroots: needs root")
    subprocess.run(["/sbin/ldconfig", "-X", "-r", str(root)], check=True, capture_output=True)
    real = Root(root).ld_cache()
    assert real.layout == "new"
    assert sorted((e.soname, e.path, e.flags) for e in derived.entries) == \
        sorted((e.soname, e.path, e.flags) for e in real.entries)
    for soname in {e.soname for e in real.entries}:
        assert [e.path for e in derived.lookup(soname, 62, 64)] == [e.path for e in real.lookup(soname, 62, 64)]
    with_file = deps("/opt/app/lib/libusesvendor.so", root=root)
    assert ours(with_file) == found and with_file.by_soname()["libvendor.so.1"].via == VIA_CACHE
    assert agrees(with_file, real_loader(root, "/opt/app/lib/libusesvendor.so")[0])


def test_this_environments_ld_library_path_is_not_used_in_a_root(tmp_path, rlibs, monkeypatch):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/libplain.so", rlibs["plain"])
    in_root_copy = place(root, f"{rlibs['hostside']}/libwhich.so", rlibs["which2"])
    default = place(root, f"{SYSDIR}/libwhich.so", rlibs["which3"])
    monkeypatch.setenv("LD_LIBRARY_PATH", str(rlibs["hostside"]))
    assert os.path.samefile(deps("/opt/app/lib/libplain.so", root=root).by_soname()["libwhich.so"].path, default)
    given = deps("/opt/app/lib/libplain.so", root=root, ld_library_path=str(rlibs["hostside"]))
    assert os.path.samefile(given.by_soname()["libwhich.so"].path, in_root_copy)
    host = deps(root / "opt/app/lib/libplain.so").by_soname()["libwhich.so"]
    assert os.path.samefile(host.path, rlibs["hostside"] / "libwhich.so")


def test_missing_names_the_provider_found_elsewhere_in_the_root(tmp_path, rlibs, cli):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/libneedsb.so", rlibs["needs_b"])
    place(root, f"{SYSDIR}/libprov.so", rlibs["provider"])
    place(root, "/usr/local/cuda-99.0/lib64/libprov.so", rlibs["provider_full"])
    link(root, "/usr/local/cuda", "/usr/local/cuda-99.0")
    rep = missing("/opt/app/lib/libneedsb.so", root=root)
    (lost,) = rep.missing
    assert lost.loader_message() == "/opt/app/lib/libneedsb.so: undefined symbol: prov_b"
    assert lost.explanation() == ("prov_b is provided by libprov.so in /usr/local/cuda/lib64, "
                                  "which is not on the search path")
    real = os.path.realpath(root)
    assert lost.elsewhere and all(e.path.startswith(real + "/") for e in lost.elsewhere)
    _, stderr = real_loader(root, "/opt/app/lib/libneedsb.so", {"LD_BIND_NOW": "yes", "LD_WARN": "yes"})
    assert "undefined symbol: prov_b\t(/opt/app/lib/libneedsb.so)" in stderr
    proc = cli("elf", "missing", "--root", str(root), "-f", "json", "/opt/app/lib/libneedsb.so")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["root"] == "/opt/app/lib/libneedsb.so"
    assert data["missing_symbols"][0]["elsewhere"] == ["/usr/local/cuda/lib64/libprov.so"]


def test_versions_with_a_libstdcxx_too_old_in_the_root(tmp_path, rlibs, cli):
    root = base_root(tmp_path)
    os.unlink(root / SYSDIR.lstrip("/") / "libstdc++.so.6")
    place(root, f"{SYSDIR}/libstdc++.so.6", rlibs["cxx_old"])
    newer = place(root, "/opt/conda/lib/libstdc++.so.6", rlibs["cxx_new"])
    place(root, "/opt/app/lib/libneedscxx.so", rlibs["needs_cxx"])
    rep = versions("/opt/app/lib/libneedscxx.so", root=root)
    (unmet,) = rep.unmet
    _, stderr = real_loader(root, "/opt/app/lib/libneedscxx.so", {"LD_BIND_NOW": "yes"})
    assert unmet.loader_message() in stderr  # ld.so's own text, in-root paths included
    (family,) = [f for f in rep.families if f.family == "GLIBCXX"]
    assert not family.satisfied and family.newest_provided == "GLIBCXX_3.4.19"
    assert [os.path.realpath(a) for a in family.alternatives] == [os.path.realpath(newer)]  # not the host's libstdc++
    assert versions(root / "opt/app/lib/libneedscxx.so", ld_library_path="").ok  # the host's one has 3.4.30
    proc = cli("elf", "versions", "--root", str(root), "/opt/app/lib/libneedscxx.so")
    assert proc.returncode == 1 and "would satisfy: /opt/conda/lib/libstdc++.so.6" in proc.stdout
    assert str(root) not in proc.stdout


def test_cli_deps_and_coload_with_root(tmp_path, rlibs, cli):
    root = base_root(tmp_path)
    place(root, "/opt/app/lib/librp.so", rlibs["abs_rpath"])
    place(root, f"{rlibs['hostside']}/libwhich.so", rlibs["which2"])
    ok = cli("elf", "deps", "--root", str(root), "/opt/app/lib/librp.so")
    assert ok.returncode == 0 and f"libwhich.so => {rlibs['hostside']}/libwhich.so [RPATH" in ok.stdout
    os.unlink(root / str(rlibs["hostside"]).lstrip("/") / "libwhich.so")
    lost = cli("elf", "deps", "--root", str(root), "-f", "json", "/opt/app/lib/librp.so")
    data = json.loads(lost.stdout)
    assert lost.returncode == 1 and data["root_fs"] == os.path.realpath(root)
    assert f"{rlibs['hostside']} (RPATH of librp.so: {rlibs['hostside']})" in data["missing"][0]["searched"]
    assert f"{SYSDIR} (default directory)" in data["missing"][0]["searched"]
    bad = cli("elf", "deps", "--root", str(tmp_path / "nope"), "/opt/app/lib/librp.so")
    assert bad.returncode == 2 and "root directory does not exist" in bad.stderr
    for inside, name in (("/opt/v1/libcore.so", "core_v1"), ("/opt/v2/libcore.so", "core_v2"),
                         ("/opt/user/libuser.so", "user")):
        place(root, inside, rlibs[name])
    proc = cli("elf", "coload", "--root", str(root), "/opt/v1/libcore.so", "--", "/opt/user/libuser.so")
    assert proc.returncode == 1
    assert "error: /opt/user/libuser.so: undefined symbol: core_new_feature" in proc.stdout
    assert "reused: libcore.so => /opt/v1/libcore.so" in proc.stdout and str(root) not in proc.stdout
    as_json = cli("elf", "coload", "--root", str(root), "-f", "json", "/opt/v1/libcore.so", "--",
                  "/opt/user/libuser.so")
    data = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and data["failures"][0]["object"] == "/opt/user/libuser.so"
    assert data["reverse"]["ok"] and os.path.realpath(root) not in as_json.stdout
    assert "inside DIR as if chrooted there" in cli("elf", "deps", "--help").stdout


def test_torch_wheel_in_a_root_resolves_like_the_real_loader(tmp_path, torch_lib):
    root = base_root(tmp_path)
    for name in ("libpthread.so.0", "librt.so.1", "libdl.so.2"):
        place(root, f"{SYSDIR}/{name}", f"{HOST_LIBDIR}/{name}")
    for lib in torch_lib.glob("*.so*"):
        if lib.is_file():
            place(root, f"/opt/torch/lib/{lib.name}", lib)
    res = deps("/opt/torch/lib/libtorch_python.so", root=root)
    assert not res.missing and res.ld_cache == "derived from /etc/ld.so.conf" and len(res.nodes) > 10
    assert res.by_soname()["libgomp.so.1"].via == "RUNPATH of libshm.so: $ORIGIN"
    assert agrees(res, real_loader(root, "/opt/torch/lib/libtorch_python.so")[0])
    assert versions("/opt/torch/lib/libtorch_python.so", root=root).ok


def test_host_root_gives_the_same_results_as_no_root(torch_lib):
    import sys

    lib = torch_lib / "libtorch_python.so"
    assert deps(lib).to_dict() == deps(lib, root="/").to_dict()
    assert deps(lib).tree_lines() == deps(lib, root=Root("/")).tree_lines()
    host = [os.path.realpath(sys.executable)]
    plain, rooted = missing(lib, host=host), missing(lib, host=host, root="/")
    assert plain.to_dict() == rooted.to_dict() and plain.to_dict()["bound"] > 1000
    assert versions(lib).to_dict() == versions(lib, root="/").to_dict()


def test_derived_cache_reads_sonames_like_the_elf_reader(rlibs):
    """The fast program-header read of derive_cache agrees with the full reader on real libraries."""
    from rcompat.elf.link.ldconf import soname_and_kind
    from rcompat.elf.read.objinfo import read_object

    paths = [rlibs["vendor"], rlibs["which1"], *sorted(Path(HOST_LIBDIR).glob("lib*.so.*"))[:150]]
    checked = 0
    for path in paths:
        if path.is_symlink() or not path.is_file():
            continue
        fast = soname_and_kind(str(path))
        try:
            info = read_object(str(path))
        except ElfError:
            assert fast is None
            continue
        if info.e_type == 3:
            assert fast == (info.soname or "", info.e_machine, info.bits), path
            checked += 1
    assert checked > 50


def test_this_machines_ld_so_conf_derives_its_own_ld_so_cache():
    """The host as a root: the cache derived from /etc/ld.so.conf equals the one ldconfig wrote."""
    from rcompat.elf.link.ldcache import load_cache
    from rcompat.elf.link.ldconf import conf_dirs

    host = Root("/")
    written = os.stat("/etc/ld.so.cache").st_mtime
    stale = [d for d in conf_dirs(host) if os.path.isdir(d) and os.stat(d).st_mtime > written]
    if stale:
        pytest.skip(f"/etc/ld.so.cache is older than {stale[0]}: ldconfig has not run since it changed")
    derived, real = derive_cache(host), load_cache()
    assert len(real) > 100
    assert sorted((e.soname, e.path, e.flags) for e in derived.entries) == \
        sorted((e.soname, e.path, e.flags) for e in real.entries)
    for soname in {e.soname for e in real.entries}:
        assert [e.path for e in derived.lookup(soname, 62, 64)] == [e.path for e in real.lookup(soname, 62, 64)]
