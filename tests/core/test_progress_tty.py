"""Progress on a real terminal: stderr on a pseudo-terminal shows which probe runs; stdout is the
same bytes as without a terminal (timestamps and timings normalised); --quiet shows nothing."""
from __future__ import annotations

import importlib.util
import json
import re

import pytest


def _normalised_json(text: bytes | str) -> dict:
    data = json.loads(text)
    data.pop("generated_at", None)
    data.get("facts", {}).pop("timings_s", None)
    for finding in data.get("findings", []):
        finding.pop("duration_s", None)  # measured: differs between two runs
    return data


def test_doctor_shows_its_checks_on_a_terminal_and_prints_the_same_json(cli, tty_cli):
    code, out, terminal = tty_cli("doctor", "--only", "python", "--format", "json")
    plain = cli("doctor", "--only", "python", "--format", "json")
    assert code == plain.returncode == 0
    assert "rcompat doctor: python interpreter" in terminal and "python torch" in terminal
    assert re.search(r"\[\d+\.\ds\]", terminal), "no elapsed time shown"
    assert terminal.endswith("\r"), "the status line was not cleared at the end"
    assert plain.stderr == "", "progress leaked into a piped stderr"
    assert _normalised_json(out) == _normalised_json(plain.stdout)
    # byte for byte, once the two run-dependent fields are put back to the same text
    assert _run_independent(out) == _run_independent(plain.stdout.encode()) and b"\r" not in out


def _run_independent(raw: bytes) -> bytes:
    raw = re.sub(rb'"generated_at": "[^"]*"', b'"generated_at": ""', raw)
    raw = re.sub(rb'"duration_s": [0-9.e-]+', b'"duration_s": 0', raw)
    return re.sub(rb'"timings_s": \{[^}]*\}', b'"timings_s": {}', raw)


def test_junit_is_the_same_with_and_without_a_terminal(cli, tty_cli):
    code, out, terminal = tty_cli("doctor", "--only", "python", "--format", "junit")
    plain = cli("doctor", "--only", "python", "--format", "junit")
    assert code == 0 and "rcompat doctor:" in terminal
    stamp = re.compile(r'(timestamp|time)="[^"]*"')
    assert stamp.sub("", out.decode()) == stamp.sub("", plain.stdout)


def test_quiet_on_a_terminal_shows_nothing(tty_cli):
    code, out, terminal = tty_cli("doctor", "--only", "python", "--format", "json", "--quiet")
    assert code == 0 and terminal == "" and json.loads(out)["findings"]


@pytest.mark.skipif(importlib.util.find_spec("rpy2") is None or importlib.util.find_spec("torch") is None,
                    reason="the race trial needs rpy2 and torch")
def test_race_counts_its_trials_on_a_terminal(tty_cli, cli):
    args = ("race", "--mode", "serialized", "--trials", "2", "--iterations", "2", "--workers", "1",
            "--device", "cpu", "--seed", "7", "--format", "json")
    code, out, terminal = tty_cli(*args)
    assert code == 0, terminal
    assert "serialized trial 1/2" in terminal and "serialized trial 2/2" in terminal
    assert json.loads(out)["summary"]["counts"]["fail"] == 0
    one_trial = tuple("1" if i == args.index("--trials") + 1 else a for i, a in enumerate(args))
    quiet = tty_cli(*one_trial, "--quiet")  # a trial fewer: one trial would show progress as well as two
    assert quiet[0] == 0 and quiet[2] == ""
