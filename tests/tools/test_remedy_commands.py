"""Every rcompat command a table names (explain's confirm commands, any `rcompat ...` in a remedy,
cause or message of rcompat/data/*) runs as written: the real CLI parser accepts it (issue 20:
`rcompat cuda` printed usage and exited 2). Also: each verification end has its own remedy."""
from __future__ import annotations

import csv
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from rcompat.cli.main import build_parser
from rcompat.isolate import ChildResult
from rcompat.r.verify_remedy import diagnose, end_kind, user_output

DATA = Path(__file__).resolve().parents[2] / "rcompat" / "data"
SAMPLE = {"library": "/opt/lib/libfoo.so", "requirer": "/opt/lib/libbar.so", "lib": "libcudart.so.12"}


def _texts():
    for path in sorted(DATA.glob("*.toml")):
        for rows in tomllib.loads(path.read_text(encoding="utf-8")).values():
            for row in rows if isinstance(rows, list) else []:
                for key, value in row.items() if isinstance(row, dict) else []:
                    for text in value if isinstance(value, list) else [value]:
                        if isinstance(text, str):
                            yield path.name, key, text
    for path in sorted(DATA.glob("*.csv")):
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
        for row in csv.DictReader(lines):
            for key, value in row.items():
                if isinstance(value, str):
                    yield path.name, key, value


def _commands():
    found = []
    for table, key, text in _texts():
        if key == "confirm":
            found.append((table, text))
        found.extend((table, m) for m in re.findall(r"`(rcompat [^`]+)`", text))
    return found


COMMANDS = _commands()


def test_commands_are_found():
    assert len(COMMANDS) > 40
    assert any("cuda probe" in c for _, c in COMMANDS)


@pytest.mark.parametrize("table, command", COMMANDS, ids=[f"{t}:{c[:50]}" for t, c in COMMANDS])
def test_command_parses_with_the_real_cli(table, command):
    filled = re.sub(r"\{(\w+)\}", lambda m: SAMPLE.get(m.group(1), "X"), command)
    argv = shlex.split(filled)
    assert argv[0] == "rcompat", command
    argv = [a for a in argv[1:] if "..." not in a]
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{table}: `{command}` does not parse (exit {exc.code})")
    assert getattr(args, "func", None), f"{table}: `{command}` names no runnable command"


def _child(**kw):
    base = dict(argv=["Rscript", "verify_torch.R"], returncode=None, timed_out=True, duration_s=60.0,
                stdout='{"step": "library(torch)"}\n{"step": "torch_randn(3, 3)"}\n', stderr="")
    return ChildResult(**{**base, **kw})


def test_every_verify_end_has_its_own_remedy():
    ends = {"hang": _child(timeout_reason="stalled"), "timeout": _child(timeout_reason="busy"),
            "starved": _child(timeout_reason="starved"), "SIGSEGV": _child(timed_out=False, returncode=-11),
            "SIGABRT": _child(timed_out=False, returncode=-6)}
    remedies = {}
    for kind, result in ends.items():
        assert end_kind(result, has_error=False) == kind
        diagnosis = diagnose(result)
        assert diagnosis.remedy and diagnosis.source, kind
        remedies[kind] = diagnosis.remedy
    lantern = diagnose(_child(timed_out=False, returncode=1), "Lantern is not loaded. Please use `install_torch()`")
    assert lantern.kind == "error" and lantern.symptom == "lantern-not-loaded"
    remedies["error"] = lantern.remedy
    assert len(set(remedies.values())) == len(remedies), remedies


def test_protocol_lines_are_dropped():
    assert user_output('{"step": "x"}\n *** caught segfault ***\n{"error": "e", "step": "y"}') == \
        " *** caught segfault ***"
