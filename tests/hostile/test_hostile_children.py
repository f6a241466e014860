"""Children that daemonise, print for ever, answer in nested JSON, or are not programs at all.

rcompat.isolate must end each at its deadline (killing its session and whoever holds its pipes), keep
a bounded head and tail of what it printed, and read its JSON with the documents' nesting limit.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rcompat.child_pipes import HEAD_BYTES, TAIL_BYTES
from rcompat.isolate import run_child


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _alive(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (a unique sleep length)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0"):
                    found.append(int(name))
            except OSError:
                pass
    return found


def test_a_grandchild_that_left_the_session_does_not_hold_the_pipes(tmp_path):
    # setsid: a new session and group, neither killed with the child's; it keeps stdout and stderr
    child = _script(tmp_path / "daemonise", "setsid sleep 3141 &\necho started\nexit 0\n")
    result = run_child([str(child)], timeout=120)
    assert result.returncode == 0 and not result.timed_out and "started" in result.stdout
    assert _alive("3141") == [], "the daemon holding the pipes was left running"


def test_at_the_deadline_the_whole_session_and_pipe_holders_are_killed(tmp_path):
    child = _script(tmp_path / "hang", "setsid sleep 3142 &\nsleep 3143 &\nexec sleep 3144\n")
    result = run_child([str(child)], timeout=1)
    assert result.timed_out and "timed out" in result.describe_end()
    assert _alive("3142") == _alive("3143") == _alive("3144") == []


def test_endless_output_keeps_head_and_tail_and_says_what_was_cut(tmp_path):
    total = HEAD_BYTES + TAIL_BYTES + (8 << 20)  # 8 MB more than is kept
    child = _script(tmp_path / "flood", f"echo FIRST\nhead -c {total} /dev/zero | tr '\\0' x\necho\necho LAST\n")
    result = run_child([str(child)], timeout=120)
    assert result.returncode == 0
    assert result.stdout.startswith("FIRST") and result.stdout.rstrip().endswith("LAST")
    cut = result.output_cut["stdout"]
    assert cut == len("FIRST\n") + total + len("\nLAST\n") - HEAD_BYTES - TAIL_BYTES
    assert f"[rcompat: {cut} bytes of the child's stdout cut here]" in result.stdout
    assert len(result.stdout) < HEAD_BYTES + TAIL_BYTES + 200
    assert result.to_evidence()["output_cut_bytes"] == {"stdout": cut}


def test_a_child_printing_for_ever_ends_at_the_deadline(tmp_path):
    result = run_child([str(_script(tmp_path / "yes", "exec yes rcompat-flood\n"))], timeout=2)
    assert result.timed_out and result.output_cut.get("stdout", 0) > 0
    assert "rcompat-flood" in result.tail(1)


def test_nested_json_from_a_child_is_ignored_not_a_recursion_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"r_facts": ' + "[" * 200_000 + "]" * 200_000 + "}\n" + '{"step": "after"}\n')
    result = run_child(["cat", str(deep)], timeout=60)
    assert result.records == [{"step": "after"}]


def test_a_cache_entry_nested_too_deep_is_a_miss(tmp_path, monkeypatch):
    from rcompat import cache

    entry = tmp_path / "entry"
    assert cache.write_entry(entry, 1, b'{"key": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    assert cache.read_json(entry, 1, 1) is None
    assert cache.write_json(entry, 1, 1, {"x": 2}) and cache.read_json(entry, 1, 1) == {"key": 1, "x": 2}


def test_a_fifo_named_r_on_path_is_passed_over(tmp_path):
    from rcompat.r.host import locate_r
    from rcompat.reaping import find_executable

    fifo_dir, real_dir = tmp_path / "fifo", tmp_path / "real"
    fifo_dir.mkdir()
    real_dir.mkdir()
    for name in ("R", "Rscript"):
        os.mkfifo(fifo_dir / name)
        os.chmod(fifo_dir / name, 0o755)
    _script(real_dir / "Rscript", "exit 0\n")
    _script(real_dir / "R", "R_HOME_DIR=/opt/fake-r\n")
    path = f"{fifo_dir}{os.pathsep}{real_dir}"
    assert stat.S_ISFIFO(os.stat(fifo_dir / "R").st_mode)
    assert find_executable("R", path) == str(real_dir / "R")
    found = locate_r({"PATH": path})  # reads R's front end for R_HOME_DIR: never the FIFO
    assert found is not None and found.rscript == str(real_dir / "Rscript") and found.r_home == "/opt/fake-r"


@pytest.mark.skipif(not Path("/usr/bin/Rscript").exists(), reason="R is not installed")
def test_r_facts_with_a_daemonising_rscript_ends_and_reports(sentinel, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    _script(fake / "Rscript", "setsid sleep 3145 &\nprintf '\\033[2J\\033[31mno facts from me\\n' >&2\nexit 3\n")
    os.mkfifo(fake / "R")
    os.chmod(fake / "R", 0o755)
    outcome = sentinel.run("r", "facts", "--engine", "rscript", "--no-discover", "--timeout", "30", wall_s=60,
                           env={"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", "R_HOME": ""})
    assert not outcome.timed_out and "internal error" not in outcome.stderr, outcome
    assert "did not report its facts" in outcome.stdout and "no facts from me" in outcome.stdout
    assert "\x1b" not in outcome.stdout and "\\x1b[2J" in outcome.stdout  # the child's escapes, escaped
    assert _alive("3145") == []
