"""`rcompat elf abi-diff` and `rcompat elf patch-diff`: argument parsing and output only."""
from __future__ import annotations

import argparse

from rcompat.cli.common import add_quiet_option
from rcompat.errors import shown

ABI_EPILOG = """\
exit status (a bitmask, as abidiff(1) documents it):
  0   no ABI change
  4   the ABI changed in a compatible way (symbols or versions added, binding changed)
  12  (4|8) an incompatible change: a symbol, symbol version or SONAME removed or changed, an
      object's size changed; with --used-by, 8 is set only when a given dependent is broken
  2   rcompat's own error (missing or unreadable file, bad option), as for every rcompat command;
      abidiff's bit 1 is never set
"""

PATCH_EPILOG = """\
exit status: 0 the files are identical, 1 they differ (as cmp(1)), 2 rcompat's own error.
A PATCHED file that is no longer a valid ELF object is still compared byte by byte, with a warning.
"""


def register(sub) -> None:
    p = sub.add_parser("abi-diff", help="exported ABI drift between two builds of a library",
                       description="Compare the exported dynamic symbols (keyed by name and symbol version), "
                                   "object sizes, symbol versions, SONAME and needed libraries of two builds of "
                                   "a shared library, as abidiff does without debug info; with --used-by, say "
                                   "which change breaks a dependent library.",
                       epilog=ABI_EPILOG)
    p.add_argument("old", metavar="OLD", help="the library the dependents were built against")
    p.add_argument("new", metavar="NEW", help="the library installed now")
    p.add_argument("--filter", metavar="PATTERN", action="append",
                   help="only symbols whose mangled or demangled name matches this regular expression "
                        "(e.g. '^(at|c10|torch)::'); repeatable")
    p.add_argument("--used-by", metavar="LIB", nargs="+", default=[],
                   help="dependent libraries: mark the changes each one imports as breaking it")
    p.add_argument("--format", "-f", choices=("text", "json", "markdown"), default="text",
                   help="output format (default: text)")
    p.add_argument("--demangle", action="store_true", help="text format: print C++ names demangled")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    add_quiet_option(p)
    p.set_defaults(func=_abi_diff)

    p = sub.add_parser("patch-diff", help="byte-level diff of a patched library against the original",
                       description="Show what a patch changed in an ELF file: section tables side by side, "
                                   "changed byte runs with file offset, virtual address, section and "
                                   "containing symbol, symbol value deltas and an xxd-style hexdump. Files "
                                   "of different layout are compared section by section, with code aligned "
                                   "by symbol.",
                       epilog=PATCH_EPILOG)
    p.add_argument("original", metavar="ORIGINAL")
    p.add_argument("patched", metavar="PATCHED")
    p.add_argument("--hexdump", metavar="N", type=_count, default=8,
                   help="hexdump old and new bytes of the first N runs (default 8; 0 for none)")
    p.add_argument("--context", metavar="BYTES", type=_count, default=16,
                   help="unchanged bytes shown around each run in the hexdump (default 16)")
    p.add_argument("--format", "-f", choices=("text", "json", "markdown"), default="text",
                   help="output format (default: text)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    p.set_defaults(func=_patch_diff)


def _count(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {shown(text)}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def _abi_diff(args: argparse.Namespace) -> int:
    from rcompat.cli.common import write_output
    from rcompat.elf.abi.diff import abi_diff
    from rcompat.elf.abi.render import render_abi
    from rcompat.progress import progress_for

    with progress_for(args, label="rcompat abi-diff") as progress:
        diff = abi_diff(args.old, args.new, filter=args.filter, used_by=args.used_by, progress=progress)
        with progress.step("rendering"):
            text = render_abi(diff, args.format, demangle=args.demangle)
    write_output(text, args.output)
    return diff.exit_code


def _patch_diff(args: argparse.Namespace) -> int:
    import sys

    from rcompat.cli.common import write_output

    try:
        from rcompat.elf.patch.diff import patch_diff
    except ModuleNotFoundError as exc:
        if exc.name != "numpy":
            raise
        from rcompat.errors import RcompatError

        raise RcompatError("patch-diff needs numpy (pip install numpy, or rcompat[test])") from None

    diff = patch_diff(args.original, args.patched, runs=args.hexdump, context=args.context)
    for warning in (diff.warnings if args.output or args.format != "text" else ()):
        sys.stderr.write(f"rcompat: warning: {warning}\n")
    from rcompat.elf.patch.render import render_patch

    write_output(render_patch(diff, args.format), args.output)
    return 0 if diff.identical else 1
