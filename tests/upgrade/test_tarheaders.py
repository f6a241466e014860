"""rcompat.upgrade_scan.image.tarheaders reads what tarfile reads, for every format an image writer uses, and leaves
the rest to tarfile."""
from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from rcompat.errors import ImageError
from rcompat.upgrade_scan.image.source import open_source
from rcompat.upgrade_scan.image.tarheaders import Unsupported, read_headers, stream_members

LONG_DIR = "usr/lib/python3/dist-packages/" + "very-long-package-name-" * 6  # ~170 characters


def _archive(path: Path, fmt: int, pax_headers: "dict | None" = None) -> Path:
    entries = [("usr/", tarfile.DIRTYPE, b"", ""), ("usr/lib/empty", tarfile.REGTYPE, b"", ""),
               ("usr/lib/one", tarfile.REGTYPE, b"1", ""), ("usr/lib/block", tarfile.REGTYPE, b"b" * 512, ""),
               ("usr/lib/more", tarfile.REGTYPE, b"m" * 5000, ""),
               (f"{LONG_DIR}/lib.so", tarfile.REGTYPE, b"x" * 700, ""),
               ("usr/lib/link.so", tarfile.SYMTYPE, b"", f"../../{LONG_DIR}/lib.so"),
               ("usr/lib/hard.so", tarfile.LNKTYPE, b"", "usr/lib/more"),
               ("run/fifo", tarfile.FIFOTYPE, b"", ""), ("dev/null", tarfile.CHRTYPE, b"", ""),
               ("usr/share/données/é.txt", tarfile.REGTYPE, b"utf8", "")]
    with tarfile.open(path, "w", format=fmt, pax_headers=pax_headers) as tar:
        for name, kind, data, link in entries:
            info = tarfile.TarInfo(name)
            info.type, info.size, info.linkname, info.mode = kind, len(data), link, 0o750
            tar.addfile(info, io.BytesIO(data))
    return path


def _facts(members) -> list[tuple]:
    return [(m.name, m.type, m.size, m.mode, m.linkname, m.offset_data) for m in members]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=["gnu", "pax"])
def test_members_match_tarfile(fmt, tmp_path):
    path = _archive(tmp_path / "layer.tar", fmt)
    with tarfile.open(path) as tar:
        expected = _facts(tar.getmembers())
    fd = os.open(path, os.O_RDONLY)
    try:
        got = read_headers(fd, 0, path.stat().st_size)
    finally:
        os.close(fd)
    assert _facts(got) == expected
    assert any(len(name) > 100 for name, *_ in expected) and any(len(link) > 100 for *_, link, _o in expected)


def test_within_a_larger_file_offsets_are_relative(tmp_path):
    inner = _archive(tmp_path / "layer.tar", tarfile.PAX_FORMAT).read_bytes()
    path = tmp_path / "outer"
    path.write_bytes(b"\1" * 4096 + inner + b"\1" * 100)
    with tarfile.open(tmp_path / "layer.tar") as tar:
        expected = _facts(tar.getmembers())
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _facts(read_headers(fd, 4096, len(inner))) == expected
        with pytest.raises(ImageError, match="truncated layer: the member at byte 2048 runs past its end"):
            read_headers(fd, 4096, 3000)  # inside usr/lib/block's data
        with pytest.raises(ImageError, match="truncated layer: the header at byte 3072 is cut short"):
            read_headers(fd, 4096, 3100)  # inside usr/lib/more's header
    finally:
        os.close(fd)


def test_global_pax_headers_are_left_to_tarfile(tmp_path, load_helper):
    path = _archive(tmp_path / "layer.tar", tarfile.PAX_FORMAT, pax_headers={"comment": "global"})
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(Unsupported):
            read_headers(fd, 0, path.stat().st_size)
    finally:
        os.close(fd)
    # ...and such a layer still merges, through tarfile.
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    tarball = images.docker_save(tmp_path / "img.tar", [([path], {}, ["g:1"])])
    with open_source(str(tarball)) as src:
        assert os.readlink(os.path.join(src.root, "usr/lib/link.so")) == f"../../{LONG_DIR}/lib.so"
        assert src.layers[0]["members"] == 11 and src.layers[0]["taken"] == 1  # the symlink; no ELF inside


def test_a_damaged_header_is_reported_not_taken_for_the_end(tmp_path, load_helper):
    path = _archive(tmp_path / "layer.tar", tarfile.GNU_FORMAT)
    data = bytearray(path.read_bytes())
    data[1024 + 10] ^= 0xFF  # the name of the second header: its checksum no longer adds up
    path.write_bytes(bytes(data))
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    tarball = images.docker_save(tmp_path / "img.tar", [([path], {}, ["d:1"])])
    with pytest.raises(ImageError, match="damaged layer: data after the end-of-archive mark"):
        with open_source(str(tarball)):
            pass


def _inside_something(data: bytes, cut: int) -> bool:
    return bool(data[cut - cut % 512:cut - cut % 512 + 512].strip(b"\0")) or cut % 512 == 0


def _streamed_facts(data: bytes) -> list[tuple]:
    out = []
    for member, head, fill in stream_members(io.BufferedReader(io.BytesIO(data)), 20):
        out.append((member.name, member.type, member.size, member.mode, member.linkname,
                    head() if member.isreg() else b""))
    return out


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=["gnu", "pax"])
def test_a_stream_reads_what_tarfile_reads(fmt, tmp_path):
    path = _archive(tmp_path / "layer.tar", fmt)
    with tarfile.open(path) as tar:
        expected = [(m.name, m.type, m.size, m.mode, m.linkname,
                     tar.extractfile(m).read(20) if m.isreg() else b"") for m in tar]
    data = path.read_bytes()
    assert _streamed_facts(data) == expected
    # cut inside a header or a member's data (at a block boundary the tar merely lacks its end mark, which
    # tarfile tolerates too; a compressed layer's own check catches that cut)
    for cut in [c for c in range(100, len(data) - 1024, 512) if _inside_something(data, c)]:
        with pytest.raises(ImageError, match=r"truncated layer: a (header|member|extended header) is cut short"):
            _streamed_facts(data[:cut])


@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_a_compressed_layer_the_stream_reader_leaves_to_tarfile_still_merges(compress, tmp_path, load_helper):
    import gzip

    import zstandard

    path = _archive(tmp_path / "layer.tar", tarfile.PAX_FORMAT, pax_headers={"comment": "global"})
    with pytest.raises(Unsupported):
        _streamed_facts(path.read_bytes())
    packed = tmp_path / f"layer.tar.{compress}"
    data = path.read_bytes()
    packed.write_bytes(gzip.compress(data) if compress == "gzip" else zstandard.ZstdCompressor().compress(data))
    images = load_helper("upgrade_images", Path(__file__).with_name("_images.py"))
    tarball = images.docker_save(tmp_path / "img.tar", [([packed], {}, ["g:1"])])
    with open_source(str(tarball)) as src:
        assert os.readlink(os.path.join(src.root, "usr/lib/link.so")) == f"../../{LONG_DIR}/lib.so"
        assert src.layers[0]["members"] == 11 and src.layers[0]["taken"] == 1
        assert src.layers[0]["media_type"] == f"tar+{compress}"
