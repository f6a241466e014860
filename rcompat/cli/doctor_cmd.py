"""`rcompat doctor`: every available probe, one report."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_quiet_option, add_report_options, emit_report, timeout_seconds, whole_number


def register(sub) -> None:
    from rcompat.areas import AREA_MODULES

    p = sub.add_parser("doctor", help="run every available probe and print one report",
                       description="Run every available probe (R, Python, CUDA, ELF, race) and print one "
                                   "report. Areas run concurrently; the report order is fixed. Exit 0 when "
                                   "all is ok/skip, 1 on a failing finding.")
    add_report_options(p)
    p.add_argument("--only", action="append", metavar="AREA",
                   help=f"run only this area (repeatable, or comma-separated): {', '.join(AREA_MODULES)}")
    p.add_argument("--timeout", type=timeout_seconds, default=None, metavar="S",
                   help="seconds each isolated child (R verification, CUDA init) may take (default 60)")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the caches under $XDG_CACHE_HOME/rcompat (symbol indexes, "
                        "torch's and R's facts, the race trial that passed); RCOMPAT_NO_CACHE=1 does the same")
    p.add_argument("--jobs", "-j", type=whole_number(1, 64), default=None, metavar="N",
                   help="areas run at once (default: all of them, at most the CPU count + 4; 1 runs them one by one)")
    p.add_argument("--deep", action="store_true",
                   help="also run the checks that take minutes: torch.compile of one model, for real (the "
                        "compile area; `rcompat compile` tests every model)")
    p.add_argument("--models", metavar="FILE|DIR", action="append", default=[],
                   help="also check these saved models against this machine's torch and GPUs (the findings of "
                        "`rcompat model check`, area models); repeatable")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import gc

    # A run of seconds that makes few cycles, most of its objects living to the end: Python's cyclic
    # collector found little and cost ~8% of this process's CPU in a cold run (its imports and the
    # ELF reading). Off for the command line's doctor only; a caller of run_doctor keeps its own setting.
    gc.disable()
    try:
        return _run(args)
    finally:
        gc.enable()


def _run(args: argparse.Namespace) -> int:
    from rcompat.areas import run_doctor
    from rcompat.progress import progress_for

    models = getattr(args, "models", None)
    if models:  # a model path that is not there is bad input: exit 2 before any probe runs
        from rcompat.models.reader import find_models

        find_models(models)
    # run_doctor resolves the names before any probe runs: a bad one is a UsageError, exit 2
    from rcompat.areas import DoctorInterrupted

    try:
        with progress_for(args, label="rcompat doctor") as progress:
            report = run_doctor(args.only, timeout=args.timeout, progress=progress, jobs=args.jobs,
                                use_cache=not args.no_cache, deep=args.deep)
            if models:
                from rcompat.models.engine import add_model_verdicts

                add_model_verdicts(report, models, progress=progress)
    except DoctorInterrupted as stopped:  # what finished is written, then the exit code says why it ended
        emit_report(stopped.report, args)
        raise stopped.cause from None
    code = emit_report(report, args)
    from rcompat.cli.common import end_without_teardown

    end_without_teardown(report, exit_handlers=True)  # written: no need to free every module and object
    return code
