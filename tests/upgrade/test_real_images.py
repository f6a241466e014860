"""The upgrade scan on images written by podman and skopeo themselves (tests/upgrade/_realimages.py),
in every format the two tools save: each must give the findings the unpacked roots give (podman's own
merge, `podman image mount`), and those must agree with ld.so run inside a chroot of the root."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rcompat.errors import ImageError, UsageError
from rcompat.upgrade_scan.image.source import open_source
from rcompat.upgrade_scan.scan import upgrade

REPO = Path(__file__).resolve().parents[2]
SHAPES = ("podman docker-archive", "podman oci-archive", "podman oci-dir",
          "podman docker-dir", "podman docker-dir --compress", "skopeo oci", "skopeo oci-archive",
          "skopeo docker-archive", "skopeo dir", "skopeo oci zstd", "symlinked blobs")
# The shapes whose layers are plain tar (skopeo's dir: copy of a docker-archive keeps them so, although its
# manifest says tar.gzip: rcompat goes by the bytes' magic).
UNCOMPRESSED = ("podman docker-archive", "podman docker-dir", "skopeo docker-archive", "skopeo dir")


@pytest.fixture(scope="session")
def real(tmp_path_factory, load_helper, gcc):
    helper = load_helper("upgrade_real_images", Path(__file__).with_name("_realimages.py"))
    top = tmp_path_factory.mktemp("podman")
    reason = helper.unusable_reason(top)
    if reason:
        pytest.skip(reason)
    yield helper, helper.build_images(top, gcc, REPO / "fixtures/elf")
    shutil.rmtree(helper.runroot_for(top), ignore_errors=True)


def _findings(report) -> list[tuple]:
    """What a scan concluded, less what names the inputs (UPGRADE-ROOTS' title)."""
    return [(f.id, f.status.value, f.message if f.id != "UPGRADE-ROOTS" else "") for f in report.findings]


@pytest.fixture(scope="session")
def from_directories(real):
    _helper, paths = real
    return _findings(upgrade(str(paths["old-dir"]), str(paths["new-dir"]), driver="580.65.06"))


def test_the_unpacked_roots_agree_with_the_loader_in_a_chroot(real, from_directories):
    helper, paths = real
    if os.geteuid() != 0:
        pytest.skip("chroot needs root; this run is uid %d" % os.geteuid())
    torch = helper.loader_list(paths["new-dir"], "/opt/torch/lib/libtorch_cpu.so")
    assert "libcudart.so.13 => not found" in torch, torch
    app = helper.loader_list(paths["new-dir"], "/usr/bin/app")
    assert "not found" not in app and "libleaf.so.1 => /opt/app/lib/libleaf.so.1" in app, app
    found = {i: (s, m) for i, s, m in from_directories}
    assert found["UPGRADE-NEWLY-NEEDED"][0] == "fail" and "libcudart.so.13" in found["UPGRADE-NEWLY-NEEDED"][1]
    assert found["UPGRADE-INTERP"][0] == "ok"
    # the COPY to /lib/x86_64-linux-gnu went through the lower layer's symlink, as podman merged it
    assert (paths["new-dir"] / "usr/lib/x86_64-linux-gnu/libextra.so.1").is_file()


@pytest.mark.parametrize("shape", SHAPES)
def test_every_saved_shape_gives_the_directories_findings(shape, real, from_directories):
    _helper, paths = real
    report = upgrade(str(paths["old-dir"]), str(paths[shape]), driver="580.65.06")  # the fast path: stand-ins
    assert _findings(report) == from_directories
    assert report.facts["inputs"]["NEW"]["objects"] == report.findings[0].evidence["new_objects"] > 0
    with open_source(str(paths[shape])) as src:
        assert (Path(src.root) / "usr/lib/x86_64-linux-gnu/libextra.so.1").read_bytes() == \
               (paths["new-dir"] / "usr/lib/x86_64-linux-gnu/libextra.so.1").read_bytes()
        if shape == "skopeo oci zstd":
            assert {layer["media_type"] for layer in src.layers} == {"application/vnd.oci.image.layer.v1.tar+zstd"}


@pytest.mark.parametrize("shape", SHAPES)
def test_the_fast_path_reads_every_shape_as_its_unpacked_root(shape, real):
    """What the scan reads through stand-ins (rcompat/standins.py: an uncompressed layer's ELF objects left
    in the image, not copied) is what podman's unpacked root holds: the same objects, byte for byte."""
    from rcompat.inputs import open_mapped
    from rcompat.upgrade_scan.inventory import inventory

    _helper, paths = real
    want = inventory(str(paths["new-dir"]))
    with open_source(str(paths[shape]), stand_ins=True) as src:
        got = inventory(src.root)
        assert sorted(got.objects) == sorted(want.objects)
        in_place = 0
        for inside, obj in got.objects.items():
            with open_mapped(obj.host) as fh:
                assert fh.read() == Path(want.objects[inside].host).read_bytes(), inside
            in_place += Path(obj.host).read_bytes()[:4] != b"\x7fELF"
        assert (in_place > 0) == (shape in UNCOMPRESSED), in_place  # objects left in place exactly there


def test_docker_dir_is_never_a_silent_pass(real, cli):
    _helper, paths = real
    proc = cli("upgrade", str(paths["old-dir"]), str(paths["podman docker-dir"]), "--driver", "580.65.06",
               "--strict", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    ids = {f["id"]: f["status"] for f in json.loads(proc.stdout)["findings"]}
    assert ids["UPGRADE-NEWLY-NEEDED"] == "fail" and ids["UPGRADE-ROOTS"] == "ok"


def test_a_damaged_dir_layout_is_exit_2_naming_the_whole_path(real, cli, tmp_path):
    import shutil

    _helper, paths = real
    broken = tmp_path / "deep" / "docker-dir"
    shutil.copytree(paths["podman docker-dir"], broken)
    (broken / "manifest.json").write_text("{not json")
    proc = cli("upgrade", str(paths["old-dir"]), str(broken), "--format", "json")
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert str(broken) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_podman_save_m_needs_a_tag_and_matches_as_docker_does(real):
    _helper, paths = real
    both = str(paths["podman save -m"])
    with pytest.raises(UsageError, match=r"holds 2 images: name one as .*both.tar@TAG \(tags: "
                                         r"localhost/old:latest; localhost/new:latest\)"):
        with open_source(both):
            pass
    for selector in ("new", "new:latest", "localhost/new", "localhost/new:latest"):
        with open_source(f"{both}@{selector}") as src:
            assert (Path(src.root) / "opt/torch/lib/libtorch_cpu.so").is_file(), selector
    with pytest.raises(ImageError, match="no image tagged 'docker.io/library/new'"):
        with open_source(f"{both}@docker.io/library/new"):  # another registry's image of that name
            pass


def test_a_layer_hiding_the_loader_fails_the_interpreter_check(real, load_helper, tmp_path):
    """A layer that puts a directory where the merged-/usr symlink lib64 was: podman merges it so (its own
    `image mount` shows it), every program loses /lib64/ld-linux-x86-64.so.2, and the scan says so."""
    helper, paths = real
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    upper = images.write_layer(tmp_path / "upper.tar", [images.directory("lib64/"),
                                                       images.file("lib64/README", b"not the loader\n")])
    saved = images.docker_save(tmp_path / "hidden.tar", [([paths["old-layer"], upper], {}, ["localhost/hidden:1"])])
    podman = helper.Podman(paths["top"])
    podman("load", "-q", "-i", str(saved))
    merged = Path(podman("image", "mount", "localhost/hidden:1"))
    assert (merged / "lib64").is_dir() and not (merged / "lib64").is_symlink()
    assert not (merged / "lib64/ld-linux-x86-64.so.2").exists()
    with open_source(str(saved)) as src:  # the symlink gone too (the empty directory is not materialised)
        assert not (Path(src.root) / "lib64").is_symlink()
        assert not (Path(src.root) / "lib64/ld-linux-x86-64.so.2").exists()
    found = {f.id: f for f in upgrade(str(paths["old-dir"]), str(saved), driver="580.65.06").findings}
    interp = found["UPGRADE-INTERP"]
    assert interp.status.value == "fail" and "/lib64/ld-linux-x86-64.so.2: not in the root" in interp.message
    assert "/usr/bin/app" in interp.message
    if os.geteuid() == 0:  # and the kernel agrees: the program cannot be started in a chroot of podman's merge
        with pytest.raises(FileNotFoundError):
            helper.loader_list(merged, "/usr/bin/app")


def test_a_layer_writing_through_the_lib_symlink_merges_as_podman_merges_it(real, load_helper, tmp_path):
    helper, paths = real
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    leaf = paths["old-dir"] / "opt/app/lib/libleaf.so.1"
    upper = images.write_layer(tmp_path / "upper.tar", [images.file("lib/x86_64-linux-gnu/libthrough.so.1", leaf)])
    saved = images.docker_save(tmp_path / "through.tar", [([paths["old-layer"], upper], {}, ["localhost/through:1"])])
    podman = helper.Podman(paths["top"])
    podman("load", "-q", "-i", str(saved))
    merged = Path(podman("image", "mount", "localhost/through:1"))
    with open_source(str(saved)) as src:
        root = Path(src.root)
        for tree in (merged, root):  # the symlink kept, the file landed in usr/lib beside libc
            assert os.readlink(tree / "lib") == "usr/lib", tree
            assert (tree / "usr/lib/x86_64-linux-gnu/libthrough.so.1").read_bytes() == leaf.read_bytes(), tree
            assert (tree / "usr/lib/x86_64-linux-gnu/libc.so.6").is_file(), tree


def test_a_loader_from_another_glibc_than_libc_fails_the_interpreter_check(real, gcc, tmp_path):
    import shutil
    import subprocess

    _helper, paths = real
    new = tmp_path / "new"
    shutil.copytree(paths["old-dir"], new, symlinks=True)
    loader = new / "usr/lib64/ld-linux-x86-64.so.2"
    loader.unlink()  # an ELF object of that soname defining none of the versions libc.so.6 takes from it
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(loader), str(REPO / "fixtures/elf/leaf.c"),
                    "-Wl,-soname,ld-linux-x86-64.so.2"], check=True, capture_output=True)
    found = {f.id: f for f in upgrade(str(paths["old-dir"]), str(new), driver="580.65.06").findings}
    assert found["UPGRADE-INTERP"].status.value == "fail", found["UPGRADE-INTERP"]
    assert "GLIBC_PRIVATE" in found["UPGRADE-INTERP"].message and "different glibc releases" in \
        found["UPGRADE-INTERP"].message
