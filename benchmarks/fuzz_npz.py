"""Fuzz the parity-record (.npz) reader: bit flips, byte stomps, truncation at every zip and .npy
header boundary, and edited .npy headers (a shape claiming terabytes) of a real record. Every case must
end in a record or ParityFileError, within a time and memory limit: any other exception, a hang or a
MemoryError is a bug. tests/hostile/test_fuzz.py runs a few hundred cases; `make fuzz` runs 5,000:

    .venv/bin/python benchmarks/fuzz_npz.py [--cases 5000] [--seed 1]
"""
from __future__ import annotations

import argparse
import random
import resource
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rcompat.parity.npzfile import FORMAT, FORMAT_VERSION, ParityFileError, ParityRecord, read_record, write_record  # noqa: E402

CASE_LIMIT_S = 5
MEMORY_LIMIT = 2 << 30  # a reader that allocates what a header claims dies here, not on the machine


class Hang(Exception):
    pass


def seed_record(path: Path) -> Path:
    """A small real record: two cases, an input, float32 and float64 outputs."""
    import numpy as np

    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "side": "python", "seed": 0,
                "cases": {"matmul_f32": {"status": "ok", "message": "", "outputs": {"matmul_f32": "float32"}},
                          "mlp_f64": {"status": "ok", "message": "", "outputs": {"mlp_f64.grad": "float64"}}}}
    rng = np.random.default_rng(0)
    write_record(path, ParityRecord(manifest, inputs={"a": rng.random((8, 8))},
                                    outputs={"matmul_f32": rng.random((8, 8)).astype("float32"),
                                             "mlp_f64.grad": rng.random(16)}))
    return path


def boundaries(data: bytes) -> list[int]:
    """Where zip records and .npy headers start: cutting or editing there reaches each parser."""
    points = {0, len(data)}
    for magic in (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"\x93NUMPY"):
        start = 0
        while (i := data.find(magic, start)) >= 0:
            points.update((i, i + 4, i + 10, i + 30))
            start = i + 1
    return sorted(p for p in points if p <= len(data))


def mutations(data: bytes, rng: random.Random):
    bounds = boundaries(data)
    while True:
        kind = rng.choice(["flip", "stomp", "truncate", "shape", "header"])
        buf = bytearray(data)
        if kind == "flip":
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(buf))
                buf[i] ^= 1 << rng.randrange(8)
        elif kind == "stomp":
            i = rng.randrange(len(buf))
            n = rng.choice([1, 2, 4, 8])
            buf[i:i + n] = rng.choice([b"\xff", b"\x00", b"\x7f"]) * n
            buf = buf[:len(data)]
        elif kind == "shape":  # the header claims a huge or negative array; sizes in the zip unchanged
            i = buf.find(b"'shape': (")
            if i >= 0:
                claim = rng.choice([b"(99999999999,", b"(-1,", b"(1<<40,", b"(4294967296, 4294967296,"])
                buf[i + 9:i + 9 + len(claim)] = claim
        elif kind == "header":
            i = rng.choice(bounds)
            for j in range(i, min(i + 30, len(buf))):
                if rng.random() < 0.2:
                    buf[j] = rng.randrange(256)
        else:
            cut = rng.choice(bounds) + rng.choice([-1, 0, 1])
            buf = buf[:max(0, min(cut, len(buf)))]
        yield kind, bytes(buf)


def run(cases: int, seed: int = 1, workdir: Path | None = None) -> dict:
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="rcompat-fuzz-npz-"))
    original = seed_record(tmp / "seed.npz").read_bytes()
    generator = mutations(original, rng)
    target = tmp / "mutant.npz"
    failures: list[str] = []
    outcomes = {"ok": 0, "ParityFileError": 0}

    def on_alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, hard))
    start = time.monotonic()
    try:
        for case in range(cases):
            kind, data = next(generator)
            target.write_bytes(data)
            signal.alarm(CASE_LIMIT_S)
            try:
                read_record(target)
                outcomes["ok"] += 1
            except ParityFileError as exc:
                outcomes["ParityFileError"] += 1
                if "\n" in str(exc):
                    failures.append(f"case {case} ({kind}): a message of several lines: {exc!r}")
            except Hang:
                failures.append(f"case {case} ({kind}): no result in {CASE_LIMIT_S} s")
            except BaseException as exc:  # noqa: BLE001 - exactly what this hunts for (MemoryError too)
                keep = tmp / f"failure-{case}.npz"
                keep.write_bytes(data)
                failures.append(f"case {case} ({kind}, saved {keep}): {type(exc).__name__}: {exc}\n"
                                f"{traceback.format_exc(limit=4)}")
            finally:
                signal.alarm(0)
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
          f"{result['outcomes']['ParityFileError']} ParityFileError, {len(result['failures'])} failures")
    for f in result["failures"][:20]:
        print(f)
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
