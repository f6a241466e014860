"""`rcompat model inspect` on a ~1 GB torch.save checkpoint (issue 26: goal <= 0.05x) against
torch.load(weights_only=True, mmap=True) of the same file, both in process, best of --repeat; then
picklescan and fickling (when installed: pip install picklescan fickling; skipped with the reason
otherwise) on the same hostile set: time and which files each flags.

    .venv/bin/python benchmarks/bench_model.py [--repeat 3] [--mib 1024]
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import best_of, record

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "hostile"))


def checkpoint(path: Path, mib: int) -> Path:
    import torch

    tensors = {f"layer{i}.weight": torch.zeros(1 << 20) for i in range(mib // 4)}  # 4 MiB each
    torch.save(tensors, path)
    return path


def hostile_set(d: Path) -> dict[str, Path]:
    import test_models as h  # the hostile suite's own builders

    marker = d / "ran"
    files = {"os.system": h.torch_zip(d / "evil.pt", h.system_pickle(marker)),
             "deep nesting": h.torch_zip(d / "deep.pt", b"\x80\x02" + b"(" * 100_000 + b"t" * 100_000 + b"."),
             "traversal": h.torch_zip(d / "trav.pt", b"\x80\x02}q\x00.", {"../../x": b"x"})}
    import torch

    torch.save({"w": torch.ones(2)}, d / "clean.pt")
    files["clean"] = d / "clean.pt"
    return files


def flags_rcompat(path: Path) -> str:
    from rcompat.models.checks import DANGEROUS, normalize_global
    from rcompat.models.errors import ModelFileError
    from rcompat.models.reader import read_model

    try:
        info = read_model(path)
    except ModelFileError:
        return "refused"
    return "flagged" if any(normalize_global(g).startswith(DANGEROUS) for g in info.globals) else "clean"


def flags_cli(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    text = (done.stdout + done.stderr).lower()
    return "flagged" if done.returncode != 0 or "dangerous" in text or "unsafe" in text or "overtly" in text else "clean"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mib", type=int, default=1024)
    args = ap.parse_args()
    import torch

    from rcompat.models.reader import read_model

    with tempfile.TemporaryDirectory(prefix="rcompat-bench-model-") as tmp:
        path = checkpoint(Path(tmp) / "big.pt", args.mib)
        ours = best_of(args.repeat, lambda: read_model(path))
        theirs = best_of(args.repeat, lambda: torch.load(path, weights_only=True, mmap=True))
        ok = record("model", f"model inspect of a {args.mib} MiB checkpoint, in process", ours,
                    "torch.load(weights_only=True, mmap=True)", theirs, goal=0.05)
        hostile = hostile_set(Path(tmp))
        scanners = {"rcompat": None}
        for tool in ("picklescan", "fickling"):
            if importlib.util.find_spec(tool) is None or shutil.which(tool, path=str(Path(sys.executable).parent)) is None:
                print(f"{tool}: skipped (not installed: pip install {tool})")
            else:
                scanners[tool] = str(Path(sys.executable).parent / tool)
        for name, exe in scanners.items():
            start = time.perf_counter()
            verdicts = {}
            for label, f in hostile.items():
                argv = [exe, "--path", str(f)] if name == "picklescan" else [exe, "--check-safety", str(f)]
                verdicts[label] = flags_rcompat(f) if exe is None else flags_cli(argv)
            print(f"{name}: {time.perf_counter() - start:.2f} s over {len(hostile)} files: {verdicts}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
