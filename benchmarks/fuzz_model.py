"""Fuzz the model readers (rcompat/models): bit flips, byte stomps and truncation at every zip record and
pickle opcode boundary of a real torch.save file, a legacy file and a TorchScript archive. Every case
must end in ModelInfo or ModelFileError, within a time and memory limit; anything else is a bug.
`make fuzz` runs 3,000 cases:

    .venv/bin/python benchmarks/fuzz_model.py [--cases 3000] [--seed 1]
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

from rcompat.models.errors import ModelFileError  # noqa: E402
from rcompat.models.reader import read_model  # noqa: E402

CASE_LIMIT_S = 5
MEMORY_LIMIT = 2 << 30


def seeds(tmp: Path) -> list[bytes]:
    """Real files from torch (a state dict, its legacy form, a scripted module)."""
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    torch.save(net.state_dict(), tmp / "sd.pt")
    torch.save(net.state_dict(), tmp / "legacy.pt", _use_new_zipfile_serialization=False)
    torch.jit.save(torch.jit.script(net), tmp / "ts.pt")
    return [(tmp / n).read_bytes() for n in ("sd.pt", "legacy.pt", "ts.pt")]


def boundaries(data: bytes) -> list[int]:
    points = {0, len(data)}
    for i in offsets_of(data, (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"\x80\x02", b"ctorch", b"X\x01")):
        points.update((i, i + 2, i + 4, i + 10, i + 30))
    return sorted(p for p in points if p <= len(data))


def mutations(originals: list[bytes], rng: random.Random):
    while True:
        data = rng.choice(originals)
        kind = rng.choice(["flip", "stomp", "truncate"])
        mutant = common_mutation(kind, data, rng, boundaries(data), (b"\xff", b"\x00", b"(", b"t", b"\x8e"))
        yield kind, mutant if mutant is not None else data


def run(cases: int, seed: int = 1, workdir: Path | None = None) -> dict:
    tmp = Path(workdir or tempfile.mkdtemp(prefix="rcompat-fuzz-model-"))
    return fuzz(mutations(seeds(tmp), random.Random(seed)), cases, read_model, ModelFileError, tmp / "mutant.pt",
                limit_s=CASE_LIMIT_S, memory=MEMORY_LIMIT)


if __name__ == "__main__":
    raise SystemExit(fuzz_main(__doc__, run))
