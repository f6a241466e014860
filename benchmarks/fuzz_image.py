"""Fuzz the image reader: bit flips, byte stomps, truncation at every tar header, and edited JSON of real
docker-save and OCI-archive tarballs (an uncompressed and a gzip layer, symlinks, whiteouts). Every case
must end in a merged root or an RcompatError (ImageError), within a time and memory limit, and leave no
temporary root behind: any other exception, a hang or a leftover is a bug. tests/hostile/test_fuzz.py
runs a few hundred cases; `make fuzz` runs 5,000:

    .venv/bin/python benchmarks/fuzz_image.py [--cases 5000] [--seed 1]
"""
from __future__ import annotations

import importlib.util
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _fuzzing import common_mutation, fuzz, offsets_of, main as fuzz_main  # noqa: E402

from rcompat.errors import RcompatError  # noqa: E402

CASE_LIMIT_S = 10
MEMORY_LIMIT = 2 << 30


def _images():
    spec = importlib.util.spec_from_file_location("upgrade_images", REPO / "tests/upgrade/_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed_images(tmp: Path) -> list[Path]:
    """A docker-save tarball and an OCI archive, small but with every kind of member the reader handles."""
    im = _images()
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x03\x00\x3e\x00" + b"\0" * 100
    base = im.write_layer(tmp / "base.tar", [
        im.directory("usr"), im.directory("usr/lib"), im.file("usr/lib/libx.so.1", elf, 0o755),
        im.symlink("usr/lib/libx.so", "libx.so.1"), im.file("etc/os-release", b"ID=debian\nVERSION_ID=12\n"),
        im.file("etc/ld.so.conf", b"/usr/lib\n"), im.file("opt/big.bin", bytes(3000)),
        im.file("usr/lib/python3/dist-packages/torch-2.4.0.dist-info/METADATA", b"Name: torch\nVersion: 2.4.0\n")])
    top = im.write_layer(tmp / "top.tar.gz", [im.whiteout("opt/big.bin"), im.opaque("etc"),
                                             im.file("etc/os-release", b"ID=debian\nVERSION_ID=13\n"),
                                             im.hardlink("usr/lib/libx.so.2", "usr/lib/libx.so.1")], compress=True)
    docker = im.docker_save(tmp / "docker.tar", [([base, tmp / "base.tar"], {"PATH": "/usr/bin"}, ["t:1"])])
    oci = im.tar_of(im.oci_layout(tmp / "oci", [base, top], {"LD_LIBRARY_PATH": "/usr/lib"}, "t:2"), tmp / "oci.tar")
    return [docker, oci]


def header_offsets(data: bytes) -> list[int]:
    """Where each tar header (and its size and checksum fields) lies, plus JSON members' first bytes."""
    points = {0, len(data)}
    for i in range(0, len(data) - 512, 512):
        if data[i + 257:i + 262] == b"ustar":
            points.update((i, i + 124, i + 148, i + 156, i + 512))
    points.update(offsets_of(data, (b'{"', b"[{", b"sha256:", b"\x1f\x8b")))
    return sorted(p for p in points if p <= len(data))


def mutations(data: bytes, rng: random.Random):
    bounds = header_offsets(data)
    while True:
        kind = rng.choice(["flip", "stomp", "truncate", "field", "json"])
        mutant = common_mutation(kind, data, rng, bounds, (b"\xff", b"\x00", b"7", b"/", b"["))
        if mutant is None:
            buf = bytearray(data)
            i = rng.choice(bounds)
            if kind == "field":  # a header's size, type or name: what the walk trusts
                for j in range(i, min(i + 12, len(buf))):
                    buf[j] = rng.choice(b"0123456777\0 /.Sx")
            else:  # "json": a manifest or config made deep, of another type, or unterminated
                buf[i:i + 1] = rng.choice([b"[" * 200, b"5", b'"', b"{}", b"null", b"[1]"])
                buf = buf[:len(data)]
            mutant = bytes(buf)
        yield kind, mutant


def exercise(path: Path, tmpdir: Path) -> None:
    """Both ways the layers are read: copied out, and with stand-ins (what the scan uses: an uncompressed
    layer's ELF objects read from the image, and its digest checked after the `with` body)."""
    from rcompat.inputs import InputRefused, open_mapped
    from rcompat.upgrade_scan.image.source import open_source

    for stand_ins in (False, True):
        with open_source(str(path), tmpdir=str(tmpdir), stand_ins=stand_ins) as source:
            for dirpath, _dirs, files in os.walk(source.root):
                for name in files:
                    try:
                        with open_mapped(os.path.join(dirpath, name)) as fh:
                            fh.read()
                    except InputRefused:
                        pass


def run(cases: int, seed: int = 1, workdir: Path | None = None) -> dict:
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="rcompat-fuzz-image-"))
    generators = [(p.name, mutations(p.read_bytes(), rng)) for p in seed_images(tmp)]
    roots = tmp / "roots"
    roots.mkdir()

    def mutants():
        while True:
            for name, generator in generators:
                kind, data = next(generator)
                yield f"{kind} of {name}", data

    def leftovers(case: int, label: str) -> list[str]:
        left = os.listdir(roots)
        for name in left:
            shutil.rmtree(roots / name, ignore_errors=True)
        return [f"case {case} ({label}): left {left[:3]} behind"] if left else []

    return fuzz(mutants(), cases, lambda path: exercise(path, roots), RcompatError, tmp / "mutant.tar",
                limit_s=CASE_LIMIT_S, memory=MEMORY_LIMIT, after=leftovers)


if __name__ == "__main__":
    raise SystemExit(fuzz_main(__doc__, run))
