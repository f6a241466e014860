"""`rcompat doctor`: every available probe, one report."""
from __future__ import annotations

import argparse
import sys

from rcompat.cli.common import add_report_options, emit_report, timeout_seconds


def register(sub) -> None:
    from rcompat.doctor import AREA_MODULES

    p = sub.add_parser("doctor", help="run every available probe and print one report",
                       description="Run every available probe (R, Python, CUDA, ELF, race) and print one "
                                   "report. Exit 0 when all is ok/skip, 1 on a failing finding.")
    add_report_options(p)
    p.add_argument("--only", action="append", metavar="AREA",
                   help=f"run only this area (repeatable, or comma-separated): {', '.join(AREA_MODULES)}")
    p.add_argument("--timeout", type=timeout_seconds, default=None, metavar="S",
                   help="seconds each isolated child (R verification, CUDA init) may take (default 60)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcompat.doctor import run_doctor

    def progress(area: str) -> None:
        if not args.quiet and sys.stderr.isatty():
            sys.stderr.write(f"rcompat: checking {area}…\n")

    # run_doctor resolves the names before any probe runs: a bad one is a UsageError, exit 2
    report = run_doctor(args.only, timeout=args.timeout, progress=progress)
    return emit_report(report, args)
