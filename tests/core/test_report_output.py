"""Every command that prints findings, over real outputs (issue 20.4, 20.5, 21.6):

- ids are unique within a report and the same on a second run (docs/report-schema.md's rule);
- text fits 80 columns when not on a terminal; only a single unbreakable token (a path, a symbol)
  may run past it, alone on its line after the indent; every --help fits too;
- no line of a report repeats another, and no list in a title or message names an item twice.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "fixtures"
WIDTH = 80

# Each command that prints a findings report, run on this machine's real state or a repository fixture.
COMMANDS = {
    "doctor": ["doctor", "--no-cache"],  # the second run (outputs())
    "matrix check": ["matrix", "check", "--driver", "535.104", "--cuda", "12.4", "--torch", "2.3.0",
                     "--rtorch", "0.12.0"],
    "matrix validate": ["matrix", "validate"],
    "matrix validate (contradictory)": ["matrix", "validate", "--tables", str(REPO / "tests/cuda/tables_contradictory")],
    "r rules": ["r", "rules", "--check", "R=4.5.0", "torch=0.12.1", "python:tensorflow=2.16.1", "keras=2.15.0"],
    "lock check": ["lock", "check", str(FIX / "lock/renv-broken.lock"), "--cuda", "12.4"],
    "maps": ["maps", "--file", str(FIX / "maps/r_reticulate_cuda_two_libtorch.maps")],
    "snapshot diff": ["snapshot", "diff", str(FIX / "snapshots/before.json"), str(FIX / "snapshots/after.json")],
    "scan": ["scan", str(FIX / "scan/project")],
    "r verify": ["r", "verify"],
    "explain": ["explain", "--from-file", str(FIX / "logs" / "lantern-not-loaded.log")],
}


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The real CLI in a fresh interpreter, as tests/conftest.py's `cli` (module-wide here)."""
    full_env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    return subprocess.run([sys.executable, "-m", "rcompat", *args], capture_output=True, text=True, timeout=300,
                          env={**full_env, **(env or {})}, cwd=str(REPO))


@pytest.fixture(scope="module")
def outputs():
    """{name: (json report, second json report, text)} of every command, run once per module. The
    doctor's first run fills the session's cache and its second probes afresh (--no-cache), so the
    ids must also survive the cache; its text comes from the cache (a cold doctor costs seconds)."""
    got = {}
    for name, args in COMMANDS.items():
        cached = [a for a in args if a != "--no-cache"]
        first, second, text = (cli(*cached, "--format", "json"), cli(*args, "--format", "json"),
                               cli(*cached, env={"COLUMNS": ""}))
        assert first.returncode in (0, 1) and text.returncode == first.returncode, (name, first.stderr)
        got[name] = (json.loads(first.stdout), json.loads(second.stdout), text.stdout)
    return got


def test_explain_over_every_log_at_once_gives_unique_ids(tmp_path):
    log = tmp_path / "all.log"
    log.write_text("\n".join(p.read_text() for p in sorted((FIX / "logs").glob("*.log"))))
    ids = [f["id"] for f in json.loads(cli("explain", "--from-file", str(log), "--format", "json").stdout)["findings"]]
    assert len(ids) > 3 and len(ids) == len(set(ids))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_ids_are_unique_and_stable(outputs, name):
    report, again, _ = outputs[name]
    ids = [f["id"] for f in report["findings"]]
    assert ids, name
    repeated = {i: n for i, n in collections.Counter(ids).items() if n > 1}
    assert not repeated, f"{name}: ids repeated in one report: {repeated}"
    assert [f["id"] for f in again["findings"]] == ids, f"{name}: ids differ between two runs"


def _too_wide(text: str, width: int = WIDTH) -> list[str]:
    """Lines past `width` that are more than one token after their indent."""
    return [line for line in text.splitlines() if len(line) > width and len(line.split()) > 1
            and not re.fullmatch(r"\s*\S+", line)]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_text_fits_80_columns(outputs, name):
    assert not _too_wide(outputs[name][2]), name


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_line_repeats_and_no_list_repeats_an_item(outputs, name):
    report, _, text = outputs[name]
    # A line that is one token (a path or a table row wrapped onto its own line) may recur: two findings
    # about one file name it each. A sentence may not.
    lines = [line.strip() for line in text.splitlines() if len(line.split()) > 1 and not line.startswith("[")]
    repeated = [line for line, n in collections.Counter(lines).items() if n > 1]
    assert not repeated, f"{name}: repeated lines {repeated}"
    for f in report["findings"]:
        for field in ("title", "message", "source"):
            for part in re.split(r"[;:()]\s|\n", f[field]):
                items = [i.strip() for i in part.split(", ") if i.strip()]
                twice = {i for i, n in collections.Counter(items).items() if n > 1}
                assert not twice, f"{name} {f['id']} {field}: {twice} listed twice in {part!r}"
        assert f["duration_s"] is not None and f["duration_s"] >= 0  # JUnit's time, measured


def _parsers():
    from rcompat.cli.main import build_parser

    def walk(parser, path):
        yield " ".join(path) or "rcompat", parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for word, sub in action.choices.items():
                    yield from walk(sub, path + [word])

    return list(walk(build_parser(), []))


def test_every_help_fits_80_columns_when_not_a_terminal(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    parsers = _parsers()
    assert len(parsers) > 30
    wide = {name: _too_wide(p.format_help()) for name, p in parsers}
    assert not {k: v for k, v in wide.items() if v}


def test_help_and_reports_follow_the_terminal_width():
    narrow = cli("elf", "abi-diff", "--help", env={"COLUMNS": "60"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60
    assert "12  (4|8) an incompatible change" in narrow.stdout  # the epilog keeps its lines
    report = cli(*COMMANDS["matrix check"], env={"COLUMNS": "60"})
    assert not _too_wide(report.stdout, 60) and max(map(len, report.stdout.splitlines())) > 40


@pytest.mark.parametrize("args", [("cuda", "probe"), ("r", "facts", "--no-discover"), ("r", "rules")])
def test_fact_pages_fit_80_columns(args):
    run = cli(*args, env={"COLUMNS": ""})
    assert run.returncode == 0, run.stderr
    assert not _too_wide(run.stdout) and len(run.stdout.splitlines()) > 3
