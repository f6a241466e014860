"""`rcompat upgrade OLD NEW` on two roots that each hold a full torch installation, against `abidiff` on
libtorch_cpu.so alone (issue 13's goal: the whole scan takes at most the time abidiff needs for that one
library; ratio ≤ 1).

OLD: every torch/lib object of the torch 2.13.0+cpu wheel (460 MB); NEW: every one of the torch 2.14.1
cu130 wheel (libtorch_cuda.so included, ~1 GB); both with this machine's runtime libraries and the
g++-built extensions of fixtures/upgrade (one uses API 2.14.1 removed). Built by fixtures/upgrade/build.py
(wheel members cached outside the repository, roots hard-linked into a temporary directory).
The scan runs in a fresh `rcompat` process with RCOMPAT_NO_CACHE=1, so no persistent symbol-index cache
from an earlier run helps it; the page cache is warmed for both tools alike.

Run: .venv/bin/python benchmarks/bench_upgrade.py
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TORCH_CPU = "usr/local/lib/python3.11/dist-packages/torch/lib/libtorch_cpu.so"


def _builder():
    spec = importlib.util.spec_from_file_location("upgrade_fixture_build", REPO / "fixtures/upgrade/build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _warm(root: Path) -> None:
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                with open(path, "rb") as fh:
                    while fh.read(16 << 20):
                        pass


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-upgrade-") as tmp:
        roots = _builder().build_scenario(Path(tmp), libs=None)
        old, new = roots["old"], roots["new"]
        for root in (old, new):
            _warm(root)
        env = {**os.environ, "RCOMPAT_NO_CACHE": "1"}
        t = time.perf_counter()
        scan = subprocess.run([sys.executable, "-m", "rcompat", "upgrade", str(old), str(new), "--driver", "580.65.06",
                               "--format", "json", "--quiet"], capture_output=True, text=True, env=env, cwd=str(REPO))
        ours = time.perf_counter() - t
        if scan.returncode not in (0, 1):
            print(scan.stderr, file=sys.stderr)
            return 2
        t = time.perf_counter()
        done = subprocess.run(["abidiff", "--no-show-locs", str(old / TORCH_CPU), str(new / TORCH_CPU)],
                              capture_output=True, text=True)
        theirs = time.perf_counter() - t
        if done.returncode & 1:  # abidiff's error bit
            print(done.stderr, file=sys.stderr)
            return 2
        size = sum(f.stat().st_size for r in (old, new) for f in r.rglob("*") if f.is_file() and not f.is_symlink())
        print(f"roots: {size / 1e9:.2f} GB of files; rcompat upgrade exit {scan.returncode}, abidiff exit {done.returncode}")
        ok = record("upgrade", "upgrade scan of two full torch roots vs abidiff of libtorch_cpu.so alone", ours,
                    "abidiff --no-show-locs", theirs, goal=1.0,
                    note="torch 2.13.0+cpu -> 2.14.1+cu130 roots; fresh process, RCOMPAT_NO_CACHE=1")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
