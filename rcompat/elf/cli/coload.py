"""`rcompat elf coload FIRST… -- THEN…`: argparse only; the prediction is imported when it runs."""
from __future__ import annotations

import argparse
import os
import sys


def register(elf_sub) -> None:
    p = elf_sub.add_parser(
        "coload", help="predict loading THEN into a process that already loaded FIRST",
        description="Model a process that already loaded FIRST (and their dependencies), then dlopen()s THEN, "
                    "with ld.so's rules (soname reuse, global scope order, versions, RTLD_LOCAL/GLOBAL), "
                    "and print the errors ld.so would raise, silent hazards and whether the reverse order "
                    "works. Nothing is loaded. Exit 1 when loading would fail.",
        usage="rcompat elf coload [options] FIRST... [options] -- THEN...")
    p.__class__ = _then_after_double_dash(type(p))
    p.add_argument("first", nargs="+", metavar="FIRST")
    p.add_argument("--then", nargs="+", metavar="THEN", default=None, help=argparse.SUPPRESS)
    p.add_argument("--local", action="store_true", help="FIRST were loaded RTLD_LOCAL (R's dyn.load default)")
    p.add_argument("--host", action="append", default=[], metavar="HOST",
                   help="executable/library the process started with: a path, a command on PATH (python3) or "
                        "a soname (libR.so); default: what the libraries call for (the interpreter that "
                        "would import an extension module, libR.so for R API code)")
    p.add_argument("--ld-library-path", metavar="DIRS", default=None)
    p.add_argument("--root", metavar="DIR", default=None,
                   help="resolve inside DIR as if chrooted there (an unpacked image root): FIRST, THEN, --host "
                        "and every absolute path are read inside DIR")
    p.add_argument("--format", "-f", choices=("text", "json"), default="text")
    p.set_defaults(func=_coload)


def _then_after_double_dash(parser_class: type) -> type:
    """A parser that reads `-- THEN…` as `--then THEN…`. argparse gives all of FIRST to the first
    positional at once, so with plain `--` an option between FIRST and `--` left THEN unparsed."""
    class CoLoadParser(parser_class):
        def parse_known_args(self, args=None, namespace=None):
            if args is not None and "--" in args:
                i = list(args).index("--")
                args = [*args[:i], "--then", *args[i + 1:]]
            return super().parse_known_args(args, namespace)

    return CoLoadParser


def split_args(argv_first: list[str], then: list[str] | None) -> tuple[list[str], list[str]]:
    """FIRST and THEN; without `--`, the last library is THEN."""
    if then:
        return argv_first, then
    return argv_first[:-1], argv_first[-1:]


def _coload(args) -> int:
    from rcompat.elf.link.coload import coload
    from rcompat.errors import UsageError

    first, then = split_args(args.first, args.then)
    if not first or not then:
        raise UsageError("give FIRST... -- THEN... (at least one library on each side)")
    pred = coload(first, then, ld_library_path=args.ld_library_path, global_loaded=not args.local, host=args.host,
                  root=args.root)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(pred.to_dict(), indent=2, default=str) + "\n")
        return 0 if pred.ok else 1
    out = [f"loading {' '.join(then)} after {' '.join(first)}: " + ("works" if pred.ok else "FAILS")]
    for f in pred.failures[:20]:
        needed_by = f" (needed by {os.path.basename(f.object)})" if f.kind == "library not found" else ""
        out.append(f"  error: {f.message}{needed_by}"
                   + (f"\n         ({f.demangled})" if f.demangled and f.demangled != f.symbol else ""))
    if len(pred.failures) > 20:
        out.append(f"  … {len(pred.failures) - 20} more")
    for r in pred.reused[:10]:
        out.append(f"  reused: {r}")
    for h in pred.hazards[:20]:
        out.append(f"  hazard ({h.kind}): {h.message}")
    if pred.reverse is not None:
        out.append("reverse order (THEN first): " + ("works" if pred.reverse.ok else f"FAILS: {pred.reverse.first_error}"))
    out += [f"  {m}" for m in pred.matching]
    from rcompat.cli.common import write_output

    write_output("\n".join(out) + "\n", None)
    return 0 if pred.ok else 1
