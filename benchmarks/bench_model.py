"""`rcompat model inspect` on a ~1 GiB torch.save checkpoint (issue 26: goal <= 0.05x) against
torch.load(weights_only=True, mmap=True) of the same file, both in process, in alternating blocks; then
rcompat, picklescan and fickling (when installed: pip install picklescan fickling; each skipped with
the reason otherwise) as commands on the same hostile set (the builders of tests/hostile/test_models.py):
seconds over the set, and what each says of every file.

What is measured (2 shared cores, torch 2.13.0, Python 3.11): the 1 GiB file holds 256 tensors; its
data.pkl is 7,691 opcodes. The in-process row times `read_model(path)` whole: open, the zip directory
(columns from one split and one struct call: rcompat/models/archive.py), data.pkl's tensor records
(the first read alone, the rest as runs split out in C: rcompat/models/torchruns.py), the storages
checked against their members, and every TensorInfo made (nothing is left lazy for the renderer);
torch.load maps the file and builds 256 storages and tensors over it. Each side runs in blocks of
--block calls, the blocks alternating (--rounds rounds, the order reversed each round; 10 by default,
since these machines' speed drifts by 10% from one moment to the next), best of each side: each
side is measured warm, as timeit measures it, while alternating by block still shares the machine's
drift between them; call by call, each of rcompat's ~0.8 ms calls would start in the CPU caches torch.load's
~15 ms call just filled (~0.1-0.3 ms more), which torch's call hardly feels, so the note also prints that
figure (--alternated pairs). The row records wall time, the note CPU time (on a loaded machine torch's
wall time grows more than its CPU time: trust the CPU figures there). docs/models.md (Speed) has the
numbers measured. The second row runs both as a user would, each a fresh
process, interpreter start-up and imports included: `rcompat model inspect FILE` (~61-65 ms of CPU)
against `python -c "import torch; torch.load(...)"` (~1.6-1.7 s, most of it importing torch): ~0.038x.
docs/models.md (Speed) says where the time goes and why the walk is not the C unpickler.

    .venv/bin/python benchmarks/bench_model.py [--rounds 10] [--block 10] [--alternated 15] [--mib 1024] [--processes 7]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import record, timed

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "hostile"))
BIN = Path(sys.executable).parent


def checkpoint(path: Path, mib: int) -> Path:
    import torch

    torch.save({f"layer{i}.weight": torch.zeros(1 << 20) for i in range(max(1, mib // 4))}, path)  # 4 MiB each
    return path


def whole_processes(path: Path, runs: int, mib: int) -> bool:
    """The same comparison as a user meets it: `rcompat model inspect FILE` against a Python that imports
    torch and loads the file, each a fresh process (interpreter start-up included), alternated, best of
    `runs`; CPU time (user + system of the child) beside. Both run with compiled bytecode, as installed
    packages do (pip writes .pyc files): the children may write it, under a cache folder of their own
    (PYTHONPYCACHEPREFIX), and one run of each before timing writes it."""
    import resource

    argv = {"ours": [str(BIN / "rcompat"), "model", "inspect", str(path)],
            "theirs": [sys.executable, "-c", "import sys, torch; torch.load(sys.argv[1], weights_only=True, mmap=True)",
                       str(path)]}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(path.parent / "pycache")
    for side in ("ours", "theirs"):
        timed(argv[side], env=env)
    wall: dict[str, list[float]] = {"ours": [], "theirs": []}
    cpu: dict[str, list[float]] = {"ours": [], "theirs": []}
    for _ in range(runs):
        for side in ("ours", "theirs"):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall[side].append(timed(argv[side], env=env)[0])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[side].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    note = (f"CPU time: rcompat {min(cpu['ours']) * 1e3:.0f} ms, python -c 'import torch; torch.load(...)' "
            f"{min(cpu['theirs']) * 1e3:.0f} ms")
    print(note)
    return record("model", f"rcompat model inspect of the same {mib} MiB checkpoint, whole process",
                  min(wall["ours"]), "python -c 'import torch; torch.load(f, weights_only=True, mmap=True)'",
                  min(wall["theirs"]), goal=0.05, note=note)


def in_blocks(sides: dict, rounds: int, block: int) -> dict[str, tuple[float, float]]:
    """Each side's best wall and best CPU time (seconds) over `rounds` rounds of `block` calls of it in a row,
    the sides' order reversed every round (so both share the machine's drift)."""
    wall: dict[str, list[float]] = {side: [] for side in sides}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    order = list(sides)
    for _ in range(rounds):
        for side in order:
            for _ in range(block):
                c, w = time.process_time(), time.perf_counter()
                sides[side]()
                wall[side].append(time.perf_counter() - w)
                cpu[side].append(time.process_time() - c)
        order.reverse()
    return {side: (min(wall[side]), min(cpu[side])) for side in sides}


def hostile_set(d: Path) -> dict[str, Path]:
    """The hostile suite's files (its own builders), and two clean ones."""
    import io
    import struct
    import zipfile

    import test_models as h
    import torch

    files = {
        "os.system pickle": h.torch_zip(d / "evil.pt", h.system_pickle(d / "ran")),
        "zip bomb (50 MB of NONE)": h.torch_zip(d / "bomb.pt", b"\x80\x02" + b"N" * (50 << 20) + b".",
                                                compress=zipfile.ZIP_DEFLATED),
        "traversal member name": h.torch_zip(d / "trav.pt", b"\x80\x02}q\x00.", {"../../x": b"x"}),
        "marks 100,000 deep": h.torch_zip(d / "deep.pt", b"\x80\x02" + b"(" * 100_000 + b"t" * 100_000 + b"."),
        "length claiming 1 TB": h.torch_zip(d / "huge.pt", b"\x80\x02\x8e" + struct.pack("<Q", 1 << 40) + b"abc"),
    }
    full = io.BytesIO()
    h.torch_zip(full, b"\x80\x02}q\x00.", {"archive/data/0": b"\0" * 4096})
    (d / "cut.pt").write_bytes(full.getvalue()[:3000])
    files["truncated archive"] = d / "cut.pt"
    torch.save({"w": torch.ones(2)}, d / "clean.pt")
    torch.save({"w": torch.ones(2)}, d / "clean_legacy.pt", _use_new_zipfile_serialization=False)
    files["clean state_dict"], files["clean legacy"] = d / "clean.pt", d / "clean_legacy.pt"
    return files


def verdict(tool: str, path: Path) -> str:
    """What one tool says of one file, in a word, from its exit status and output."""
    argv = {"rcompat": [sys.executable, "-m", "rcompat", "model", "check", str(path), "--device", "cpu", "-q"],
            "picklescan": [str(BIN / "picklescan"), "--path", str(path)],
            "fickling": [sys.executable, "-c", _FICKLING, str(path)]}[tool]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "timeout (60 s)"
    if tool == "rcompat":
        return {0: "loads", 1: "flagged", 2: "refused"}.get(done.returncode, f"exit {done.returncode}")
    if tool == "picklescan":  # exit 1: dangerous globals; 2: a scan error
        return {0: "clean", 1: "flagged", 2: "error"}.get(done.returncode, f"exit {done.returncode}")
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else "error"


# fickling's CLI reads bare pickles only ("No pickle files detected" for a torch zip): its API scans each
# pickle of a zip (scan_zip_archive) or a file of stacked pickles (scan_file); the worst severity decides.
_FICKLING = """
import sys, zipfile, fickling
path = sys.argv[1]
try:
    found = fickling.scan_zip_archive(path, graceful=True).values() if zipfile.is_zipfile(path) else [fickling.scan_file(path, graceful=True)]
    bad = [r.severity.name for r in found if r.severity.name != "LIKELY_SAFE" or r.errors]
    print(("flagged: " + bad[0].lower()) if bad else "clean")
except Exception as exc:
    print("error: " + type(exc).__name__)
"""


def scanners() -> list[str]:
    out = ["rcompat"]
    for tool in ("picklescan", "fickling"):
        if importlib.util.find_spec(tool) is None or not (BIN / tool).is_file():
            print(f"{tool}: skipped (not installed in this environment: pip install {tool})")
        else:
            out.append(tool)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="rounds of a block of calls of each side (best of all)")
    ap.add_argument("--block", type=int, default=10, help="calls of one side in a row, in each round")
    ap.add_argument("--alternated", type=int, default=15, help="rounds of one call each, for the note")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--processes", type=int, default=7, help="alternating runs of each command (best of)")
    args = ap.parse_args()
    import torch

    from rcompat.models.reader import read_model

    with tempfile.TemporaryDirectory(prefix="rcompat-bench-model-") as tmp:
        path = checkpoint(Path(tmp) / "big.pt", args.mib)
        os.sync()  # the gigabyte just written is flushed before timing, not while
        sides = {"ours": lambda: read_model(path), "theirs": lambda: torch.load(path, weights_only=True, mmap=True)}
        blocks = in_blocks(sides, args.rounds, args.block)
        alternated = in_blocks(sides, args.alternated, 1)
        note = (f"CPU time in blocks of {args.block}: rcompat {blocks['ours'][1] * 1e3:.2f} ms, torch.load "
                f"{blocks['theirs'][1] * 1e3:.1f} ms ({blocks['ours'][1] / blocks['theirs'][1]:.3f}x); alternated call "
                f"by call: CPU {alternated['ours'][1] * 1e3:.2f} ms against {alternated['theirs'][1] * 1e3:.1f} ms "
                f"({alternated['ours'][1] / alternated['theirs'][1]:.3f}x), wall {alternated['ours'][0] * 1e3:.2f} ms "
                f"against {alternated['theirs'][0] * 1e3:.1f} ms")
        print(note)
        ok = record("model", f"model inspect of a {args.mib} MiB checkpoint (256 tensors), in process",
                    blocks["ours"][0], "torch.load(weights_only=True, mmap=True)", blocks["theirs"][0], goal=0.05,
                    note=note)
        ok = whole_processes(path, args.processes, args.mib) and ok
        path.unlink()
        hostile = hostile_set(Path(tmp))
        tools = scanners()
        rows = {label: {} for label in hostile}
        seconds = {}
        for tool in tools:
            start = time.perf_counter()
            for label, f in hostile.items():
                rows[label][tool] = verdict(tool, f)
            seconds[tool] = time.perf_counter() - start
        print(f"\n| file | {' | '.join(tools)} |\n|---|{'---|' * len(tools)}")
        for label, said in rows.items():
            print(f"| {label} | {' | '.join(said[t] for t in tools)} |")
        print(f"| seconds over the {len(hostile)} files (each a fresh process) | "
              f"{' | '.join(f'{seconds[t]:.1f}' for t in tools)} |")
        if (Path(tmp) / "ran").exists():
            print("a scanner RAN the os.system pickle")
            return 1
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
