"""`rcompat explain` over a 10 MB log (issue 20: under 1 s) and over one hostile 1 MB line (issue 21:
a 50 KB line used to take 17 s), against `grep -F` searching the same log for the same literals.

The log is 10 MB of training-progress lines with the real error texts of fixtures/explain/corpus.toml
spread through it. Times: best of --repeat, in process (explain itself, the table loaded once) and as a
whole `rcompat explain --from-file` process. grep -F -c with every pattern's required literal is the
standard tool's floor for "find these texts in this file". Asserts that every corpus symptom is found.

    .venv/bin/python benchmarks/bench_explain.py [--repeat 3] [--mib 10]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from _common import best_of, record, timed  # benchmarks/ is sys.path[0] when a benchmark runs

REPO = Path(__file__).resolve().parent.parent


def build_log(mib: int) -> tuple[str, set[str]]:
    cases = tomllib.loads((REPO / "fixtures/explain/corpus.toml").read_text(encoding="utf-8"))["case"]
    filler = "".join(f"epoch {e:4d} step {s:6d} loss 0.{(e * 7919 + s) % 99991:05d} lr 3.0e-04 "
                     f"/home/user/project/data/shard-{s % 97:03d}.parquet\n" for e in range(3) for s in range(400))
    parts, size, i = [], 0, 0
    while size < mib * 1024 * 1024:
        parts.append(filler)
        parts.append(cases[i % len(cases)]["text"])
        size += len(filler) + len(cases[i % len(cases)]["text"])
        i += 1
    return "".join(parts), {s for c in cases[:i] for s in c["expect"]}


def main() -> int:
    ap = argparse.ArgumentParser(description="rcompat explain on a 10 MB log vs grep -F")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mib", type=int, default=10)
    args = ap.parse_args()
    from rcompat.explain import explain, load_symptoms

    symptoms = load_symptoms()
    text, expected = build_log(args.mib)
    found = {f.evidence.get("symptom") for f in explain(text, symptoms).findings}
    missing = expected - found
    if missing:
        raise SystemExit(f"explain missed {sorted(missing)} in the {args.mib} MB log")
    in_process = best_of(args.repeat, lambda: explain(text, symptoms))
    hostile = "a/" * (512 * 1024) + " liblantern.so" * 1000
    hostile_s = best_of(args.repeat, lambda: explain(hostile, symptoms))
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        log.write_text(text, encoding="utf-8")
        needles = Path(tmp) / "needles"
        needles.write_text("".join(f"{lit}\n" for s in symptoms for lit in s.literals if lit), encoding="utf-8")
        whole = min(timed([sys.executable, "-m", "rcompat", "explain", "--from-file", str(log),
                           "--format", "json"])[0] for _ in range(args.repeat))
        grep = shutil.which("grep")
        grep_s = best_of(args.repeat, lambda: subprocess.run([grep, "-c", "-F", "-f", str(needles), str(log)],
                                                              capture_output=True))
    print(f"explain {args.mib} MB in process: {in_process:.3f} s (goal < 1 s); whole process {whole:.3f} s; "
          f"hostile 1 MB line {hostile_s:.3f} s; grep -F {grep_s:.3f} s")
    ok = record("explain", f"explain over a {args.mib} MB log, in process", in_process, "grep -F -c", grep_s)
    ok &= record("explain", f"rcompat explain --from-file ({args.mib} MB), whole process", whole,
                 "grep -F -c", grep_s)
    return 0 if ok and in_process < 1.0 and hostile_s < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
