"""`rcompat soak`: argparse only here; the engine (and torch, in its child) loads when it runs."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_quiet_option, add_report_options, emit_report, timeout_seconds, whole_number

EPILOG = """\
examples:
  rcompat soak                                  the parity suite, 200 iterations, CPU
  rcompat soak --device cuda --iterations 500   on the GPU: allocator, cache and driver memory
  rcompat soak --cases train_step.py --series mem.csv --plot mem.png
  rcompat soak --side r --cases step.R          an R workload: soak_iteration(i) in step.R
  rcompat soak --format json -o soak.json       findings, verdicts and series for a program (docs/soak.md)

exit codes:
  0  no leak (flat, a cache that levels off; warnings pass unless --strict)
  1  a leak, or the child crashed or hung, or the workload raised
  2  rcompat's own error (bad option, no torch, a --cases file that does not load)
"""


def register(sub) -> None:
    p = sub.add_parser(
        "soak", help="run a workload many times in a child and judge its memory: leak, cache plateau, lazy GC",
        description="Run a workload repeatedly in an isolated child (Python or R, CPU or CUDA) and sample "
                    "memory after every iteration, before and after a forced collection: RSS, Python's "
                    "memory blocks or R's heap, and on CUDA the allocator's allocated and reserved bytes and "
                    "the driver's used memory. After the warm-ups the series are judged from bytes per "
                    "iteration against their noise: leak (with the slope and the iterations left until "
                    "memory runs out), cache growth to a plateau (ok), growth outside torch, or memory only "
                    "a collection returns (R's lazy GC). See docs/soak.md.",
        epilog=EPILOG)
    p.add_argument("--side", choices=("python", "r"), default="python",
                   help="python: PyTorch (default); r: an R script in an Rscript child")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where torch computes (default cpu)")
    p.add_argument("--iterations", type=whole_number(12, 100_000, "iterations"), default=200, metavar="N",
                   help="measured iterations after the warm-ups (default 200)")
    p.add_argument("--warmups", type=whole_number(0, 10_000, "iterations"), default=None, metavar="N",
                   help="iterations run first and not judged (default 5, rcompat/data/soak_rules.toml)")
    p.add_argument("--cases", metavar="FILE",
                   help="the workload instead of the parity suite: a .py file defining CASES = {'name': "
                        "function(inputs)} (each called once per iteration), or with --side r an .R file "
                        "defining soak_iteration <- function(i)")
    p.add_argument("--python", metavar="PATH", help="interpreter of the Python side (another venv's bin/python)")
    p.add_argument("--rscript", metavar="PATH", help="Rscript of the R side (default: R_HOME's, else PATH's)")
    p.add_argument("--threads", type=whole_number(0, 4096, "threads"), default=1, metavar="N",
                   help="torch.set_num_threads(N) in the Python child (default 1: memory does not depend on it, "
                        "and on a busy machine OpenMP's waits made the suite 100x slower with 2; 0: torch's own)")
    p.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0, metavar="N",
                   help="seed of the suite's inputs (default 0)")
    p.add_argument("--timeout", type=timeout_seconds, default=600.0, metavar="S",
                   help="seconds the whole run may take before the child is killed (default 600)")
    p.add_argument("--series", metavar="FILE", help="write the samples, one row per iteration, to FILE (.json or .csv)")
    p.add_argument("--plot", metavar="FILE", help="draw memory per iteration with the verdicts to FILE (.png, .svg, "
                                                  ".pdf; needs matplotlib: pip install 'rcompat[plot]')")
    add_report_options(p)
    add_quiet_option(p)
    p.set_defaults(func=run_soak)


def run_soak(args: argparse.Namespace) -> int:
    from rcompat.progress import progress_for
    from rcompat.soak import plot as plotting
    from rcompat.soak import series
    from rcompat.soak.findings import judge_all, to_report
    from rcompat.soak.runner import SoakOptions, run

    if args.series:  # refused before a minute of work, not after it
        series.check_target(args.series)
    if args.plot:
        plotting.check_target(args.plot)
    options = SoakOptions(side=args.side, device=args.device, iterations=args.iterations, warmups=args.warmups,
                          cases=args.cases, python=args.python, rscript=args.rscript, threads=args.threads,
                          seed=args.seed, timeout=args.timeout)
    with progress_for(args, label="rcompat soak") as progress:
        result = run(options, progress)
    report = to_report(result)
    if args.series:
        series.write(result, args.series)
        report.facts["soak"]["series_file"] = args.series
    if args.plot and result.samples:
        verdicts = [f for f in report.findings if f.id != "SOAK-RUN"] or report.findings  # the memory's, first
        worst = max(verdicts, key=lambda f: ("ok", "skip", "warn", "error", "fail").index(f.status.value))
        plotting.draw(result, judge_all(result), args.plot, f"rcompat soak: {worst.title}")
        report.facts["soak"]["plot_file"] = args.plot
    return emit_report(report, args)
