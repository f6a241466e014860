"""Stand-ins (rcompat/standins.py): the ELF objects of an uncompressed layer are read in place from the
image, never copied out. Through rcompat.inputs and the ELF reader they read as the members' bytes; the
file itself holds none of them; metadata, links, whiteouts and hard links merge as before; the layer's
digest is checked beside the scan and a mismatch still ends the run with nothing reported."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from rcompat.elf.read.reader import ElfImage
from rcompat.errors import ImageError
from rcompat.inputs import open_mapped
from rcompat.standins import StandIns, extent_of
from rcompat.upgrade_scan.image.source import open_source
from rcompat.upgrade_scan.inventory import inventory
from rcompat.upgrade_scan.scan import upgrade


def _layers(images, objs, tmp: Path) -> list[Path]:
    i = images
    lower = [i.directory("usr/"), i.directory("usr/lib/"), i.file("usr/lib/libleaf.so.1", objs["leaf"], 0o755),
             i.hardlink("usr/lib/libleaf-copy.so", "usr/lib/libleaf.so.1"), i.file("usr/lib/libgone.so", objs["leaf"]),
             i.file("etc/os-release", b"ID=debian\n")]
    upper = [i.whiteout("usr/lib/libgone.so"), i.file("opt/app/libmid.so", objs["mid"])]
    return [i.write_layer(tmp / "lower.tar", lower), i.write_layer(tmp / "upper.tar", upper)]


def test_stand_ins_read_as_the_members_and_merge_like_copies(images, objs, tmp_path):
    spec = images.docker_save(tmp_path / "img.tar", [(_layers(images, objs, tmp_path), {}, ["demo:1"])])
    objects = {"usr/lib/libleaf.so.1": objs["leaf"], "usr/lib/libleaf-copy.so": objs["leaf"],
               "opt/app/libmid.so": objs["mid"]}
    with open_source(str(spec)) as copied, open_source(str(spec), stand_ins=True) as src:
        root = Path(src.root)
        for path, lib in objects.items():
            raw = (root / path).read_bytes()
            assert len(raw) == lib.stat().st_size and raw[:4] != b"\x7fELF"  # none of the object's bytes
            assert (Path(copied.root) / path).read_bytes() == lib.read_bytes()
            with open_mapped(root / path) as fh:
                assert fh.read() == lib.read_bytes()
            with ElfImage(root / path) as image, ElfImage(lib) as real:
                assert (image.soname, image.needed, image.dynamic_symbols.names) == \
                       (real.soname, real.needed, real.dynamic_symbols.names)
        assert (root / "usr/lib/libleaf-copy.so").stat().st_ino == (root / "usr/lib/libleaf.so.1").stat().st_ino
        assert not (root / "usr/lib/libgone.so").exists()
        assert (root / "etc/os-release").read_bytes() == b"ID=debian\n"  # metadata is copied as before
        mine, theirs = inventory(src.root), inventory(copied.root)
        assert {p: f.size for p, f in mine.objects.items()} == {p: f.size for p, f in theirs.objects.items()}
        assert set(mine.objects) == {"/" + p for p in objects}
        held = root / "usr/lib/libleaf.so.1"
    assert not held.exists()


def test_a_file_that_lost_its_token_is_read_as_itself(tmp_path):
    """An inode a whiteout freed may be reused by another file: the token, not the inode alone, decides."""
    source = tmp_path / "image"
    source.write_bytes(b"\x7fELF" + bytes(60))
    stand_in = tmp_path / "stand-in"
    with StandIns() as kept:
        fd = os.open(stand_in, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            source_fd = os.open(source, os.O_RDONLY)
            kept.make(fd, source_fd, 0, 64)
            os.close(source_fd)  # the stand-ins hold their own descriptor
            assert extent_of(fd) is not None
            with open_mapped(stand_in) as fh:
                assert fh.read() == source.read_bytes()
            os.pwrite(fd, b"another file's!!", 0)  # same inode, same size, other content
            assert extent_of(fd) is None
            with open_mapped(stand_in) as fh:
                assert fh.read(16) == b"another file's!!"
        finally:
            os.close(fd)
    with open_mapped(stand_in) as fh:  # forgotten once the image is closed
        assert fh.read(4) != b"\x7fELF"


def test_a_digest_mismatch_checked_beside_the_scan_still_ends_the_run(images, objs, tmp_path, monkeypatch):
    layers = _layers(images, objs, tmp_path)
    layout = images.oci_layout(tmp_path / "oci", layers, {}, "t")
    blob = next(p for p in (layout / "blobs/sha256").iterdir() if p.read_bytes() == layers[1].read_bytes())
    data = bytearray(blob.read_bytes())
    offset = data.index(objs["mid"].read_bytes()[:64]) + 40  # a byte inside the ELF object: the tar still reads
    data[offset] ^= 0xFF
    blob.write_bytes(bytes(data))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    old = tmp_path / "old"
    (old / "usr/lib").mkdir(parents=True)
    (old / "usr/lib/libleaf.so.1").write_bytes(objs["leaf"].read_bytes())
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where the temporary root goes
    with pytest.raises(ImageError, match=r"layer 2/2 .*does not match its digest"):
        upgrade(str(old), str(layout), driver="580.65.06")
    assert not list(scratch.iterdir())  # the temporary root is gone


def test_the_finishing_thread_hashes_what_the_pool_has_not_started_and_the_first_layer_s_error_wins(monkeypatch):
    """Verifier.finish runs the checks still queued in its own thread (from the last layer back) while the
    pool works on; the error raised is still the first failing layer's, in layer order."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from rcompat.upgrade_scan.image import source

    pool = ThreadPoolExecutor(1)
    monkeypatch.setattr(source, "_pool", pool)
    release, ran = threading.Event(), {}

    def check(number, fails=False, hold=False, then_release=False):
        def run(stop):
            ran[number] = threading.current_thread().name
            if hold:
                release.wait(60)
            if then_release:
                release.set()
            if fails:
                raise ImageError(f"layer {number}: sha256 mismatch")
        return run

    verifier = source.Verifier()
    verifier.submit(check(1, hold=True), "layer 1")  # occupies the pool's only thread
    verifier.submit(check(2, fails=True, then_release=True), "layer 2")  # layer 1 ends once 3 and 2 ran
    verifier.submit(check(3, fails=True), "layer 3")
    try:
        with pytest.raises(ImageError, match=r"^layer 2: layer 2: sha256 mismatch"):
            verifier.finish()
    finally:
        release.set()
        pool.shutdown()
    main = threading.current_thread().name
    assert ran[2] == ran[3] == main and ran[1] != main
