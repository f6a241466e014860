"""Handlers of `rcompat lock check | snapshot save/diff | scan | ci matrix`.

Parsing lives in rcompat/cli/tools_cmd.py; each handler reads its input, calls one tool module and
writes the result. Own errors (missing file, bad table) raise RcompatError: exit 2, one line.
"""
from __future__ import annotations

import argparse
import sys

from rcompat.cli.common import emit_report, write_output


def _given_file(path: str | None, what: str) -> str | None:
    """A user-given table must exist as given (the data loader would look for a bare name in rcompat/data)."""
    from rcompat.inputs import require_file

    if path is not None:
        require_file(path, what)
    return path


def lock_check(args: argparse.Namespace) -> int:
    from rcompat.tools.lock import check_lockfile

    rules = _given_file(args.rules, "rules table")
    return emit_report(check_lockfile(args.lockfile, rules_path=rules, cuda=args.cuda,
                                                min_confidence=args.min_confidence), args)


def snapshot_save(args: argparse.Namespace) -> int:
    from rcompat.atomic import check_writable_target
    from rcompat.tools import snapshot

    check_writable_target(args.file)  # before minutes of probing, not after
    sections = tuple(s for s in snapshot.SECTIONS if s not in args.skip)
    snap = snapshot.collect(sections=sections, timeout=args.timeout)
    path = snapshot.save(args.file, snap)
    libs = len((snap.get("libraries") or {}).get("files") or {})
    r = snap.get("r") or {}
    py = snap.get("python") or {}
    summary = (f"rcompat: wrote {path}: R {r.get('version') or r.get('status', 'skipped')} "
               f"({len(r.get('packages') or {})} packages), Python {py.get('version', 'skipped')} "
               f"({len(py.get('packages') or {})} packages), {libs} CUDA/libtorch libraries")
    sys.stderr.write(summary + "\n")
    for section, error in snap.get("errors", {}).items():
        sys.stderr.write(f"rcompat: section {section} not recorded: {error}\n")
    return 0


def snapshot_diff(args: argparse.Namespace) -> int:
    from rcompat.tools import snapdiff, snapshot

    old, new = snapshot.load(args.old), snapshot.load(args.new)
    report = snapdiff.diff(old, new, snapdiff.load_risks(_given_file(args.risks, "risk table")), old_name=args.old, new_name=args.new)
    if args.format == "text":
        write_output(snapdiff.render_text(report), args.output)
        return report.exit_code(strict=args.strict)
    return emit_report(report, args)


def scan(args: argparse.Namespace) -> int:
    from rcompat.tools.scan import load_apis, render_text, scan as run

    report = run(args.paths, load_apis(_given_file(args.table, "API table")))
    if args.format == "text":
        write_output(render_text(report), args.output)
        return report.exit_code(strict=args.strict)
    return emit_report(report, args)


def ci_matrix(args: argparse.Namespace) -> int:
    from rcompat.tools.cimatrix import (add_parity_steps, add_soak_steps, describe_exclusions, parse_list,
                                       plan_matrix, render)

    dims = {"r": parse_list(args.r, "r"), "torch": parse_list(args.torch, "torch"),
            "cuda": parse_list(args.cuda, "cuda", allow_cpu=True), "keras": parse_list(args.keras, "keras"),
            "keras3": parse_list(args.keras3, "keras3"), "tensorflow": parse_list(args.tensorflow, "tensorflow"),
            "os": [o.lower() for o in parse_list(args.os, "os")]}
    if args.cuda_tables is not None:  # checked even when no --cuda cell would read it: a typo shows now
        from rcompat.inputs import require_dir

        require_dir(args.cuda_tables, "--cuda-tables directory")
    plan = plan_matrix(dims, rules_path=_given_file(args.rules, "rules table"), cuda_tables=args.cuda_tables,
                       min_confidence=args.min_confidence)
    if args.parity_baseline is not None:
        add_parity_steps(plan, args.parity_baseline)
    if args.soak_cases is not None:
        add_soak_steps(plan, args.soak_cases)
    write_output(render(plan, args.format), args.output)
    if args.format == "github" and not args.quiet:
        from rcompat.renderers.text import output_width, wrap

        width = output_width(sys.stderr)  # a CI log is read at 80 columns too
        for line in describe_exclusions(plan):
            sys.stderr.write("\n".join(wrap(line, "", width, "    ")) + "\n")
    if not plan.include:
        sys.stderr.write("rcompat: every cell of the matrix is excluded; nothing to run\n")
        return 1
    return 0
