"""The `rcompat` command: parse arguments, dispatch, map errors to exit codes. Nothing else.

Each engine contributes its subcommands through a `register(subparsers)` function in a light module
(argparse only); handlers import their engine when they run, so `rcompat --help` and `rcompat elf
symbols` never import pandas, torch or rpy2.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rcompat import __version__
from rcompat.cli.common import EXIT_ERROR, EXIT_OK, HelpFormatter, exit_if_asked, register_commands
from rcompat.errors import RcompatError

COMMAND_MODULES = (
    "rcompat.cli.doctor_cmd",
    "rcompat.r.cli",
    "rcompat.cuda.cli",
    "rcompat.elf.cli",
    "rcompat.race.cli",
    "rcompat.explain.cli",
    "rcompat.cli.tools_cmd",
    "rcompat.upgrade_scan.cli",
    "rcompat.parity.cli",
    "rcompat.fleet.cli",
    "rcompat.soak.cli",
    "rcompat.compile.cli",
    "rcompat.models.cli",
)

# Commands whose module is not named after them (the rule of _owner_module): command -> its module.
COMMAND_OWNERS = {"model": "rcompat.models.cli"}


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> "None":  # one line, exit 2, like every other own error
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_ERROR)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: every command of COMMAND_MODULES, or, when argv names a command that its
    own module provides (`elf` -> rcompat.elf.cli), that module's commands alone, so that running one
    command does not import every other command's module (start-up of `rcompat elf symbols`)."""
    command = _command_word(argv or ())
    owner = _owner_module(command)
    if owner:
        parser, sub = _top_parser()
        register_commands(sub, (owner,))
        if command in sub.choices:
            return parser
    parser, sub = _top_parser()
    register_commands(sub, COMMAND_MODULES)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The command argv names: its first word that is not an option (rcompat's own options take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _owner_module(command: str | None) -> str | None:
    """The module of COMMAND_MODULES named after `command` (rcompat.<command>.cli, rcompat.cli.<command>_cmd),
    or the one COMMAND_OWNERS names for it."""
    if command is None:
        return None
    if command in COMMAND_OWNERS:
        return COMMAND_OWNERS[command]
    return next((m for m in COMMAND_MODULES if m in (f"rcompat.{command}.cli", f"rcompat.cli.{command}_cmd")), None)


def _top_parser() -> tuple[argparse.ArgumentParser, argparse.Action]:
    parser = _Parser(
        prog="rcompat",
        description="Diagnose why R + deep learning + GPU breaks on this machine.",
        epilog="Exit codes: 0 all ok/skip, 1 a failing finding (warn too with --strict), 2 rcompat's own "
               "error, 128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM). Run 'rcompat COMMAND --help' for each command.")
    parser.add_argument("--version", action="version", version=f"rcompat {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of rcompat's own errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    return parser, sub


def main(argv: Sequence[str] | None = None) -> int:
    from rcompat.termination import terminating_signals_interrupt

    from rcompat import mapguard
    from rcompat.streams import prepare, settle

    as_program = argv is None  # the console script, python -m rcompat (not tests, not the R package)
    argv = list(sys.argv[1:] if argv is None else argv)
    restore = prepare()  # closed, full or non-UTF-8 standard streams (rcompat/streams.py)
    try:
        with terminating_signals_interrupt(), mapguard.installed():  # SIGTERM/SIGHUP clean up as Ctrl-C
            code = _main(argv)                                      # does; a truncated mapped file too
    finally:
        settle()  # a stdout that failed must not turn the exit code into 120 at Python's exit flush
        restore()
    exit_if_asked(code, as_program)  # a command done with large data may skip the teardown
    return code


def _main(argv: list[str]) -> int:
    debug = "--debug" in argv
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return EXIT_ERROR
        _check_output_targets(args)
        return int(args.func(args) or 0)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP (rcompat.termination.Terminated)
        from rcompat.mapguard import FileChanged
        from rcompat.termination import exit_code

        if isinstance(exc, FileChanged):
            _say(f"rcompat: error: {exc}\n")
            return EXIT_ERROR

        _say(f"rcompat: {str(exc) or 'interrupted'}\n")
        return exit_code(exc)
    except BrokenPipeError:
        return EXIT_OK
    except MemoryError:  # an input larger than the memory this run may use: never swallowed, never exit 0
        sys.stderr.write("rcompat: error: out of memory: an input is larger than this run's memory allows "
                         "(see docs/security.md for the size limits of each kind of input)\n")
        return EXIT_ERROR
    except (RcompatError, OSError) as exc:
        if debug:
            raise
        sys.stderr.write(f"rcompat: error: {_one_line(exc)}\n")
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - never a traceback unless --debug
        if debug:
            raise
        sys.stderr.write(f"rcompat: internal error: {type(exc).__name__}: {_one_line(exc)} "
                         "(rerun with --debug for the traceback)\n")
        return EXIT_ERROR


def _say(text: str) -> None:
    try:  # after SIGHUP the terminal may be gone
        sys.stderr.write(text)
        sys.stderr.flush()
    except OSError:
        pass


def _check_output_targets(args: argparse.Namespace) -> None:
    """Every command writes --output/--trace atomically at the end; refuse a bad target up front."""
    for attr in ("output", "trace"):
        target = getattr(args, attr, None)
        if isinstance(target, str) and target and target != "-":
            from rcompat.atomic import check_writable_target

            check_writable_target(target)


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
