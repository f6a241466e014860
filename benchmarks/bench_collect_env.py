"""`rcompat cuda probe` against `python -m torch.utils.collect_env`, the tool users paste into issues.

Both start a fresh interpreter and report torch's build, CUDA and the driver. collect_env imports torch
in its own process (a broken CUDA stack can take it down); rcompat imports torch only in a child with a
timeout and adds NVML, the CUDA libraries on disk and the compatibility matrix. Prints best-of-N times,
the ratio, and asserts that both report the same torch version and CUDA build.

    .venv/bin/python benchmarks/bench_collect_env.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import sys

from _common import collect_env_torch, record, timed  # benchmarks/ is sys.path[0] when a benchmark runs


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat cuda probe vs torch.utils.collect_env")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    theirs = [timed([sys.executable, "-m", "torch.utils.collect_env"], timeout=300) for _ in range(args.repeat)]
    ours = [timed([sys.executable, "-m", "rcompat", "cuda", "probe", "--no-r", "--format", "json"], timeout=300)
            for _ in range(args.repeat)]
    collect_s, collect_out = min(theirs)
    rcompat_s, rcompat_out = min(ours)
    torch = json.loads(rcompat_out)["torch"]
    version, cuda = collect_env_torch(collect_out)
    same = version == torch["version"] and cuda == torch["cuda"]
    print(f"same torch version and CUDA build: {same} (torch {version}, CUDA {cuda})")
    record("bench_collect_env", "cuda probe --no-r (torch build, CUDA, driver)", rcompat_s,
           "python -m torch.utils.collect_env", collect_s,
           note="same torch version and CUDA build" if same else "TORCH FACTS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
