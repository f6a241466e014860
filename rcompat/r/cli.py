"""`rcompat r …`: R facts, isolated verification, and the breakage rules. argparse only at import."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_command_group, add_report_options, emit_report, timeout_seconds, write_output

VERIFY_PACKAGES = ("torch", "keras", "keras3", "tensorflow")


def register(sub) -> None:
    rsub = add_command_group(sub, "r", help="R facts, torch/keras verification, R breakage rules",
                             description="What R is installed, with which torch/keras/tensorflow/reticulate, "
                                         "and does torch actually run. Everything that starts R runs in a "
                                         "child process with a timeout.")

    facts = rsub.add_parser("facts", help="print R facts (version, packages, compiler, reticulate's Python)",
                            description="Print R facts gathered by an rpy2 worker child (or an Rscript "
                                        "child when rpy2 fails or rcompat runs inside R). Loads no "
                                        "torch/keras/tensorflow code and does not initialise Python.")
    facts.add_argument("--format", "-f", choices=("text", "json"), default="text",
                       help="output format (default: text)")
    facts.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    _add_r_options(facts)
    facts.add_argument("--no-discover", action="store_true",
                       help="do not ask reticulate::py_discover_config() for its Python; report only "
                            "RETICULATE_PYTHON* variables")
    facts.set_defaults(func=run_facts)

    verify = rsub.add_parser("verify", help="run torch/keras/tensorflow in isolated Rscript children",
                             description="Run rcompat/r_scripts/verify_torch.R (torch_randn, matmul, "
                                         "cuda_is_available, GPU round trip on CUDA) and verify_keras.R "
                                         "(tf$constant, tf$matmul) in child processes with a timeout. A "
                                         "segfault or hang becomes a failing finding; packages that are "
                                         "not installed are skipped. Exit 1 when a verification fails.")
    verify.add_argument("--package", "-p", action="append", choices=VERIFY_PACKAGES,
                        help="verify only this package (repeatable; default: all installed)")
    _add_r_options(verify)
    add_report_options(verify)
    verify.set_defaults(func=run_verify)

    rules = rsub.add_parser("rules", help="list the R breakage rules, or check a stack against them",
                            description="Without --check, list the rules of rcompat/data/r_rules.toml. "
                                        "With --check, evaluate a stack of COMPONENT=VERSION pairs (R, "
                                        "R packages, python:<dist>, os) and report the rules that fire; "
                                        "exit 1 when one of them fails. Components a rule needs but the "
                                        "stack lacks keep that rule quiet.",
                            epilog="example: rcompat r rules --check R=4.5.0 torch=0.12.1 "
                                   "python:tensorflow=2.16.1 keras=2.15.0")
    rules.add_argument("--check", nargs="+", metavar="COMPONENT=VERSION",
                       help="the stack to evaluate, e.g. R=4.5.0 torch=0.12.0")
    rules.add_argument("--file", metavar="TOML", help="rules file (default: rcompat/data/r_rules.toml)")
    add_report_options(rules)
    rules.set_defaults(func=run_rules)


    rpy2 = rsub.add_parser("rpy2", help="print the pip requirement of the rpy2 that fits R",
                           description="Print the pip requirement (e.g. 'rpy2>=3.5.14,<3.6') of the rpy2 "
                                       "that fits the R on PATH, or R --r VERSION, from the [[rpy2]] rows "
                                       "of rcompat/data/r_rules.toml: rpy2 3.6 needs R 4.5's C API. For "
                                       "set-up scripts: pip install \"$(rcompat r rpy2)\".")
    rpy2.add_argument("--r", metavar="VERSION", help="the R version (default: ask the Rscript on PATH)")
    rpy2.set_defaults(func=run_rpy2)


def run_rpy2(args: argparse.Namespace) -> int:
    from rcompat.r.rpy2_fit import requirement

    version = args.r or _installed_r_version()
    write_output(requirement(version) + "\n", None)
    return 0


def _installed_r_version() -> str:
    from rcompat.errors import UsageError
    from rcompat.isolate import run_child
    from rcompat.r.host import locate_r

    install = locate_r()
    if not install:
        raise UsageError("no R found (R_HOME, PATH): give its version with --r")
    result = run_child([install.rscript, "--vanilla", "-e", "cat(R.version$major, R.version$minor, sep='.')"],
                       timeout=60)
    version = result.stdout.strip() if result.returncode == 0 else ""
    if not version:
        raise UsageError(f"{install.rscript} did not report R's version ({result.describe_end()}): give it with --r")
    return version


def _add_r_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lib", action="append", metavar="DIR",
                        help="put this R library first on .libPaths() (repeatable; like R_LIBS)")
    parser.add_argument("--engine", choices=("auto", "rpy2", "rscript"), default="auto",
                        help="how R facts are read: rpy2 worker child, Rscript child, or auto (rpy2 "
                             "unless rcompat runs inside R)")
    parser.add_argument("--timeout", type=timeout_seconds, default=60.0, metavar="S",
                        help="seconds each R child may run before it is killed (default 60)")


def _checked_libs(args: argparse.Namespace) -> list[str] | None:
    import os

    from rcompat.errors import UsageError

    for lib in args.lib or []:
        if not os.path.isdir(lib):
            raise UsageError(f"--lib {lib}: not a directory")
    return args.lib


def run_facts(args: argparse.Namespace) -> int:
    import json

    from rcompat.r.facts import probe

    facts = probe(timeout=args.timeout, lib_paths=_checked_libs(args), engine=args.engine,
                  discover_python=not args.no_discover)
    if args.format == "json":
        text = json.dumps(facts.to_dict(), indent=2) + "\n"
    else:
        from rcompat.r.facts_text import facts_text

        text = facts_text(facts)
    write_output(text, args.output)
    return 0 if facts.available or not facts.install else 1


def run_verify(args: argparse.Namespace) -> int:
    from rcompat.model import Report
    from rcompat.r.facts import probe
    from rcompat.r.verify import VERIFIERS, verify

    facts = probe(timeout=args.timeout, lib_paths=_checked_libs(args), engine=args.engine,
                  discover_python=False)
    report = Report(command="r verify")
    for package in args.package or VERIFIERS:
        report.add(verify(package, facts, timeout=args.timeout))
    report.facts = {"r": facts.to_dict()}
    return emit_report(report, args)


def run_rules(args: argparse.Namespace) -> int:
    from rcompat.model import Finding, Report, Status
    from rcompat.r.rules import evaluate, load_rules, parse_stack

    rules = load_rules(args.file)
    report = Report(command="r rules")
    if not args.check:
        if args.format == "text":
            write_output(_rules_table(rules), args.output)
            return 0
        for rule in rules:
            report.add(Finding(id=rule.id, area="r", status=rule.status, title=rule.title,
                               message=f"when {rule.describe_when()}: {rule.message}",
                               remedy=rule.remedy, source=rule.source, confidence=rule.confidence,
                               evidence={"when": rule.when}))
        report.facts = {"rules_file": str(args.file or "rcompat/data/r_rules.toml"), "count": len(rules)}
        emit_report(report, args)
        return 0
    stack = parse_stack(args.check)
    hits = evaluate(stack, rules)
    report.add(hit.to_finding("r") for hit in hits)
    if not hits:
        report.add(Finding(id="R-RULES", area="r", status=Status.OK, title="no rule fires on this stack",
                           message=", ".join(f"{k} {v}" for k, v in stack.items())))
    report.facts = {"stack": stack, "rules_checked": len(rules)}
    return emit_report(report, args)


def _rules_table(rules) -> str:
    lines = [f"{len(rules)} rules (rcompat/data/r_rules.toml)", ""]
    for rule in rules:
        lines.append(f"{rule.id}  [{rule.status.value}, confidence {rule.confidence}]")
        lines.append(f"    when  {rule.describe_when()}")
        lines.append(f"    {rule.title}")
        lines.append(f"    source: {rule.source}")
        lines.append("")
    from rcompat.renderers.text import wrap_page

    return wrap_page("\n".join(lines))
