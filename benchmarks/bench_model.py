"""`rcompat model inspect` on a ~1 GiB torch.save checkpoint (issue 26: goal <= 0.05x) against
torch.load(weights_only=True, mmap=True) of the same file, both in process, best of --repeat; then
rcompat, picklescan and fickling (when installed: pip install picklescan fickling; each skipped with
the reason otherwise) as commands on the same hostile set (the builders of tests/hostile/test_models.py):
seconds over the set, and what each says of every file.

What is measured (2 shared cores, torch 2.13.0, Python 3.11): the 1 GiB file holds 256 tensors; its
data.pkl is 7,691 opcodes. The in-process row times `read_model(path)` whole: open, the zip directory
(columns from one split and one struct call: rcompat/models/archive.py), data.pkl's tensor records
(the first read alone, the rest as runs split out in C: rcompat/models/torchruns.py), the storages
checked against their members, and every TensorInfo made (nothing is left lazy for the renderer);
torch.load maps the file and builds 256 storages and tensors over it. CPU time, best of --repeat, the
two calls alternating in one process (each finds the CPU caches the other left): 2026-12-05, load
average 3.4-6.2, ~1.1-1.4 ms against ~14.7-16.3 ms (0.077-0.086x; the previous round's code, alternated
with this one: 1.6-1.8 ms, 0.10-0.11x): the goal (0.05x) is missed. On a loaded machine torch's wall
time grows more than its CPU time, so the row (wall) can print 0.05x there: trust the CPU note. Wall time is what the rows
record; the notes give both sides' CPU time. The second row runs both as a user would, each a fresh
process, interpreter start-up and imports included: `rcompat model inspect FILE` (~61-65 ms of CPU)
against `python -c "import torch; torch.load(...)"` (~1.6-1.7 s, most of it importing torch): ~0.038x.
docs/models.md (Speed) says where the time goes and why the walk is not the C unpickler.

    .venv/bin/python benchmarks/bench_model.py [--repeat 25] [--mib 1024] [--processes 7]
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

from _common import best_of, record, timed

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
    ap.add_argument("--repeat", type=int, default=25)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--processes", type=int, default=7, help="alternating runs of each command (best of)")
    args = ap.parse_args()
    import torch

    from rcompat.models.reader import read_model

    with tempfile.TemporaryDirectory(prefix="rcompat-bench-model-") as tmp:
        path = checkpoint(Path(tmp) / "big.pt", args.mib)
        os.sync()  # the gigabyte just written is flushed before timing, not while
        ours, theirs, cpu_ours, cpu_theirs = [], [], [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine
            for fn, wall, cpu in ((lambda: read_model(path), ours, cpu_ours),
                                  (lambda: torch.load(path, weights_only=True, mmap=True), theirs, cpu_theirs)):
                c = time.process_time()
                wall.append(best_of(1, fn))
                cpu.append(time.process_time() - c)
        note = f"CPU time: rcompat {min(cpu_ours) * 1e3:.1f} ms, torch.load {min(cpu_theirs) * 1e3:.1f} ms"
        print(note)
        ok = record("model", f"model inspect of a {args.mib} MiB checkpoint (256 tensors), in process", min(ours),
                    "torch.load(weights_only=True, mmap=True)", min(theirs), goal=0.05, note=note)
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
