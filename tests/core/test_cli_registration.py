"""The CLI registers only the command's own module when argv names one, and every command otherwise."""
from __future__ import annotations

import subprocess
import sys

from rcompat.cli import main as cli_main


def _commands(parser) -> list[str]:
    sub = next(a for a in parser._actions if a.dest == "command")
    return list(sub.choices)


def test_a_named_command_registers_only_its_own_module():
    assert _commands(cli_main.build_parser(["elf", "symbols", "x.so"])) == ["elf"]
    assert _commands(cli_main.build_parser(["--debug", "doctor"])) == ["doctor"]
    assert _commands(cli_main.build_parser(["model", "inspect", "x.pt"])) == ["model"]  # COMMAND_OWNERS


def test_every_command_owner_is_a_command_module_that_registers_that_command():
    for command, module in cli_main.COMMAND_OWNERS.items():
        assert module in cli_main.COMMAND_MODULES
        assert _commands(cli_main.build_parser([command])) == [command]


def test_no_command_or_one_without_an_owner_module_registers_every_command():
    every = _commands(cli_main.build_parser())
    assert {"doctor", "r", "cuda", "elf", "race", "maps", "explain"} <= set(every)
    assert _commands(cli_main.build_parser(["maps", "--help"])) == every  # `maps` lives in rcompat.race.cli
    assert _commands(cli_main.build_parser(["no-such-command"])) == every  # argparse lists them all


def test_help_still_lists_every_command_and_every_elf_command():
    top = subprocess.run([sys.executable, "-m", "rcompat", "--help"], capture_output=True, text=True)
    assert top.returncode == 0 and all(f"    {c} " in top.stdout for c in ("doctor", "elf", "race", "maps", "ci"))
    elf = subprocess.run([sys.executable, "-m", "rcompat", "elf", "--help"], capture_output=True, text=True)
    assert elf.returncode == 0
    assert all(c in elf.stdout for c in ("symbols", "deps", "missing", "versions", "runtimes", "coload", "abi-diff"))
