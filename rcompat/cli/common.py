"""Options and output shared by every subcommand that prints a report."""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Iterable

from rcompat.errors import shown

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up of every command)
if TYPE_CHECKING:  # the model and the renderers load with the report, not with the parser
    from rcompat.model import Report

EXIT_OK, EXIT_FINDING, EXIT_ERROR = 0, 1, 2
COMMAND_STARTED = time.monotonic()  # this module loads as the command starts (before its engine)
MAX_TIMEOUT_S = 3600.0


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter (wraps to the terminal, 80 columns when not one), except that a text written
    in lines (an epilog listing exit codes) keeps its lines and their indents, each wrapped under its
    own text column instead of run together or left at any length."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # argparse builds a formatter for every option it adds and asks shutil for the width each time:
        # importing shutil (and with it bz2 and lzma) was a few ms of every command's start-up.
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text.strip():
            return super()._fill_text(text, width, indent)
        import re
        import textwrap

        entries: list[list[str]] = []  # [line, hang]: a line indented to the previous one's text column
        for line in text.rstrip("\n").splitlines():  # continues it (an entry written over two lines)
            if entries and line.strip() and len(line) - len(line.lstrip()) == len(entries[-1][1]) > 0:
                entries[-1][0] += " " + line.strip()
                continue
            lead = re.match(r"\s*(?:\S+ {2,}(?=\S))?", line).group()  # "  12  text": text's column
            entries.append([line, " " * len(lead)])
        out = []
        for line, hang in entries:
            out.extend(textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent + hang,
                                     break_long_words=False, break_on_hyphens=False) or [""])
        return "\n".join(out)


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns without importing shutil: $COLUMNS, else the terminal of
    stdout, else 80."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def register_commands(sub, module_names: Iterable[str]) -> None:
    """Let each module add its subcommands through its `register(sub)`."""
    for name in module_names:
        importlib.import_module(name).register(sub)


def add_command_group(sub, name: str, *, metavar: str = "SUBCOMMAND", **parser_options):
    """Add the command `name`, whose subcommands do the work, and return the subparsers to add them to.
    Given without a subcommand it prints its help to stderr and exits 2, as `rcompat` alone does."""
    parser = sub.add_parser(name, **parser_options)

    def need_subcommand(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_ERROR

    parser.set_defaults(func=need_subcommand)
    return parser.add_subparsers(dest=f"{name}_command", metavar=metavar)


def timeout_seconds(text: str) -> float:
    """argparse type of every --timeout: nan, inf or <= 0 would reach the child helper (int(nan) there,
    or a child killed at once and reported as a finding) instead of being refused as a bad option."""
    try:  # ASCII only: float() also reads "٣" and "３" as 3, which no other option or version takes
        value = float(text) if text.isascii() else float("nan")
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_TIMEOUT_S:  # also false for nan
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds more than 0 and at most {MAX_TIMEOUT_S:g}, not {shown(text)}")
    return value


def whole_number(low: int, high: int, unit: str = ""):
    """argparse type of a bounded count (--jobs, --threads): a bad value is refused as an option,
    with the range in the message."""
    what = f"a whole number of {unit}" if unit else "a whole number"

    def parse(text: str) -> int:
        try:  # ASCII digits only, as every version and number rcompat reads; no 5,000-digit int()
            value = int(text) if text.isascii() and len(text.strip()) <= 20 else low - 1
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {what} from {low} to {high}, not {shown(text)}")
        return value

    return parse


def add_report_options(parser: argparse.ArgumentParser, formats=None, strict: bool = True) -> None:
    """--format (default: every renderer's format), --output, --strict, --verbose."""
    if formats is None:
        from rcompat.renderers import FORMATS as formats
    parser.add_argument("--format", "-f", choices=formats, default="text", metavar="FORMAT",
                        help=f"output format: {', '.join(formats)} (default: text)")
    parser.add_argument("--output", "-o", metavar="FILE",
                        help="write the report to FILE (atomically: a temp file, then rename) instead of stdout")
    if strict:
        parser.add_argument("--strict", action="store_true", help="count warn findings as failures (exit 1)")
    parser.add_argument("--verbose", "-v", action="store_true", help="text format: show evidence and sources")


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    """--quiet of every long command: no progress line on stderr (none is shown when piped anyway)."""
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress on stderr (progress is shown only when stderr is a terminal)")


def write_output(text: str, output: str | None, escape: bool = True) -> None:
    """Write `text` to `output` (a file, atomically, UTF-8) or stdout. Control characters are escaped
    (rcompat.renderers.escape.printable: newlines and tabs kept): names, paths and messages from
    inputs (ELF strings, a child's stderr, NVML strings) must not move a terminal's cursor or recolour
    it. Only the text renderer's own colours pass, with escape=False (it escapes its inputs itself)."""
    if escape:
        from rcompat.renderers.escape import printable

        text = printable(text)
    if output and output != "-":
        from rcompat.atomic import write_text_atomic

        write_text_atomic(output, text)
    else:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # `| head`: the reader has what it wanted
        except OSError as exc:
            from rcompat.errors import RcompatError

            raise RcompatError(f"cannot write the report to standard output: {exc.strerror or exc}") from None


def emit_report(report: Report, args: argparse.Namespace, prefix: str = "") -> int:
    """Render `report` as asked, write it (after `prefix`, e.g. a table the command prints above the
    findings), return the exit code the findings give."""
    from rcompat.model import share_duration
    from rcompat.renderers import render
    from rcompat.renderers.text import DEFAULT_WIDTH, output_width, use_colour

    strict = bool(getattr(args, "strict", False))
    fmt = getattr(args, "format", "text")
    output = getattr(args, "output", None)
    to_stdout = not output or output == "-"
    colour = fmt == "text" and to_stdout and use_colour(sys.stdout)
    width = output_width(sys.stdout) if to_stdout else DEFAULT_WIDTH
    # Findings no check timed (a command's own checks) share the command's time since it started.
    share_duration([f for f in report.findings if f.duration_s is None], time.monotonic() - COMMAND_STARTED)
    text = render(report, fmt, colour=colour, verbose=getattr(args, "verbose", False), strict=strict,
                  width=width)
    if colour:  # the renderer escaped the findings; the colours are its own
        from rcompat.renderers.escape import printable

        write_output(printable(prefix) + text, output, escape=False)
    else:
        write_output(prefix + text, output)
    return report.exit_code(strict=strict)


_KEPT_UNTIL_EXIT: list = []
_EXIT_HANDLERS_FIRST: list = []  # a request made with exit_handlers=True


def end_without_teardown(*results: object, exit_handlers: bool = False) -> None:
    """Ask for the process to end as soon as this command returns, keeping `results` (the command's
    large data) alive until then instead of freeing them object by object and finalizing the
    interpreter: ~13 ms of `elf symbols`' ~150 on libtorch_cpu.so (benchmarks/bench_elf_symbols.py).
    A command asks once its output is written and when it holds nothing that must be closed or
    flushed besides the standard streams. See exit_if_asked for when the request is honoured.

    `exit_handlers=True`: the atexit callbacks registered by then run first, as the interpreter's exit
    would run them, rather than keeping the process from ending early, for a command that has used the
    standard modules which register some (concurrent.futures brings logging.shutdown, a
    tempfile.TemporaryDirectory weakref.finalize's): `doctor`, whose teardown (its modules, pyelftools'
    and the report's objects freed one by one) took 60-150 ms after the report was written."""
    _KEPT_UNTIL_EXIT.append(results)
    if exit_handlers:
        _EXIT_HANDLERS_FIRST.append(True)


def exit_if_asked(code: int, as_program: bool) -> None:
    """End the process with `code` now (os._exit, after flushing the standard streams) when the command
    asked for it (end_without_teardown), rcompat runs as the program (`as_program`: main() called
    without argv, as the console script and `python -m rcompat` call it; never in-process callers such
    as tests or the R package), nothing is registered with atexit (coverage, logging, a thread pool;
    or the request asked to run those callbacks first) and no other thread runs; otherwise forget the
    request and return."""
    import atexit
    import os

    threading = sys.modules.get("threading")
    run_handlers = bool(_EXIT_HANDLERS_FIRST) and hasattr(atexit, "_run_exitfuncs")  # CPython's
    pending = 0 if run_handlers else getattr(atexit, "_ncallbacks", lambda: 1)()  # CPython's; elsewhere some
    asked = bool(_KEPT_UNTIL_EXIT)
    _KEPT_UNTIL_EXIT.clear()
    _EXIT_HANDLERS_FIRST.clear()
    if not (asked and as_program and not pending and (threading is None or threading.active_count() == 1)):
        return
    if run_handlers:  # as the interpreter's exit runs them, once no other thread is left (checked above)
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # rcompat.streams.settle already dealt with a failed stdout
            pass
    os._exit(code)
