"""`rcompat soak`: what sampling adds to the workload's own time, and the whole default run.

1. The cost of sampling: the soak child runs the default suite with sampling (two samples and a forced
   collection per iteration) and, in a second child, the same loop without it; the ratio is the
   sampled loop's time (workload + sampling) over the bare loop's workload time (goal <= 1.05x). The
   sampled run also reports its own split (sample_s / work_s), printed beside it.
2. `rcompat soak` with 200 iterations of the default suite, the whole command, against the one-minute
   budget of issue 27 (goal <= 1x).

    .venv/bin/python benchmarks/bench_soak.py [--iterations 100]
"""
from __future__ import annotations

import argparse
import json
import sys

from _common import record, timed  # benchmarks/ is sys.path[0] when a benchmark runs


def child_timing(iterations: int, sample: bool) -> dict:
    config = {"iterations": iterations, "warmups": 5, "sample": sample}
    _, out = timed([sys.executable, "-m", "rcompat.soak.child", json.dumps(config)])
    end = next(json.loads(line)["end"] for line in out.splitlines() if line.startswith('{"end"'))
    return end["timing"]


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat soak: sampling cost and the default run's time")
    ap.add_argument("--iterations", type=int, default=100)
    args = ap.parse_args()
    sampled = child_timing(args.iterations, True)
    bare = child_timing(args.iterations, False)
    own = sampled["sample_s"] / sampled["work_s"]
    ok = record("soak", f"{args.iterations} iterations of the parity suite, sampled (2 samples + gc per "
                        "iteration) vs the bare loop", sampled["work_s"] + sampled["sample_s"], "the bare loop",
                bare["work_s"], goal=1.05, note=f"within the sampled run: sampling {own:.1%} of the workload")
    print(f"within the sampled run: sampling {sampled['sample_s']:.3f} s on {sampled['work_s']:.3f} s of workload "
          f"({own:.1%})")
    whole, _ = timed([sys.executable, "-m", "rcompat", "soak", "--iterations", "200", "-q"])
    ok &= record("soak", "rcompat soak, 200 iterations of the default suite (whole command)", whole,
                 "the 60 s budget", 60.0, goal=1.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
