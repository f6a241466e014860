"""`rcompat compile`: argparse only here; the engine (and torch, in its child) loads when it runs."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_quiet_option, add_report_options, emit_report, timeout_seconds, whole_number

EPILOG = """\
examples:
  rcompat compile                               the suite's float32 cases, CPU
  rcompat compile --cases mlp_forward_f32       one model (what `rcompat doctor --deep` runs)
  rcompat compile --device cuda                 on the GPU (needs Triton)
  rcompat compile --python /opt/new/bin/python  the interpreter of another environment
  rcompat compile --format json -o compile.json

exit codes:
  0  every case compiled and matches eager (warnings pass unless --strict: graph breaks, slower)
  1  torch.compile raised, fell back to eager, or computes something else; or its child crashed
  2  rcompat's own error (an unknown case, no torch in the interpreter)
"""


def register(sub) -> None:
    p = sub.add_parser(
        "compile", help="torch.compile the suite's models for real: compiled or fell back, why, accuracy, speed",
        description="Compile the parity suite's models (matmul, conv2d, softmax, layer norm, an MLP forward and "
                    "backward, ...) with torch.compile's default backend (inductor) in an isolated child with a "
                    "fresh kernel cache, and report per model: compiled or fell back to eager (dynamo's "
                    "counters, graph breaks, errors suppressed), the cause of a failure (no C++ compiler, "
                    "missing Python headers, no Triton on GPU, an unsupported Python), the compiled outputs "
                    "against eager with the parity tolerances, and the speed of both after warm-up. See "
                    "docs/compile.md.", epilog=EPILOG)
    p.add_argument("--cases", metavar="ID,ID", help="suite case ids (default: every float32 case; see "
                                                    "`rcompat parity record -v` for the ids)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where torch computes (default cpu)")
    p.add_argument("--python", metavar="PATH", help="interpreter to test (another venv's bin/python)")
    p.add_argument("--repeat", type=whole_number(1, 10_000, "calls"), default=20, metavar="N",
                   help="timed calls of each side after 3 warm-up calls (default 20)")
    p.add_argument("--timeout", type=timeout_seconds, default=900.0, metavar="S",
                   help="seconds the child may take for every case together (default 900)")
    add_report_options(p)
    add_quiet_option(p)
    p.set_defaults(func=run_compile)


def run_compile(args: argparse.Namespace) -> int:
    from rcompat.compile.findings import to_report
    from rcompat.compile.runner import CompileOptions, run
    from rcompat.progress import progress_for

    cases = [c.strip() for c in args.cases.split(",") if c.strip()] if args.cases else None
    options = CompileOptions(cases=cases, device=args.device, python=args.python, repeat=args.repeat,
                             timeout=args.timeout)
    with progress_for(args, label="rcompat compile") as progress:
        result = run(options, progress)
    return emit_report(to_report(result), args)
