"""The adversarial suite's harness: each hostile case runs the real CLI in a child under limits.

A case gets a sentinel directory: `in/` (its hostile inputs), `work/` (the working directory),
`tmp/` ($TMPDIR), `home/` ($HOME, with $XDG_CACHE_HOME under it) and `outside/` (nothing may appear
there). The child runs in its own session under RLIMIT_AS (memory), RLIMIT_CPU, RLIMIT_FSIZE (a
file it writes) and a wall-clock timeout that kills its process group. `assert_refused` then checks
what every hostile input must give: exit 2, one line on stderr naming the problem, no "internal
error", nothing written anywhere in the sentinel but what the case allows, no temp left, within limits.
"""
from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20


class Outcome(NamedTuple):  # not a dataclass: this file is loaded by path, outside sys.modules
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


class Sentinel:
    def __init__(self, root: Path) -> None:
        self.root = root
        for name in ("in", "work", "tmp", "home/.cache", "outside"):
            (root / name).mkdir(parents=True, exist_ok=True)
        self.inputs = root / "in"
        self.work = root / "work"
        self.tmp = root / "tmp"
        self.cache = root / "home" / ".cache"
        self.outside = root / "outside"
        self._before: dict[str, tuple] | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RCOMPAT_")}
        env.update(TMPDIR=str(self.tmp), HOME=str(self.root / "home"), XDG_CACHE_HOME=str(self.cache),
                   PYTHONPATH=str(REPO), NO_COLOR="1")
        return env

    def snapshot(self) -> dict[str, tuple]:
        """Path -> (kind, size, mtime_ns) of everything in the sentinel (links not followed)."""
        seen = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode):  # a temp made and removed inside changes only its mtime
                    seen[os.path.relpath(path, self.root)] = (st.st_mode >> 12,)
                else:
                    seen[os.path.relpath(path, self.root)] = (st.st_mode >> 12, st.st_size, st.st_mtime_ns)
        return seen

    def run(self, *argv: str, mem_mb: int = 1024, cpu_s: int = 60, wall_s: float = 60, fsize_mb: int = 64,
            stdin=subprocess.DEVNULL, env: dict[str, str] | None = None) -> Outcome:
        self._before = self.snapshot()

        def limits() -> None:  # in the child, before exec
            resource.setrlimit(resource.RLIMIT_AS, (mem_mb * MIB, mem_mb * MIB))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mb * MIB, fsize_mb * MIB))

        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "rcompat", *argv], cwd=self.work, env={**self.env(), **(env or {})},
                                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", preexec_fn=limits, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=wall_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
        return Outcome(proc.returncode, out, err, time.monotonic() - start, timed_out)

    def changes(self, allowed: tuple[str, ...] = ()) -> list[str]:
        """What the last run added, removed or changed in the sentinel, but `allowed` (relative paths)."""
        after = self.snapshot()
        before = self._before or {}
        changed = [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
        return sorted(p for p in changed if p not in allowed and not any(p.startswith(a + "/") for a in allowed))


def assert_refused(sentinel: Sentinel, outcome: Outcome, *needles: str, usage: bool = False,
                   allowed: tuple[str, ...] = (), wall_s: float = 60) -> str:
    """The one error line, after checking every promise a hostile input is owed."""
    assert not outcome.timed_out, f"no end within {wall_s} s (a wait on a FIFO, an unbounded read?)"
    assert outcome.returncode == 2, (outcome.returncode, outcome.stdout[-2000:], outcome.stderr[-2000:])
    lines = outcome.stderr.strip().splitlines()
    if usage:  # argparse prints the usage above its one error line
        lines = [line for line in lines if "error:" in line]
    assert len(lines) == 1, lines[:5]
    line = lines[0]
    assert "error:" in line and "internal error" not in line and "Traceback" not in outcome.stderr, line
    assert len(line) < 600, f"a {len(line)}-character error line"
    for needle in needles:
        assert needle in line, line
    assert not list(sentinel.tmp.iterdir()), f"left in $TMPDIR: {sorted(os.listdir(sentinel.tmp))[:5]}"
    assert sentinel.changes(allowed) == [], sentinel.changes(allowed)
    return line
