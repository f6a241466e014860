"""rcompat.upgrade_scan.image.source: images built here with tarfile in the real docker-save and OCI layouts, holding
ELF objects compiled here with gcc; merged roots asserted entry by entry; hostile inputs refused with one
line and nothing written outside the target."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import platform
import random
import tarfile
from pathlib import Path

import pytest

from rcompat.errors import ImageError, UsageError
from rcompat.progress import Progress
from rcompat.upgrade_scan.image.source import HOST_ENV, is_image, open_source

ENV = {"PATH": "/opt/conda/bin:/usr/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64", "CUDA_HOME": "/usr/local/cuda"}
METADATA = {  # path in the image -> content: files the scan reads although they are not ELF
    "etc/os-release": b'ID=debian\nVERSION_ID="12"\n',
    "etc/ld.so.conf.d/cuda.conf": b"/usr/local/cuda/lib64\n",
    "usr/lib/python3/dist-packages/torch-2.4.0.dist-info/METADATA": b"Name: torch\nVersion: 2.4.0\n",
    "usr/lib/python3/dist-packages/torch/version.py": b"__version__ = '2.4.0'\ncuda = '12.4'\n",
    "usr/local/lib/R/site-library/torch/DESCRIPTION": b"Package: torch\nVersion: 0.14.0\n",
    "usr/local/cuda-12.4/version.json": b'{"cuda": {"version": "12.4.1"}}',
    "usr/include/cudnn_version.h": b"#define CUDNN_MAJOR 9\n",
}


def base_layer(images, objs) -> list:
    i = images
    return [i.directory("usr/"), i.directory("usr/lib/"),
            i.file("usr/lib/libleaf.so.1.0", objs["leaf"], 0o755),
            i.symlink("usr/lib/libleaf.so.1", "libleaf.so.1.0"), i.symlink("usr/lib/libleaf.so", "libleaf.so.1"),
            i.hardlink("usr/lib/libleaf-copy.so", "usr/lib/libleaf.so.1.0"),
            i.file("usr/lib/libgone.so", objs["leaf"]), i.file("usr/lib/leaf.o", objs["obj"]),
            i.directory("opt/app/"), i.file("opt/app/old.so", objs["leaf"]), i.file("opt/app/sub/deep.so", objs["leaf"]),
            i.file("usr/share/doc/big.txt", b"bulk\n" * 20000), i.fifo("run/initctl"), i.directory("var/cache/"),
            *[i.file(path, data) for path, data in METADATA.items()]]


def upper_layer(images, objs) -> list:
    i = images
    return [i.whiteout("usr/lib/libgone.so"),
            i.directory("opt/app/"), i.file("opt/app/kept-by-order.so", objs["mid"]), i.opaque("opt/app"),
            i.file("opt/app/new.so", objs["mid"]), i.file("usr/lib/libmid.so", objs["mid"])]


# The merged root: libgone.so whited out, opt/app holds only the upper layer's files (the opaque marker
# after kept-by-order.so still spares it), big.txt, leaf.o and the FIFO not materialised, nor the empty
# directory var/cache.
EXPECTED = {
    "usr", "usr/lib", "usr/lib/libleaf.so.1.0", "usr/lib/libleaf.so.1", "usr/lib/libleaf.so",
    "usr/lib/libleaf-copy.so", "usr/lib/libmid.so", "opt", "opt/app", "opt/app/new.so", "opt/app/kept-by-order.so",
    "etc", "etc/ld.so.conf.d", "usr/lib/python3", "usr/lib/python3/dist-packages",
    "usr/lib/python3/dist-packages/torch-2.4.0.dist-info", "usr/lib/python3/dist-packages/torch",
    "usr/local", "usr/local/lib", "usr/local/lib/R", "usr/local/lib/R/site-library",
    "usr/local/lib/R/site-library/torch", "usr/local/cuda-12.4", "usr/include", *METADATA,
}


def tree(root: "str | Path") -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def build(kind: str, tmp: Path, images, objs) -> Path:
    if kind == "docker-archive":
        layers = [images.write_layer(tmp / "l1.tar", base_layer(images, objs)),
                  images.write_layer(tmp / "l2.tar", upper_layer(images, objs))]
        return images.docker_save(tmp / "img.tar", [(layers, ENV, ["demo:1"])])
    if kind == "docker25":
        layers = [images.write_layer(tmp / "l1.tar", base_layer(images, objs)),
                  images.write_layer(tmp / "l2.tar", upper_layer(images, objs))]
        return images.docker25_save(tmp / "img25.tar", layers, ENV, "demo:1")
    layers = [images.write_layer(tmp / "l1.tar.gz", base_layer(images, objs), compress=True),
              images.write_layer(tmp / "l2.tar.gz", upper_layer(images, objs), compress=True)]
    layout = images.oci_layout(tmp / "oci", layers, ENV, "1")
    return layout if kind == "oci-layout" else images.tar_of(layout, tmp / "oci.tar")


@pytest.mark.parametrize("form", ["docker-archive", "docker25", "oci-layout", "oci-archive"])
def test_layers_merge_into_exactly_what_the_scan_reads(form, tmp_path, images, objs):
    spec = build(form, tmp_path, images, objs)
    assert is_image(str(spec))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    stream = io.StringIO()
    with Progress(stream=stream, enabled=True) as progress:
        with open_source(str(spec), progress=progress, tmpdir=str(scratch)) as src:
            root = Path(src.root)
            assert tree(root) == EXPECTED
            assert (root / "usr/lib/libleaf.so.1.0").read_bytes() == objs["leaf"].read_bytes()
            assert (root / "opt/app/new.so").read_bytes() == objs["mid"].read_bytes()
            assert os.readlink(root / "usr/lib/libleaf.so") == "libleaf.so.1"
            assert (root / "usr/lib/libleaf.so").resolve() == (root / "usr/lib/libleaf.so.1.0").resolve()
            assert (root / "usr/lib/libleaf-copy.so").stat().st_ino == (root / "usr/lib/libleaf.so.1.0").stat().st_ino
            for path, data in METADATA.items():
                assert (root / path).read_bytes() == data
            assert src.env == ENV
            docker = form.startswith("docker")
            assert src.kind == ("docker-archive" if docker else "oci-layout")
            assert src.label == f"{spec.name} ({'demo:1' if docker else '1'})"
            assert [(layer["members"], layer["taken"]) for layer in src.layers] == [
                (len(base_layer(images, objs)), 7 + len(METADATA)), (6, 3)]
            assert any("2 files" in note and "not materialised" in note for note in src.notes), src.notes
            assert any("run/initctl" in note for note in src.notes), src.notes
    assert "layer 2/2" in stream.getvalue()
    assert not root.exists() and list(scratch.iterdir()) == []


def test_extract_materialises_everything_and_keeps_it(tmp_path, images, objs):
    spec = build("docker-archive", tmp_path, images, objs)
    target = tmp_path / "rootfs"
    with open_source(str(spec), extract=str(target)) as src:
        assert src.root == str(target)
    extra = {"usr/share", "usr/share/doc", "usr/share/doc/big.txt", "usr/lib/leaf.o", "var", "var/cache"}
    assert tree(target) == EXPECTED | extra
    assert (target / "usr/share/doc/big.txt").read_bytes() == b"bulk\n" * 20000
    (target / "keep").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        with open_source(str(spec), extract=str(target)):
            pass
    assert tree(target) == EXPECTED | extra | {"keep"}


def test_several_images_in_one_tarball(tmp_path, images, objs):
    one = images.write_layer(tmp_path / "a.tar", [images.file("usr/lib/liba.so", objs["leaf"])])
    two = images.write_layer(tmp_path / "b.tar", [images.file("usr/lib/libb.so", objs["mid"])])
    spec = images.docker_save(tmp_path / "two.tar", [([one], {"V": "1"}, ["demo:1"]), ([two], {"V": "2"}, ["demo:2"])])
    with pytest.raises(UsageError, match=r"two.tar holds 2 images: name one as .*two.tar@TAG \(tags: "
                                         r"demo:1; demo:2\)"):
        with open_source(str(spec)):
            pass
    with open_source(f"{spec}@demo:2") as src:
        assert tree(src.root) == {"usr", "usr/lib", "usr/lib/libb.so"} and src.label == "two.tar (demo:2)"
    with open_source(f"{spec}@docker.io/library/demo:1") as src:  # Docker's normalised spelling
        assert tree(src.root) == {"usr", "usr/lib", "usr/lib/liba.so"} and src.env == {"V": "1"}
    with pytest.raises(ImageError, match="no image tagged 'demo:3'; its tags: demo:1; demo:2"):
        with open_source(f"{spec}@demo:3"):
            pass


def test_directory_and_host_are_read_in_place(tmp_path):
    (tmp_path / "usr/lib").mkdir(parents=True)
    assert not is_image(str(tmp_path)) and not is_image("/")
    with open_source(str(tmp_path)) as src:
        assert (src.root, src.kind, src.env, src.layers) == (str(tmp_path), "directory", {}, [])
    assert (tmp_path / "usr/lib").is_dir()  # used in place: nothing removed afterwards
    with open_source("/") as src:
        assert (src.root, src.kind) == ("/", "host")
        assert src.env == {k: os.environ[k] for k in HOST_ENV if k in os.environ} and "PATH" in src.env
    with pytest.raises(UsageError, match="applies to images only"):
        with open_source(str(tmp_path), extract=str(tmp_path / "x")):
            pass
    with pytest.raises(ImageError, match="no such file or directory"):
        with open_source(str(tmp_path / "absent.tar")):
            pass


def test_interrupt_removes_the_temporary_root(tmp_path, images, objs):
    spec = build("docker-archive", tmp_path, images, objs)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    class Interrupting(Progress):
        def note(self, what: str) -> None:
            if "layer 2/2" in what:
                # layer 1 is merged into the root; the layers' kept files wait in a staging directory beside it
                assert sorted(p.name.split("-")[1] for p in scratch.iterdir()) == ["layers", "root"]
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with open_source(str(spec), progress=Interrupting(enabled=False), tmpdir=str(scratch)):
            pass
    assert list(scratch.iterdir()) == []


# -- hostile and broken inputs ---------------------------------------------------------------------
def _rewrite_manifest(src: Path, out: Path, change) -> Path:
    with tarfile.open(src) as old, tarfile.open(out, "w") as new:
        for member in old.getmembers():
            data = old.extractfile(member).read() if member.isreg() else None
            if member.name == "manifest.json":
                data = json.dumps(change(json.loads(data))).encode()
                member.size = len(data)
            new.addfile(member, io.BytesIO(data) if data is not None else None)
    return out


def _hostile(case: str, tmp: Path, images, objs) -> Path:
    i, elf, outside = images, objs["leaf"], tmp / "outside"
    one = lambda entries: i.docker_save(tmp / "bad.tar", [([i.write_layer(tmp / "bad-layer.tar", entries)], ENV, ["bad:1"])])
    if case == "dotdot":
        return one([i.file("usr/lib/ok.so", elf), i.file("../../etc/passwd", elf)])
    if case == "absolute":
        return one([i.file(f"{outside}/abs.so", elf)])
    if case == "symlink-loop":
        return one([i.symlink("a", "b"), i.symlink("b", "a"), i.file("a/x.so", elf)])
    if case == "hardlink":
        return one([i.hardlink("usr/lib/x.so", "../../outside/secret")])
    if case == "whiteout-dotdot":
        return one([i.file("usr/.wh...", b"")])
    good = build("docker-archive", tmp, images, objs)
    if case == "truncated":
        data = good.read_bytes()
        return _write(tmp / "cut.tar", data[: len(data) // 2])
    if case == "random":
        return _write(tmp / "random.tar", random.Random(13).randbytes(300_000))
    if case == "not-image":
        with tarfile.open(tmp / "plain.tar", "w") as tar:
            tar.add(str(objs["leaf"]), arcname="libleaf.so")
        return tmp / "plain.tar"
    if case == "gzip-outer":
        return _write(tmp / "img.tar.gz", gzip.compress(good.read_bytes()))
    if case == "missing-layer":
        return _rewrite_manifest(good, tmp / "missing.tar",
                                 lambda m: [{**m[0], "Layers": m[0]["Layers"] + ["0123abcd/layer.tar"]}])
    if case == "corrupt-gzip":
        layout = build("oci-layout", tmp, images, objs)
        manifest_blob = json.loads((layout / "index.json").read_text())["manifests"][0]["digest"].split(":")[1]
        layer = json.loads((layout / "blobs/sha256" / manifest_blob).read_text())["layers"][0]["digest"].split(":")[1]
        blob = bytearray((layout / "blobs/sha256" / layer).read_bytes())
        middle = len(blob) // 2
        blob[middle:middle + 64] = random.Random(7).randbytes(64)
        (layout / "blobs/sha256" / layer).write_bytes(bytes(blob))
        return layout
    if case == "zstd-layer":
        return _replace_layer(tmp, images, b"\x28\xb5\x2f\xfd" + bytes(600))
    raise AssertionError(case)


def _snapshot(top: Path) -> dict[str, int]:
    """Every path under `top` but scratch/ (where the target goes), with its mtime: a write shows."""
    return {p: (top / p).lstat().st_mtime_ns for p in tree(top) if p.split(os.sep)[0] != "scratch"}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _replace_layer(tmp: Path, images, data: bytes) -> Path:
    layer = _write(tmp / "odd-layer.tar", data)
    return images.docker_save(tmp / "odd.tar", [([layer], ENV, ["odd:1"])])


HOSTILE = {
    "dotdot": "'../../etc/passwd' climbs out of the root",
    "absolute": "has an absolute path",
    "hardlink": "hard link target '../../outside/secret' climbs out",
    "whiteout-dotdot": "whiteout 'usr/.wh...' names no entry",
    "truncated": "truncated",
    "random": "truncated or not a tar archive",
    "not-image": "not an image: no manifest.json",
    "gzip-outer": "gzip-compressed: decompress it first",
    "missing-layer": "names '0123abcd/layer.tar', which the tarball does not contain",
    "corrupt-gzip": "(1): layer 1/2 (blobs/sha256/",
    "zstd-layer": "truncated or corrupt",
    "symlink-loop": "one of more than 40 symlinks in a row",
}


@pytest.mark.parametrize("extract", [False, True], ids=["temporary", "extract"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_input_is_one_line_and_writes_nothing_outside(case, extract, tmp_path, images, objs):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("keep me")
    spec = _hostile(case, tmp_path, images, objs)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    target = scratch / "out" / "new"  # its parent made too, and removed with it
    before = _snapshot(tmp_path)
    with pytest.raises(ImageError) as caught:
        with open_source(str(spec), tmpdir=str(scratch), extract=str(target) if extract else None):
            pass
    message = str(caught.value)
    assert HOSTILE[case] in message and "\n" not in message, message
    if case == "corrupt-gzip":
        assert "truncated or corrupt" in message, message
    assert list(scratch.iterdir()) == []  # the temporary root, or the --extract directory made for it, gone
    assert _snapshot(tmp_path) == before
    assert sorted(os.listdir(outside)) == ["secret"] and (outside / "secret").read_text() == "keep me"


def test_the_hostile_cases_reach_the_merge(tmp_path, images, objs):
    """The member-level cases fail while merging, not earlier: the image itself is well formed."""
    for case in ("dotdot", "absolute", "hardlink", "symlink-loop"):
        (tmp_path / case).mkdir()
        spec = _hostile(case, tmp_path / case, images, objs)
        with pytest.raises(ImageError, match=r"bad\.tar \(bad:1\): layer 1/1 \("):
            with open_source(str(spec)):
                pass


@pytest.mark.parametrize("case", ["dotdot", "absolute", "truncated", "random", "missing-layer"])
def test_cli_reports_a_bad_image_in_one_line_with_exit_2(case, cli, tmp_path, images, objs):
    (tmp_path / "outside").mkdir()
    spec = _hostile(case, tmp_path, images, objs)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "new-root/usr/lib").mkdir(parents=True)
    proc = cli("upgrade", str(spec), str(tmp_path / "new-root"), env={"TMPDIR": str(scratch)})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rcompat: error: ") and HOSTILE[case] in lines[0], proc.stderr
    assert proc.stdout == "" and list(scratch.iterdir()) == [] and list((tmp_path / "outside").iterdir()) == []


def test_multi_platform_index_reads_this_machines_manifest(tmp_path, images, objs):
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    layer = images.write_layer(tmp_path / "l.tar.gz", [images.file("usr/lib/libleaf.so", objs["leaf"])], compress=True)
    layout = images.oci_layout(tmp_path / "oci", [layer], ENV, "multi")
    index = json.loads((layout / "index.json").read_text())
    real = dict(index["manifests"][0], platform={"os": "linux", "architecture": arch})
    other = {"mediaType": real["mediaType"], "digest": "sha256:" + "0" * 64, "size": 2,  # absent: never read
             "platform": {"os": "linux", "architecture": "not-" + arch}}
    nested = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                         "manifests": [other, real]}).encode()
    digest = hashlib.sha256(nested).hexdigest()
    (layout / "blobs/sha256" / digest).write_bytes(nested)
    index["manifests"] = [{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": f"sha256:{digest}",
                           "size": len(nested), "annotations": {"org.opencontainers.image.ref.name": "multi"}}]
    (layout / "index.json").write_text(json.dumps(index))
    with open_source(str(layout)) as src:
        assert tree(src.root) == {"usr", "usr/lib", "usr/lib/libleaf.so"} and src.env == ENV
        assert f"multi-platform image: read the linux/{arch} manifest" in src.notes


def test_a_layer_shared_through_a_symlink_in_the_tarball(tmp_path, images, objs):
    """docker's legacy save stores a layer two images share once and links the other name to it."""
    layer = images.write_layer(tmp_path / "l.tar", [images.file("usr/lib/libleaf.so", objs["leaf"])])
    config = json.dumps({"config": {"Env": ["A=1"]}}).encode()
    manifest = json.dumps([{"Config": "c.json", "RepoTags": ["s:1"], "Layers": ["b/layer.tar"]}]).encode()
    with tarfile.open(tmp_path / "shared.tar", "w") as tar:
        tar.add(str(layer), arcname="a/layer.tar")
        link = tarfile.TarInfo("b/layer.tar")
        link.type, link.linkname = tarfile.SYMTYPE, "../a/layer.tar"
        tar.addfile(link)
        for name, data in (("c.json", config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with open_source(str(tmp_path / "shared.tar")) as src:
        assert tree(src.root) == {"usr", "usr/lib", "usr/lib/libleaf.so"} and src.env == {"A": "1"}
