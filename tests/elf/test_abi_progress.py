"""abi-diff's phases on a real terminal (reading old, reading new, diffing, --used-by); the report on
stdout is byte-identical to a run without a terminal."""
from __future__ import annotations


def test_abi_diff_phases_on_a_terminal_and_identical_output(demo, cli, tty_cli):
    args = ("elf", "abi-diff", str(demo["v1"]), str(demo["v2"]), "--used-by", str(demo["user_old_api"]),
            "--format", "json")
    code, out, terminal = tty_cli(*args)
    plain = cli(*args)
    assert code == plain.returncode == 12  # the fixture removes a symbol user_old_api imports
    for phase in ("reading old libdemo.so.1", "reading new libdemo.so.2", "diffing",
                  "--used-by 1/1: libuser_old_api.so", "rendering"):
        assert phase in terminal, phase
    assert out.decode() == plain.stdout and plain.stderr == ""
    quiet = tty_cli(*args, "--quiet")
    assert quiet[2] == "" and quiet[1] == out
