"""Fuzz the ELF reader: bit flips, byte stomps and truncation at every section boundary of real
fixture libraries. Every case must end in success or ElfError within a time limit: any other
exception, or a hang, is a bug. tests/elf/test_bad_input.py runs a few hundred cases of this;
this script runs 10,000:

    .venv/bin/python benchmarks/fuzz_elf.py [--cases 10000] [--seed 1] [LIB ...]
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _fuzzing import fuzz, summary  # noqa: E402

from rcompat.elf.errors import ElfError  # noqa: E402

CASE_LIMIT_S = 5


def exercise(path: Path) -> None:
    """Everything the engine reads from one file."""
    from rcompat.elf.read.objinfo import load_object
    from rcompat.elf.read.reader import ElfImage
    from rcompat.elf.read.symbols import symbol_list
    from rcompat.elf.read.symindex import build_index

    with ElfImage(path) as img:
        img.sections
        img.needed, img.soname, img.rpath, img.runpath, img.symbolic, img.build_id
        img.version_definitions, img.version_needs
        syms = symbol_list(img)
        syms.nm_lines()
        "".join(syms.json_chunks())
        for defined in (True, False):  # the listings that leave rows out (versions, blank addresses)
            "".join(symbol_list(img, defined).nm_chunks())
    load_object(str(path))  # the resolver's facts, uncached
    build_index(path)


def mutations(data: bytes, rng: random.Random, boundaries: list[int]):
    """Yield (label, mutated bytes) forever."""
    kinds = ["flip", "flip", "stomp", "truncate", "header"]
    while True:
        kind = rng.choice(kinds)
        buf = bytearray(data)
        if kind == "flip":
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(buf))
                buf[i] ^= 1 << rng.randrange(8)
            yield kind, bytes(buf)
        elif kind == "stomp":
            i = rng.randrange(len(buf))
            n = rng.choice([1, 2, 4, 8])
            buf[i:i + n] = rng.choice([b"\xff", b"\x00", b"\x7f"]) * n
            yield kind, bytes(buf[:len(data)])
        elif kind == "header":  # the ELF and section headers hold the offsets everything else follows
            i = rng.randrange(min(64, len(buf)))
            buf[i] = rng.randrange(256)
            yield kind, bytes(buf)
        else:
            cut = rng.choice(boundaries) + rng.choice([-1, 0, 1])
            yield kind, bytes(buf[:max(0, min(cut, len(buf)))])


def section_boundaries(path: Path) -> list[int]:
    from rcompat.elf.read.reader import ElfImage

    with ElfImage(path) as img:
        points = {0, 4, 16, 52, 64, img.shoff, img.size}
        for s in img.sections:
            points.update((s.offset, s.offset + s.size))
        points.update(img.shoff + i * img.shentsize for i in range(img.shnum + 1))
    return sorted(p for p in points if 0 <= p <= img.size)


def run(sources: list[Path], cases: int, seed: int = 1, workdir: Path | None = None) -> dict:
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="rcompat-fuzz-"))
    generators = [(p.name, mutations(p.read_bytes(), rng, section_boundaries(p))) for p in sources]

    def mutants():
        while True:
            for name, generator in generators:
                kind, data = next(generator)
                yield f"{kind} of {name}", data

    return fuzz(mutants(), cases, exercise, ElfError, tmp / "mutant.so", limit_s=CASE_LIMIT_S)


def _fixture_libs() -> list[Path]:
    spec = importlib.util.spec_from_file_location("elf_fixture_build", REPO / "fixtures/elf/build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build_all(Path(tempfile.mkdtemp(prefix="rcompat-fuzz-fixtures-")))
    return [built[k] for k in ("versioned", "needs_version", "rpath_runpath", "user")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("libs", nargs="*", type=Path, help="libraries to mutate (default: the gcc-built fixtures)")
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    return summary(run(args.libs or _fixture_libs(), args.cases, args.seed))


if __name__ == "__main__":
    raise SystemExit(main())
