"""Inputs that claim far more than they hold: refused before memory or disk is spent on the claim.

Each child runs with RLIMIT_FSIZE at 64 MB and RLIMIT_AS at 768 MB: a reader that materialised an 8 GiB
sparse member, inflated a gzip bomb or allocated the array an .npz header claims would be killed
(SIGXFSZ) or hit MemoryError, and the case would fail on its exit status.
"""
from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile

import pytest

METADATA = "usr/lib/python3/dist-packages/x-1.0.dist-info/METADATA"


def _images(load_helper, harness):
    return load_helper("upgrade_images", harness.REPO / "tests/upgrade/_images.py")


def _gnu_sparse_layer(path, real_size: int):
    """A GNU (old-format) sparse member: 512 bytes of data stored, `real_size` claimed, the rest holes."""
    block = bytearray(512)
    block[0:len(METADATA)] = METADATA.encode()
    for offset, text in ((100, b"0000644"), (108, b"0000000"), (116, b"0000000"), (124, b"%011o" % 512),
                         (136, b"%011o" % 1700000000)):
        block[offset:offset + len(text)] = text
    block[156:157] = b"S"
    block[257:265] = b"ustar  \0"
    block[386:398] = b"%012o" % (real_size - 512)  # the one data region: the last 512 bytes
    block[398:410] = b"%012o" % 512
    block[483:495] = b"%012o" % real_size
    assert len(block) == 512
    block[148:156] = b" " * 8
    block[148:155] = b"%06o\0" % tarfile.calc_chksums(bytes(block))[0]
    with open(path, "wb") as fh:
        fh.write(bytes(block) + b"Metadata-Version: 2.1\n".ljust(512, b"\0") + b"\0" * 1024)
    return path


def test_a_sparse_member_claiming_8_gib_is_refused_before_writing(sentinel, harness, tmp_path, load_helper):
    images = _images(load_helper, harness)
    layer = _gnu_sparse_layer(tmp_path / "sparse.tar", 8 << 30)
    assert tarfile.open(layer).getmembers()[0].issparse()  # tarfile agrees it is one
    image = images.docker_save(sentinel.inputs / "image.tar", [([layer], {}, ["t:1"])])
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(image), str(sentinel.inputs / "new"), mem_mb=768, wall_s=60)
    harness.assert_refused(sentinel, outcome, "image.tar", "layer 1/1", "is a sparse file of 8.6 GB")


def test_a_gzip_bomb_layer_is_refused_before_inflating(sentinel, harness, tmp_path, load_helper):
    images = _images(load_helper, harness)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo(METADATA)
        info.size = 256 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    layer = tmp_path / "bomb.tar.gz"
    layer.write_bytes(gzip.compress(raw.getvalue(), compresslevel=9, mtime=0))
    assert layer.stat().st_size < 1 << 20  # under 1 MB on disk, 256 MB inflated
    layout = images.oci_layout(sentinel.inputs / "oci", [layer], {}, "t")
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(layout), str(sentinel.inputs / "new"), mem_mb=768, wall_s=60)
    harness.assert_refused(sentinel, outcome, "layer 1/1", "decompression bomb")


def test_a_zero_byte_layer_is_refused_like_a_truncated_one(sentinel, harness, tmp_path, load_helper):
    images = _images(load_helper, harness)
    empty = tmp_path / "empty.tar"
    empty.write_bytes(b"")
    layout = images.oci_layout(sentinel.inputs / "oci", [empty], {}, "t")
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(layout), str(sentinel.inputs / "new"), wall_s=30)
    harness.assert_refused(sentinel, outcome, "layer 1/1", "is empty (0 bytes)")


@pytest.mark.parametrize("compress", [False, True])
def test_a_layer_whose_bytes_do_not_match_its_digest_is_refused(sentinel, harness, tmp_path, load_helper, compress):
    images = _images(load_helper, harness)
    layer = images.write_layer(tmp_path / "layer.tar", [images.file("etc/os-release", b"ID=debian\n")], compress)
    layout = images.oci_layout(sentinel.inputs / "oci", [layer], {}, "t")
    blob = next(p for p in (layout / "blobs/sha256").iterdir() if p.read_bytes() == layer.read_bytes())
    data = bytearray(blob.read_bytes())
    if compress:  # a byte of the gzip header's mtime: inflating still succeeds, only the digest can tell
        data[4] ^= 1
    else:
        data[data.index(b"ID=debian")] = ord("J")
    blob.write_bytes(bytes(data))
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(layout), str(sentinel.inputs / "new"), wall_s=30)
    harness.assert_refused(sentinel, outcome, "layer 1/1", "does not match its digest")


def _npz(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _npy(array=None, header=None):
    import numpy as np
    from numpy.lib import format as npy

    out = io.BytesIO()
    if header is None:
        np.save(out, array, allow_pickle=False)
    else:
        npy.write_array_header_1_0(out, header)
        out.write(bytes(4096))
    return out.getvalue()


def _manifest():
    import numpy as np

    from rcompat.parity.npzfile import FORMAT, FORMAT_VERSION

    return _npy(np.array(json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, "cases": {}})))


@pytest.mark.parametrize("members, needle", [
    (lambda: {"manifest.npy": _manifest(),
              "big.npy": _npy(header={"descr": "<f8", "fortran_order": False, "shape": (1 << 33,)})},
     "claims a float64 array of shape (8589934592,)"),
    (lambda: {"manifest.npy": _manifest(), "notes.txt": b"hello"}, "is not a .npy array"),
    (lambda: {"manifest.npy": _manifest(),
              "neg.npy": _npy(header={"descr": "<f8", "fortran_order": False, "shape": (-1,)})},
     "claims the shape (-1,)"),
])
def test_npz_headers_are_checked_before_any_array_is_allocated(sentinel, harness, members, needle):
    path = _npz(sentinel.inputs / "r.npz", members())
    outcome = sentinel.run("parity", "compare", str(path), str(path), mem_mb=768, wall_s=60)
    harness.assert_refused(sentinel, outcome, str(path), needle)


def test_npz_with_a_corrupt_deflate_stream_is_one_line(sentinel, harness):
    import numpy as np

    path = sentinel.inputs / "c.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.npy", _manifest())
        z.writestr("x.npy", _npy(np.arange(20000.0)))
    data = bytearray(path.read_bytes())
    start = data.index(b"x.npy") + 200
    data[start:start + 64] = bytes(64)
    path.write_bytes(bytes(data))
    outcome = sentinel.run("parity", "compare", str(path), str(path), mem_mb=768, wall_s=60)
    harness.assert_refused(sentinel, outcome, str(path), "corrupt")


def test_a_size_limit_names_the_file_the_limit_and_the_variable(sentinel, harness):
    rules = sentinel.inputs / "rules.toml"
    rules.write_text("# padding\n" * 200_000)  # 2 MB
    outcome = sentinel.run("r", "rules", "--file", str(rules), env={"RCOMPAT_MAX_TABLE_MB": "1"})
    harness.assert_refused(sentinel, outcome, str(rules), "more than the 1 MiB limit", "RCOMPAT_MAX_TABLE_MB")


def test_running_out_of_memory_is_an_error_never_a_result(sentinel, harness):
    table = sentinel.inputs / "huge.toml"
    with open(table, "wb") as fh:  # a 2 GiB regular file of holes: no disk used, 2 GiB when read
        fh.truncate(2 << 30)
    outcome = sentinel.run("r", "rules", "--file", str(table), env={"RCOMPAT_MAX_TABLE_MB": "4096"}, mem_mb=768)
    harness.assert_refused(sentinel, outcome, "out of memory")


def test_the_disk_budget_is_named_with_its_variable(sentinel, harness, tmp_path, load_helper):
    images = _images(load_helper, harness)
    layer = images.write_layer(tmp_path / "layer.tar", [images.file(METADATA, bytes(3 << 20))])
    image = images.docker_save(sentinel.inputs / "image.tar", [([layer], {}, ["t:1"])])
    (sentinel.inputs / "new").mkdir()
    outcome = sentinel.run("upgrade", str(image), str(sentinel.inputs / "new"), env={"RCOMPAT_MAX_DISK_MB": "2"})
    harness.assert_refused(sentinel, outcome, "layer 1/1", "more than the 2 MiB limit", "RCOMPAT_MAX_DISK_MB")
