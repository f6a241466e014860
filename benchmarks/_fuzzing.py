"""The loop every fuzzer shares (fuzz_elf, fuzz_image, fuzz_npz): write each mutant, run the reader on it
under a time limit (and a memory limit), count results and the expected error, keep what failed."""
from __future__ import annotations

import resource
import signal
import time
import traceback
from pathlib import Path
from typing import Callable, Iterator


class Hang(Exception):
    pass


def fuzz(mutants: Iterator[tuple[str, bytes]], cases: int, exercise: Callable[[Path], None],
         expected: type[BaseException], target: Path, *, limit_s: int, memory: int | None = None,
         after: Callable[[int, str], list[str]] | None = None) -> dict:
    """Run `cases` mutants (label, bytes) through `exercise(target)`. A case passes when it returns or
    raises `expected` with a one-line message; `after(case, label)` may report leftovers as failures."""
    failures: list[str] = []
    name = expected.__name__
    outcomes = {"ok": 0, name: 0}

    def on_alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if memory:  # a reader that allocates what a header claims fails here, not on the machine
        resource.setrlimit(resource.RLIMIT_AS, (memory, hard))
    start = time.monotonic()
    try:
        for case in range(cases):
            label, data = next(mutants)
            target.write_bytes(data)
            signal.alarm(limit_s)
            try:
                exercise(target)
                outcomes["ok"] += 1
            except expected as exc:
                outcomes[name] += 1
                if "\n" in str(exc) or len(str(exc)) > 600:
                    failures.append(f"case {case} ({label}): not one short line: {str(exc)[:300]!r}")
            except Hang:
                failures.append(f"case {case} ({label}): no result in {limit_s} s")
            except BaseException as exc:  # noqa: BLE001 - exactly what this hunts for (MemoryError too)
                keep = target.with_name(f"failure-{case}{target.suffix}")
                keep.write_bytes(data)
                failures.append(f"case {case} ({label}, saved {keep}): {type(exc).__name__}: {exc}\n"
                                f"{traceback.format_exc(limit=4)}")
            finally:
                signal.alarm(0)
            if after is not None:
                failures.extend(after(case, label))
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, old)
    return {"cases": cases, "outcomes": outcomes, "failures": failures, "seconds": round(time.monotonic() - start, 2)}


def summary(result: dict) -> int:
    """Print the result as `make fuzz` shows it; the exit status (1 when a case failed)."""
    counts = ", ".join(f"{n} {'read' if k == 'ok' else k}" for k, n in result["outcomes"].items())
    print(f"{result['cases']} cases in {result['seconds']} s: {counts}, {len(result['failures'])} failures")
    for failure in result["failures"][:20]:
        print(failure)
    return 1 if result["failures"] else 0


def offsets_of(data: bytes, needles: tuple[bytes, ...]) -> Iterator[int]:
    """Every offset where one of `needles` starts in `data`, overlapping ones too."""
    for needle in needles:
        start = 0
        while (i := data.find(needle, start)) >= 0:
            yield i
            start = i + 1


def common_mutation(kind: str, data: bytes, rng, bounds: list[int], stomps: tuple[bytes, ...]) -> "bytes | None":
    """`data` after the mutations every reader gets: "flip" (1-8 bits), "stomp" (a run of one of `stomps`)
    and "truncate" (at or next to one of `bounds`); None for any other kind (the fuzzer's own)."""
    buf = bytearray(data)
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
    elif kind == "stomp":
        i = rng.randrange(len(buf))
        n = rng.choice([1, 2, 4, 8, 12])
        buf[i:i + n] = rng.choice(stomps) * n
        buf = buf[:len(data)]
    elif kind == "truncate":
        cut = rng.choice(bounds) + rng.choice([-1, 0, 1, 100])
        buf = buf[:max(0, min(cut, len(buf)))]
    else:
        return None
    return bytes(buf)


def main(doc: str, run, default_cases: int = 5_000) -> int:
    """The command line of a fuzzer whose `run(cases, seed)` takes no other input."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=default_cases)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    return summary(run(args.cases, args.seed))
