"""Fuzz the image reader: bit flips, byte stomps, truncation at every tar header, and edited JSON of real
docker-save and OCI-archive tarballs (an uncompressed and a gzip layer, symlinks, whiteouts). Every case
must end in a merged root or an RcompatError (ImageError), within a time and memory limit, and leave no
temporary root behind: any other exception, a hang or a leftover is a bug. tests/hostile/test_fuzz.py
runs a few hundred cases; `make fuzz` runs 5,000:

    .venv/bin/python benchmarks/fuzz_image.py [--cases 5000] [--seed 1]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rcompat.errors import RcompatError  # noqa: E402

CASE_LIMIT_S = 10
MEMORY_LIMIT = 2 << 30


class Hang(Exception):
    pass


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
    for needle in (b'{"', b"[{", b"sha256:", b"\x1f\x8b"):
        start = 0
        while (i := data.find(needle, start)) >= 0:
            points.add(i)
            start = i + 1
    return sorted(p for p in points if p <= len(data))


def mutations(data: bytes, rng: random.Random):
    bounds = header_offsets(data)
    while True:
        kind = rng.choice(["flip", "stomp", "truncate", "field", "json"])
        buf = bytearray(data)
        if kind == "flip":
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(buf))
                buf[i] ^= 1 << rng.randrange(8)
        elif kind == "stomp":
            i = rng.randrange(len(buf))
            n = rng.choice([1, 2, 4, 8, 12])
            buf[i:i + n] = rng.choice([b"\xff", b"\x00", b"7", b"/", b"["]) * n
            buf = buf[:len(data)]
        elif kind == "field":  # a header's size, type or name: what the walk trusts
            i = rng.choice(bounds)
            for j in range(i, min(i + 12, len(buf))):
                buf[j] = rng.choice(b"0123456777\0 /.Sx")
        elif kind == "json":
            i = rng.choice(bounds)
            buf[i:i + 1] = rng.choice([b"[" * 200, b"5", b'"', b"{}", b"null", b"[1]"])[:1] * rng.randint(1, 3)
            buf = buf[:len(data)]
        else:
            cut = rng.choice(bounds) + rng.choice([-1, 0, 1, 100])
            buf = buf[:max(0, min(cut, len(buf)))]
        yield kind, bytes(buf)


def exercise(path: Path, tmpdir: Path) -> None:
    from rcompat.upgrade.image.source import open_source

    with open_source(str(path), tmpdir=str(tmpdir)) as source:
        for _dirpath, _dirs, _files in os.walk(source.root):
            pass


def run(cases: int, seed: int = 1, workdir: Path | None = None) -> dict:
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="rcompat-fuzz-image-"))
    originals = [(p.name, p.read_bytes()) for p in seed_images(tmp)]
    generators = [mutations(data, rng) for _name, data in originals]
    target, roots = tmp / "mutant.tar", tmp / "roots"
    roots.mkdir()
    failures: list[str] = []
    outcomes = {"ok": 0, "RcompatError": 0}

    def on_alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, hard))
    start = time.monotonic()
    try:
        for case in range(cases):
            k = case % len(originals)
            kind, data = next(generators[k])
            target.write_bytes(data)
            signal.alarm(CASE_LIMIT_S)
            try:
                exercise(target, roots)
                outcomes["ok"] += 1
            except RcompatError as exc:
                outcomes["RcompatError"] += 1
                if "\n" in str(exc) or len(str(exc)) > 600:
                    failures.append(f"case {case} ({kind} of {originals[k][0]}): not one short line: {exc!r:.300}")
            except Hang:
                failures.append(f"case {case} ({kind} of {originals[k][0]}): no result in {CASE_LIMIT_S} s")
            except BaseException as exc:  # noqa: BLE001 - exactly what this hunts for
                keep = tmp / f"failure-{case}.tar"
                keep.write_bytes(data)
                failures.append(f"case {case} ({kind} of {originals[k][0]}, saved {keep}): {type(exc).__name__}: "
                                f"{exc}\n{traceback.format_exc(limit=4)}")
            finally:
                signal.alarm(0)
            left = os.listdir(roots)
            if left:
                failures.append(f"case {case} ({kind} of {originals[k][0]}): left {left[:3]} behind")
                for name in left:
                    shutil.rmtree(roots / name, ignore_errors=True)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, old)
    return {"cases": cases, "outcomes": outcomes, "failures": failures, "seconds": round(time.monotonic() - start, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    result = run(args.cases, args.seed)
    print(f"{result['cases']} cases in {result['seconds']} s: {result['outcomes']['ok']} read, "
          f"{result['outcomes']['RcompatError']} RcompatError, {len(result['failures'])} failures")
    for f in result["failures"][:20]:
        print(f)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
