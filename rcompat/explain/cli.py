"""`rcompat explain`: argparse only here; the engine loads when the command runs."""
from __future__ import annotations

import argparse
import sys

from rcompat.cli.common import add_report_options

EXAMPLES = """examples:
rcompat explain "libcudnn_cnn.so.9: cannot open shared object file"
rcompat explain --from-file session.log     (a whole log: UTF-8 or UTF-16)
some-command 2>&1 | rcompat explain -       (stdin: same limit as a file)
rcompat explain --check --from-file crash.log   (also confirm it here)
rcompat explain --list                      (the symptoms and classes known)"""


def register(sub) -> None:
    p = sub.add_parser(
        "explain", help="explain a pasted error text or a log (cause, confirming command, remedy)",
        description="Place error output: known symptoms (rcompat/data/symptoms.toml) first, then structural "
                    "classes that read the text's form (a missing library -> who provides it; an undefined "
                    "symbol -> whose it is and which side is too old; a CUDA/cuBLAS/cuDNN/NCCL/NVML code -> "
                    "what it means). Prints the cause, the rcompat command that confirms it (with the "
                    "library/symbol from the text) and the remedy. Exit 1 when a failure was recognised; 0 "
                    "with 'no known symptom matched', or when the text shows an error in the code rather "
                    "than the environment (a warn). Nothing is run unless --check is given.",
        epilog=EXAMPLES)
    p.add_argument("text", nargs="*", metavar="TEXT", help="the error text ('-' reads stdin)")
    p.add_argument("--from-file", metavar="FILE", help="read the text from FILE ('-' for stdin)")
    p.add_argument("--check", action="store_true",
                   help="confirm on this machine what the text names: is the library here, which version, "
                        "does it define the symbol (ELF tables read, never loaded)")
    p.add_argument("--list", action="store_true", help="list the known symptoms and classes and exit")
    p.add_argument("--symptoms", metavar="FILE", help="use this symptom table instead of rcompat's")
    add_report_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rcompat.cli.common import emit_report, write_output
    from rcompat.errors import UsageError
    from rcompat.explain.report import explain
    from rcompat.explain.stream import Guarded, input_pieces
    from rcompat.explain.symptoms import load_symptoms, symptom_list

    if args.symptoms is not None:
        from rcompat.inputs import require_file

        require_file(args.symptoms, "symptom table")
    symptoms = load_symptoms(args.symptoms)
    if args.list:
        from rcompat.renderers.text import DEFAULT_WIDTH, output_width

        to_stdout = not args.output or args.output == "-"
        write_output(symptom_list(symptoms, output_width(sys.stdout) if to_stdout else DEFAULT_WIDTH), args.output)
        return 0
    if not args.text and not args.from_file:
        raise UsageError("no error text given: pass it as an argument, with --from-file FILE, or '-' for stdin")
    pieces = Guarded(input_pieces(args.text, args.from_file))
    report = explain(pieces, symptoms, check=args.check)
    if pieces.blank:
        raise UsageError("no error text given: pass it as an argument, with --from-file FILE, or '-' for stdin")
    return emit_report(report, args)
