"""`rcompat fleet run|report|health-check` (argparse only; the engine is imported when a command runs)."""
from __future__ import annotations

import argparse

from rcompat.cli.common import (EXIT_ERROR, add_command_group, add_quiet_option, add_report_options,
                                timeout_seconds)



def register(sub) -> None:
    fleet = add_command_group(
        sub, "fleet", help="the doctor on every node of a cluster, and which nodes differ",
        description="Run the doctor on every node of a Slurm partition or allocation, read any set of node "
                    "reports, and say which nodes differ from the rest and how. See docs/fleet.md.")
    _register_run(fleet)
    _register_report(fleet)
    _register_health(fleet)


def _areas(values):
    return [a.strip() for v in values or () for a in v.split(",") if a.strip()]


def _register_run(fleet) -> None:
    p = fleet.add_parser(
        "run", help="run the doctor on every node through srun and collect one report per node",
        description="Run the doctor on every node through Slurm (one srun step, one task per node), collect "
                    "each node's JSON report into DIR/<node>.json through srun's own output (no shared "
                    "filesystem needed), then print the fleet report. A node that does not answer (down, "
                    "drained, node failure, rcompat missing there, rcompat's own error, timed out) gets a "
                    "stand-in report with an error finding saying why.",
        epilog="examples:\n"
               "  rcompat fleet run -p gpu -o fleet/\n"
               "      every node of partition gpu\n"
               "  rcompat fleet run -w 'n[1-16]' -t 5 --only system,cuda\n"
               "      16 nodes, a 5-minute step\n"
               "  salloc -N 8 rcompat fleet run -o fleet/\n"
               "      the nodes of an allocation\n"
               "  rcompat fleet run -p gpu --command '/opt/rc/bin/rcompat doctor --format json'\n"
               "      another per-node command (another install path on the nodes)\n"
               "exit codes: 0 every node answered and agrees, 1 a node fails, gave no report or differs in a "
               "fact that must agree, 2 rcompat's own error")
    p.add_argument("--output", "-o", dest="reports_dir", required=True, metavar="DIR",
                   help="directory for the node reports (<node>.json, each written atomically; made if missing)")
    p.add_argument("--partition", "-p", help="every node of this partition (down/drained ones reported, not run)")
    p.add_argument("--nodelist", "-w", metavar="HOSTLIST", help="these nodes, as a Slurm hostlist ('n[1-16,18]')")
    p.add_argument("--account", "-A", help="Slurm account for the step")
    p.add_argument("--time", "-t", dest="time_limit", metavar="LIMIT", help="Slurm time limit of the step (srun -t)")
    p.add_argument("--only", action="append", metavar="AREA", help="doctor areas to run on each node (repeatable)")
    p.add_argument("--command", metavar="CMD",
                   help="the per-node command instead of this interpreter's `-m rcompat doctor --format json` "
                        "(shell words; must print one rcompat JSON report)")
    p.add_argument("--srun-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for srun (repeatable), e.g. --srun-arg=--reservation=maint")
    p.add_argument("--timeout", type=timeout_seconds, default=900.0, metavar="S",
                   help="cancel the step after S seconds (default 900); nodes not done are reported")
    from rcompat.renderers import FORMATS

    p.add_argument("--format", "-f", choices=FORMATS, default="text", metavar="FORMAT",
                   help=f"fleet report format: {', '.join(FORMATS)} (default: text)")
    p.add_argument("--report", dest="output", metavar="FILE",
                   help="write the fleet report to FILE (atomically) instead of stdout")
    p.add_argument("--strict", action="store_true", help="count warn findings and differences as failures")
    p.add_argument("--verbose", "-v", action="store_true", help="text format: show evidence and sources")
    add_quiet_option(p)
    p.set_defaults(func=_run)


def _register_report(fleet) -> None:
    p = fleet.add_parser(
        "report", help="compare any set of rcompat JSON reports: statuses by node, facts that differ",
        description="Read rcompat JSON reports (directories of <node>.json, or files; from `fleet run`, a "
                    "Kubernetes DaemonSet, Ansible, a shared disk) and say, for each finding, its status on "
                    "each node with the minority named, and every fact that differs between nodes with its "
                    "majority value and outliers. Nodes are written as Slurm hostlists.",
        epilog="examples:\n"
               "  rcompat fleet report fleet/\n"
               "      text, one line per finding\n"
               "  rcompat fleet report fleet/ -f html -o fleet.html\n"
               "      the node x finding grid\n"
               "  rcompat fleet report a.json b.json -f junit\n"
               "      one test case per node and finding\n"
               "exit codes: 0 all nodes pass and agree, 1 a node fails or differs in a fact that must agree "
               "(warn differences too with --strict), 2 rcompat's own error")
    p.add_argument("reports", nargs="+", metavar="DIR|FILE", help="reports: directories of *.json, or files")
    add_report_options(p)
    add_quiet_option(p)
    p.set_defaults(func=_report)


def _register_health(fleet) -> None:
    p = fleet.add_parser(
        "health-check", help="a fast subset of the doctor for Slurm's HealthCheckProgram; exit 0/1, one line",
        description="Run a fast subset of the doctor within a time budget and print one line: why the node is "
                    "healthy or not. Exit 0 healthy, 1 a failing finding, 2 rcompat's own failure or time-out. "
                    "With --drain, when slurmd runs this as HealthCheckProgram, a `fail` finding drains the node "
                    "(scontrol update State=DRAIN Reason=<the line>); rcompat's own failure never drains.",
        epilog="examples:\n"
               "  rcompat fleet health-check\n"
               "      system, python, cuda within 45 s\n"
               "  rcompat fleet health-check --drain --only cuda\n"
               "      as HealthCheckProgram (see docs/fleet.md)\n"
               "  rcompat fleet health-check --prometheus /var/lib/prometheus/node-exporter/rcompat.prom\n"
               "      also the findings for node_exporter's textfile collector")
    p.add_argument("--only", action="append", metavar="AREA", help="doctor areas (default: system, python, cuda)")
    p.add_argument("--budget", type=timeout_seconds, default=45.0, metavar="S",
                   help="seconds the check may take in all (default 45; HealthCheckProgram is killed at 60)")
    p.add_argument("--drain", action="store_true",
                   help="drain this node on a fail finding, only when run by slurmd as HealthCheckProgram")
    p.add_argument("--strict", action="store_true", help="count warn findings as failures")
    p.add_argument("--prometheus", metavar="FILE",
                   help="also write the findings as a node_exporter textfile (atomically) to FILE")
    p.set_defaults(func=_health)


def _emit_fleet(report, args) -> int:
    from rcompat.cli.common import emit_report

    if args.format == "junit":
        from rcompat.cli.common import write_output
        from rcompat.renderers.fleet_junit import render_fleet_junit

        write_output(render_fleet_junit(report, strict=args.strict), args.output)
        return report.exit_code(strict=args.strict)
    return emit_report(report, args)


def _report(args: argparse.Namespace) -> int:
    from rcompat.fleet.aggregate import Aggregator
    from rcompat.fleet.reader import read_reports, report_files
    from rcompat.fleet.view import fleet_report
    from rcompat.progress import progress_for

    files = report_files(args.reports)
    aggregator = Aggregator()
    with progress_for(args, label="rcompat fleet report") as progress:
        for i, (node, report) in enumerate(read_reports(files), 1):
            aggregator.add(node, report)
            if i % 500 == 0:
                progress.note(f"{i}/{len(files)} reports")
    return _emit_fleet(fleet_report(aggregator), args)


def _run(args: argparse.Namespace) -> int:
    import shlex
    from pathlib import Path

    from rcompat.errors import UsageError
    from rcompat.fleet.aggregate import Aggregator
    from rcompat.fleet.reader import read_reports
    from rcompat.fleet.runner import run_fleet
    from rcompat.fleet.view import fleet_report
    from rcompat.progress import progress_for

    try:
        command = shlex.split(args.command) if args.command else None
    except ValueError as exc:
        raise UsageError(f"--command: {exc}") from None
    if args.command is not None and not command:
        raise UsageError("--command is empty")
    with progress_for(args, label="rcompat fleet run") as progress:
        run = run_fleet(Path(args.reports_dir), nodelist=args.nodelist, partition=args.partition,
                        account=args.account, time_limit=args.time_limit, command=command,
                        only=_areas(args.only), timeout=args.timeout, srun_args=args.srun_arg, progress=progress)
    aggregator = Aggregator()
    for node, report in read_reports(run.files):
        aggregator.add(node, report)
    return _emit_fleet(fleet_report(aggregator, command="fleet run"), args)


def _health(args: argparse.Namespace) -> int:
    import sys

    from rcompat.fleet.health import DEFAULT_AREAS, health_check

    if args.prometheus:
        from rcompat.atomic import check_writable_target

        check_writable_target(args.prometheus)
    result = health_check(areas=_areas(args.only) or DEFAULT_AREAS, budget=args.budget, strict=args.strict,
                          drain=args.drain)
    print(result.reason, flush=True)
    if result.drain_note and args.drain:
        sys.stderr.write(f"rcompat: {result.drain_note}\n")
    if args.prometheus and result.report is not None:
        from rcompat.atomic import write_text_atomic
        from rcompat.renderers import render

        write_text_atomic(args.prometheus, render(result.report, "prometheus"))
    return result.exit_code if result.exit_code in (0, 1) else EXIT_ERROR
