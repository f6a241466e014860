"""`rcompat parity record | compare`: argparse only here; numpy and torch load when a command runs."""
from __future__ import annotations

import argparse
import math

from rcompat.errors import shown

from rcompat.cli.common import (add_command_group, add_quiet_option, add_report_options, timeout_seconds,
                                whole_number)


def register(sub) -> None:
    group = add_command_group(
        sub, "parity", metavar="PARITY_COMMAND",
        help="numerical parity: record seeded torch computations here, compare two records with tolerances",
        description="Record the outputs of a seeded suite (matmul, conv2d, softmax, layer norm, an MLP forward "
                    "and backward, an order-sensitive sum; float32 and float64, plus float16/bfloat16/TF32 on "
                    "CUDA) in one environment, then compare records from two environments (old vs new venv, "
                    "R torch vs PyTorch, CPU vs GPU). See docs/parity.md.")
    r = group.add_parser(
        "record", help="run the suite in an isolated child and write an .npz record",
        description="Run the suite in an isolated child (a crash or hang of torch is recorded, not fatal) and "
                    "write one .npz: the inputs (input/<name>), one array per output (matmul_f32, "
                    "mlp_backward_f64.grad_w1, ...) and a JSON manifest (versions, device, threads, BLAS, cuDNN, "
                    "TF32, seed, per-case status). Exit 0 when every case ran or was skipped, 1 when a case "
                    "failed (the file is written anyway), 2 on rcompat's own error.")
    r.add_argument("--output", "-o", metavar="FILE", required=True, help="the .npz to write (atomically)")
    given = r.add_mutually_exclusive_group()  # the reused inputs carry their own seed
    given.add_argument("--inputs", metavar="FILE", help="reuse the inputs (and seed) of this record, so both "
                                                        "sides compute on identical inputs")
    given.add_argument("--seed", type=whole_number(0, 2**32 - 1), metavar="N",
                       help="seed of the NumPy generator of the inputs (default 0)")
    r.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where torch computes (default cpu); cuda without a GPU records every case as skipped")
    r.add_argument("--threads", type=whole_number(1, 4096, "threads"), default=0, metavar="N",
                   help="torch.set_num_threads(N) in the child (default: torch's own choice)")
    r.add_argument("--side", choices=("python", "r"), default="python",
                   help="python: PyTorch (default); r: R torch, running rcompat/r_scripts/parity.R with Rscript")
    r.add_argument("--python", metavar="PATH", help="interpreter for the python side (another venv's "
                                                    "bin/python; it must import torch and numpy)")
    r.add_argument("--rscript", metavar="PATH", help="Rscript for the r side (default: R_HOME's bin/Rscript, else the one on PATH)")
    r.add_argument("--cases", metavar="FILE.py", help="add your own cases: a Python file defining "
                                                      "CASES = {'name': function(inputs) -> tensor}")
    r.add_argument("--timeout", type=timeout_seconds, default=600.0, metavar="S",
                   help="seconds the whole suite may take before the child is killed (default 600)")
    r.add_argument("--verbose", "-v", action="store_true", help="list every case, not only the failed ones")
    add_quiet_option(r)
    r.set_defaults(func=run_record)

    c = group.add_parser(
        "compare", help="compare two records: per output, max abs/rel error against the tolerance",
        description="Compare record B against the reference A, output by output: max absolute and relative "
                    "error, the worst element, the tolerance used (rcompat/data/parity_tolerances.toml, by "
                    "precision and devices; --rtol/--atol override) and which environment differences "
                    "(thread count, TF32, cuDNN, BLAS, torch version) may explain a drift. Exit 0 all within "
                    "tolerance, 1 an output outside it or missing on one side, 2 an unreadable or non-rcompat "
                    "file.")
    c.add_argument("a", metavar="A", help="reference record (e.g. the committed baseline)")
    c.add_argument("b", metavar="B", help="record to check against A")
    c.add_argument("--rtol", type=_tolerance, metavar="X", help="relative tolerance for every output")
    c.add_argument("--atol", type=_tolerance, metavar="Y", help="absolute tolerance for every output")
    add_report_options(c)
    c.set_defaults(func=run_compare)


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, not {shown(text)}")
    return value


def run_record(args: argparse.Namespace) -> int:
    import os

    from rcompat.errors import UsageError
    from rcompat.inputs import require_file
    from rcompat.parity.recording import RecordOptions, counts, record, summary_text
    from rcompat.progress import progress_for

    for option in ("inputs", "cases", "python"):
        if getattr(args, option):
            require_file(getattr(args, option), f"--{option}")
    if args.python and not os.access(args.python, os.X_OK):
        raise UsageError(f"--python {args.python}: not an executable file")
    options = RecordOptions(output=args.output, seed=args.seed, inputs_from=args.inputs, device=args.device,
                            threads=args.threads, side=args.side, python=args.python, rscript=args.rscript,
                            cases=args.cases, timeout=args.timeout)
    with progress_for(args, label="rcompat parity record") as progress:
        rec = record(options, progress)
    print(summary_text(rec, verbose=args.verbose), end="")
    return 1 if counts(rec)["error"] else 0


def run_compare(args: argparse.Namespace) -> int:
    from rcompat.cli.common import emit_report
    from rcompat.parity.comparison import compare

    return emit_report(compare(args.a, args.b, rtol=args.rtol, atol=args.atol), args)
