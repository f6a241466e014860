"""`rcompat lock | snapshot | scan | ci`: argument parsing only; handlers in rcompat.tools.cli."""
from __future__ import annotations

from rcompat.cli.common import add_command_group, add_report_options, timeout_seconds


def _handler(name: str):
    def run(args):
        from rcompat.tools import cli

        return getattr(cli, name)(args)
    return run


def register(sub) -> None:
    _lock(sub)
    _snapshot(sub)
    _scan(sub)
    _ci(sub)


def _min_confidence(parser, what: str, default: str) -> None:
    parser.add_argument("--min-confidence", default=default, choices=("unverified", "low", "medium", "high"),
                        help=f"{what} (default: {default})")


def _lock(sub) -> None:
    lock_sub = add_command_group(
        sub, "lock", metavar="LOCK_COMMAND", help="check an renv.lock or pak pkg.lock against the R rules",
        description="Check the R and package versions a lockfile pins against rcompat's R breakage rules.")
    c = lock_sub.add_parser(
        "check", help="check the pins of one lockfile",
        description="Read renv.lock (renv) or pkg.lock (pak/pkgdepends), detected from the content, and "
                    "evaluate the pinned R and package versions against the R rules. Exit 1 when a pin is "
                    "broken, 2 when the file is missing, not JSON, or of an unknown format.")
    c.add_argument("lockfile", metavar="FILE")
    c.add_argument("--rules", metavar="FILE", help="R rules table to use instead of rcompat/data/r_rules.toml")
    c.add_argument("--cuda", metavar="VERSION",
                   help="also check the pinned R torch against this CUDA version (the CUDA tables)")
    _min_confidence(c, "fail a pin only for claims at least this confident; a less confident claim is "
                       "reported as a warning", "unverified")
    add_report_options(c)
    c.set_defaults(func=_handler("lock_check"))


def _snapshot(sub) -> None:
    snap_sub = add_command_group(
        sub, "snapshot", metavar="SNAPSHOT_COMMAND", help="record the stack before an upgrade, diff it afterwards",
        description="Record R and its packages, Python and its packages, torch/CUDA/cuDNN/driver and the "
                    "CUDA/libtorch libraries on disk; diff two records.")
    s = snap_sub.add_parser("save", help="write a snapshot of this machine's stack to FILE (atomically)",
                            description="Write the stack as JSON to FILE (temp file, then rename).")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--skip", action="append", default=[], metavar="SECTION",
                   choices=("r", "python", "frameworks", "gpu", "libraries"),
                   help="leave a section out (repeatable): r, python, frameworks, gpu, libraries")
    s.add_argument("--timeout", type=timeout_seconds, default=60.0, metavar="S", help="seconds each child may take")
    s.set_defaults(func=_handler("snapshot_save"))
    d = snap_sub.add_parser(
        "diff", help="list what changed between two snapshots and which changes are risky",
        description="Compare two snapshots; changes the risk table (rcompat/data/snapshot_risks.toml) marks "
                    "fail make the exit code 1 (warn too with --strict).")
    d.add_argument("old", metavar="OLD")
    d.add_argument("new", metavar="NEW")
    d.add_argument("--risks", metavar="FILE", help="risk table to use instead of rcompat's")
    add_report_options(d)
    d.set_defaults(func=_handler("snapshot_diff"))


def _scan(sub) -> None:
    p = sub.add_parser(
        "scan", help="find deprecated or removed torch APIs in .py and .R files",
        description="Scan Python and R sources for uses of deprecated or removed torch (and R keras) APIs "
                    "listed in rcompat/data/deprecated_api.toml. Prints file:line:col with the replacement. "
                    "Exit 1 when a removed API is used (deprecated ones too with --strict).")
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    p.add_argument("--table", metavar="FILE", help="API table to use instead of rcompat's")
    add_report_options(p)
    p.set_defaults(func=_handler("scan"))


def _ci(sub) -> None:
    ci_sub = add_command_group(
        sub, "ci", metavar="CI_COMMAND", help="plan CI: a test matrix without the combinations known to break",
        description="Helpers for CI pipelines.")
    m = ci_sub.add_parser(
        "matrix", help="GitHub Actions strategy.matrix JSON minus broken combinations",
        description="The cartesian product of the given versions minus the cells that the R rules or the "
                    "CUDA tables mark fail, as GitHub Actions strategy.matrix JSON ({\"include\": [...]}). "
                    "Exclusions and their reasons go to stderr (github format) or into the JSON (json "
                    "format). Exit 1 when no cell is left.")
    m.add_argument("--r", metavar="V,V", help="R versions, e.g. 4.3,4.4,4.5")
    m.add_argument("--torch", metavar="V,V", help="R torch versions, e.g. 0.11.1,0.12.2,0.13.0")
    m.add_argument("--cuda", metavar="V,V", help="CUDA versions or cpu, e.g. cpu,12.4")
    m.add_argument("--keras", metavar="V,V", help="R keras versions")
    m.add_argument("--keras3", metavar="V,V", help="R keras3 versions")
    m.add_argument("--tensorflow", metavar="V,V", help="R tensorflow package versions")
    m.add_argument("--os", metavar="OS,OS", help="linux, windows, macos (rules may name an OS)")
    m.add_argument("--rules", metavar="FILE", help="R rules table to use instead of rcompat's")
    m.add_argument("--cuda-tables", metavar="DIR", help="CUDA tables directory to use instead of rcompat's")
    _min_confidence(m, "exclude a cell only for claims at least this confident; a less confident "
                       "claim keeps the cell, with a note", "medium")
    m.add_argument("--parity-baseline", metavar="FILE",
                   help="a committed `rcompat parity record`: each cell gets parity_record and parity_compare "
                        "commands that record R torch on its inputs and compare with it (docs/ci.md)")
    m.add_argument("--soak-cases", metavar="FILE.R",
                   help="an R file defining soak_iteration(i): each cell gets a soak command that runs it "
                        "repeatedly and fails on a memory leak (docs/soak.md)")
    m.add_argument("--format", "-f", choices=("github", "json"), default="github",
                   help="github: compact {\"include\": [...]} for fromJSON(); json: with exclusions and reasons")
    m.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    m.add_argument("--quiet", "-q", action="store_true", help="do not list exclusions on stderr")
    m.set_defaults(func=_handler("ci_matrix"))
