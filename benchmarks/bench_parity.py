"""`rcompat parity compare` against `torch.testing.assert_close`, the standard allclose with diagnostics.

Both judge the same two records (the built-in suite recorded once, and a copy with a 0.1% drift in
matmul_f32): rcompat reads and validates both files, checks that both sides had the same inputs
(by each input's size and CRC-32, decoding only those that differ: rcompat/parity/npzmembers.py) and
builds one finding per output (errors, worst element, tolerance, environment differences); the
baseline loads the same output arrays with numpy and calls assert_close on each pair with the same
rtol/atol. Goal: at most 1.5x. Prints best-of-N times and the ratio, and asserts that both flag exactly
the same outputs.

    .venv/bin/python benchmarks/bench_parity.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import best_of, record  # benchmarks/ is sys.path[0] when a benchmark runs

GOAL = 1.5  # issue 31


def make_records(folder: Path) -> tuple[Path, Path]:
    import numpy as np

    base, drifted = folder / "base.npz", folder / "drifted.npz"
    subprocess.run([sys.executable, "-m", "rcompat", "parity", "record", "-q", "-o", str(base)], check=True,
                   capture_output=True, timeout=600)
    with np.load(base, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["matmul_f32"] = (arrays["matmul_f32"] * 1.001).astype(np.float32)
    with open(drifted, "wb") as fh:
        np.savez(fh, **arrays)
    return base, drifted


def rcompat_failures(a: Path, b: Path) -> set[str]:
    from rcompat.parity.comparison import compare

    return {f.id[len("PARITY-"):] for f in compare(str(a), str(b)).findings if f.status.value == "fail"}


def assert_close_failures(a: Path, b: Path) -> set[str]:
    import numpy as np
    import torch

    from rcompat.parity.tolerances import tolerance_for

    failed = set()
    with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
        for name in x.files:
            if name == "manifest" or name.startswith("input/"):
                continue
            precision = "float64" if x[name].dtype == np.float64 else "float32"
            tol = tolerance_for(precision, "cpu-cpu")
            try:
                torch.testing.assert_close(torch.from_numpy(y[name]), torch.from_numpy(x[name]),
                                           rtol=tol.rtol, atol=tol.atol)
            except AssertionError:
                failed.add(name)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat parity compare vs torch.testing.assert_close")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rcompat-bench-parity-") as tmp:
        base, drifted = make_records(Path(tmp))
        ours, theirs = rcompat_failures(base, drifted), assert_close_failures(base, drifted)
        rcompat_s = best_of(args.repeat, lambda: rcompat_failures(base, drifted))
        tool_s = best_of(args.repeat, lambda: assert_close_failures(base, drifted))
    same = ours == theirs == {"matmul_f32"}
    record("parity", "compare two suite records (24 outputs, one drifted) vs torch.testing.assert_close per "
           "output", rcompat_s, "torch.testing.assert_close", tool_s, goal=GOAL,
           note=f"same failing outputs: {same}")
    print(f"same failing outputs: {same} (rcompat {sorted(ours)}, assert_close {sorted(theirs)})")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
