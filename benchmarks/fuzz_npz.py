"""Fuzz the parity-record (.npz) reader: bit flips, byte stomps, truncation at every zip and .npy
header boundary, and edited .npy headers (a shape claiming terabytes) of a real record, read with every
input decoded (a record decodes its inputs only when asked). Every case must end in a record or
ParityFileError, within a time and memory limit: any other exception, a hang or a
MemoryError is a bug. tests/hostile/test_fuzz.py runs a few hundred cases; `make fuzz` runs 5,000:

    .venv/bin/python benchmarks/fuzz_npz.py [--cases 5000] [--seed 1]
"""
from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _fuzzing import common_mutation, fuzz, offsets_of, main as fuzz_main  # noqa: E402

from rcompat.parity.npzfile import FORMAT, FORMAT_VERSION, ParityFileError, ParityRecord, read_record, write_record  # noqa: E402

CASE_LIMIT_S = 5
MEMORY_LIMIT = 2 << 30  # a reader that allocates what a header claims dies here, not on the machine


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
    for i in offsets_of(data, (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"\x93NUMPY")):
        points.update((i, i + 4, i + 10, i + 30))
    return sorted(p for p in points if p <= len(data))


def mutations(data: bytes, rng: random.Random):
    bounds = boundaries(data)
    while True:
        kind = rng.choice(["flip", "stomp", "truncate", "shape", "header"])
        mutant = common_mutation(kind, data, rng, bounds, (b"\xff", b"\x00", b"\x7f"))
        if mutant is None:
            buf = bytearray(data)
            if kind == "shape":  # the header claims a huge or negative array; sizes in the zip unchanged
                i = buf.find(b"'shape': (")
                if i >= 0:
                    claim = rng.choice([b"(99999999999,", b"(-1,", b"(1<<40,", b"(4294967296, 4294967296,"])
                    buf[i + 9:i + 9 + len(claim)] = claim
            else:  # "header": random bytes in a zip or .npy header
                i = rng.choice(bounds)
                for j in range(i, min(i + 30, len(buf))):
                    if rng.random() < 0.2:
                        buf[j] = rng.randrange(256)
            mutant = bytes(buf)
        yield kind, mutant


def read_fully(path: Path) -> None:
    """read_record, then every input, which a record decodes (and checks the CRC of) only when asked."""
    record = read_record(path)
    for name in record.inputs:
        record.inputs[name]


def run(cases: int, seed: int = 1, workdir: Path | None = None) -> dict:
    tmp = Path(workdir or tempfile.mkdtemp(prefix="rcompat-fuzz-npz-"))
    original = seed_record(tmp / "seed.npz").read_bytes()
    return fuzz(mutations(original, random.Random(seed)), cases, read_fully, ParityFileError, tmp / "mutant.npz",
                limit_s=CASE_LIMIT_S, memory=MEMORY_LIMIT)


if __name__ == "__main__":
    raise SystemExit(fuzz_main(__doc__, run))
