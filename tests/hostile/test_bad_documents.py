"""Documents a user hands rcompat that parse badly or hold the wrong types: one line, exit 2, each."""
from __future__ import annotations

import json

import pytest

DEEP_JSON = "[" * 100_000 + "]" * 100_000
DEEP_TOML = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


def _record(path, manifest_edit=None, members=None):
    """A minimal parity record (as rcompat writes it), then edited."""
    import numpy as np

    from rcompat.parity.npzfile import FORMAT, FORMAT_VERSION, ParityRecord, write_record

    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "cases": {"m": {"status": "ok", "outputs": {"m_f32": "float32"}}}}
    if manifest_edit:
        manifest_edit(manifest)
    write_record(path, ParityRecord(manifest, outputs={"m_f32": np.ones(4, "float32")}))
    return path


@pytest.mark.parametrize("argv, content, needle", [
    (("r", "rules", "--file", "{f}"), DEEP_TOML, "nested more than 64 levels"),
    (("explain", "--symptoms", "{f}", "x"), DEEP_TOML, "nested more than 64 levels"),
    (("lock", "check", "{f}"), DEEP_JSON, "nested more than 64 levels"),
    (("snapshot", "diff", "{f}", "{f}"), DEEP_JSON, "nested more than 64 levels"),
    (("lock", "check", "{f}"), "\ud800" and b"\xff\xfe{}".decode("latin-1"), "not"),
])
def test_deep_or_broken_documents_are_one_line(sentinel, harness, argv, content, needle):
    f = sentinel.inputs / "doc"
    f.write_text(content, encoding="utf-8")
    outcome = sentinel.run(*[a.format(f=f) for a in argv], wall_s=30)
    harness.assert_refused(sentinel, outcome, str(f), needle)


@pytest.mark.parametrize("edit, needle", [
    (lambda m: m["cases"]["m"]["outputs"].update(m_f32=["float32"]), "precision ['float32']"),
    (lambda m: m.update(deep=json.loads("[" * 60 + "]" * 60)), ""),  # 60 deep: allowed, then consistent
    (lambda m: m.update(deep=json.loads("[" * 500 + "]" * 500)), "nested more than 64 levels"),
])
def test_parity_manifest_types(sentinel, harness, edit, needle):
    a = _record(sentinel.inputs / "a.npz", edit)
    outcome = sentinel.run("parity", "compare", str(a), str(a), wall_s=60)
    if needle:
        harness.assert_refused(sentinel, outcome, str(a), needle)
    else:
        assert outcome.returncode in (0, 1), outcome.stderr


def test_parity_record_seed_must_be_a_whole_number_in_range(sentinel, harness):
    outcome = sentinel.run("parity", "record", "--seed", "-1", "-o", str(sentinel.work / "r.npz"))
    harness.assert_refused(sentinel, outcome, "--seed", "from 0 to", usage=True)


def _save(images, tmp_path, sentinel, manifest):
    """A docker-save tarball whose manifest.json is `manifest` (text), with one real layer and config."""
    import io
    import tarfile

    layer = images.write_layer(tmp_path / "layer.tar", [images.file("etc/os-release", b"ID=x\n")])
    out = sentinel.inputs / "image.tar"
    with tarfile.open(out, "w") as tar:
        tar.add(str(layer), arcname="l/layer.tar")
        for name, data in (("c.json", b'{"config": {"Env": []}}'), ("s.json", b'"config"'),
                           ("manifest.json", manifest.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


@pytest.mark.parametrize("manifest, needle", [
    (DEEP_JSON, "nested more than 64 levels"),
    ('[{"Config": "c.json", "RepoTags": [1], "Layers": ["l/layer.tar"]}]', "RepoTags is not a list of strings"),
    ('[{"Config": "s.json", "Layers": ["l/layer.tar"]}]', "the image config is a string"),
    ('[{"Config": 5, "Layers": ["l/layer.tar"]}]', "without a Config name"),
    ('{"manifests": 5}', "not a list of images"),
])
def test_image_manifest_types(sentinel, harness, tmp_path, load_helper, manifest, needle):
    images = load_helper("upgrade_images", harness.REPO / "tests/upgrade/_images.py")
    image = _save(images, tmp_path, sentinel, manifest)
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(image), str(sentinel.inputs / "new"), wall_s=30)
    harness.assert_refused(sentinel, outcome, "image.tar", needle)


@pytest.mark.parametrize("edit, needle", [
    (lambda index: index.update(manifests=5), "lists no manifests"),
    (lambda index: index.update(manifests=[{"mediaType": "x", "digest": "sha256:" + "0" * 64,
                                            "platform": "linux"}]), "manifest"),
])
def test_oci_index_types(sentinel, harness, tmp_path, load_helper, edit, needle):
    images = load_helper("upgrade_images", harness.REPO / "tests/upgrade/_images.py")
    layer = images.write_layer(tmp_path / "layer.tar", [images.file("etc/os-release", b"ID=x\n")])
    layout = images.oci_layout(sentinel.inputs / "oci", [layer], {}, "t")
    index = json.loads((layout / "index.json").read_text())
    edit(index)
    (layout / "index.json").write_text(json.dumps(index))
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(layout), str(sentinel.inputs / "new"), wall_s=30)
    harness.assert_refused(sentinel, outcome, "oci", needle)


def test_a_config_blob_that_is_a_directory_is_named(sentinel, harness, tmp_path, load_helper):
    images = load_helper("upgrade_images", harness.REPO / "tests/upgrade/_images.py")
    layer = images.write_layer(tmp_path / "layer.tar", [images.file("etc/os-release", b"ID=x\n")])
    layout = images.oci_layout(sentinel.inputs / "oci", [layer], {}, "t")
    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads((layout / "blobs/sha256" / index["manifests"][0]["digest"][7:]).read_text())
    config = layout / "blobs/sha256" / manifest["config"]["digest"][7:]
    config.unlink()
    config.mkdir()
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(layout), str(sentinel.inputs / "new"), wall_s=30)
    harness.assert_refused(sentinel, outcome, config.name, "is a directory")


@pytest.mark.parametrize("name, needle", [
    ("/".join(["d"] * 3000) + "/f", "3001 directories deep"),
    ("x" * 5000 + "/lib.so", "File name too long"),
])
def test_hostile_member_names_are_one_short_line(sentinel, harness, tmp_path, load_helper, name, needle):
    images = load_helper("upgrade_images", harness.REPO / "tests/upgrade/_images.py")
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x03\x00" + b"\0" * 60
    layer = images.write_layer(tmp_path / "layer.tar", [images.file(name, elf)])
    image = images.docker_save(sentinel.inputs / "image.tar", [([layer], {}, ["t:1"])])
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(image), str(sentinel.inputs / "new"), wall_s=60)
    line = harness.assert_refused(sentinel, outcome, "image.tar", "layer 1/1", needle)
    assert len(line) < 400
