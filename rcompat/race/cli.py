"""`rcompat race` and `rcompat maps`: argparse only here; the engine loads when a command runs."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_quiet_option, add_report_options, emit_report, write_output


def register(sub) -> None:
    p = sub.add_parser(
        "race", help="reproduce concurrent R + torch allocations in one process, unsafe vs serialized",
        description="Run trials, each in its own child process, in which embedded R (rpy2) and Python torch "
                    "allocate memory from several threads. 'unsafe' calls R from the worker threads; "
                    "'serialized' confines every R call to the thread that started R (the recommended "
                    "pattern). Crashes, hangs, R errors, Python/CUDA errors and CUDA context switches are "
                    "counted by kind. Exit 0 unless the serialized pattern fails (or, with --strict, the "
                    "unsafe one reproduces a failure).")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="where Python torch allocates (default auto: cuda when available)")
    p.add_argument("--iterations", type=int, default=20, metavar="N", help="allocation rounds per worker (default 20)")
    p.add_argument("--workers", type=int, default=4, metavar="K", help="worker threads per trial (default 4)")
    p.add_argument("--trials", type=int, default=3, metavar="T", help="child processes per mode (default 3)")
    p.add_argument("--mode", choices=("unsafe", "serialized", "both"), default="both",
                   help="which pattern to run (default both, shown side by side)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="seconds after which a trial making no progress counts as a hang and is killed; one "
                        "still running or waiting for a CPU goes on, up to 5x this (default 30)")
    p.add_argument("--seed", type=int, default=None, help="seed of the workload plan (default: random, printed)")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace JSON (Perfetto, chrome://tracing)")
    p.add_argument("--no-r-stack-check", dest="r_stack_check", action="store_false",
                   help="switch off R's C stack check (rpy2's default) to let thread races reach memory")
    add_report_options(p)
    add_quiet_option(p)
    p.set_defaults(func=run_race)

    m = sub.add_parser(
        "maps", help="read a process's memory map: GPU driver mappings, R/Python heaps, duplicate runtimes",
        description="Parse /proc/PID/maps (default: this process) or a saved maps file: NVIDIA driver "
                    "mappings (nvidia-uvm, nvidiactl, nvidiaN, libcuda), the heap and large anonymous "
                    "regions, overlaps or adjacency between them, vm.mmap_min_addr, and runtime libraries "
                    "mapped twice from different files (libtorch, libc10, libstdc++, OpenMP, libcudart, "
                    "libcublas).")
    src = m.add_mutually_exclusive_group()
    src.add_argument("pid", nargs="?", type=int, help="process id (default: this rcompat process)")
    src.add_argument("--file", metavar="FILE", help="read a saved maps file instead of /proc")
    m.add_argument("--large-mib", type=float, default=64.0, metavar="MIB",
                   help="anonymous regions at least this big are listed as large (default 64)")
    add_report_options(m)
    m.set_defaults(func=run_maps)


def run_race(args: argparse.Namespace) -> int:
    from rcompat.progress import progress_for
    from rcompat.race.runner import run
    from rcompat.race.table import render_markdown, render_text

    with progress_for(args, label="rcompat race") as progress:
        result = run(device=args.device, iterations=args.iterations, workers=args.workers, mode=args.mode,
                     timeout=args.timeout, trace=args.trace, trials=args.trials, seed=args.seed,
                     r_stack_check=args.r_stack_check, progress=progress)
    report = result.to_report()
    if args.trace:
        report.facts["race"]["trace"] = args.trace
    prefix = {"text": render_text, "markdown": render_markdown}.get(args.format)
    if prefix and args.output and args.output != "-":  # "-" is stdout, as for every --output
        return _emit_with_prefix(report, args, prefix(result))
    if prefix:
        write_output(prefix(result), None)  # trial output (R's stderr) escaped like every printer
    return emit_report(report, args)


def _emit_with_prefix(report, args: argparse.Namespace, prefix: str) -> int:
    from rcompat.atomic import write_text_atomic
    from rcompat.renderers import render

    strict = bool(getattr(args, "strict", False))
    write_text_atomic(args.output, prefix + render(report, args.format, verbose=args.verbose, strict=strict))
    return report.exit_code(strict=strict)


def run_maps(args: argparse.Namespace) -> int:
    import math

    from rcompat.errors import UsageError
    from rcompat.race.mapscheck import maps_report

    if not (math.isfinite(args.large_mib) and args.large_mib > 0):  # nan would reach int() as a ValueError
        raise UsageError(f"--large-mib must be a positive number of MiB, not {args.large_mib:g}")
    report = maps_report(pid=args.pid, file=args.file, large_bytes=int(args.large_mib * 1024 * 1024))
    return emit_report(report, args)
